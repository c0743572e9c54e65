"""Checks on what the job runs and the environment it runs in: the program launchd execs, its
`#!` interpreter, every command looked up on the job's OWN PATH (never the caller's shell), and
environment values launchd passes through without expanding."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from lanekit.config.provenance import MARKER
from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.doctor.checks import jobfacts
from lanekit.system.interpreter import inspect as inspect_interpreter
from lanekit.system.quoting import cmdline


def _exec_target(target: Target) -> tuple[str, Path] | None:
    """(as written, as launchd opens it) for a program given as a path; None for bare names."""
    job = target.definition
    name = jobfacts.program(job) if job is not None else None
    if job is None or name is None or "/" not in name:
        return None
    return name, jobfacts.absolute(name, job)


def _job_command(target: Target) -> tuple[str, Path | None] | None:
    """The lane's job command argv[0], and where it is (None: not found on the job's PATH)."""
    defined = target.definition
    if target.lane is None or defined is None or not target.lane.command:
        return None
    name = target.lane.command[0]
    if "/" in name:
        return name, jobfacts.absolute(name, defined)
    found = jobfacts.resolve(name, defined)
    return name, Path(found) if found else None


def _programs(target: Target) -> Iterator[tuple[str, str, Path]]:
    """(role, as written, path) of each existing file the job execs."""
    exec_target = _exec_target(target)
    # A dangling symlink is missing (program.missing names its target), not "not executable".
    if exec_target is not None and exec_target[1].exists():
        yield "the program", exec_target[0], exec_target[1]
    job = target.definition
    inline = jobfacts.shell_command(jobfacts.arguments(job)) if job is not None else None
    if job is not None and inline is not None and "/" in inline:
        where = jobfacts.absolute(inline, job)
        if where.exists():
            yield "the command the inline shell script runs", inline, where
    job_command = _job_command(target)
    if job_command is None or job_command[1] is None or not job_command[1].exists():
        return
    if exec_target is None or job_command[1] != exec_target[1]:
        yield "the job command", job_command[0], job_command[1]


def _is_lanekit(target: Target) -> bool:
    """A lanekit lane's plist (its program is lanekit's interpreter)."""
    job = target.definition
    return target.lane is not None or (job is not None and MARKER in jobfacts.environment(job))


def _edit_where(target: Target) -> str:
    if target.lane is not None:
        return f"[lanes.{target.lane.name}] in lanes.toml, then run `lanekit apply`"
    return str(target.plist_path or "the plist")


@check(
    "program.missing",
    summary="the program launchd execs (Program / ProgramArguments[0]) does not exist",
    alert=True,
)
def program_missing(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A missing program: launchd logs one line nobody reads and the job never runs."""
    exec_target = _exec_target(target)
    if exec_target is None:
        return
    name, path = exec_target
    if path.exists():
        return
    if jobfacts.unexpanded(name):
        real = jobfacts.expand(name, ctx.paths.home)
        yield Problem(
            Severity.ERROR,
            f"the program {name} does not exist: launchd does not expand ~ or $VAR, so it "
            f"looks for {path}.",
            f"write the absolute path {real} in {_edit_where(target)}",
        )
        return
    gone = inspect_interpreter(str(path))
    if gone.dangling:
        fix = gone.fix if _is_lanekit(target) else f"reinstall what {gone.resolved} belonged to"
        yield Problem(
            Severity.ERROR,
            f"the program {path} is a symlink to {gone.resolved}, which no longer exists "
            "(the Python or tool it was made with was upgraded or removed), so launchd exits "
            "78 every time.",
            fix,
        )
        return
    if target.lane is not None:
        fix = f"reinstall lanekit, then run `{cmdline('lanekit', 'apply', target.lane.name)}`"
    else:
        fix = f"install {name}, or point ProgramArguments of {target.plist_path} at it"
    yield Problem(
        Severity.ERROR, f"the program {path} does not exist, so the job can never start.", fix
    )


@check(
    "program.not-executable",
    summary="the program or job command exists but has no execute permission",
)
def program_not_executable(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """exec fails (a shell wrapper exits 126); the job never runs."""
    for role, name, path in _programs(target):
        if jobfacts.is_executable_file(path):
            continue
        if path.is_dir():
            yield Problem(
                Severity.ERROR,
                f"{role} {name} is a directory, not a program.",
                f"name the program inside {path} in {_edit_where(target)}",
            )
        else:
            yield Problem(
                Severity.ERROR,
                f"{role} {name} is not executable, so exec fails (exit 126) every time.",
                cmdline("chmod", "+x", path),
            )


@check(
    "program.bad-interpreter",
    summary="a script's #! line names an interpreter that does not exist on the job's PATH",
)
def bad_interpreter(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """`#!/usr/local/bin/python3` on a Mac without it, or `#!/usr/bin/env node` when node is
    only on the caller's PATH: the exec fails before the script's first line."""
    job = target.definition
    if job is None:
        return
    for role, name, path in _programs(target):
        words = jobfacts.shebang(path) if jobfacts.is_executable_file(path) else None
        if not words:
            continue
        interpreter = words[0]
        if not jobfacts.is_executable_file(Path(interpreter)):
            yield Problem(
                Severity.ERROR,
                f"{role} {name} starts with #!{interpreter}, which does not exist, so exec "
                "fails before the script runs.",
                f"fix the #! line of {path} to name an installed interpreter",
            )
            continue
        if Path(interpreter).name != "env":
            continue
        wanted = next((w for w in words[1:] if not w.startswith("-")), None)
        if wanted is None or jobfacts.resolve(wanted, job) is not None:
            continue
        found = jobfacts.caller_has(wanted)
        yield Problem(
            Severity.ERROR,
            f"{role} {name} starts with #!{' '.join(words)}, and {wanted} is not on the job's "
            f"PATH ({jobfacts.job_path(job)})"
            + (f"; your shell finds it at {found}, launchd will not." if found else "."),
            jobfacts.path_fix(target, str(Path(found).parent))
            if found
            else f"install {wanted}, or write its absolute path in the #! line of {path}",
        )


@check(
    "path.command-missing",
    summary="a command the job runs is not found on the job's own PATH (not your shell's)",
    alert=True,
)
def command_missing(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The classic silent failure: `jq` is in /usr/local/bin, the shell finds it, launchd's
    PATH does not have it, and the job dies with `command not found` in a log nobody reads."""
    job = target.definition
    if job is None:
        return
    path = jobfacts.job_path(job)
    commands: list[tuple[str, str]] = []
    name = jobfacts.program(job)
    if name is not None and "/" not in name:
        commands.append(("the program", name))
    inline = jobfacts.shell_command(jobfacts.arguments(job))
    if inline is not None:
        commands.append(("the command the inline shell script runs", inline))
    if target.lane is not None and target.lane.command and target.lane.command[0] != name:
        commands.append(("the job command", target.lane.command[0]))
    for role, program in commands:
        if "/" in program:
            where = jobfacts.absolute(program, job)
            if where.exists():
                continue
            yield Problem(
                Severity.ERROR,
                f"{role} {program} does not exist, so it fails every time.",
                f"install it, or fix `command` in {_edit_where(target)}",
            )
            continue
        if jobfacts.resolve(program, job) is not None:
            continue
        found = jobfacts.caller_has(program)
        shell = f"; your shell finds it at {found}, launchd will not" if found else ""
        yield Problem(
            Severity.ERROR,
            f"{role} {program} is not on the job's PATH ({path}){shell}.",
            jobfacts.path_fix(target, str(Path(found).parent))
            if found
            else f"install {program}, or write its absolute path in {_edit_where(target)}",
        )


@check(
    "env.path-unset",
    summary="no PATH in EnvironmentVariables: the job gets only /usr/bin:/bin:/usr/sbin:/sbin",
)
def path_unset(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Homebrew, nvm and pyenv tools are invisible to a job without its own PATH."""
    job = target.definition
    if job is None or "PATH" in jobfacts.environment(job):
        return
    if target.lane is not None:
        fix = cmdline("lanekit", "apply", target.lane.name)
    else:
        fix = (
            "add <key>PATH</key><string>/opt/homebrew/bin:/usr/local/bin:"
            f"{jobfacts.LAUNCHD_PATH}</string> to EnvironmentVariables of {target.plist_path}"
        )
    yield Problem(
        Severity.WARNING,
        f"EnvironmentVariables sets no PATH, so the job gets {jobfacts.LAUNCHD_PATH} and does "
        "not see /opt/homebrew/bin or /usr/local/bin.",
        fix,
    )


@check(
    "env.unexpanded",
    summary="a value uses ~ or $VAR, which launchd passes to the job literally",
)
def unexpanded(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd never runs a shell: `~/x` is a directory named `~` under the job's cwd."""
    job, defined = target.plist, target.definition
    if job is None or defined is None:
        return
    values: list[tuple[str, str]] = [
        (f"EnvironmentVariables {key}", value)
        for key, value in jobfacts.environment(defined).items()
    ]
    argv = jobfacts.arguments(defined)
    shell_script = jobfacts.is_shell_c(argv)
    for i, arg in enumerate(argv):
        if shell_script and i > 0:
            break  # `sh -c '...$VAR...'`: expanding is the shell's job, and it does it
        values.append((f"ProgramArguments[{i}]", arg))
    program = job.get("Program")
    if isinstance(program, str):
        values.append(("Program", program))
    for key in (*jobfacts.LOG_KEYS, "WorkingDirectory"):
        value = job.get(key)
        if isinstance(value, str):
            values.append((key, value))
    for key, value in values:
        if not jobfacts.unexpanded(value):
            continue
        real = jobfacts.expand(value, ctx.paths.home)
        fix = (
            f'write "{real}" instead'
            if not jobfacts.unexpanded(real)
            else "write the value itself instead of the variable"
        )
        where = (
            f" in [lanes.{target.lane.name}] of lanes.toml, then run `lanekit apply`"
            if target.lane is not None
            else f" in {target.plist_path}"
        )
        yield Problem(
            Severity.WARNING,
            f'{key} is "{value}": launchd does not expand ~ or $VAR, the job gets it literally.',
            fix + where,
        )
