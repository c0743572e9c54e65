"""The lane entrypoint launchd executes: `python -m lanekit run LANE --snapshot PATH`.

One run: rotate the lane log, take the lane lock (held -> exit 0, `skipped reason=lane-busy`),
check the queue, move due retries back, recover dead claims, then claim and run jobs until the
queue is empty, `max_jobs` ran or `max_seconds` passed. Every claimed job is settled in a
`finally`: exit 0 -> done/, otherwise back to queue/ (with backoff) or to failed/.

SIGTERM / SIGINT / SIGHUP (launchd's bootout, Ctrl-C, a closed terminal) are forwarded to the
job's process group; after a grace shorter than the lane's ExitTimeOut the group gets SIGKILL,
the job goes back to queue/ without spending an attempt, and the run exits 75.

Start-up on an empty queue is a benchmark figure, so this module imports only the stdlib and
lanekit's small core modules; jobs are started with os.posix_spawnp (no subprocess import).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lanekit.errors import EnvironmentUnusableError, ExitCode, LanekitError, UsageError
from lanekit.lanelog import LaneLog, rotate_if_needed
from lanekit.snapshot import DEFAULT_EXIT_TIMEOUT, RunSpec

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import FrameType
    from typing import Any, Protocol, TypeAlias

    from lanekit.queue import Claim, Dropped, Queue

    class Job(Protocol):
        """A started job command: the leader of its own process group."""

        pid: int

        def wait(self) -> int:
            """Block until the leader exits; its exit code, or -N when killed by signal N."""

        def signal_group(self, sig: int) -> None:
            """Send `sig` to the job's whole process group (no error if it is already gone)."""

        def group_alive(self) -> bool:
            """Whether any process of the job's group is still alive."""

    Launcher: TypeAlias = Callable[[Sequence[str], Mapping[str, str]], Job]
    """Starts a job command (argv, env); tests pass fakes, the runner uses spawn_job."""

USAGE = "usage: lanekit run LANE [--snapshot PATH]"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
MIN_GRACE = 0.5
GRACE_MARGIN = 1.5
"""Seconds kept in hand before launchd's SIGKILL: time to reap the job and release its claim."""


def grace_seconds(exit_timeout: int) -> float:
    """How long a stopped job may take to exit before its group gets SIGKILL. launchd kills
    the runner itself ExitTimeOut seconds after SIGTERM (0 means never; the modern default
    is 5), so the job's grace ends early enough to put the job back in the queue first."""
    timeout = exit_timeout if exit_timeout > 0 else DEFAULT_EXIT_TIMEOUT
    return max(MIN_GRACE, timeout - GRACE_MARGIN)


# --- the lane lock ------------------------------------------------------------------------


def lane_lock_path(queue_dir: Path, lane: str) -> Path:
    """The flock every run of `lane` holds for its whole life (and `apply` holds across a
    reload). It lives in the queue's logs/ directory, next to the lane log."""
    return queue_dir / "logs" / f"{lane}.lock"


class LaneLock:
    """A non-blocking flock on the lane lock file. The kernel drops it when the holder dies,
    however it dies, so a stale lock file never blocks a lane."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False when another process holds it. Raises OSError when the lock
        file cannot be opened (its directory is missing or unwritable)."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases the flock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None


def lane_busy(path: Path) -> bool:
    """True when some process holds the lane lock at `path` (a run is in progress)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# --- starting jobs ------------------------------------------------------------------------


class SpawnedJob:
    """A job started with posix_spawn in a new process group (pgid == pid); see Job."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> int:
        """Reap the leader: its exit code, or -N when signal N killed it."""
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def signal_group(self, sig: int) -> None:
        """Signal the whole group; a group that is already gone is not an error."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def group_alive(self) -> bool:
        """Whether any member of the group still exists (signal 0 probes without sending)."""
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def spawn_job(argv: Sequence[str], env: Mapping[str, str]) -> Job:
    """Start `argv` (no shell; argv[0] looked up on PATH) in its own process group, with
    stdin from /dev/null's place in the runner (inherited) and stdout/stderr inherited: under
    launchd they are the lane's StandardOutPath/StandardErrorPath."""
    # setpgroup=0: the job leads a new process group, so a stop reaches the job and everything
    # it started (killpg), and a Ctrl-C in the runner's terminal reaches only the runner.
    pid = os.posix_spawnp(argv[0], list(argv), dict(env), setpgroup=0)
    return SpawnedJob(pid)


def job_argv(command: Sequence[str], job_file: Path) -> list[str]:
    """The command with `{job}` replaced by the claimed file's path in every argument.
    Nothing else is interpreted: `;`, `$(...)` and globs reach the program literally."""
    return [part.replace("{job}", str(job_file)) for part in command]


def job_env(base: Mapping[str, str], spec: RunSpec, claim: Claim) -> dict[str, str]:
    """The runner's environment (under launchd: the plist's PATH and lane env) plus the
    job's identity."""
    env = dict(base)
    env["LANEKIT_JOB_ID"] = claim.job_id
    env["LANEKIT_JOB_FILE"] = str(claim.path)
    env["LANEKIT_LANE"] = spec.lane
    env["LANEKIT_ATTEMPT"] = str(claim.attempt)
    return env


# --- signals ------------------------------------------------------------------------------


class _StopHandler:
    """Installs the stop-signal handlers for one run and restores the previous ones after.

    A stop signal is remembered and forwarded to the running job's process group; SIGALRM,
    armed for the grace period, escalates to SIGKILL. The main loop blocks in waitpid (which
    Python resumes after a handler runs), so nothing polls while a job runs."""

    def __init__(self, grace: float, clock: Callable[[], float]) -> None:
        self.grace = grace
        self.clock = clock
        self.signum: int | None = None
        self.deadline = 0.0
        self.job: Job | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopHandler:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_stop)
        self._previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in self._previous.items():
            # None: the old handler was not installed from Python; the default is the best guess
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)

    def stopping(self) -> bool:
        """A stop signal arrived: claim nothing more. (A method, not a property: the answer
        changes under the caller's feet, whenever a signal arrives.)"""
        return self.signum is not None

    def started(self, job: Job) -> None:
        """Track the job; a stop that arrived while it was being spawned reaches it now."""
        self.job = job
        if self.signum is not None:
            self._forward(self.signum)

    def finished(self) -> None:
        """The job's leader was reaped: signals no longer go to its group."""
        self.job = None

    def finish_group(self, job: Job) -> None:
        """After a stopped job's leader exits, let the rest of its group use what is left of
        the grace, then SIGKILL it, so nothing of the job outlives the run."""
        while job.group_alive():
            if self.clock() >= self.deadline:
                job.signal_group(signal.SIGKILL)
                return
            time.sleep(0.02)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        self.signum = signum
        if first:
            self.deadline = self.clock() + self.grace
        if self.job is not None:
            self._forward(signum)

    def _forward(self, signum: int) -> None:
        assert self.job is not None
        self.job.signal_group(signum)
        remaining = self.deadline - self.clock()
        if remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, remaining)
        else:
            self.job.signal_group(signal.SIGKILL)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self.job is not None:
            self.job.signal_group(signal.SIGKILL)


# --- one run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one run did; `exit_code` is the process's exit status."""

    exit_code: int
    reason: str
    """Why the run ended: empty, max-jobs, max-seconds, signal, lane-busy."""
    claimed: int = 0
    done: int = 0
    failed: int = 0
    requeued: int = 0
    skipped: int = 0
    recovered: int = 0
    signum: int | None = None


def run_lane(
    spec: RunSpec,
    *,
    launcher: Launcher = spawn_job,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    log_clock: Callable[[], float] = time.time,
    handle_signals: bool = True,
) -> RunResult:
    """Drain the lane's queue once. Raises LanekitError when the queue cannot be used (before
    anything moved) or the job command cannot be started (its claim restored first).

    `launcher`, `env` and the clocks are seams for tests; `handle_signals=False` leaves the
    process's signal handlers alone (for callers outside the main thread)."""
    warned: list[OSError] = []

    def log_failed(exc: OSError) -> None:
        if not warned:
            sys.stderr.write(f"warning: cannot write lane log {spec.log_path}: {exc}\n")
        warned.append(exc)

    try:
        rotate_if_needed(spec.log_path, spec.log_max_bytes, spec.log_keep)
    except OSError as exc:
        log_failed(exc)
    log = LaneLog(spec.log_path, spec.lane, clock=log_clock, on_error=log_failed)
    lock = LaneLock(lane_lock_path(spec.queue_dir, spec.lane))
    try:
        acquired = lock.acquire()
    except OSError:
        open_queue(spec).check()  # names the missing or unusable directory (exit 69)
        raise EnvironmentUnusableError(
            f"lane {spec.lane}: cannot open the lane lock {lock.path}",
            f"check that {lock.path.parent} exists and is writable (`lanekit doctor`)",
        ) from None
    if not acquired:
        log.event("skipped", reason="lane-busy")
        return RunResult(exit_code=ExitCode.OK, reason="lane-busy", skipped=1)
    try:
        run = _LaneRun(
            spec=spec,
            log=log,
            stop=_StopHandler(grace_seconds(spec.exit_timeout), clock),
            launcher=launcher,
            env=os.environ if env is None else env,
            clock=clock,
        )
        if handle_signals:
            with run.stop:
                return run.drain()
        return run.drain()
    finally:
        lock.release()


def open_queue(spec: RunSpec) -> Queue:
    """The lane's queue. Imported here, not at the top: a run that finds nothing queued never
    loads the queue machinery (start-up on an empty queue is a benchmark figure)."""
    from lanekit.queue import Queue

    return Queue(spec.queue_dir, durable=spec.durable)


def nothing_queued(queue_dir: Path) -> bool:
    """True when queue/, delayed/ and claimed/ hold no job: nothing to run, retry or recover,
    so nothing would move. Any doubt (a directory missing or unreadable) says False, and the
    full path, which checks the queue first, reports it."""
    base = str(queue_dir)
    for name in ("queue", "delayed", "claimed"):
        try:
            with os.scandir(f"{base}/{name}") as entries:
                if any(not entry.name.startswith(".") for entry in entries):
                    return False
        except OSError:
            return False
    return True


class _LaneRun:
    """The state of one run between taking the lane lock and releasing it."""

    def __init__(
        self,
        *,
        spec: RunSpec,
        log: LaneLog,
        stop: _StopHandler,
        launcher: Launcher,
        env: Mapping[str, str],
        clock: Callable[[], float],
    ) -> None:
        self.spec = spec
        self.log = log
        self.stop = stop
        self.launcher = launcher
        self.env = env
        self.clock = clock
        self.claimed = self.done = self.failed = self.requeued = 0
        self.skipped = self.recovered = 0

    def drain(self) -> RunResult:
        """Recover, then claim and run jobs until empty, max_jobs, max_seconds or a signal."""
        started = self.clock()
        self.log.event("start", pid=os.getpid())
        reason = "empty"
        if not nothing_queued(self.spec.queue_dir):
            reason = self._work(started)
        if self.stop.stopping():
            reason = "signal"
            code = ExitCode.INTERRUPTED
        elif self.failed or self.requeued:
            code = ExitCode.FAILURE
        else:
            code = ExitCode.OK
        result = RunResult(
            exit_code=code,
            reason=reason,
            claimed=self.claimed,
            done=self.done,
            failed=self.failed,
            requeued=self.requeued,
            skipped=self.skipped,
            recovered=self.recovered,
            signum=self.stop.signum,
        )
        self.log.event(
            "finish",
            reason=reason,
            exit=int(code),
            claimed=self.claimed,
            done=self.done,
            failed=self.failed,
            requeued=self.requeued,
            skipped=self.skipped,
            recovered=self.recovered,
            duration=f"{self.clock() - started:.3f}",
        )
        return result

    def _work(self, started: float) -> str:
        """Check the queue, recover dead claims, then claim and run; why the loop ended."""
        spec, log = self.spec, self.log
        queue = open_queue(spec)
        queue.check()
        for item in queue.recover(stale_after=spec.stale_after, max_attempts=spec.max_attempts):
            self.recovered += 1
            log.event(
                "recovered",
                job=item.job_id,
                reason=str(item.reason),
                to=str(item.state),
                owner=item.owner or None,
                attempts=item.attempts,
            )
        claimer = queue.claimer(lane=spec.lane, on_drop=self._dropped)
        deadline = None if spec.max_seconds is None else started + spec.max_seconds
        ran = 0
        while not self.stop.stopping():
            if ran >= spec.max_jobs:
                return "max-jobs"
            if deadline is not None and self.clock() >= deadline:
                return "max-seconds"
            claim = claimer.claim()
            if claim is None:
                break
            self.claimed += 1
            ran += 1
            self._run_one(queue, claim)
        return "empty"

    def _dropped(self, item: Dropped) -> None:
        """A claimed file that cannot run; the claimer already moved it to done/ or failed/."""
        self.claimed += 1
        if item.reason == "already-succeeded":
            self.skipped += 1
            self.log.event("skipped", job=item.job_id, reason=str(item.reason))
        else:
            self.failed += 1
            self.log.event("failed", job=item.job_id, reason=str(item.reason), error=item.detail)

    def _give_back(self, queue: Queue, claim: Claim) -> None:
        """Back to queue/ at once, spending no attempt: the job did not fail."""
        queue.release(claim, max_attempts=self.spec.max_attempts, count_attempt=False, delay=False)
        self.requeued += 1

    def _run_one(self, queue: Queue, claim: Claim) -> None:
        """Run one claimed job and settle it, whatever happens (the `finally` below)."""
        spec, log, stop = self.spec, self.log, self.stop
        log.event("claimed", job=claim.job_id, attempt=claim.attempt)
        try:
            if stop.stopping():
                # The stop arrived while this job was being claimed: do not start it.
                self._give_back(queue, claim)
                log.event("requeued", job=claim.job_id, reason="signal")
                return
            began = self.clock()
            try:
                job = self.launcher(
                    job_argv(spec.command, claim.path), job_env(self.env, spec, claim)
                )
            except OSError as exc:
                # The command itself is missing or not executable: every job would fail the
                # same way, so this is the lane's environment, not the job's fault.
                self._give_back(queue, claim)
                message = f"cannot start {spec.command[0]!r}: {exc.strerror or exc}"
                log.event("requeued", job=claim.job_id, reason="cannot-start", error=message)
                raise EnvironmentUnusableError(
                    f"lane {spec.lane}: {message}",
                    "check the lane's command and PATH in lanes.toml (`lanekit doctor`)",
                ) from None
            stop.started(job)
            try:
                code = job.wait()
                if stop.stopping():
                    stop.finish_group(job)
            finally:
                stop.finished()
            duration = f"{self.clock() - began:.3f}"
            if stop.stopping():
                self._give_back(queue, claim)
                log.event(
                    "requeued", job=claim.job_id, reason="signal", exit=code, duration=duration
                )
            elif code == 0:
                queue.complete(claim)
                self.done += 1
                log.event("done", job=claim.job_id, exit=0, duration=duration)
            else:
                error = f"exit {code}" if code > 0 else f"killed by signal {-code}"
                where = queue.release(claim, max_attempts=spec.max_attempts, error=error)
                if where.parent == queue.failed:
                    self.failed += 1
                    log.event("failed", job=claim.job_id, exit=code, duration=duration, error=error)
                else:
                    self.requeued += 1
                    log.event(
                        "requeued", job=claim.job_id, exit=code, duration=duration, error=error
                    )
        finally:
            if claim.held:
                # Something unexpected (a bug, a settle that raised): never strand the claim.
                self._give_back(queue, claim)
                log.event("requeued", job=claim.job_id, reason="runner-error")


# --- command line -------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> tuple[str, Path | None]:
    """`LANE [--snapshot PATH]` -> (lane, snapshot). Anything else is a UsageError."""
    lane: str | None = None
    snapshot: Path | None = None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--snapshot":
            if i + 1 >= len(args) or snapshot is not None:
                raise UsageError(USAGE)
            snapshot = Path(args[i + 1])
            i += 2
            continue
        if arg.startswith("--snapshot="):
            if snapshot is not None:
                raise UsageError(USAGE)
            snapshot = Path(arg.partition("=")[2])
        elif arg.startswith("-") or lane is not None or not arg:
            raise UsageError(USAGE)
        else:
            lane = arg
        i += 1
    if lane is None:
        raise UsageError(USAGE)
    return lane, snapshot


def find_snapshot(lane: str, snapshots: Path) -> Path:
    """The installed snapshot whose lane is `lane` (when launchd did not pass --snapshot)."""
    matches = []
    try:
        candidates = sorted(snapshots.glob("*.json"))
    except OSError:
        candidates = []
    for candidate in candidates:
        try:
            spec = RunSpec.load(candidate)
        except UsageError:
            continue
        if spec.lane == lane:
            matches.append(candidate)
    if not matches:
        raise UsageError(
            f"lane {lane}: no installed lane snapshot in {snapshots}",
            f"run `lanekit apply` to install it, or `lanekit run -c lanes.toml {lane}`",
        )
    if len(matches) > 1:
        names = ", ".join(m.name for m in matches)
        raise UsageError(
            f"lane {lane}: several installed snapshots match ({names})",
            "pass --snapshot PATH to choose one",
        )
    return matches[0]


def load_spec(lane: str, snapshot: Path | None) -> RunSpec:
    """Read the lane's RunSpec from `snapshot`, or find it among the installed snapshots."""
    if snapshot is None:
        from lanekit.paths import Paths

        snapshot = find_snapshot(lane, Paths.from_env().snapshots)
    spec = RunSpec.load(snapshot)
    if spec.lane != lane:
        raise UsageError(
            f"{snapshot}: snapshot is for lane {spec.lane}, not {lane}",
            "run `lanekit apply` to rewrite the lane's plist and snapshot",
        )
    return spec


def main(argv: Sequence[str]) -> int:
    """`lanekit run LANE [--snapshot PATH]` without typer. LanekitError is caught here, once:
    one `error:` line and a hint on stderr, and an `error` event in the lane log."""
    spec: RunSpec | None = None
    try:
        lane, snapshot = parse_args(argv)
        spec = load_spec(lane, snapshot)
        return int(run_lane(spec).exit_code)
    except LanekitError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        if spec is not None:
            log_error(spec, exc)
        return int(exc.exit_code)


def log_error(spec: RunSpec, exc: LanekitError) -> None:
    """Record a run that could not start in the lane log, so doctor can explain the silence.
    Best effort: the log may be the very thing that is broken (stderr already has it)."""
    log = LaneLog(spec.log_path, spec.lane, on_error=lambda _exc: None)
    log.event("error", exit=int(exc.exit_code), error=exc.message)
