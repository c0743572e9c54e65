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

import fcntl
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lanekit.errors import EnvironmentUnusableError, ExitCode, LanekitError, UsageError
from lanekit.lanelog import LaneLog, rotate_if_needed
from lanekit.queue import Claim, Queue
from lanekit.records import JobState, RecordError, RecordStore
from lanekit.snapshot import DEFAULT_EXIT_TIMEOUT, RunSpec

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import FrameType

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


class Job(Protocol):
    """A started job command: the leader of its own process group."""

    pid: int

    def wait(self) -> int:
        """Block until the leader exits; its exit code, or -N when killed by signal N."""
        ...

    def signal_group(self, sig: int) -> None:
        """Send `sig` to the job's whole process group (no error if it is already gone)."""
        ...

    def group_alive(self) -> bool:
        """Whether any process of the job's group is still alive."""
        ...


if TYPE_CHECKING:
    from typing import TypeAlias

    Launcher: TypeAlias = Callable[[Sequence[str], Mapping[str, str]], Job]
    """Starts a job command (argv, env); tests pass fakes, the runner uses spawn_job."""


class SpawnedJob:
    """A job started with posix_spawn in a new process group (pgid == pid)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def group_alive(self) -> bool:
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
    Python resumes after a handler runs), so no polling is needed while a job runs."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.signum: int | None = None
        self.job: Job | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _StopHandler:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_stop)
        self._previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    @property
    def stopping(self) -> bool:
        return self.signum is not None

    def started(self, job: Job) -> None:
        """Track the job; a stop that arrived while it was being spawned reaches it now."""
        self.job = job
        if self.signum is not None:
            self._forward(self.signum)

    def finished(self) -> None:
        self.job = None

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        self.signum = signum
        if self.job is not None:
            self._forward(signum, arm=first)

    def _forward(self, signum: int, *, arm: bool = True) -> None:
        assert self.job is not None
        self.job.signal_group(signum)
        if arm:
            signal.setitimer(signal.ITIMER_REAL, self.grace)

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


@dataclass(slots=True)
class _Counts:
    claimed: int = 0
    done: int = 0
    failed: int = 0
    requeued: int = 0
    skipped: int = 0
    recovered: int = 0


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
    anything moved) or the job command cannot be started (its claim restored first)."""
    base_env = os.environ if env is None else env
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
    queue = Queue(spec.queue_dir, durable=spec.durable)
    lock = LaneLock(lane_lock_path(spec.queue_dir, spec.lane))
    try:
        acquired = lock.acquire()
    except OSError:
        queue.check()  # names the missing or unusable directory (exit 69)
        raise EnvironmentUnusableError(
            f"lane {spec.lane}: cannot open the lane lock {lock.path}",
            f"check that {lock.path.parent} exists and is writable (`lanekit doctor`)",
        ) from None
    if not acquired:
        log.event("skipped", reason="lane-busy")
        return RunResult(exit_code=ExitCode.OK, reason="lane-busy", skipped=1)
    try:
        queue.check()
        stop = _StopHandler(grace_seconds(spec.exit_timeout))
        if handle_signals:
            with stop:
                return _drain(spec, queue, log, stop, launcher, base_env, clock)
        return _drain(spec, queue, log, stop, launcher, base_env, clock)
    finally:
        lock.release()


def _drain(
    spec: RunSpec,
    queue: Queue,
    log: LaneLog,
    stop: _StopHandler,
    launcher: Launcher,
    base_env: Mapping[str, str],
    clock: Callable[[], float],
) -> RunResult:
    started = clock()
    counts = _Counts()
    log.event("start", pid=os.getpid())
    for job_id in queue.promote_due():
        log.event("requeued", job=job_id, reason="retry-due")
    for item in queue.recover(stale_after=spec.stale_after, max_attempts=spec.max_attempts):
        counts.recovered += 1
        log.event("recovered", job=item.job_id, to=item.state, owner=item.owner)
    records = RecordStore(queue.records)
    claimer = queue.claimer()
    deadline = None if spec.max_seconds is None else started + spec.max_seconds
    reason = "empty"
    ran = 0
    while True:
        if stop.stopping:
            reason = "signal"
            break
        if ran >= spec.max_jobs:
            reason = "max-jobs"
            break
        if deadline is not None and clock() >= deadline:
            reason = "max-seconds"
            break
        claim = claimer.claim()
        if claim is None:
            break
        counts.claimed += 1
        if _run_one(spec, queue, records, claim, log, stop, launcher, base_env, clock, counts):
            ran += 1
    if stop.stopping:
        reason = "signal"
        code = ExitCode.INTERRUPTED
    elif counts.failed or counts.requeued:
        code = ExitCode.FAILURE
    else:
        code = ExitCode.OK
    log.event(
        "finish",
        reason=reason,
        exit=int(code),
        claimed=counts.claimed,
        done=counts.done,
        failed=counts.failed,
        requeued=counts.requeued,
        skipped=counts.skipped,
        recovered=counts.recovered,
        duration=f"{clock() - started:.3f}",
    )
    return RunResult(
        exit_code=code,
        reason=reason,
        claimed=counts.claimed,
        done=counts.done,
        failed=counts.failed,
        requeued=counts.requeued,
        skipped=counts.skipped,
        recovered=counts.recovered,
        signum=stop.signum,
    )


def _payload_error(path: Path) -> str | None:
    """Why the claimed file is not a job (not UTF-8 JSON, not an object), or None."""
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        return f"job file is not valid JSON: {exc}"
    if not isinstance(data, dict):
        return f"job file holds a JSON {type(data).__name__}, not an object"
    return None


def _run_one(
    spec: RunSpec,
    queue: Queue,
    records: RecordStore,
    claim: Claim,
    log: LaneLog,
    stop: _StopHandler,
    launcher: Launcher,
    base_env: Mapping[str, str],
    clock: Callable[[], float],
    counts: _Counts,
) -> bool:
    """Run one claimed job and settle it. Returns True when the command ran (counts toward
    max_jobs); False for jobs settled without running (already succeeded, corrupt)."""
    settled = False
    log.event("claimed", job=claim.job_id, attempt=claim.attempt)
    try:
        try:
            record = records.read(claim.job_id)
        except RecordError as exc:
            queue.fail(claim, f"record unreadable: {exc}")
            settled = True
            counts.failed += 1
            log.event("failed", job=claim.job_id, reason="record-unreadable", error=str(exc))
            return False
        if record is not None and record.state == JobState.SUCCEEDED:
            queue.complete(claim, skipped=True)
            settled = True
            counts.skipped += 1
            log.event("skipped", job=claim.job_id, reason="already-succeeded")
            return False
        problem = _payload_error(claim.path)
        if problem is not None:
            queue.fail(claim, problem)
            settled = True
            counts.failed += 1
            log.event("failed", job=claim.job_id, reason="corrupt", error=problem)
            return False
        queue.mark_running(claim, lane=spec.lane)
        began = clock()
        try:
            job = launcher(job_argv(spec.command, claim.path), job_env(base_env, spec, claim))
        except OSError as exc:
            queue.release(claim, max_attempts=spec.max_attempts, count_attempt=False)
            settled = True
            counts.requeued += 1
            message = f"cannot start {spec.command[0]!r}: {exc.strerror or exc}"
            log.event("requeued", job=claim.job_id, reason="cannot-start", error=message)
            raise EnvironmentUnusableError(
                f"lane {spec.lane}: {message}",
                "check the lane's command and PATH in lanes.toml (`lanekit doctor`)",
            ) from None
        stop.started(job)
        try:
            code = job.wait()
            if stop.stopping:
                _finish_group(job, stop.grace, clock)
        finally:
            stop.finished()
        duration = f"{clock() - began:.3f}"
        if stop.stopping:
            queue.release(claim, max_attempts=spec.max_attempts, count_attempt=False)
            settled = True
            counts.requeued += 1
            log.event(
                "requeued", job=claim.job_id, reason="signal", exit=code, duration=duration
            )
        elif code == 0:
            queue.complete(claim)
            settled = True
            counts.done += 1
            log.event("done", job=claim.job_id, exit=0, duration=duration)
        else:
            error = f"exit {code}" if code > 0 else f"killed by signal {-code}"
            where = queue.release(claim, max_attempts=spec.max_attempts, error=error)
            settled = True
            if where.parent.name == "failed" or queue.failed in where.parents:
                counts.failed += 1
                log.event("failed", job=claim.job_id, exit=code, duration=duration, error=error)
            else:
                counts.requeued += 1
                log.event("requeued", job=claim.job_id, exit=code, duration=duration)
        return True
    finally:
        if not settled:
            # Something unexpected (a bug, MemoryError): never strand the claim.
            queue.release(claim, max_attempts=spec.max_attempts, count_attempt=False)
            log.event("requeued", job=claim.job_id, reason="runner-error")


def _finish_group(job: Job, grace: float, clock: Callable[[], float]) -> None:
    """After a stopped job's leader exits, give the rest of its group the same grace, then
    SIGKILL whatever is left so nothing of the job outlives the run."""
    deadline = clock() + grace
    while job.group_alive():
        if clock() >= deadline:
            job.signal_group(signal.SIGKILL)
            return
        time.sleep(0.02)


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
