"""What launchd starts for a loaded plist: argv, the bare environment (PATH default,
EnvironmentVariables, XPC_SERVICE_NAME), working directory, log paths, nice, umask and
ExitTimeOut, with launchd's defaults filled in (shared/launchd-semantics.md section 3).

Pure: reading a plist's values, no process. lanekit.service.launchd.environ starts what this
describes
(the emulated domain, `lanekit try`); doctor and the emulated domain's `print` read it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lanekit.errors import EnvironmentUnusableError
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from lanekit.system.processes import find_program

DEFAULT_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""launchd's `default environment` PATH (every print capture)."""
DEFAULT_LOG_UMASK = 0o022
"""Log files are created 0666 & ~umask; launchd's own umask for agents is 022, giving 0644."""


class JobSetupError(EnvironmentUnusableError):
    """launchd could not set the job up, so it never ran; launchd records last exit 78."""

    launchd_exit = os.EX_CONFIG


@dataclass(frozen=True, slots=True)
class JobLaunch:
    """Everything needed to start one job the way launchd would."""

    label: str
    argv: tuple[str, ...]
    """ProgramArguments (or `(Program,)`); argv[0] is passed to the job unchanged."""
    env: Mapping[str, str]
    """The complete environment of the job (nothing is inherited)."""
    cwd: str = "/"
    """WorkingDirectory, else `/`."""
    program: str | None = None
    """The Program key; when unset argv[0] is looked up in the job's PATH."""
    stdout_path: str | None = None
    """StandardOutPath (None: /dev/null). Relative paths are taken from `cwd`."""
    stderr_path: str | None = None
    """StandardErrorPath (None: /dev/null)."""
    nice: int | None = None
    low_priority_io: bool = False
    """Recorded for print/doctor; Linux has no equivalent worth emulating, so it is not applied."""
    umask: int | None = None
    exit_timeout: int = DEFAULT_EXIT_TIMEOUT
    """Seconds between SIGTERM and SIGKILL when the job is stopped; 0 means never SIGKILL."""
    abandon_process_group: bool = False

    @property
    def executable(self) -> str:
        """What gets looked up and executed: Program, else argv[0]."""
        return self.program or (self.argv[0] if self.argv else "")


def launch_environment(plist: Mapping[str, object]) -> dict[str, str]:
    """The job's complete environment: PATH default + EnvironmentVariables + XPC_SERVICE_NAME.

    Nothing comes from the caller's environment. Non-string values are ignored, as launchd does.
    """
    env = {"PATH": DEFAULT_PATH}
    variables = plist.get("EnvironmentVariables")
    if isinstance(variables, Mapping):
        for key, value in variables.items():
            if isinstance(key, str) and isinstance(value, str):
                env[key] = value
    label = plist.get("Label")
    if isinstance(label, str):
        env["XPC_SERVICE_NAME"] = label
    return env


def resolve_command(argv0: str, env_path: str, cwd: str) -> str | None:
    """The file that would be executed for argv0, or None.

    A name containing `/` is used as is (relative to `cwd`); a bare name is searched in
    `env_path` (the job's PATH, never the caller's). An empty PATH entry means `cwd`.
    """
    if not argv0:
        return None
    if "/" in argv0:
        return argv0 if _is_executable(Path(cwd, argv0)) else None
    try:
        return find_program(argv0, env_path, cwd)
    except OSError:
        return None


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def launch_for(plist: Mapping[str, object]) -> JobLaunch:
    """Translate a loaded plist into a JobLaunch (launchd's defaults filled in)."""
    label = plist.get("Label")
    program = plist.get("Program")
    arguments = plist.get("ProgramArguments")
    argv: tuple[str, ...] = ()
    if isinstance(arguments, list) and all(isinstance(a, str) for a in arguments):
        argv = tuple(str(a) for a in arguments)
    if isinstance(program, str) and not argv:
        argv = (program,)
    workdir = plist.get("WorkingDirectory")
    exit_timeout = _int_key(plist, "ExitTimeOut")
    return JobLaunch(
        label=label if isinstance(label, str) else "",
        argv=argv,
        env=launch_environment(plist),
        cwd=workdir if isinstance(workdir, str) and workdir else "/",
        program=program if isinstance(program, str) else None,
        stdout_path=_str_key(plist, "StandardOutPath"),
        stderr_path=_str_key(plist, "StandardErrorPath"),
        nice=_int_key(plist, "Nice"),
        low_priority_io=plist.get("LowPriorityIO") is True,
        umask=parse_umask(plist.get("Umask")),
        exit_timeout=DEFAULT_EXIT_TIMEOUT if exit_timeout is None else max(exit_timeout, 0),
        abandon_process_group=plist.get("AbandonProcessGroup") is True,
    )


def parse_umask(value: object) -> int | None:
    """Umask as launchd reads it: an integer, or a string read like strtoul (0 prefix = octal)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value & 0o777
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    try:
        if text.startswith("0x"):
            number = int(text[2:], 16)
        elif text.startswith("0") and len(text) > 1:
            number = int(text[1:], 8)
        else:
            number = int(text, 10)
    except ValueError:
        return None
    return number & 0o777


def _str_key(plist: Mapping[str, object], key: str) -> str | None:
    value = plist.get(key)
    return value if isinstance(value, str) and value else None


def _int_key(plist: Mapping[str, object], key: str) -> int | None:
    value = plist.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
