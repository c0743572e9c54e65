"""How launchd starts a job, with real processes: environment, cwd, logs, nice, process group."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lanekit.errors import EnvironmentUnusableError
from lanekit.service.launchd.environ import (
    JobExit,
    SpawnedJob,
    is_alive,
    process_token,
    read_exit,
    run_foreground,
    spawn,
)
from lanekit.service.launchd.launch import (
    DEFAULT_PATH,
    JobLaunch,
    JobSetupError,
    launch_environment,
    launch_for,
    parse_umask,
    resolve_command,
)

WAIT = 30.0  # generous bound for a job to finish on a loaded CI machine; never a threshold

Spawner = Callable[..., tuple[SpawnedJob, Path]]


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Spawner]:
    """spawn() a job from plist keys; every job (and its group) is killed at teardown."""
    started: list[SpawnedJob] = []

    def _start(label: str = "test.job", **keys: object) -> tuple[SpawnedJob, Path]:
        status = tmp_path / "exits" / f"{label}.{len(started)}.json"
        job = spawn(launch_for({"Label": label, **keys}), status_file=status)
        started.append(job)
        return job, status

    yield _start
    for job in started:
        if is_alive(job.pid, job.start_token):
            _kill_group(job.pid)


def _finished(status: Path) -> JobExit:
    _wait_for(lambda: read_exit(status) is not None, f"the exit record {status}")
    ended = read_exit(status)
    assert ended is not None
    return ended


def test_environment_is_bare_plus_plist_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is inherited; string EnvironmentVariables are added, other values ignored, and
    XPC_SERVICE_NAME names the label."""
    monkeypatch.setenv("LEAKED_FROM_CALLER", "1")
    env = launch_environment(
        {"Label": "x.y", "EnvironmentVariables": {"A": "1", "N": 2, "B": True, "C": "c"}}
    )
    assert env == {"PATH": DEFAULT_PATH, "A": "1", "C": "c", "XPC_SERVICE_NAME": "x.y"}


@pytest.mark.slow
def test_job_sees_only_default_path_and_service_name(
    start: Spawner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that prints its environment shows exactly launchd's default PATH and
    XPC_SERVICE_NAME: nothing from the spawning process leaks in."""
    monkeypatch.setenv("LEAKED_FROM_CALLER", "1")
    out = tmp_path / "env.out"
    _, status = start("env.job", ProgramArguments=["env"], StandardOutPath=str(out))
    assert _finished(status).exit_code == 0
    assert out.read_text().splitlines() == [f"PATH={DEFAULT_PATH}", "XPC_SERVICE_NAME=env.job"]


@pytest.mark.slow
def test_plist_path_overrides_default_and_is_used_for_lookup(
    start: Spawner, tmp_path: Path
) -> None:
    """EnvironmentVariables PATH replaces the default, and argv[0] is looked up in it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "only-here"
    tool.write_text('#!/bin/sh\necho "found PATH=$PATH"\n')
    tool.chmod(0o755)
    out = tmp_path / "out.log"
    _, status = start(
        ProgramArguments=["only-here"],
        EnvironmentVariables={"PATH": f"{bindir}:/usr/bin:/bin"},
        StandardOutPath=str(out),
    )
    assert _finished(status).exit_code == 0
    assert out.read_text() == f"found PATH={bindir}:/usr/bin:/bin\n"


def test_resolve_command_searches_only_the_given_path(tmp_path: Path) -> None:
    """Bare names are searched in the job's PATH (never the caller's); names with a slash are
    used as they are; an empty PATH entry means the working directory."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    plain = bindir / "not-executable"
    plain.write_text("")
    assert resolve_command("tool", f"/nonexistent:{bindir}", "/") == str(bindir / "tool")
    assert resolve_command("tool", DEFAULT_PATH, "/") is None
    assert resolve_command("not-executable", str(bindir), "/") is None
    assert resolve_command("bin/tool", "", str(tmp_path)) == "bin/tool"
    assert resolve_command("./bin/tool", DEFAULT_PATH, "/") is None
    assert resolve_command("tool", "", str(bindir)) == str(bindir / "." / "tool")
    assert resolve_command("", DEFAULT_PATH, "/") is None


@pytest.mark.slow
def test_cwd_is_root_unless_working_directory(start: Spawner, tmp_path: Path) -> None:
    """Without WorkingDirectory the job runs in `/`; with it, there."""
    default_out, set_out = tmp_path / "default.out", tmp_path / "set.out"
    _, default_status = start(
        "cwd.default",
        ProgramArguments=["/bin/sh", "-c", "pwd -P"],
        StandardOutPath=str(default_out),
    )
    _, set_status = start(
        "cwd.set",
        ProgramArguments=["/bin/sh", "-c", "pwd -P"],
        StandardOutPath=str(set_out),
        WorkingDirectory=str(tmp_path),
    )
    _finished(default_status)
    _finished(set_status)
    assert default_out.read_text() == "/\n"
    assert set_out.read_text() == f"{tmp_path.resolve()}\n"


@pytest.mark.parametrize("where", ["missing-parent", "under-a-file"])
def test_unopenable_log_path_is_a_setup_failure(tmp_path: Path, where: str) -> None:
    """A log path that cannot be opened (even by root: its parent is missing, or is a regular
    file) means the job never starts, and launchd would record exit 78 (EX_CONFIG)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    log = tmp_path / "missing" / "err.log" if where == "missing-parent" else blocker / "err.log"
    marker = tmp_path / "ran"
    launch = launch_for(
        {
            "Label": "bad.log",
            "ProgramArguments": ["/bin/sh", "-c", f"touch {marker}"],
            "StandardErrorPath": str(log),
        }
    )
    with pytest.raises(JobSetupError) as caught:
        spawn(launch, status_file=tmp_path / "status.json")
    assert caught.value.launchd_exit == os.EX_CONFIG
    assert str(log) in caught.value.message
    assert isinstance(caught.value, EnvironmentUnusableError)
    assert not marker.exists()
    assert not (tmp_path / "status.json").exists()


def test_missing_working_directory_or_program_is_a_setup_failure(tmp_path: Path) -> None:
    """A WorkingDirectory that does not exist, or a program not found in the job's PATH, also
    fails before anything runs (modern launchd: last exit 78)."""
    no_dir = launch_for(
        {"Label": "x", "ProgramArguments": ["true"], "WorkingDirectory": str(tmp_path / "gone")}
    )
    no_program = launch_for({"Label": "x", "ProgramArguments": ["no-such-program-anywhere"]})
    for launch in (no_dir, no_program):
        with pytest.raises(JobSetupError):
            spawn(launch, status_file=None)


@pytest.mark.slow
def test_nice_and_umask_are_applied(start: Spawner, tmp_path: Path) -> None:
    """Nice sets the job's niceness (absolute, like setpriority) and Umask its file mask."""
    out = tmp_path / "nice.out"
    made = tmp_path / "made"
    script = f"import os; print(os.nice(0)); open({str(made)!r}, 'w').close()"
    _, status = start(
        ProgramArguments=[sys.executable, "-c", script],
        StandardOutPath=str(out),
        Nice=5,
        Umask="077",
    )
    assert _finished(status).exit_code == 0
    assert out.read_text() == "5\n"
    assert made.stat().st_mode & 0o777 == 0o600


def test_umask_is_read_like_strtoul() -> None:
    """Umask integers are taken as is; strings with a leading 0 are octal, 0x hex, else
    decimal; anything else is ignored."""
    assert parse_umask(18) == 0o022
    assert parse_umask("022") == 0o022
    assert parse_umask("0x12") == 0o022
    assert parse_umask("18") == 0o022
    assert parse_umask("nope") is None
    assert parse_umask(True) is None


@pytest.mark.slow
def test_job_is_detached_group_leader_and_its_status_is_recorded(
    start: Spawner, tmp_path: Path
) -> None:
    """The job is not the spawner's child, leads its own session and process group, and its
    raw wait status is recorded (exit 3 -> 768) when it ends."""
    gate = tmp_path / "gate"
    job, status = start(
        ProgramArguments=["/bin/sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.02; done; exit 3"]
    )
    assert os.getsid(job.pid) == job.pid
    assert os.getpgid(job.pid) == job.pid
    parent = int(Path(f"/proc/{job.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert parent == job.watcher_pid != os.getpid()
    assert process_token(job.pid) == job.start_token
    gate.write_text("")
    ended = _finished(status)
    assert (ended.pid, ended.wait_status, ended.exit_code, ended.signal) == (job.pid, 768, 3, None)
    assert ended.list_status == 3


@pytest.mark.slow
@pytest.mark.parametrize("abandon", [False, True])
def test_process_group_is_killed_after_main_exits(
    start: Spawner, tmp_path: Path, abandon: bool
) -> None:
    """After the main process exits, what is left in its process group gets SIGTERM, unless
    AbandonProcessGroup is true."""
    child_pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {child_pid_file}.tmp; mv {child_pid_file}.tmp {child_pid_file}"
    _, status = start(ProgramArguments=["/bin/sh", "-c", script], AbandonProcessGroup=abandon)
    _finished(status)
    child = int(child_pid_file.read_text())
    token = process_token(child)
    try:
        if abandon:
            assert token is not None
        else:
            _wait_for(lambda: process_token(child) is None, "the group member to be killed")
    finally:
        if token is not None and process_token(child) == token:
            os.kill(child, signal.SIGKILL)


@pytest.mark.slow
def test_run_foreground_reports_exit_and_stderr_tail(tmp_path: Path) -> None:
    """run_foreground waits for the job in launchd's environment: exit code, and the tail of
    stderr both when it is captured (no path) and when it goes to StandardErrorPath."""
    err = tmp_path / "err.log"
    err.write_text("older line\n")
    keys: dict[str, object] = {
        "Label": "fg",
        "ProgramArguments": ["/bin/sh", "-c", 'echo "oops $XPC_SERVICE_NAME" >&2; exit 3'],
    }
    captured = run_foreground(launch_for(keys), timeout=WAIT)
    to_file = run_foreground(launch_for({**keys, "StandardErrorPath": str(err)}), timeout=WAIT)
    assert (captured.exit_code, captured.signal, captured.timed_out) == (3, None, False)
    assert captured.stderr_tail == "oops fg\n"
    assert to_file.exit_code == 3
    assert to_file.stderr_tail == "oops fg\n"
    assert err.read_text() == "older line\noops fg\n"


@pytest.mark.slow
def test_run_foreground_stops_the_job_at_the_timeout() -> None:
    """At the timeout the job gets SIGTERM (then SIGKILL after ExitTimeOut)."""
    launch = JobLaunch(label="fg", argv=("sleep", "60"), env={"PATH": DEFAULT_PATH})
    result = run_foreground(launch, timeout=0.2)
    assert result.timed_out
    assert result.signal == signal.SIGTERM
    assert result.exit_code is None
