"""`lanekit try`: run a job once, in the foreground, exactly as launchd would start it.

The environment is launchd's, not the caller's: only EnvironmentVariables (PATH defaulting to
/usr/bin:/bin:/usr/sbin:/sbin) plus XPC_SERVICE_NAME, the WorkingDirectory (else `/`), stdout
and stderr appended to the plist's files, Nice applied (lanekit.service.launchd.environ does the
starting, the same code the emulated launchd uses). So a job that works from your shell and
fails under launchd fails here too, in front of you.

Before running, the doctor checks that would make launchd fail the spawn or the job fail at
once (program, interpreter, commands on the job's PATH, log paths, working directory) run
first; an error among them is reported and nothing runs.

Where systemd runs the lanes, a lane's run gets what its unit gives instead: the installed
service (else the one `apply` would write), read by the systemd backend's one unit reader
(lanekit.service.systemd.units): its ExecStart, Environment= over the user manager's own
environment, WorkingDirectory, StandardOutput/StandardError appended. `--job` runs the
command with what the runner started by that unit would give it
(lanekit.run.jobenv.lane_process_env).

For a lanekit lane, `try LANE` runs the lane entrypoint as installed (its ProgramArguments):
that is a real run, which claims and processes real jobs from the queue. `try LANE --job FILE`
instead runs the lane's job command once on FILE, with the lane's environment, without
touching the queue.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.doctor import (
    DoctorContext,
    Finding,
    Severity,
    Target,
    lane_target,
    plist_target,
)
from lanekit.errors import ExitCode, UsageError
from lanekit.service.exits import describe_exit
from lanekit.state.paths import Paths, backend_name
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    from lanekit.config import LaneSpec
    from lanekit.service.launchd.launch import JobLaunch

PREFLIGHT = (
    "plist.invalid",
    "program.missing",
    "program.not-executable",
    "program.bad-interpreter",
    "path.command-missing",
    "workdir.missing",
    "logs.dir-missing",
    "logs.unwritable",
)
"""The checks whose errors mean the run would fail before doing anything useful."""

TAIL_LINES = 20
"""Lines of stderr shown after the run."""


def decode_status(exit_code: int | None, sig: int | None, *, lanekit_runner: bool) -> str:
    """An exit status in words: `exit code 127 (command not found)`, or `did not run`."""
    if exit_code is None and sig is None:
        return "did not run"
    return describe_exit(exit_code, sig, lanekit_runner=lanekit_runner)


@dataclass(frozen=True, slots=True)
class TryRequest:
    """What `lanekit try` was asked to run."""

    lane: str | None = None
    plist: Path | None = None
    job: Path | None = None
    """Run the lane's job command once on this file, without the queue."""
    config_path: Path | None = None
    project: Path | None = None
    """`--project PATH`; without it and without a lanes.toml here, the installed projects
    (lanekit.config.projects)."""
    timeout: float | None = None
    here: bool = False
    """Run in this process's session (today's mode) even where a launchd job is possible."""


@dataclass(frozen=True, slots=True)
class TryResult:
    """One `lanekit try`: what was run, how, and how it ended (or why it was not run)."""

    subject: str
    argv: tuple[str, ...]
    cwd: str
    env_path: str
    """The PATH the job ran with (its own, or launchd's default)."""
    problems: tuple[Finding, ...]
    """Preflight findings; any error among them means nothing ran."""
    ran: bool
    exit_code: int | None = None
    signal: int | None = None
    duration: float | None = None
    stderr_tail: tuple[str, ...] = ()
    stdout_path: str | None = None
    stderr_path: str | None = None
    setup_error: str | None = None
    """Why launchd's setup failed (launchd would record exit 78), when it did."""
    timed_out: bool = False
    lanekit_runner: bool = False
    """The run was lanekit's lane entrypoint (exit codes have lanekit's meanings)."""
    launchd_job: str | None = None
    """`gui/501/<label>.try-…` when it ran as a one-shot launchd job (macOS), else None."""

    @property
    def status(self) -> str:
        """The exit status in words."""
        if self.setup_error is not None:
            return "not started: launchd would report exit 78 (EX_CONFIG)"
        if not self.ran:
            return "not run"
        return decode_status(self.exit_code, self.signal, lanekit_runner=self.lanekit_runner)

    @property
    def exit_status(self) -> ExitCode:
        """0 when the job ran and exited 0, else 1."""
        ok = self.ran and self.exit_code == 0 and self.signal is None
        return ExitCode.OK if ok else ExitCode.FAILURE


def _job_plist(target: Target, job_file: Path) -> dict[str, Any]:
    """The lane's plist with its job command in place of the entrypoint (for `--job`)."""
    from lanekit.run.jobenv import job_env
    from lanekit.run.runner import job_argv

    assert target.lane is not None and target.plist is not None
    lane = target.lane
    plist = dict(target.plist)
    base = plist.get("EnvironmentVariables") or {}
    plist["EnvironmentVariables"] = job_env(
        base, lane=lane.name, job_id=_job_id(job_file), job_file=job_file, attempt=1
    )
    plist["ProgramArguments"] = job_argv(lane.command, job_file)
    plist.pop("Program", None)
    return plist


def _job_id(job_file: Path) -> str:
    """The id the queue gives the job in `job_file` (its layout's grammar: `<id>.json`, or
    `<id>.<owner>.json` in claimed/; ids may contain dots, `2026-09-17.report`); a file named
    otherwise is its own id."""
    from lanekit.queue.ids import job_id_of

    return job_id_of(job_file.name)


def _target(request: TryRequest, paths: Paths, env: Mapping[str, str]) -> tuple[Target, str | None]:
    """What to run, and the lane's `[defaults] service_manager` (None: by platform)."""
    from lanekit.config import find_config, load_config
    from lanekit.config.projects import find_configs, lanes_named, project_config
    from lanekit.errors import ConfigError

    if (request.lane is None) == (request.plist is None):
        raise UsageError("give a LANE or --plist FILE (one of them)", "e.g. `lanekit try funnel`")
    if request.plist is not None:
        if request.job is not None:
            raise UsageError("--job needs a LANE, not --plist", "e.g. `lanekit try LANE --job F`")
        if request.project is not None:
            found = project_config(request.project, paths)
            return plist_target(request.plist, load_config(found, paths)), None
        try:
            config = load_config(find_config(request.config_path, env, paths.cwd), paths)
        except ConfigError:
            if request.config_path is not None:
                raise
            config = None
        return plist_target(request.plist, config), None
    assert request.lane is not None
    configs, _ = find_configs(request.config_path, paths, env, project=request.project)
    (lane,) = lanes_named(configs, [request.lane])
    configured = next((c.service_manager for c in configs if c.lanes.get(lane.name) is lane), None)
    target = lane_target(lane, paths)
    if request.job is not None:
        job_file = request.job.absolute()
        if not job_file.is_file():
            raise UsageError(f"{request.job}: no such job file", "give a JSON job file")
        return Target(
            subject=target.subject,
            plist_path=target.plist_path,
            plist=_job_plist(target, job_file) if target.plist is not None else None,
            plist_error=target.plist_error,
            installed=target.installed,
            lane=lane,
        ), configured
    if not target.installed and not _unit_installed(lane, paths, env, configured):
        raise UsageError(
            f"lane {lane.name} is not installed, so there is no entrypoint to try",
            f"run `{cmdline('lanekit', 'apply', lane.name)}` first, or "
            f"`{cmdline('lanekit', 'try', lane.name)} --job FILE` to run its command once",
        )
    return target, configured


def try_run(request: TryRequest, paths: Paths, env: Mapping[str, str] | None = None) -> TryResult:
    """The core of `lanekit try`: preflight, then one foreground run as launchd would do it."""
    from lanekit.doctor.checks import jobfacts
    from lanekit.service.launchd.launch import launch_for
    from lanekit.service.launchd.manager import plist_definition

    env = os.environ if env is None else env
    target, configured = _target(request, paths, env)
    ctx = DoctorContext(paths)
    problems: list[Finding] = []
    for check_id in PREFLIGHT:
        problems.extend(ctx.findings(check_id, target))
    job = target.plist or {}
    defined = target.definition or plist_definition(job)
    argv = tuple(jobfacts.arguments(defined))
    entrypoint = target.lane is not None and request.job is None
    base = TryResult(
        subject=target.subject,
        argv=argv,
        cwd=jobfacts.cwd(defined),
        env_path=jobfacts.job_path(defined),
        problems=tuple(problems),
        ran=False,
        stdout_path=job.get("StandardOutPath"),
        stderr_path=job.get("StandardErrorPath"),
        lanekit_runner=entrypoint,
    )
    if target.plist is None or any(p.severity is Severity.ERROR for p in problems):
        return base
    unit = systemd_launch(target, request, paths, env, configured)
    if unit is not None:
        base = replace(
            base,
            argv=unit.argv,
            cwd=unit.cwd,
            env_path=unit.env.get("PATH", ""),
            stdout_path=unit.stdout_path,
            stderr_path=unit.stderr_path,
        )
        return _foreground(base, unit, request.timeout)
    if not request.here and backend_name(env, sys.platform) == "launchctl":
        return _as_launchd_job(base, target.plist, paths, env, request.timeout)
    launch = launch_for(target.plist)
    if backend_name(env, sys.platform) == "emulated":
        # What the emulated domain hands each job it starts: the runner of a lanekit lane then
        # stamps and judges by the domain's time, as a scheduled run does.
        from lanekit.service import clock_for
        from lanekit.service.emulated.offset import with_clock

        launch = with_clock(launch, clock_for(paths, env).offset)
    return _foreground(base, launch, request.timeout)


def _foreground(base: TryResult, launch: JobLaunch, timeout: float | None) -> TryResult:
    """Run `launch` here, in the foreground, and say how it ended."""
    from lanekit.service.launchd.environ import run_foreground
    from lanekit.service.launchd.launch import JobSetupError

    try:
        outcome = run_foreground(launch, timeout=timeout)
    except JobSetupError as exc:
        return replace(base, setup_error=exc.message)
    tail = tuple(outcome.stderr_tail.splitlines()[-TAIL_LINES:])
    return replace(
        base,
        ran=True,
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        duration=outcome.duration,
        stderr_tail=tail,
        timed_out=outcome.timed_out,
    )


def _unit_installed(
    lane: LaneSpec, paths: Paths, env: Mapping[str, str], configured: str | None
) -> bool:
    """Where systemd runs the lanes: whether the lane's service file is installed."""
    from lanekit.state.backend import manager_choice

    if manager_choice(env, sys.platform, configured)[0] != "systemd":
        return False
    from lanekit.service import open_manager

    return open_manager(paths, env, configured).artifact_path(lane.label).is_file()


def systemd_launch(
    target: Target,
    request: TryRequest,
    paths: Paths,
    env: Mapping[str, str],
    configured: str | None,
) -> JobLaunch | None:
    """The run a lane's systemd unit would start (None: systemd does not run the lanes here,
    or this is no lane). The service is the installed one, else the one apply would write;
    `--job` swaps in the job command and its LANEKIT_* variables, as for launchd."""
    lane = target.lane
    if lane is None:
        return None
    from lanekit.state.backend import manager_choice

    if manager_choice(env, sys.platform, configured)[0] != "systemd":
        return None
    from lanekit.service import open_manager
    from lanekit.service.launchd.launch import JobLaunch
    from lanekit.service.systemd.manager import SystemdManager
    from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT

    manager = open_manager(paths, env, configured)
    assert isinstance(manager, SystemdManager)
    path = manager.artifact_path(lane.label)
    try:
        service = path.read_bytes()
    except FileNotFoundError:
        made = manager.render(
            lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label)
        )
        service = made.files[path.name]
    defined = manager.define(service)
    # The runner's own process gets what the unit gives; a job it starts gets what the runner
    # makes of that (lanekit.run.jobenv.lane_process_env, the function the runner calls).
    run_env = manager.run_environment(defined.env)
    argv = defined.argv
    if request.job is not None:
        from lanekit.run.jobenv import job_env, lane_process_env
        from lanekit.run.runner import job_argv

        job_file = request.job.absolute()
        run_env = job_env(
            lane_process_env(run_env, defined.label, defined.env),
            lane=lane.name,
            job_id=_job_id(job_file),
            job_file=job_file,
            attempt=1,
        )
        argv = tuple(job_argv(lane.command, job_file))
    return JobLaunch(
        label=defined.label,
        argv=argv,
        env=run_env,
        cwd=defined.cwd or str(paths.home),
        stdout_path=defined.stdout,
        stderr_path=defined.stderr,
        nice=lane.nice,
        exit_timeout=DEFAULT_EXIT_TIMEOUT if defined.exit_timeout is None else defined.exit_timeout,
    )


def _as_launchd_job(
    base: TryResult,
    plist: Mapping[str, Any],
    paths: Paths,
    env: Mapping[str, str],
    timeout: float | None,
) -> TryResult:
    """A launchd job has neither the terminal's privacy grants nor its session: run it as one."""
    from lanekit.proof.tryjob import run_one_shot
    from lanekit.service import open_manager

    shot = run_one_shot(plist, open_manager(paths, env), paths.state / "try", timeout=timeout)
    return replace(
        base,
        ran=True,
        exit_code=shot.exit_code,
        signal=shot.signal,
        duration=shot.duration,
        stderr_tail=tuple(shot.stderr_tail.splitlines()[-TAIL_LINES:]),
        timed_out=shot.timed_out,
        launchd_job=f"{shot.domain}/{shot.label}",
    )
