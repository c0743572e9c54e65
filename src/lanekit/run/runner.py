"""The lane run: `lanekit run LANE --snapshot PATH` once lanekit.run.entry found work to do.

lanekit.run.entry handles a run that finds nothing queued without importing this module; every
other run, and every run that hits a problem, comes here. This module never imports
lanekit.run.entry: the pieces both use live in lanekit.run.lanelock, lanelog, peek and runargs; how
a
run stops is lanekit.run.stop's, which snapshot it reads lanekit.run.which_snapshot's. One
run: rotate the lane log, take the lane lock (held -> exit 0, `skipped reason=lane-busy`),
check the queue, move due retries back, recover dead claims, then claim and run jobs until the
queue is empty, `max_jobs` ran or `max_seconds` passed. Every claimed job is settled in a
`finally`: exit 0 -> done/, otherwise back to queue/ (with backoff) or to failed/.

Each job is started through its watcher (lanekit.run.watcher), a fork of this process that holds
the claim's flock for as long as anything of the job runs, even when the runner itself is
SIGKILLed, so recover() never hands a live job to a second runner, whatever the job does with
its descriptors. The watcher enforces the lane's `timeout`, ends what the job left in its
process group once the leader exited (launchd's default, AbandonProcessGroup false), keeps the
tail of its stderr and writes how it ended next to the claim; the runner settles by that, and
so does recover() when the runner died first: a job that finished is never run again.

SIGTERM / SIGINT / SIGHUP (launchd's bootout, Ctrl-C, a closed terminal) are forwarded to the
job's process group; after a grace shorter than the lane's ExitTimeOut the group gets SIGKILL,
the job goes back to queue/ without spending an attempt, and the run exits 75. The exit code
decides first: a job that exited 0 is done even if a stop arrived, and one that failed before
the stop reached it spends its attempt like any failure.

Jobs are started by their watcher with os.posix_spawn (no subprocess import).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lanekit.errors import EnvironmentUnusableError, ExitCode, LanekitError, UsageError
from lanekit.queue import nothing_queued
from lanekit.queue import outcome as job_outcome
from lanekit.queue.recordline import iso_utc
from lanekit.run import watcher_link
from lanekit.run.args import USAGE, split_args
from lanekit.run.jobenv import job_env, lane_process_env
from lanekit.run.lanelock import LaneLock, lane_lock_path
from lanekit.run.lanelog import (
    EventName,
    LaneLog,
    Reason,
    format_ts,
    log_finish,
    log_warner,
    rotate_if_needed,
)
from lanekit.run.purgeday import purge_due, purge_stamp, utc_day
from lanekit.run.stop import StopHandler, grace_seconds
from lanekit.run.which_snapshot import load_spec, resolve_snapshot
from lanekit.state.clock import epoch
from lanekit.state.snapshot import RunSpec
from lanekit.system.quoting import printable

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import TypeAlias

    from lanekit.queue.model import Claim, Dropped, Settled, Verdict
    from lanekit.queue.outcome import Outcome
    from lanekit.queue.protocol import JobClaimer, JobQueue
    from lanekit.run.stop import Job

    Launcher: TypeAlias = Callable[[Sequence[str], Mapping[str, str], Sequence[int]], Job]
    """Starts a job command (argv, env, descriptors the job keeps); tests pass fakes. Without
    one the runner starts each job through lanekit.run.watcher."""

# --- starting jobs ------------------------------------------------------------------------


def job_argv(command: Sequence[str], job_file: Path) -> list[str]:
    """The command with `{job}` replaced by the claimed file's path in every argument.
    Nothing else is interpreted: `;`, `$(...)` and globs reach the program literally."""
    return [part.replace("{job}", str(job_file)) for part in command]


def _claim_env(base: Mapping[str, str], spec: RunSpec, claim: Claim) -> dict[str, str]:
    """The claimed job's environment (lanekit.run.jobenv, the one `lanekit try --job` uses)."""
    return job_env(
        base, lane=spec.lane, job_id=claim.job_id, job_file=claim.path, attempt=claim.attempt
    )


# --- one run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one run did; `exit_code` is the process's exit status."""

    exit_code: int
    reason: str
    """Why the run ended: empty, max-jobs, max-seconds, signal, lane-busy, paused."""
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
    launcher: Launcher | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    log_clock: Callable[[], float] = epoch,
    handle_signals: bool = True,
) -> RunResult:
    """Drain the lane's queue once. Raises LanekitError when the queue cannot be used (before
    anything moved) or the job command cannot be started (its claim restored first).

    Each job's environment is the one launchd gives the lane's process (lanekit.run.jobenv): this
    process's own when launchd started it, else launchd's built from the snapshot's
    `environment`, so a run by hand (`lanekit run LANE`) runs jobs exactly as launchd would,
    never with the terminal's PATH. `env` replaces it (a seam for tests, like `launcher` and
    the clocks); `handle_signals=False` leaves the process's signal handlers alone (for
    callers outside the main thread)."""
    if env is None:
        env = lane_process_env(os.environ, spec.label, spec.environment)
    log_failed = log_warner(spec.log_path)
    try:
        for path in (spec.log_path, spec.stdout_path, spec.stderr_path):
            # launchd reopens StandardOutPath/StandardErrorPath at each spawn: a rename now
            # moves this run's output aside with the rest, and the next run starts a new file.
            if path is not None:
                rotate_if_needed(path, spec.log_max_bytes, spec.log_keep)
    except OSError as exc:
        log_failed(exc)
    log = LaneLog(spec.log_path, spec.lane, clock=log_clock, on_error=log_failed)
    lock = LaneLock(lane_lock_path(spec.queue_dir, spec.lane, spec.log_path))
    try:
        acquired = lock.acquire()
    except OSError:
        open_queue(spec).check()  # names the missing or unusable directory (exit 69)
        raise EnvironmentUnusableError(
            f"lane {spec.lane}: cannot open the lane lock {lock.path}",
            f"check that {lock.path.parent} exists and is writable (`lanekit doctor`)",
        ) from None
    if not acquired:
        log.event(EventName.SKIPPED, reason=Reason.LANE_BUSY)
        return RunResult(exit_code=ExitCode.OK, reason=Reason.LANE_BUSY, skipped=1)
    try:
        run = _LaneRun(
            spec=spec,
            log=log,
            stop=StopHandler(grace_seconds(spec.exit_timeout), clock),
            launcher=launcher,
            env=env,
            clock=clock,
        )
        if handle_signals:
            with run.stop:
                return run.drain()
        return run.drain()
    finally:
        lock.release()


def open_queue(spec: RunSpec) -> JobQueue:
    """The lane's queue. Imported here, not at the top: a run that finds nothing queued never
    loads the queue machinery (start-up on an empty queue is a benchmark figure)."""
    from lanekit import queue

    return queue.open_queue(spec.queue_dir, durable=spec.durable, max_job_bytes=spec.max_job_bytes)


_PLAIN_BACKLOG = 100
"""How many waiting jobs a plain lane's fire looks at. Its queue holds at most the one run cut
short (each fire enqueues one job only when none waits), so this bounds a look, not a promise."""

_COPIES_POLL = 0.5
"""Seconds between looks for a job's copies once its watcher died. Each look reads every
process's environment: 4.5 ms over 76 processes here, so ~60 us a process; a Mac with
hundreds (one sysctl each, not measured there) would spend a share of a core looking more
often."""


class _LaneRun:
    """The state of one run between taking the lane lock and releasing it."""

    def __init__(
        self,
        *,
        spec: RunSpec,
        log: LaneLog,
        stop: StopHandler,
        launcher: Launcher | None,
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
        self.lease_lost = False
        """A job's lease was lost or lapsing (its watcher could not renew it): this host is
        cut off from the queue's server, so the run claims nothing more (exit 75)."""
        self.ran = 0
        """Jobs this run claimed to run (max_jobs counts them)."""
        self.deadline: float | None = None
        """When (self.clock) max_seconds runs out; None without a limit."""
        self.claimer: JobClaimer | None = None
        """The run's claimer while it claims jobs (None: settle only, claim nothing next)."""
        self._next: Claim | None = None
        """The job claimed together with the last settle (`_finish`), for `_work` to run."""

    def drain(self) -> RunResult:
        """Recover, then claim and run jobs until empty, max_jobs, max_seconds or a signal."""
        started = self.clock()
        self.log.event(EventName.START, pid=os.getpid())
        reason = Reason.EMPTY
        if self.spec.plain:
            self._fire()
        if not nothing_queued(self.spec.queue_dir):
            reason = self._work(started)
        if not self.stop.stopping():
            self._purge_daily()
        if self.stop.stopping():
            reason = Reason.SIGNAL
            code = ExitCode.INTERRUPTED
        elif reason == Reason.LEASE_LOST:
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
        log_finish(
            self.log,
            reason=reason,
            code=int(code),
            duration=self.clock() - started,
            claimed=self.claimed,
            done=self.done,
            failed=self.failed,
            requeued=self.requeued,
            skipped=self.skipped,
            recovered=self.recovered,
        )
        return result

    def _work(self, started: float) -> str:
        """Check the queue, recover dead claims, then claim and run; why the loop ended. A job
        settled while the run goes on is settled together with the next claim
        (JobClaimer.settle_and_claim: one round trip to a server queue), which `_next` then
        runs; a claim is only ever made where this loop would have made it."""
        spec = self.spec
        queue = open_queue(spec)
        queue.check()
        self._recover(queue)
        claimer = self.claimer = queue.claimer(lane=spec.lane, on_drop=self._dropped)
        self.deadline = None if spec.max_seconds is None else started + spec.max_seconds
        try:
            while True:
                claim, self._next = self._next, None
                if claim is None:
                    if self.stop.stopping():
                        break
                    if (why := self._ends()) is not None:
                        return why
                    claim = claimer.claim()
                    if claim is None:
                        break
                self.claimed += 1
                self.ran += 1
                self._run_one(queue, claim)
        finally:
            self.claimer = None
            pending, self._next = self._next, None
            if pending is not None and pending.held:
                # Claimed with a settle, then the run failed before starting it: give it back.
                self.claimed += 1
                self._release_after_error(queue, pending)
            watcher_link.stop_watching()  # the run's watcher, idle once its last job is settled
        return Reason.EMPTY

    def _ends(self) -> str | None:
        """Why the run claims no more (a limit, a lost lease), or None while it goes on."""
        spec = self.spec
        if self.lease_lost:
            return Reason.LEASE_LOST
        if self.ran >= spec.max_jobs:
            # A plain lane's queue holds this fire's one job: it is empty now.
            return Reason.EMPTY if spec.plain else Reason.MAX_JOBS
        if self.deadline is not None and self.clock() >= self.deadline:
            return Reason.MAX_SECONDS
        return None

    def _finish(self, queue: JobQueue, claim: Claim, verdict: Verdict) -> Settled:
        """Settle a job that ran; when the run goes on (no stop, no limit reached: what the
        loop checks before it claims), claim the next job in the same step, for `_work`."""
        claimer = self.claimer
        if claimer is None or self.stop.stopping() or self._ends() is not None:
            return queue.settle(claim, verdict)
        settled, self._next = claimer.settle_and_claim(claim, verdict)
        return settled

    def _recover(self, queue: JobQueue) -> None:
        """Give back the claims whose owner is gone, each logged `recovered`."""
        spec = self.spec
        for item in queue.recover(stale_after=spec.stale_after, max_attempts=spec.max_attempts):
            self.recovered += 1
            self.log.event(
                EventName.RECOVERED,
                job=item.job_id,
                reason=str(item.reason),
                to=str(item.state),
                owner=item.owner or None,
                attempts=item.attempts,
                exit=item.exit,
            )

    def _fire(self) -> None:
        """A plain lane's fire: its one job for this run, in its private queue. A job already
        waiting there is a run cut short (a crash, `lanekit stop`): with `retry_on_crash` it is
        this fire's run; without, it goes to failed/ (`failed reason=interrupted`) and a new
        job is enqueued. Under the lane lock, so two fires never make two jobs."""
        from lanekit.queue.records import JobState

        spec = self.spec
        queue = open_queue(spec)
        queue.check()
        self._recover(queue)
        waiting = [record.job_id for record in queue.page(1, _PLAIN_BACKLOG, JobState.QUEUED).items]
        if spec.retry_on_crash and waiting:
            return
        for job_id in waiting:
            # The run it stood for was an earlier fire's: this run's exit code is its own.
            queue.cancel(job_id)
            self.log.event(
                EventName.FAILED,
                job=job_id,
                reason=Reason.INTERRUPTED,
                error="cut short by a crash or a stop; not repeated (retry_on_crash = false)",
            )
        queue.enqueue({"lane": spec.lane, "fired_at": format_ts(epoch())})

    def _purge_daily(self) -> None:
        """Purge the queue once per UTC day (the run that creates the day's stamp does it).
        Retention never fails a run: a problem is logged and the next day tries again."""
        spec = self.spec
        queue_dir = str(spec.queue_dir)
        now = epoch()
        if not purge_due(queue_dir, now, spec.keep_done, str(spec.log_path)):
            return
        from lanekit.system.atomic import write_atomic  # once a day: off the fast path

        stamp = purge_stamp(queue_dir, utc_day(now), str(spec.log_path))
        try:
            # replace=False: the one run whose rename creates the stamp claims the purge.
            write_atomic(Path(stamp), b"", durable=False, replace=False)
        except FileExistsError:
            return  # another run of a lane on this queue claimed today's purge
        except OSError as exc:
            self.log.event(EventName.ERROR, action="purge", error=str(exc))
            return
        try:
            done = open_queue(spec).purge(
                keep_done=spec.keep_done, keep_failed=spec.keep_failed, now=now
            )
        except (LanekitError, OSError) as exc:
            message = exc.message if isinstance(exc, LanekitError) else str(exc)
            self.log.event(EventName.ERROR, action="purge", error=message)
            return
        self.log.event(
            EventName.PURGED,
            done=len(done.done),
            failed=len(done.failed),
            guard_expired=len(done.guard_expired),
        )
        for old in Path(stamp).parent.glob(".purged-*"):
            if str(old) != stamp:
                old.unlink(missing_ok=True)

    def _dropped(self, item: Dropped) -> None:
        """A claimed file that cannot run; the claimer already moved it to done/ or failed/."""
        from lanekit.queue.model import DropReason

        self.claimed += 1
        if item.reason == DropReason.ALREADY_SUCCEEDED:
            self.skipped += 1
            self.log.event(EventName.SKIPPED, job=item.job_id, reason=Reason.ALREADY_SUCCEEDED)
        else:
            self.failed += 1
            self.log.event(
                EventName.FAILED, job=item.job_id, reason=str(item.reason), error=item.detail
            )

    def _give_back(self, queue: JobQueue, claim: Claim, error: str = "") -> None:
        """Back to queue/ at once, spending no attempt: the job did not fail. `error` goes
        into the job's record, so `lanekit job` says why it is queued again."""
        from lanekit.queue.model import Verdict

        queue.settle(claim, Verdict.stopped(error))
        self.requeued += 1

    def _defer_all(self, queue: JobQueue, claim: Claim, message: str, reason: str) -> None:
        """The command cannot start, on a lane launchd starts while jobs wait in queue/: this
        job and every other one there wait in delayed/ instead (no attempt spent), so the run
        leaves nothing in queue/ that it cannot take and launchd does not start it again and
        again (a schedule's run, or the next enqueue, moves them back)."""
        from lanekit.queue.model import Verdict

        deferred = Verdict.deferred(message)
        queue.settle(claim, deferred)
        self.requeued += 1
        self.log.event(EventName.REQUEUED, job=claim.job_id, reason=reason, error=message)
        claimer = queue.claimer(lane=self.spec.lane, on_drop=self._dropped)
        while (more := claimer.claim()) is not None:
            self.claimed += 1
            queue.settle(more, deferred)
            self.requeued += 1
            self.log.event(EventName.REQUEUED, job=more.job_id, reason=reason, error=message)

    def _settle(  # noqa: PLR0917 - private; the one caller passes what it just learned
        self,
        queue: JobQueue,
        claim: Claim,
        code: int,
        stopped: bool,
        began: float,
        outcome: Outcome | None = None,
    ) -> None:
        """Settle a job that ran: cancelled while running (`lanekit cancel --stop`) -> failed/
        with reason `cancelled`, whatever it exited with; else by its exit code: 0 -> done/;
        stopped by a signal -> back to queue/ unspent; any other failure -> retry with backoff
        or failed/. The watcher's `outcome` words the failure (timeout, stderr tail)."""
        from lanekit.queue.model import ClaimFencedError, RecordNotWrittenError, Verdict
        from lanekit.queue.records import JobState

        log = self.log
        duration = f"{self.clock() - began:.3f}"
        cancelled = outcome is not None and outcome.cancelled
        if code == 0 and not cancelled:
            error = ""
        elif outcome is not None:
            from lanekit.queue.outcome import describe

            error = describe(outcome)
        else:
            error = f"exit {code}" if code > 0 else f"killed by signal {-code}"
        why = Reason.TIMEOUT if outcome is not None and outcome.timed_out else None
        try:
            if outcome is not None and outcome.lease_lost:
                # The self-fence killed it: not the job's failure, and perhaps another run's
                # job by now (then this settle is fenced and changes nothing).
                self.lease_lost = True
                self._give_back(queue, claim, "its lease was lost: stopped, run again")
                log.event(
                    EventName.REQUEUED,
                    job=claim.job_id,
                    reason=Reason.LEASE_LOST,
                    duration=duration,
                )
            elif cancelled:
                self._finish(queue, claim, Verdict.gave_up(error))
                self.failed += 1
                log.event(
                    EventName.FAILED,
                    job=claim.job_id,
                    exit=code,
                    duration=duration,
                    reason=Reason.CANCELLED,
                    error=error.partition("\n")[0],
                )
            elif code == 0:
                self._finish(queue, claim, Verdict.succeeded())
                self.done += 1
                log.event(EventName.DONE, job=claim.job_id, exit=0, duration=duration)
            elif stopped:
                self._give_back(queue, claim)
                log.event(
                    EventName.REQUEUED,
                    job=claim.job_id,
                    reason=Reason.SIGNAL,
                    exit=code,
                    duration=duration,
                )
            else:
                verdict = Verdict.failed(error, self.spec.max_attempts)
                settled = self._finish(queue, claim, verdict)
                first_line = error.partition("\n")[0]
                if settled.state is JobState.FAILED:
                    self.failed += 1
                    log.event(
                        EventName.FAILED,
                        job=claim.job_id,
                        exit=code,
                        duration=duration,
                        reason=why,
                        error=first_line,
                    )
                else:
                    self.requeued += 1
                    log.event(
                        EventName.REQUEUED,
                        job=claim.job_id,
                        exit=code,
                        duration=duration,
                        reason=why,
                        error=first_line,
                    )
        except ClaimFencedError:
            # Its lease was taken over (a partition, a sleep, a stalled renew): the run that
            # recovered the job decides what happens to it; this settle changed nothing.
            log.event(EventName.FENCED, job=claim.job_id, exit=code, duration=duration)
        except RecordNotWrittenError as exc:
            # The job was moved to done/ or failed/ all the same and its claim is settled; only
            # its final record is missing. Say where it went, then stop the run (exit 69): the
            # queue's filesystem is failing.
            if exc.state == JobState.FAILED:
                self.failed += 1
                log.event(
                    EventName.FAILED,
                    job=claim.job_id,
                    exit=code,
                    duration=duration,
                    error=error,
                    record="unwritten",
                )
            else:
                self.done += 1
                log.event(
                    EventName.DONE,
                    job=claim.job_id,
                    exit=code,
                    duration=duration,
                    record="unwritten",
                )
            raise

    def _release_after_error(self, queue: JobQueue, claim: Claim) -> None:
        """Give the claim back after an error; a leased one whose lease was taken over
        meanwhile (a settle that reached the server though its answer did not) is `fenced`."""
        from lanekit.queue.model import ClaimFencedError

        try:
            self._give_back(queue, claim)
        except ClaimFencedError:
            self.log.event(EventName.FENCED, job=claim.job_id)
            return
        self.log.event(EventName.REQUEUED, job=claim.job_id, reason=Reason.RUNNER_ERROR)

    def _outlive_watcher(self, queue: JobQueue, claim: Claim, began: float) -> None:
        """The job's watcher died before recording the job's end: a crash of lanekit's (it
        was killed alone), not the job's doing. The job may still run, and this runner still
        holds its claim's lock: wait until no copy of the job runs (stopped at the lane's
        timeout or on a stop, as its watcher would have), then give it back without spending
        an attempt. Its exit status died with the watcher, so it runs again (at least once),
        never while a copy of it still runs. A leased claim (a server queue's) lost its renewer
        with the watcher: its copies are killed at once, before the lease can lapse."""
        spec, stop = self.spec, self.stop
        term_at: float | None = None
        leased = queue.lease_terms(claim) is not None
        while copies := job_outcome.job_copies(str(claim.path)):
            now = self.clock()
            expired = spec.timeout is not None and now - began >= spec.timeout
            if leased:
                copies.signal(signal.SIGKILL)
            elif term_at is None and (stop.stopping() or expired):
                term_at = now
                copies.signal(signal.SIGTERM)
            elif term_at is not None and now - term_at >= min(spec.kill_grace, stop.grace):
                copies.signal(signal.SIGKILL)
            time.sleep(_COPIES_POLL)
        # The dead watcher's note (the file a watcher turns into the status): gone before this
        # claim name can be used again, by this process, for the job's next attempt.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(job_outcome.started_path(claim.file))  # noqa: PTH108 - a str path
        message = "its watcher died before the job's end was recorded: run again, not counted"
        self._give_back(queue, claim, message)
        self.log.event(EventName.REQUEUED, job=claim.job_id, reason=Reason.WATCHER_DIED)

    def _run_one(self, queue: JobQueue, claim: Claim) -> None:
        """Run one claimed job and settle it, whatever happens (the `finally` below)."""
        spec, log, stop = self.spec, self.log, self.stop
        log.event(EventName.CLAIMED, job=claim.job_id, attempt=claim.attempt)
        # The watcher records the job's end beside the job file (whatever backend made it),
        # where the queue's recover() finds it if this runner dies first.
        status = job_outcome.status_path(claim.file)
        tmp_dir = os.path.dirname(status)  # noqa: PTH120 - a str path on the claim path
        try:
            if stop.stopping():
                # The stop arrived while this job was being claimed: do not start it.
                self._give_back(queue, claim)
                log.event(EventName.REQUEUED, job=claim.job_id, reason=Reason.SIGNAL)
                return
            began = self.clock()
            try:
                if self.launcher is not None:
                    job: Job = self.launcher(
                        job_argv(spec.command, claim.path),
                        _claim_env(self.env, spec, claim),
                        # The descriptor that keeps the claim live, where the backend has one.
                        (claim.lock_fd,) if claim.lock_fd >= 0 else (),
                    )
                else:
                    # A status left by an earlier attempt under this very claim name (same
                    # process) must not be read as this attempt's.
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(status)  # noqa: PTH108 - a str path on the claim path
                    # The watcher holds the claim's descriptor for the job's life; a backend
                    # that keeps none (its claims live as long as their owner) lends it the
                    # job file's, closed here once the watcher has its own copy.
                    held = claim.lock_fd
                    lent = -1 if held >= 0 else os.open(claim.file, os.O_RDONLY | os.O_CLOEXEC)
                    try:
                        job = watcher_link.start(
                            job_argv(spec.command, claim.path),
                            _claim_env(self.env, spec, claim),
                            lock_fd=max(held, lent),
                            status=status,
                            tmp_dir=tmp_dir,
                            timeout=spec.timeout,
                            kill_grace=spec.kill_grace,
                            stop_grace=stop.grace,
                            lease=queue.lease_terms(claim),
                            output=queue.output_path(claim.job_id),
                            header=f"attempt {claim.attempt}, lane {spec.lane}, started "
                            f"{iso_utc(epoch())}",
                        )
                    finally:
                        if lent >= 0:
                            os.close(lent)
            except watcher_link.WatcherGoneError:
                # The watcher died with the request in hand: it may have started the job.
                self._outlive_watcher(queue, claim, began)
                return
            except OSError as exc:
                # The command itself is missing or not executable: every job would fail the
                # same way, so this is the lane's environment, not the job's fault.
                message = f"cannot start {spec.command[0]!r}: {exc.strerror or exc}"
                # EPERM (not EACCES) is what macOS privacy protection (TCC) answers a launchd
                # job: logged apart so doctor and watch can point at Full Disk Access.
                denied = exc.errno == errno.EPERM
                reason = Reason.NOT_PERMITTED if denied else Reason.CANNOT_START
                if spec.start_on_enqueue:
                    self._defer_all(queue, claim, message, reason)
                elif spec.plain:
                    # A plain lane's run is its one job: it failed (not retried, as any
                    # failed run); the next fire runs the command again.
                    from lanekit.queue.model import Verdict

                    queue.settle(claim, Verdict.gave_up(message))
                    self.failed += 1
                    log.event(EventName.FAILED, job=claim.job_id, reason=reason, error=message)
                else:
                    self._give_back(queue, claim, message)
                    log.event(EventName.REQUEUED, job=claim.job_id, reason=reason, error=message)
                raise EnvironmentUnusableError(
                    f"lane {spec.lane}: {message}",
                    "macOS privacy protection refused it: move it out of ~/Documents, "
                    "~/Desktop or ~/Downloads, or give it Full Disk Access (`lanekit doctor`)"
                    if denied
                    else "check the lane's command and PATH in lanes.toml (`lanekit doctor`)",
                ) from None
            stop.started(job)
            try:
                code = job.wait()
            finally:
                stop.finished()
                stop.end_group(job)
            outcome = job.outcome() if isinstance(job, watcher_link.WatchedJob) else None
            if outcome is None and isinstance(job, watcher_link.WatchedJob):
                self._outlive_watcher(queue, claim, began)
                return
            # The watcher knows whether the stop reached the job before it ended on its own.
            stopped = stop.stopped(job, code) and (outcome is None or outcome.stopped)
            self._settle(queue, claim, code, stopped, began, outcome)
        finally:
            if claim.held:
                # Something unexpected (a bug, a settle that raised): never strand the claim.
                self._release_after_error(queue, claim)
            if self.launcher is None:
                # Settled: the status and any cancel request have done their work (leftovers
                # are swept by recover).
                for done_with in (status, job_outcome.cancel_path(claim.file)):
                    with contextlib.suppress(OSError):
                        os.unlink(done_with)  # noqa: PTH108 - a str path on the claim path


# --- command line -------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> tuple[str, Path | None]:
    """`LANE [--snapshot PATH]` -> (lane, snapshot). Anything else is a UsageError."""
    parsed = split_args(argv)
    if parsed is None:
        raise UsageError(USAGE)
    lane, snapshot = parsed
    return lane, None if snapshot is None else Path(snapshot)


def paused_run(spec: RunSpec, snapshot: Path) -> RunResult | None:
    """The whole run of a paused lane (lanekit.reconcile.pause): log `skipped reason=paused`, claim
    nothing, exit 0. None when the lane is not paused."""
    from lanekit.state.snapshot_schema import pause_marker

    if not pause_marker(snapshot).exists():
        return None
    log = LaneLog(spec.log_path, spec.lane, on_error=log_warner(spec.log_path))
    log.event(EventName.SKIPPED, reason=Reason.PAUSED)
    return RunResult(exit_code=ExitCode.OK, reason=Reason.PAUSED, skipped=1)


def main(argv: Sequence[str]) -> int:
    """`lanekit run LANE [--snapshot PATH]` without typer. LanekitError is caught here, once:
    one `error:` line and a hint on stderr, and an `error` event in the lane log."""
    spec: RunSpec | None = None
    try:
        lane, given = parse_args(argv)
        snapshot = resolve_snapshot(lane, given)
        spec = load_spec(lane, snapshot)
        paused = paused_run(spec, snapshot)
        return int((paused or run_lane(spec)).exit_code)
    except LanekitError as exc:
        sys.stderr.write(f"error: {printable(exc.message)}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {printable(exc.hint)}\n")
        if spec is not None:
            log_error(spec, exc)
        return int(exc.exit_code)


def log_error(spec: RunSpec, exc: LanekitError) -> None:
    """Record a run that could not start in the lane log, so doctor can explain the silence.
    Best effort: the log may be the very thing that is broken (stderr already has it)."""
    log = LaneLog(spec.log_path, spec.lane, on_error=lambda _exc: None)
    log.event(EventName.ERROR, exit=int(exc.exit_code), error=exc.message)
