"""The lane entrypoint: claim, run, settle every job, and stop cleanly on a signal."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from lanekit.errors import EnvironmentUnusableError, ExitCode, QueueError, UsageError
from lanekit.queue import open_queue
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.recordstore import RecordStore
from lanekit.queue.memory import MemoryQueue
from lanekit.queue.model import Claim, RecordNotWrittenError, Settled, Verdict
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record
from lanekit.run import which_snapshot as runsnapshot
from lanekit.run.lanelock import LaneLock, lane_busy, lane_lock_path
from lanekit.run.lanelog import parse_line, read_events
from lanekit.run.runner import (
    job_argv,
    main,
    parse_args,
    run_lane,
)
from lanekit.run.stop import grace_seconds
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec

PY = sys.executable


# --- helpers ------------------------------------------------------------------------------


def make_spec(root: Path, command: Sequence[str], **overrides: object) -> RunSpec:
    """A RunSpec for lane `work` on a queue under `root` (created)."""
    queue_dir = root / "q"
    Queue(queue_dir).ensure()
    fields: dict[str, object] = {
        "lane": "work",
        "label": "test.work",
        "queue_dir": queue_dir,
        "command": tuple(command),
        "max_jobs": 100,
        "max_seconds": None,
        "max_attempts": 3,
        "stale_after": 3600.0,
        "exit_timeout": 5,
        "log_path": queue_dir / "logs" / "work.log",
        "durable": False,
    }
    fields.update(overrides)
    return RunSpec(**fields)  # type: ignore[arg-type]


def queue_of(spec: RunSpec) -> Queue:
    """The spec's queue (no backoff surprises: the runner uses the default backoff too)."""
    return Queue(spec.queue_dir, durable=False)


def events(spec: RunSpec) -> list[dict[str, str]]:
    """Every event in the lane log."""
    return list(read_events(spec.log_path))


def names(directory: Path) -> list[str]:
    """Job files in a directory (recursively, for done/ day buckets)."""
    return sorted(p.name for p in directory.rglob("*.json"))


def write_script(path: Path, body: str) -> Path:
    """A Python job script."""
    path.write_text(body)
    return path


class FakeJob:
    """A job that exits with `code` when waited for, recording signals sent to its group.

    `on_wait` runs while the runner waits (a stop raised there lands while the job runs);
    with `exit_first` the leader has already exited and been reaped when it runs (a stop
    raised there lands just after the job ended on its own)."""

    def __init__(self, code: int = 0, on_wait: object = None, *, exit_first: bool = False) -> None:
        self.pid = 999_999
        self.code = code
        self.on_wait = on_wait
        self.exit_first = exit_first
        self.alive = True
        self.signals: list[int] = []

    def wait(self) -> int:
        if self.exit_first:
            self.alive = False
        if callable(self.on_wait):
            self.on_wait()
        self.alive = False
        return self.code

    def signal_group(self, sig: int) -> None:
        self.signals.append(sig)

    def group_alive(self) -> bool:
        return False

    def leader_alive(self) -> bool:
        return self.alive


class FakeLauncher:
    """Records every (argv, env) it is asked to start, and the descriptors it is asked to
    pass, and hands out FakeJobs."""

    def __init__(self, *jobs: FakeJob) -> None:
        self.jobs = list(jobs)
        self.calls: list[tuple[list[str], dict[str, str]]] = []
        self.passed: list[tuple[int, ...]] = []

    def __call__(
        self, argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int] = ()
    ) -> FakeJob:
        self.calls.append((list(argv), dict(env)))
        self.passed.append(tuple(pass_fds))
        return self.jobs.pop(0) if self.jobs else FakeJob()


def sigterm_self() -> None:
    """What launchd's bootout does to the runner."""
    os.kill(os.getpid(), signal.SIGTERM)


@pytest.fixture
def root(paths: Paths) -> Path:
    """A work directory inside the test's Paths tree."""
    path = paths.home / "work"
    path.mkdir(parents=True)
    return path


# --- pure pieces --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exit_timeout", "grace"),
    [(5, 3.5), (20, 18.5), (2, 0.5), (1, 0.5), (0, 3.5), (-1, 3.5)],
)
def test_grace_is_shorter_than_exit_timeout(exit_timeout: int, grace: float) -> None:
    """The job's grace leaves 1.5 s before launchd's SIGKILL (at least 0.5 s; 0 = default 5)."""
    assert grace_seconds(exit_timeout) == grace


def test_job_placeholder_is_replaced_everywhere() -> None:
    """`{job}` becomes the claimed path in every argument, also inside one; nothing else moves."""
    argv = job_argv(("tool", "{job}", "--file={job}", "$HOME;*"), Path("/q/claimed/a.json"))
    assert argv == ["tool", "/q/claimed/a.json", "--file=/q/claimed/a.json", "$HOME;*"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["funnel"], ("funnel", None)),
        (["funnel", "--snapshot", "/s.json"], ("funnel", Path("/s.json"))),
        (["--snapshot", "/s.json", "funnel"], ("funnel", Path("/s.json"))),
        (["funnel", "--snapshot=/s.json"], ("funnel", Path("/s.json"))),
    ],
)
def test_parse_args_accepts(argv: list[str], expected: tuple[str, Path | None]) -> None:
    """LANE and an optional --snapshot PATH, in either order."""
    assert parse_args(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["a", "b"],
        ["funnel", "--snapshot"],
        ["funnel", "--bogus"],
        ["funnel", "--snapshot", "a", "--snapshot", "b"],
        ["funnel", "--snapshot=a", "--snapshot=b"],
        [""],
    ],
)
def test_parse_args_rejects(argv: list[str]) -> None:
    """Anything but `LANE [--snapshot PATH]` is a usage error."""
    with pytest.raises(UsageError, match="usage: lanekit run LANE"):
        parse_args(argv)


def test_bad_usage_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """main() turns bad usage into exit 2 and a single `error:` line on stderr."""
    assert main(["a", "b"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err == "error: usage: lanekit run LANE [--snapshot PATH]\n"


def test_snapshot_found_by_lane(root: Path, paths: Paths) -> None:
    """Without --snapshot, the installed snapshot whose lane matches is used."""
    spec = make_spec(root, ["true"])
    spec.write(paths.snapshot_for("test.work"))
    make_spec(root / "other", ["true"], lane="other", label="test.other").write(
        paths.snapshot_for("test.other")
    )
    assert runsnapshot.find_snapshot("work", paths.snapshots) == paths.snapshot_for("test.work")


def test_snapshot_lookup_errors(root: Path, paths: Paths) -> None:
    """No matching snapshot, or two of them, is a usage error that says what to do."""
    with pytest.raises(UsageError, match="no installed lane snapshot") as missing:
        runsnapshot.find_snapshot("work", paths.snapshots)
    assert "lanekit apply" in missing.value.hint
    spec = make_spec(root, ["true"])
    spec.write(paths.snapshot_for("a.work"))
    spec.write(paths.snapshot_for("b.work"))
    with pytest.raises(UsageError, match="several installed snapshots"):
        runsnapshot.find_snapshot("work", paths.snapshots)


def test_snapshot_for_another_lane_is_refused(root: Path) -> None:
    """A --snapshot whose lane differs from LANE is a usage error (a plist out of step)."""
    spec = make_spec(root, ["true"])
    spec.write(root / "snap.json")
    with pytest.raises(UsageError, match="snapshot is for lane work, not other"):
        runsnapshot.load_spec("other", root / "snap.json")


# --- runs with fake jobs ------------------------------------------------------------------


def test_empty_queue_exits_0_and_logs_start_and_finish(root: Path) -> None:
    """Nothing queued: exit 0, `start` and `finish reason=empty`, and no job started."""
    spec = make_spec(root, ["true"])
    launcher = FakeLauncher()
    result = run_lane(spec, launcher=launcher)
    assert (result.exit_code, result.reason, result.claimed) == (0, "empty", 0)
    assert [e["event"] for e in events(spec)] == ["start", "finish"]
    assert events(spec)[-1]["reason"] == "empty"
    assert launcher.calls == []


def test_jobs_get_their_identity_in_the_environment(root: Path) -> None:
    """Each job gets LANEKIT_JOB_ID, LANEKIT_JOB_FILE, LANEKIT_LANE, LANEKIT_ATTEMPT on top
    of the runner's environment, and `{job}` is the claimed file."""
    spec = make_spec(root, ["tool", "{job}"])
    job_id = queue_of(spec).enqueue({"n": 1})
    launcher = FakeLauncher()
    result = run_lane(spec, launcher=launcher, env={"PATH": "/usr/bin", "KEEP": "1"})
    assert result.done == 1
    [(argv, env)] = launcher.calls
    assert argv[0] == "tool"
    assert Path(argv[1]).parent == spec.queue_dir / "claimed"
    assert Path(argv[1]).name.startswith(job_id + ".")
    assert env == {
        "PATH": "/usr/bin",
        "KEEP": "1",
        "LANEKIT_JOB_ID": job_id,
        "LANEKIT_JOB_FILE": argv[1],
        "LANEKIT_LANE": "work",
        "LANEKIT_ATTEMPT": "1",
    }


def test_success_goes_to_done_and_is_recorded(root: Path) -> None:
    """Exit 0: the job is in done/, its record says succeeded, the log says claimed then done."""
    spec = make_spec(root, ["tool"])
    job_id = queue_of(spec).enqueue({"n": 1})
    result = run_lane(spec, launcher=FakeLauncher())
    assert (result.exit_code, result.done) == (0, 1)
    assert names(spec.queue_dir / "done") == [f"{job_id}.json"]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.lane) == (JobState.SUCCEEDED, 1, "work")
    log = events(spec)
    assert [e["event"] for e in log] == ["start", "claimed", "done", "finish"]
    assert log[1]["job"] == job_id
    assert log[1]["attempt"] == "1"
    assert log[2]["exit"] == "0"
    assert float(log[2]["duration"]) >= 0


def test_failure_is_requeued_with_backoff_then_failed(root: Path) -> None:
    """A non-zero exit spends an attempt: back via delayed/ (exit 1), and to failed/ with the
    reason once attempts run out."""
    spec = make_spec(root, ["tool"], max_attempts=1)
    queue = queue_of(spec)
    job_id = queue.enqueue({"n": 1})
    result = run_lane(spec, launcher=FakeLauncher(FakeJob(code=3)))
    assert (result.exit_code, result.failed) == (ExitCode.FAILURE, 1)
    assert names(spec.queue_dir / "failed") == [f"{job_id}.json"]
    assert "exit 3" in (spec.queue_dir / "failed" / f"{job_id}.error").read_text()
    failed = [e for e in events(spec) if e["event"] == "failed"]
    assert failed[0]["exit"] == "3"

    spec2 = make_spec(root / "two", ["tool"], max_attempts=3)
    other = queue_of(spec2).enqueue({"n": 2})
    result = run_lane(spec2, launcher=FakeLauncher(FakeJob(code=-9)))
    assert (result.exit_code, result.requeued) == (ExitCode.FAILURE, 1)
    assert [p.name.split(".")[0] for p in (spec2.queue_dir / "delayed").iterdir()] == [other]
    requeued = [e for e in events(spec2) if e["event"] == "requeued"]
    assert requeued[0]["error"] == "killed by signal 9"


def test_corrupt_job_fails_and_the_run_continues(root: Path) -> None:
    """A file that is not a JSON object goes to failed/ with the reason; the others still run."""
    spec = make_spec(root, ["tool"])
    queue = queue_of(spec)
    (spec.queue_dir / "queue" / "0-bad.json").write_text("[1, 2]")
    (spec.queue_dir / "queue" / "1-junk.json").write_text("not json")
    good = queue.enqueue({"n": 1})
    launcher = FakeLauncher()
    result = run_lane(spec, launcher=launcher)
    assert (result.exit_code, result.done, result.failed) == (ExitCode.FAILURE, 1, 2)
    assert len(launcher.calls) == 1
    assert names(spec.queue_dir / "done") == [f"{good}.json"]
    assert names(spec.queue_dir / "failed") == ["0-bad.json", "1-junk.json"]
    reasons = {e["job"]: e for e in events(spec) if e["event"] == "failed"}
    assert reasons["0-bad"]["reason"] == "corrupt"
    assert "array" in reasons["0-bad"]["error"]
    assert "not valid JSON" in reasons["1-junk"]["error"]


def test_already_succeeded_job_is_not_run_again(root: Path) -> None:
    """The guard: a job whose record says succeeded goes to done/ unrun, logged as skipped."""
    spec = make_spec(root, ["tool"])
    stamp = iso_utc(time.time())
    RecordStore(spec.queue_dir / "records").write(
        Record("again", JobState.SUCCEEDED, 1, stamp, stamp, lane="work")
    )
    (spec.queue_dir / "queue" / "again.json").write_text('{"n": 1}')
    launcher = FakeLauncher()
    result = run_lane(spec, launcher=launcher)
    assert (result.exit_code, result.skipped, result.done) == (0, 1, 0)
    assert launcher.calls == []
    assert any(n.startswith("again.") for n in names(spec.queue_dir / "done"))
    skipped = [e for e in events(spec) if e["event"] == "skipped"]
    assert skipped == [skipped[0]]
    assert (skipped[0]["job"], skipped[0]["reason"]) == ("again", "already-succeeded")


def test_max_jobs_limits_a_run(root: Path) -> None:
    """At most max_jobs jobs run; the rest stay queued for the next run."""
    spec = make_spec(root, ["tool"], max_jobs=2)
    queue = queue_of(spec)
    for n in range(5):
        queue.enqueue({"n": n})
    result = run_lane(spec, launcher=FakeLauncher())
    assert (result.done, result.reason) == (2, "max-jobs")
    assert queue.counts().queued == 3
    assert events(spec)[-1]["reason"] == "max-jobs"


def test_max_seconds_limits_a_run(root: Path) -> None:
    """No new job is claimed once max_seconds have passed (a running job is not cut short)."""
    spec = make_spec(root, ["tool"], max_seconds=10.0)
    queue = queue_of(spec)
    for n in range(5):
        queue.enqueue({"n": n})
    now = [0.0]

    def clock() -> float:
        return now[0]

    def slow() -> None:
        now[0] += 6.0

    result = run_lane(
        spec, launcher=FakeLauncher(*[FakeJob(on_wait=slow) for _ in range(5)]), clock=clock
    )
    assert (result.done, result.reason) == (2, "max-seconds")
    assert queue.counts().queued == 3


def test_lane_busy_exits_0_and_says_so(root: Path) -> None:
    """Another run holds the lane lock: exit 0, `skipped reason=lane-busy`, nothing claimed."""
    spec = make_spec(root, ["tool"])
    queue_of(spec).enqueue({"n": 1})
    lock = LaneLock(lane_lock_path(spec.queue_dir, "work"))
    assert lock.acquire()
    try:
        assert lane_busy(lock.path)
        launcher = FakeLauncher()
        result = run_lane(spec, launcher=launcher)
    finally:
        lock.release()
    assert (result.exit_code, result.reason, result.claimed) == (0, "lane-busy", 0)
    assert launcher.calls == []
    assert [(e["event"], e["reason"]) for e in events(spec)] == [("skipped", "lane-busy")]
    assert not lane_busy(lock.path)


def test_lane_lock_is_released_after_a_run(root: Path) -> None:
    """A finished run leaves the lane lock free, so the next run is not `lane-busy`."""
    spec = make_spec(root, ["tool"])
    run_lane(spec, launcher=FakeLauncher())
    assert not lane_busy(lane_lock_path(spec.queue_dir, "work"))
    assert run_lane(spec, launcher=FakeLauncher()).reason == "empty"


def test_missing_queue_is_exit_69(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A queue directory that is gone: exit 69, one error line naming it, and a hint."""
    spec = make_spec(
        root, ["tool"], queue_dir=root / "nowhere", log_path=root / "nowhere" / "logs" / "w.log"
    )
    spec.write(root / "snap.json")
    assert main(["work", "--snapshot", str(root / "snap.json")]) == ExitCode.UNAVAILABLE
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: ") and "nowhere" in err[0]
    assert err[1].startswith("hint: ")
    assert len(err) == 2
    with pytest.raises(QueueError):
        run_lane(spec, launcher=FakeLauncher())
    assert not (root / "nowhere").exists()


def test_unusable_queue_is_exit_69_even_when_it_holds_jobs(root: Path) -> None:
    """A queue that fails its check (here: a world-writable claimed/) moves no job: a fresh
    `lanekit run` exits 69 naming the directory, and the job stays queued."""
    spec = make_spec(root, ["tool"])
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    (spec.queue_dir / "claimed").chmod(0o777)
    try:
        proc = subprocess.run(
            [PY, "-m", "lanekit", "run", "work", "--snapshot", str(root / "snap.json")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        (spec.queue_dir / "claimed").chmod(0o700)
    assert proc.returncode == ExitCode.UNAVAILABLE
    assert "q/claimed: writable by" in proc.stderr
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    assert [e["event"] for e in events(spec)] == ["start", "error"]


def test_command_not_found_restores_the_job_and_exits_69(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command that cannot start is the lane's environment, not the job: the job goes back
    to queue/ without spending an attempt, the run exits 69, and the lane log and the job's
    record say why."""
    spec = make_spec(root, [str(root / "no-such-tool"), "{job}"])
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    assert main(["work", "--snapshot", str(root / "snap.json")]) == ExitCode.UNAVAILABLE
    assert "cannot start" in capsys.readouterr().err
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)
    assert record.error == f"cannot start {str(root / 'no-such-tool')!r}: No such file or directory"
    log = events(spec)
    assert [e["event"] for e in log] == ["start", "claimed", "requeued", "error"]
    assert log[2]["reason"] == "cannot-start"
    assert log[3]["exit"] == "69"


# --- a run by hand: jobs get the lane's environment, as under launchd ----------------------

LANE_ENV = {"PATH": "/usr/bin:/bin", "GREETING": "from lanes.toml", "LANEKIT_LANE": "work"}
"""The lane's EnvironmentVariables as its snapshot keeps them (lanekit.config.lane_environment)."""


def terminal(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    """This process as a terminal: a PATH with a directory the lane's `path` lacks (holding
    the tool `only-in-terminal`), GREETING and TERMINAL_ONLY of its own, and no
    XPC_SERVICE_NAME (launchd did not start it). The tool's path."""
    directory = root / "terminal-bin"
    directory.mkdir()
    tool = directory / "only-in-terminal"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GREETING", "from the terminal")
    monkeypatch.setenv("TERMINAL_ONLY", "1")
    monkeypatch.delenv("XPC_SERVICE_NAME", raising=False)
    return tool


def env_job(root: Path) -> tuple[list[str], Path]:
    """A job command that writes its whole environment as JSON to the file it returns."""
    seen = root / "seen.json"
    script = write_script(
        root / "env_job.py",
        "import json, os, sys\n"
        "with open(sys.argv[1], 'w') as out:\n"
        "    json.dump(dict(os.environ), out)\n",
    )
    return [PY, str(script), str(seen)], seen


def test_a_run_by_hand_gives_jobs_the_lanes_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit run LANE` in a terminal runs the job as launchd would: with the lane's PATH
    and env and what launchd adds (XPC_SERVICE_NAME), nothing of the terminal's."""
    terminal(monkeypatch, root)
    command, seen = env_job(root)
    spec = make_spec(root, command, environment=LANE_ENV)
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    assert main(["work", "--snapshot", str(root / "snap.json")]) == ExitCode.OK
    env = json.loads(seen.read_text())
    env.pop("LC_CTYPE", None)  # Python's own locale coercion (PEP 538) in the job
    assert env == {
        **LANE_ENV,
        "XPC_SERVICE_NAME": "test.work",
        "LANEKIT_JOB_ID": job_id,
        "LANEKIT_JOB_FILE": env["LANEKIT_JOB_FILE"],
        "LANEKIT_ATTEMPT": "1",
    }


def test_a_command_only_on_the_terminals_path_cannot_start_by_hand(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command found only on the terminal's PATH cannot start by hand either, as under
    launchd: the job goes back untouched and the run exits 69 (`lane.cannot-start` is then
    a true finding: launchd's runs would fail the same way)."""
    terminal(monkeypatch, root)
    spec = make_spec(root, ["only-in-terminal", "{job}"], environment=LANE_ENV)
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    assert main(["work", "--snapshot", str(root / "snap.json")]) == ExitCode.UNAVAILABLE
    assert "cannot start 'only-in-terminal'" in capsys.readouterr().err
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    assert [(e["event"], e.get("reason")) for e in events(spec)][1:3] == [
        ("claimed", None),
        ("requeued", "cannot-start"),
    ]


def test_a_run_launchd_started_keeps_the_environment_launchd_gave_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under launchd (XPC_SERVICE_NAME is the lane's label; the emulated domain and `lanekit
    try` set it too) the run's own environment is launchd's: jobs get it as it is, with
    whatever launchd or the emulated domain added (LANEKIT_LAUNCHD here)."""
    terminal(monkeypatch, root)
    monkeypatch.setenv("XPC_SERVICE_NAME", "test.work")
    command, seen = env_job(root)
    spec = make_spec(root, command, environment=LANE_ENV)
    queue_of(spec).enqueue({"n": 1})
    assert run_lane(spec).done == 1
    env = json.loads(seen.read_text())
    assert (env["GREETING"], env["TERMINAL_ONLY"], env["LANEKIT_LAUNCHD"]) == (
        "from the terminal",
        "1",
        "emulated",
    )


def test_a_snapshot_without_the_lanes_environment_keeps_the_callers(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot an older lanekit wrote has no `environment`: a run by hand cannot build
    launchd's, and gives jobs its own environment as before (`lanekit apply` rewrites it)."""
    terminal(monkeypatch, root)
    command, seen = env_job(root)
    spec = make_spec(root, command)
    queue_of(spec).enqueue({"n": 1})
    assert run_lane(spec).done == 1
    assert json.loads(seen.read_text())["GREETING"] == "from the terminal"


def test_unexpected_error_never_strands_a_claim(root: Path) -> None:
    """A bug while running a job still settles it: the claim goes back to queue/."""
    spec = make_spec(root, ["tool"])
    job_id = queue_of(spec).enqueue({"n": 1})

    def broken(argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int]) -> FakeJob:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_lane(spec, launcher=broken)
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    assert names(spec.queue_dir / "claimed") == []
    assert events(spec)[-1]["reason"] == "runner-error"
    assert not lane_busy(lane_lock_path(spec.queue_dir, "work"))


def test_stop_signal_is_forwarded_and_the_job_restored(root: Path) -> None:
    """SIGTERM while a job runs: the job's group gets SIGTERM, the job goes back to queue/
    without spending an attempt, nothing more is claimed, and the run exits 75."""
    spec = make_spec(root, ["tool"])
    queue = queue_of(spec)
    queue.enqueue({"n": 1})
    queue.enqueue({"n": 2})
    job = FakeJob(code=-15, on_wait=lambda: os.kill(os.getpid(), signal.SIGTERM))
    launcher = FakeLauncher(job)
    previous = signal.getsignal(signal.SIGTERM)
    result = run_lane(spec, launcher=launcher)
    assert signal.getsignal(signal.SIGTERM) == previous
    assert (result.exit_code, result.reason, result.signum) == (75, "signal", signal.SIGTERM)
    assert job.signals == [signal.SIGTERM]
    assert len(launcher.calls) == 1
    assert queue.counts().queued == 2
    ran = launcher.calls[0][1]["LANEKIT_JOB_ID"]
    record = RecordStore(spec.queue_dir / "records").read(ran)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)
    requeued = [e for e in events(spec) if e["event"] == "requeued"]
    assert [(e["job"], e["reason"]) for e in requeued] == [(ran, "signal")]


def test_stop_during_a_claim_starts_nothing(root: Path) -> None:
    """A stop that lands while a job is being claimed: that job is given back unstarted."""
    spec = make_spec(root, ["tool"], max_seconds=1000.0)
    queue = queue_of(spec)
    job_id = queue.enqueue({"n": 1})
    calls = [0]

    def clock() -> float:
        calls[0] += 1
        if calls[0] == 2:  # the deadline check just before the first claim
            os.kill(os.getpid(), signal.SIGTERM)
        return 0.0

    launcher = FakeLauncher()
    result = run_lane(spec, launcher=launcher, clock=clock)
    assert (result.exit_code, result.requeued) == (ExitCode.INTERRUPTED, 1)
    assert launcher.calls == []
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)


@pytest.mark.parametrize("exit_first", [True, False], ids=["stop-after-exit", "stop-handled"])
def test_job_that_exits_0_is_done_even_when_a_stop_arrives(root: Path, exit_first: bool) -> None:
    """Exit 0 decides: a job that succeeded is completed whether the stop landed just after it
    exited or it handled the forwarded SIGTERM and finished; it never runs again, and the run
    still exits 75."""
    spec = make_spec(root, ["tool"])
    job_id = queue_of(spec).enqueue({"n": 1})
    job = FakeJob(code=0, on_wait=sigterm_self, exit_first=exit_first)
    result = run_lane(spec, launcher=FakeLauncher(job))
    assert (result.exit_code, result.done, result.requeued) == (ExitCode.INTERRUPTED, 1, 0)
    assert names(spec.queue_dir / "done") == [f"{job_id}.json"]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert record.state is JobState.SUCCEEDED
    assert [e["event"] for e in events(spec)] == ["start", "claimed", "done", "finish"]
    again = FakeLauncher()
    assert run_lane(spec, launcher=again).reason == "empty"
    assert again.calls == []


def test_job_that_failed_before_a_stop_spends_its_attempt(root: Path) -> None:
    """A job that exited non-zero on its own before the stop reached it is a failure like any
    other (attempt spent, backoff), not a stopped job; nothing more runs and the run exits 75."""
    spec = make_spec(root, ["tool"])
    queue = queue_of(spec)
    queue.enqueue({"n": 1})
    queue.enqueue({"n": 2})
    launcher = FakeLauncher(FakeJob(code=3, on_wait=sigterm_self, exit_first=True))
    result = run_lane(spec, launcher=launcher)
    assert (result.exit_code, result.reason, result.requeued) == (ExitCode.INTERRUPTED, "signal", 1)
    [(_, env)] = launcher.calls
    job_id = env["LANEKIT_JOB_ID"]
    assert [p.name.split(".")[0] for p in (spec.queue_dir / "delayed").iterdir()] == [job_id]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.error) == (JobState.QUEUED, 1, "exit 3")
    [requeued] = [e for e in events(spec) if e["event"] == "requeued"]
    assert (requeued.get("reason"), requeued["exit"], requeued["error"]) == (None, "3", "exit 3")


def test_the_job_is_given_the_claim_lock(root: Path) -> None:
    """The job is started holding the claim's flock (one descriptor passed: the locked claimed
    file), so the claim stays locked for as long as the job lives."""
    spec = make_spec(root, ["tool"])
    job_id = queue_of(spec).enqueue({"n": 1})
    seen: list[tuple[bool, bool]] = []

    def launcher(
        argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int] = ()
    ) -> FakeJob:
        claimed = os.stat(env["LANEKIT_JOB_FILE"])
        for fd in pass_fds:
            same = (os.fstat(fd).st_ino, os.fstat(fd).st_dev) == (claimed.st_ino, claimed.st_dev)
            probe = os.open(env["LANEKIT_JOB_FILE"], os.O_RDONLY)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = False
            except BlockingIOError:
                locked = True
            finally:
                os.close(probe)
            seen.append((same, locked))
        return FakeJob()

    result = run_lane(spec, launcher=launcher)
    assert result.done == 1
    assert seen == [(True, True)]
    assert names(spec.queue_dir / "done") == [f"{job_id}.json"]


@pytest.mark.parametrize(("code", "event"), [(0, "done"), (3, "failed")])
def test_unwritten_final_record_is_logged_and_exits_69(root: Path, code: int, event: str) -> None:
    """When the final record cannot be written (here: its path is taken by a directory) the
    job still moves to done/ or failed/; the lane log says so with record=unwritten, and the
    run stops with exit 69 without touching the settled claim again."""
    spec = make_spec(root, ["tool"], max_attempts=1)
    queue = queue_of(spec)
    queue.enqueue({"n": 1})
    queue.enqueue({"n": 2})
    started: list[str] = []

    def launcher(
        argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int] = ()
    ) -> FakeJob:
        started.append(env["LANEKIT_JOB_ID"])
        record = spec.queue_dir / "records" / f"{env['LANEKIT_JOB_ID']}.json"
        record.unlink()
        record.mkdir()
        (record / "blocker").touch()
        return FakeJob(code=code)

    with pytest.raises(RecordNotWrittenError) as caught:
        run_lane(spec, launcher=launcher)
    assert caught.value.exit_code == ExitCode.UNAVAILABLE
    [job_id] = started
    where = "done" if code == 0 else "failed"
    assert names(spec.queue_dir / where) == [f"{job_id}.json"]
    assert names(spec.queue_dir / "claimed") == []
    assert queue.counts().queued == 1
    log = events(spec)
    assert [e["event"] for e in log] == ["start", "claimed", event]
    assert (log[-1]["job"], log[-1]["exit"], log[-1]["record"]) == (job_id, str(code), "unwritten")


def test_every_log_line_parses(root: Path) -> None:
    """Every line the runner writes is logfmt with ts, lane and event."""
    spec = make_spec(root, ["tool"], max_attempts=1)
    queue = queue_of(spec)
    for n in range(3):
        queue.enqueue({"n": n, "text": 'quotes " and = and spaces'})
    (spec.queue_dir / "queue" / "0-bad.json").write_text('"a string"')
    run_lane(spec, launcher=FakeLauncher(FakeJob(code=1), FakeJob(code=0)))
    lines = spec.log_path.read_text().splitlines()
    assert len(lines) >= 7
    for line in lines:
        fields = parse_line(line)
        assert {"ts", "lane", "event"} <= fields.keys()
        assert fields["lane"] == "work"


def test_log_rotates_at_start(root: Path) -> None:
    """A lane log over log_max_bytes is rotated before the run writes to it."""
    spec = make_spec(root, ["tool"], log_max_bytes=100, log_keep=2)
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    spec.log_path.write_text("x" * 200)
    run_lane(spec, launcher=FakeLauncher())
    assert (spec.log_path.parent / "work.log.1").read_text() == "x" * 200
    assert [e["event"] for e in events(spec)] == ["start", "finish"]


# --- real processes -----------------------------------------------------------------------


def test_real_jobs_run_without_a_shell(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command is an argv: `;` and `$(...)` reach the program literally, no shell runs."""
    out = root / "argv.json"
    script = write_script(
        root / "job.py",
        "import json, os, sys\n"
        f"open({str(out)!r}, 'w').write(json.dumps("
        "{'argv': sys.argv[1:], 'id': os.environ['LANEKIT_JOB_ID'], "
        "'payload': json.load(open(sys.argv[-1]))}))\n",
    )
    spec = make_spec(root, [PY, str(script), "a; touch pwned", "$(touch pwned2)", "{job}"])
    job_id = queue_of(spec).enqueue({"n": 7})
    monkeypatch.chdir(root)  # a shell would create pwned files here
    result = run_lane(spec)
    assert result.done == 1
    seen = json.loads(out.read_text())
    assert seen["argv"][:2] == ["a; touch pwned", "$(touch pwned2)"]
    assert (seen["id"], seen["payload"]) == (job_id, {"n": 7})
    assert not (root / "pwned").exists()
    assert not (root / "pwned2").exists()


def test_real_job_exit_code_is_seen(root: Path) -> None:
    """A real job's non-zero exit is recorded with its code."""
    spec = make_spec(root, [PY, "-c", "import sys; sys.exit(4)"])
    queue_of(spec).enqueue({"n": 1})
    result = run_lane(spec)
    assert result.requeued == 1
    assert [e["exit"] for e in events(spec) if e["event"] == "requeued"] == ["4"]


def _start_runner(snapshot: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-m", "lanekit", "run", "work", "--snapshot", str(snapshot)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.02)


def _wait_gone(pid: int, timeout: float = 30.0) -> None:
    """Wait until `pid` no longer exists (zombies included: it is not our child)."""
    deadline = time.monotonic() + timeout
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} still there")
        time.sleep(0.02)


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def job_scripts(root: Path) -> Iterator[dict[str, Path]]:
    """A job whose process group has a second member; each member notes the signals it got.

    The leader writes `started` (with its pid) and waits; a child in the same group writes
    `child-got-<sig>` when signalled. With IGNORE=1 the leader ignores SIGTERM (so only
    SIGKILL ends it)."""
    child = write_script(
        root / "child.py",
        "import os, signal, sys, time\n"
        "def note(sig, frame):\n"
        "    open(sys.argv[1] + f'/child-got-{sig}', 'w').close()\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, note)\n"
        "open(sys.argv[1] + '/child-ready', 'w').close()\n"
        "time.sleep(60)\n",
    )
    leader = write_script(
        root / "leader.py",
        "import os, signal, subprocess, sys, time\n"
        "marks = sys.argv[1]\n"
        "if os.path.exists(marks + '/started') and os.environ.get('SECOND_RUN_OK'):\n"
        "    open(marks + '/second-run', 'w').close()\n"
        "    sys.exit(0)\n"
        "if os.environ.get('IGNORE'):\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"child = subprocess.Popen([sys.executable, {str(child)!r}, marks])\n"
        "while not os.path.exists(marks + '/child-ready'):\n"
        "    time.sleep(0.01)\n"
        "open(marks + '/started.tmp', 'w').write(str(os.getpid()))\n"
        "os.replace(marks + '/started.tmp', marks + '/started')  # never seen empty\n"
        "time.sleep(60)\n",
    )
    marks = root / "marks"
    marks.mkdir()
    yield {"leader": leader, "marks": marks}


@pytest.mark.slow
def test_sigterm_mid_job_restores_it_and_exits_75(root: Path, job_scripts: dict[str, Path]) -> None:
    """A real `lanekit run` gets SIGTERM while its job runs: the job's process group gets
    SIGTERM, the job is back in queue/ with no attempt spent, and the runner exits 75."""
    marks = job_scripts["marks"]
    spec = make_spec(root, [PY, str(job_scripts["leader"]), str(marks)])
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    proc = _start_runner(root / "snap.json")
    try:
        _wait_for(marks / "started")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == ExitCode.INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (marks / f"child-got-{int(signal.SIGTERM)}").exists()
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    assert names(spec.queue_dir / "claimed") == []
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)
    log = events(spec)
    assert [e["event"] for e in log][-2:] == ["requeued", "finish"]
    assert (log[-2]["reason"], log[-1]["exit"]) == ("signal", "75")


@pytest.mark.slow
def test_job_ignoring_sigterm_is_killed_within_the_grace(
    root: Path, job_scripts: dict[str, Path]
) -> None:
    """A job that ignores SIGTERM gets SIGKILL after the grace (ExitTimeOut 2 -> 0.5 s), so
    the runner still restores it and exits 75 before launchd would kill the runner."""
    marks = job_scripts["marks"]
    spec = make_spec(root, [PY, str(job_scripts["leader"]), str(marks)], exit_timeout=2)
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    proc = subprocess.Popen(
        [PY, "-m", "lanekit", "run", "work", "--snapshot", str(root / "snap.json")],
        env={**os.environ, "IGNORE": "1"},
    )
    try:
        _wait_for(marks / "started")
        leader_pid = int((marks / "started").read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == ExitCode.INTERRUPTED
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _pid_gone(leader_pid)
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]
    requeued = [e for e in events(spec) if e["event"] == "requeued"]
    assert requeued[0]["exit"] == str(-int(signal.SIGKILL))


@pytest.mark.slow
def test_sigkill_mid_job_then_next_run_recovers(root: Path, job_scripts: dict[str, Path]) -> None:
    """The runner and the job's watcher are SIGKILLed mid-job (no finally runs, no status is
    written), then the job: it did not finish, so the next run recovers the claim and runs it
    again, as the same attempt (a crash spends none)."""
    marks = job_scripts["marks"]
    spec = make_spec(root, [PY, str(job_scripts["leader"]), str(marks)])
    job_id = queue_of(spec).enqueue({"n": 1})
    spec.write(root / "snap.json")
    proc = _start_runner(root / "snap.json")
    try:
        _wait_for(marks / "started")
        leader_pid = int((marks / "started").read_text())
        watcher_pid = psutil.Process(leader_pid).ppid()
        proc.kill()
        proc.wait(timeout=30)
        os.kill(watcher_pid, signal.SIGKILL)
        _wait_gone(watcher_pid)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The orphaned job keeps its own process group; end it so the test leaves nothing behind.
    os.killpg(leader_pid, signal.SIGKILL)
    assert len(names(spec.queue_dir / "claimed")) == 1
    second = subprocess.run(
        [PY, "-m", "lanekit", "run", "work", "--snapshot", str(root / "snap.json")],
        env={**os.environ, "SECOND_RUN_OK": "1"},
        timeout=60,
        check=False,
    )
    assert second.returncode == 0
    assert (marks / "second-run").exists()
    assert names(spec.queue_dir / "done") == [f"{job_id}.json"]
    recovered = [e for e in events(spec) if e["event"] == "recovered"]
    assert [(e["job"], e["reason"], e["to"]) for e in recovered] == [
        (job_id, "owner-dead", "queued")
    ]
    record = RecordStore(spec.queue_dir / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.SUCCEEDED, 1)


def _ended(pid: int) -> bool:
    """Gone, or a zombie: an orphan's new parent may reap it late (some container inits never
    do), but a zombie holds no lock and runs nothing."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_ended(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not _ended(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} still runs")
        time.sleep(0.02)


def _write_pid(marks: Path, name: str) -> str:
    """Script lines that publish the process's pid as marks/<name>, atomically."""
    return (
        f"open(sys.argv[1] + '/{name}.tmp', 'w').write(str(os.getpid()))\n"
        f"os.replace(sys.argv[1] + '/{name}.tmp', sys.argv[1] + '/{name}')\n"
    )


@pytest.mark.slow
def test_runner_sigkilled_mid_job_leaves_the_claim_locked_while_the_job_lives(root: Path) -> None:
    """The job's watcher holds the claim's lock: when only the runner is SIGKILLed, recover()
    leaves the claim alone while the orphaned job still runs (no second execution beside it),
    and once the job has exited settles it by the status its watcher recorded (killed by
    signal 9: a failure, retried after its backoff)."""
    marks = root / "marks"
    marks.mkdir()
    script = write_script(
        root / "sleeper.py",
        "import os, sys, time\n" + _write_pid(marks, "job") + "time.sleep(60)\n",
    )
    spec = make_spec(root, [PY, str(script), str(marks)])
    queue = queue_of(spec)
    job_id = queue.enqueue({"n": 1})
    spec.write(root / "snap.json")
    proc = _start_runner(root / "snap.json")
    job_pid = None
    try:
        _wait_for(marks / "job")
        job_pid = int((marks / "job").read_text())
        proc.kill()
        proc.wait(timeout=30)
        assert queue.recover(stale_after=3600.0, max_attempts=3) == []
        assert len(names(spec.queue_dir / "claimed")) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
        if job_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job_pid, signal.SIGKILL)
    assert job_pid is not None
    _wait_ended(job_pid)
    deadline = time.monotonic() + 30
    while not (recovered := queue.recover(stale_after=3600.0, max_attempts=3)):
        assert time.monotonic() < deadline, "the watcher never let go of the claim"
        time.sleep(0.05)
    assert [(item.job_id, str(item.reason), item.exit) for item in recovered] == [
        (job_id, "owner-dead", -9)
    ]
    assert [n.startswith(job_id) for n in names(spec.queue_dir / "delayed")] == [True]
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.error) == (
        JobState.QUEUED,
        1,
        "killed by signal 9",
    )


@pytest.mark.slow
def test_processes_a_job_leaves_behind_end_before_its_claim_is_settled(root: Path) -> None:
    """A job whose leader exits while processes it started keep running: they get SIGTERM
    while the job file is still in claimed/, and one that ignores SIGTERM gets SIGKILL, so
    nothing of the job works beside its retry (launchd's AbandonProcessGroup=false)."""
    marks = root / "marks"
    marks.mkdir()
    polite = write_script(
        root / "polite.py",
        "import os, signal, sys, time\n"
        "def note(sig, frame):\n"
        "    job = os.environ['LANEKIT_JOB_FILE']\n"
        "    where = 'claimed' if os.path.exists(job) else 'settled'\n"
        "    open(sys.argv[1] + '/polite-got-term', 'w').write(where)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, note)\n" + _write_pid(marks, "polite") + "time.sleep(60)\n",
    )
    stubborn = write_script(
        root / "stubborn.py",
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        + _write_pid(marks, "stubborn")
        + "time.sleep(60)\n",
    )
    leader = write_script(
        root / "leader.py",
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(polite)!r}, sys.argv[1]])\n"
        f"subprocess.Popen([sys.executable, {str(stubborn)!r}, sys.argv[1]])\n"
        "while not all(os.path.exists(sys.argv[1] + n) for n in ('/polite', '/stubborn')):\n"
        "    time.sleep(0.01)\n"
        "sys.exit(1)\n",
    )
    spec = make_spec(root, [PY, str(leader), str(marks)])
    queue_of(spec).enqueue({"n": 1})
    try:
        result = run_lane(spec)
        assert (result.requeued, result.exit_code) == (1, ExitCode.FAILURE)
        assert (marks / "polite-got-term").read_text() == "claimed"
        _wait_ended(int((marks / "stubborn").read_text()))
    finally:
        for name in ("polite", "stubborn"):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
                os.kill(int((marks / name).read_text()), signal.SIGKILL)


@pytest.mark.slow
def test_lane_busy_process_exits_0(root: Path) -> None:
    """A second `lanekit run` of a lane that is running exits 0 at once, logging lane-busy."""
    spec = make_spec(root, ["true"])
    spec.write(root / "snap.json")
    lock = LaneLock(lane_lock_path(spec.queue_dir, "work"))
    assert lock.acquire()
    try:
        proc = subprocess.run(
            [PY, "-m", "lanekit", "run", "work", "--snapshot", str(root / "snap.json")],
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        lock.release()
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert [e["reason"] for e in events(spec)] == ["lane-busy"]


def test_a_start_refused_with_eperm_is_logged_as_not_permitted(root: Path) -> None:
    """macOS privacy protection refuses a launchd job with EPERM (Operation not permitted),
    not EACCES: the lane log says `reason=not-permitted` and the error points at Full Disk
    Access; the job goes back to queue/ unspent."""
    import errno

    spec = make_spec(root, ["tool", "{job}"])
    job_id = queue_of(spec).enqueue({"n": 1})

    def refused(argv: Sequence[str], env: Mapping[str, str], fds: Sequence[int] = ()) -> Any:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    with pytest.raises(EnvironmentUnusableError) as caught:
        run_lane(spec, launcher=refused)
    assert "Full Disk Access" in caught.value.hint
    log = events(spec)
    assert [e["event"] for e in log][-1] == "requeued"
    assert log[-1]["reason"] == "not-permitted"
    assert names(spec.queue_dir / "queue") == [f"{job_id}.json"]


def test_a_run_claims_with_its_queues_max_job_bytes(root: Path) -> None:
    """The lane's snapshot carries its queue's `max_job_bytes`, and the run's queue applies it:
    a job file dropped in queue/ over that size goes to failed/ unread, a smaller one runs."""
    spec = make_spec(root, ["/bin/true"], max_job_bytes=64)
    queue_dir = spec.queue_dir
    (queue_dir / "queue" / "small.json").write_text('{"n": 1}')
    (queue_dir / "queue" / "large.json").write_text('{"pad": "' + "x" * 100 + '"}')
    result = run_lane(spec, env={"PATH": "/usr/bin:/bin"})
    assert (result.done, names(queue_dir / "failed")) == (1, ["large.json"])
    assert "64" in (queue_dir / "failed" / "large.error").read_text()


# --- on the in-memory backend -------------------------------------------------------------


def memory_spec(root: Path, location: str, command: Sequence[str], **overrides: object) -> RunSpec:
    """A RunSpec for lane `work` on the in-memory queue at `location`, its log under `root`."""
    fields: dict[str, object] = {
        "lane": "work",
        "label": "test.work",
        "queue_dir": Path(location),
        "command": tuple(command),
        "max_jobs": 100,
        "max_seconds": None,
        "max_attempts": 3,
        "stale_after": 3600.0,
        "exit_timeout": 5,
        "log_path": root / "logs" / "work.log",
    }
    fields.update(overrides)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    return RunSpec(**fields)  # type: ignore[arg-type]


def test_a_run_drains_the_memory_queue(root: Path, memory_queue: str) -> None:
    """The runner opens its queue through the factory, so a memory queue is drained like a
    directory: the job gets its payload as a file, succeeds once, and the log says so."""
    queue = open_queue(memory_queue)
    job_id = queue.enqueue({"n": 1})
    spec = memory_spec(root, memory_queue, ["tool", "{job}"])
    seen: list[bytes] = []
    launcher = FakeLauncher(FakeJob(on_wait=lambda: seen.append(Path(argv()[1]).read_bytes())))

    def argv() -> list[str]:
        return launcher.calls[-1][0]

    result = run_lane(spec, launcher=launcher, env={"PATH": "/usr/bin"})
    assert (result.exit_code, result.claimed, result.done) == (0, 1, 1)
    assert [json.loads(data) for data in seen] == [{"n": 1}]
    assert launcher.passed == [()]  # no descriptor keeps a memory claim: its owner does
    assert queue.succeeded(job_id)
    view = queue.job(job_id)
    assert view is not None and view.record is not None
    assert (view.state, view.record.attempts, view.record.lane) == (JobState.SUCCEEDED, 1, "work")
    assert [e["event"] for e in events(spec)] == ["start", "claimed", "done", "finish"]


@pytest.mark.parametrize(
    ("max_jobs", "steps", "claims", "done", "queued"),
    [
        (100, 4, 2, 3, 0),  # every settle chains into the next claim; the last finds none
        (2, 1, 1, 2, 2),  # the second job's settle claims nothing: max_jobs is reached
    ],
    ids=["drain", "max-jobs"],
)
def test_a_run_settles_each_job_together_with_the_next_claim(
    root: Path,
    memory_queue: str,
    monkeypatch: pytest.MonkeyPatch,
    max_jobs: int,
    steps: int,
    claims: int,
    done: int,
    queued: int,
) -> None:
    """A run that goes on to its next job settles the one that ran (a success or a failure)
    and claims the next in one step (JobClaimer.settle_and_claim: one statement on a server
    queue); claim() alone only starts the run and looks again once a step found nothing.
    Where the run would claim nothing more (max_jobs), the settle claims nothing either."""
    from lanekit.queue.memory import MemoryClaimer

    calls = {"claim": 0, "settle_and_claim": 0}
    inside = [False]
    real_claim, real_step = MemoryClaimer.claim, MemoryClaimer.settle_and_claim

    def claim(self: MemoryClaimer) -> Claim | None:
        calls["claim"] += not inside[0]  # the runner's own claims, not the step's
        return real_claim(self)

    def step(self: MemoryClaimer, claim: Claim, verdict: Verdict) -> tuple[Settled, Claim | None]:
        calls["settle_and_claim"] += 1
        inside[0] = True
        try:
            return real_step(self, claim, verdict)
        finally:
            inside[0] = False

    monkeypatch.setattr(MemoryClaimer, "claim", claim)
    monkeypatch.setattr(MemoryClaimer, "settle_and_claim", step)
    queue = open_queue(memory_queue)
    for n in range(4):
        queue.enqueue({"n": n})
    spec = memory_spec(root, memory_queue, ["tool"], max_jobs=max_jobs)
    codes = [0, 1, 0, 0] if max_jobs > 2 else [0, 0]
    result = run_lane(spec, launcher=FakeLauncher(*[FakeJob(code) for code in codes]))
    assert calls == {"claim": claims, "settle_and_claim": steps}
    counts = queue.counts()
    assert (result.claimed, result.done, counts.done) == (len(codes), done, done)
    assert (counts.claimed, counts.queued, counts.delayed) == (0, queued, 4 - done - queued)


def test_a_failing_job_on_the_memory_queue_spends_its_attempts(
    root: Path, memory_queue: str
) -> None:
    """A non-zero exit fails the job for good at max_attempts, with its reason, as on disk."""
    queue = open_queue(memory_queue)
    job_id = queue.enqueue({"n": 1})
    spec = memory_spec(root, memory_queue, ["tool"], max_attempts=1)
    result = run_lane(spec, launcher=FakeLauncher(FakeJob(code=3)))
    assert (result.exit_code, result.failed) == (ExitCode.FAILURE, 1)
    assert queue.failed_ids() == [job_id]
    view = queue.job(job_id)
    assert view is not None and view.error is not None and "exit 3" in view.error


def test_a_dead_runners_memory_claim_is_recovered_by_the_next_run(
    root: Path, memory_queue: str
) -> None:
    """A claim whose owner is gone is given back by the next run, unspent, and runs."""
    queue = open_queue(memory_queue)
    assert isinstance(queue, MemoryQueue)
    job_id = queue.enqueue({"n": 1})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.owner_gone(claim.owner)
    spec = memory_spec(root, memory_queue, ["tool"])
    result = run_lane(spec, launcher=FakeLauncher())
    assert (result.recovered, result.done) == (1, 1)
    recovered = [e for e in events(spec) if e["event"] == "recovered"]
    assert (recovered[0]["job"], recovered[0]["to"]) == (job_id, "queued")
    view = queue.job(job_id)
    assert view is not None and view.record is not None and view.record.attempts == 1


def test_a_memory_queue_lanes_lock_sits_beside_its_log(root: Path, memory_queue: str) -> None:
    """A queue with no directory here keeps the lane lock beside the lane log; held, the run
    is `lane-busy` and claims nothing."""
    queue = open_queue(memory_queue)
    queue.enqueue({"n": 1})
    spec = memory_spec(root, memory_queue, ["tool"])
    path = lane_lock_path(spec.queue_dir, "work", spec.log_path)
    assert path == spec.log_path.parent / "work.lock"
    lock = LaneLock(path)
    assert lock.acquire()
    try:
        result = run_lane(spec, launcher=FakeLauncher())
    finally:
        lock.release()
    assert (result.reason, result.claimed, queue.counts().queued) == ("lane-busy", 0, 1)


def test_a_real_job_runs_from_the_memory_queue_through_its_watcher(
    root: Path, memory_queue: str
) -> None:
    """Without a launcher the job runs under the run's watcher, which records its end beside
    the job file: a real command reads its payload and succeeds, another fails with its
    exit status; the memory queue settles both."""
    queue = open_queue(memory_queue)
    good = queue.enqueue({"exit": 0}, job_id="good")
    bad = queue.enqueue({"exit": 4}, job_id="bad")
    script = write_script(
        root / "job.py", "import json, sys\nsys.exit(json.load(open(sys.argv[1]))['exit'])\n"
    )
    spec = memory_spec(root, memory_queue, [PY, str(script), "{job}"], max_attempts=1)
    result = run_lane(spec, env={"PATH": "/usr/bin:/bin"})
    assert (result.done, result.failed) == (1, 1)
    assert queue.succeeded(good) and queue.failed_ids() == [bad]
    view = queue.job(bad)
    assert view is not None and view.error is not None and view.error.startswith("exit 4")
