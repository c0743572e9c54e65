"""The in-memory queue: the JobQueue seam kept in a process's memory, for unit tests.

Modelled on procrastinate's InMemoryConnector: the jobs are a dict, a claim is a state change
under a lock, and the promise holds as in the directory backend (a claim is exclusive, a
success is recorded once and guards its id, attempts are counted at claim, a claim whose owner
is gone is recovered and settled by its recorded outcome). What a process's death is to the
directory backend, `owner_gone(owner)` is here: the owner's claims are no longer live.

The job reaches its command as a file, as in every backend (`Claim.path`): the payload is
written to a scratch directory at claim and removed at settle. `open_queue("memory:NAME")`
hands out one queue per NAME in a process, so a test and the runner it drives share it.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from lanekit.errors import QueueError, UsageError
from lanekit.queue import outcome as job_outcome
from lanekit.queue.model import (
    CANCELLED,
    Claim,
    JobExistsError,
    Moved,
    Purged,
    Recovered,
    Settled,
    Verdict,
    VerdictKind,
    error_file_text,
)
from lanekit.queue.observed import ClaimState, ClaimView, JobLocation, RecoverReason
from lanekit.queue.policy import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX,
    backoff,
    deferred_wait,
    gave_up,
)
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record
from lanekit.queue.unleased import Unleased
from lanekit.state.clock import epoch
from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from lanekit.queue.counts import QueueCounts
    from lanekit.queue.model import Dropped
    from lanekit.queue.outcome import Outcome
    from lanekit.queue.paging import AttemptSpan, JobView, Page


class _Handle:
    """The backend's side of one claim: held until settled (Claim.handle)."""

    __slots__ = ("held",)
    fd = -1
    """No descriptor keeps an in-memory claim alive: its owner does."""

    def __init__(self) -> None:
        self.held = True

    def release(self) -> None:
        """The claim is settled; later calls do nothing."""
        self.held = False


@dataclass(slots=True)
class _Job:
    """One job and where it is (mutated only under the queue's lock)."""

    payload: bytes
    seq: int
    """Enqueue order: newest first in pages, oldest first in claims."""
    record: Record
    enqueued_at: float
    not_before: float | None = None
    """A retry waiting out its backoff (queued, not claimable before then)."""
    owner: str | None = None
    claimed_at: float = 0.0
    handle: _Handle | None = None
    file: str | None = None
    outcome: Outcome | None = None
    """What the claim's watcher recorded (record_outcome): recover() settles by it."""
    finished_at: float = 0.0


class MemoryQueue(Unleased):
    """A queue in memory (see the module docstring); `backoff_base` 0 sends retries straight
    back, as for the directory queue."""

    def __init__(
        self,
        where: str = "memory:test",
        *,
        clock: Callable[[], float] = epoch,
        max_job_bytes: int = DEFAULT_MAX_JOB_BYTES,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        scratch: Path | None = None,
    ) -> None:
        self._where = where
        self.clock = clock
        self._max_job_bytes = max_job_bytes
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._scratch = scratch
        self._made_scratch = False
        self._jobs: dict[str, _Job] = {}
        self._guard: set[str] = set()
        """Ids that succeeded, kept after a purge (the re-execution guard)."""
        self._gone: set[str] = set()
        self._owners = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._created = False

    @property
    def where(self) -> str:
        """Its location, `memory:NAME` (lanekit.queue.open_queue)."""
        return self._where

    @property
    def max_job_bytes(self) -> int:
        """The largest job, in bytes."""
        return self._max_job_bytes

    def missing(self) -> str | None:
        """None once ensure() created the queue."""
        return None if self._created else f"{self.where}: not created (`lanekit apply`)"

    def rename_failure(self) -> str | None:
        """None: an in-memory claim renames nothing (JobQueue.rename_failure)."""
        return None

    def ensure(self) -> None:
        """Create the queue (and the scratch directory its claims are written to)."""
        if self._scratch is None:
            import tempfile

            self._scratch = Path(tempfile.mkdtemp(prefix="lanekit-memory-"))
            self._made_scratch = True
        self._created = True

    def close(self) -> None:
        """Remove the scratch directory ensure() made (a test's teardown)."""
        if self._made_scratch and self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch, self._made_scratch, self._created = None, False, False

    def check(self) -> None:
        """QueueError for a queue not created yet."""
        problem = self.missing()
        if problem is not None:
            raise QueueError(problem, "create it first (`lanekit apply`)")

    def owner_gone(self, owner: str) -> None:
        """Its owner's process is gone: its claims are no longer live (a test's crash)."""
        self._gone.add(owner)

    def enqueue(
        self,
        payload: Mapping[str, Any] | bytes | str,
        job_id: str | None = None,
        *,
        not_before: float | None = None,
    ) -> str:
        """Add a job; JobExistsError for an id already here or already succeeded. With
        `not_before` later than now it waits for that time, as a retry waits out its backoff."""
        from lanekit.queue.ids import new_job_id, validate_job_id
        from lanekit.queue.payload import payload_bytes

        self.check()
        data = payload_bytes(payload, self._max_job_bytes)
        now = self.clock()
        with self._lock:
            if job_id is None:
                job_id = new_job_id(round(now * 1e9))
            else:
                validate_job_id(job_id)
            if self.succeeded(job_id):
                raise JobExistsError(
                    f"job {job_id} already succeeded ({self.where})",
                    "lanekit never runs a succeeded id again: give the new job another id",
                )
            if job_id in self._jobs:
                state = self._jobs[job_id].record.state
                raise JobExistsError(f"job {job_id} is already {state}", "give it another id")
            stamp = iso_utc(now)
            self._seq += 1
            record = Record(job_id, JobState.QUEUED, 0, stamp, stamp)
            wait = not_before if not_before is not None and not_before > now else None
            self._jobs[job_id] = _Job(data, self._seq, record, now, not_before=wait)
        return job_id

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> MemoryClaimer:
        """A claimer with an owner of its own (nothing here is ever dropped unread: the
        payload was checked at enqueue)."""
        self.check()
        with self._lock:
            self._owners += 1
            owner = f"memory-{os.getpid()}-{self._owners}"
        return MemoryClaimer(self, owner, lane)

    def _claim(self, owner: str, lane: str | None) -> Claim | None:
        """The oldest claimable job, now `owner`'s; its attempt counted."""
        now = self.clock()
        with self._lock:
            ready = [
                (job.seq, job_id, job)
                for job_id, job in self._jobs.items()
                if job.record.state is JobState.QUEUED
                and (job.not_before is None or job.not_before <= now)
            ]
            if not ready:
                return None
            _, job_id, job = min(ready)
            running = replace(
                job.record,
                state=JobState.RUNNING,
                attempts=job.record.attempts + 1,
                updated_at=iso_utc(now),
                lane=lane if lane is not None else job.record.lane,
            )
            assert self._scratch is not None  # check() made it
            file = str(self._scratch / f"{job_id}.{running.attempts}.json")
            Path(file).write_bytes(job.payload)
            handle = _Handle()
            job.record, job.not_before, job.owner, job.claimed_at = running, None, owner, now
            job.handle, job.file, job.outcome = handle, file, None
        return Claim(job_id, file, running.attempts, owner, running, handle)

    def _held(self, claim: Claim) -> _Job:
        """The claim's job, or QueueError when the claim was settled (each is settled once)."""
        job = self._jobs.get(claim.job_id)
        if job is None or job.handle is not claim.handle or not claim.held:
            raise QueueError(
                f"{self.where}: claim of job {claim.job_id} was already settled",
                "settle each claim once",
            )
        return job

    def _finish(self, job_id: str, job: _Job, record: Record, not_before: float | None) -> None:
        """Put the job in `record`'s state and drop its claim."""
        if job.handle is not None:
            job.handle.release()
        if job.file is not None:
            Path(job.file).unlink(missing_ok=True)
            for beside in (
                job_outcome.status_path,
                job_outcome.cancel_path,
                job_outcome.started_path,
            ):
                Path(beside(job.file)).unlink(missing_ok=True)
        job.record, job.not_before = record, not_before
        job.owner = job.handle = job.file = job.outcome = None
        if record.state is JobState.SUCCEEDED:
            self._guard.add(job_id)
        if record.state in {JobState.SUCCEEDED, JobState.FAILED}:
            job.finished_at = self.clock()

    def _ending(
        self, job: _Job, kind: VerdictKind, error: str, max_attempts: int, now: float
    ) -> tuple[Record, float | None]:
        """The record (and not-before time) a claim ends with: the directory's rules."""
        running, stamp = job.record, iso_utc(now)
        attempts = running.attempts
        if kind is VerdictKind.SUCCEEDED:
            return replace(running, state=JobState.SUCCEEDED, updated_at=stamp, error=None), None
        if kind is VerdictKind.GAVE_UP:
            failed = replace(running, state=JobState.FAILED, updated_at=stamp, error=error)
            return failed, None
        if kind is VerdictKind.FAILED and attempts >= max_attempts:
            gave = gave_up(error or "released", attempts)
            return replace(running, state=JobState.FAILED, updated_at=stamp, error=gave), None
        spent = kind is VerdictKind.FAILED
        if kind is VerdictKind.DEFERRED:
            wait = deferred_wait(self.backoff_base, self.backoff_max, attempts)
        else:
            wait = backoff(self.backoff_base, self.backoff_max, attempts) if spent else 0.0
        queued = replace(
            running,
            state=JobState.QUEUED,
            attempts=attempts if spent else max(attempts - 1, 0),
            updated_at=stamp,
            error=error or None,
        )
        return queued, (int(now + wait + 0.999) if wait > 0 else None)

    def settle(self, claim: Claim, verdict: Verdict) -> Settled:
        """Finish a claim the way `verdict` says."""
        now = self.clock()
        with self._lock:
            job = self._held(claim)
            error = verdict.error
            if verdict.kind is VerdictKind.GAVE_UP:
                error = error or "failed without a message"
            record, not_before = self._ending(job, verdict.kind, error, verdict.max_attempts, now)
            self._finish(claim.job_id, job, record, not_before)
        return Settled(claim.job_id, record.state, self._place(claim.job_id), not_before)

    def _outcome(self, job: _Job) -> Outcome | None:
        """What the claim's watcher recorded, in memory or in its status file."""
        if job.outcome is not None or job.file is None:
            return job.outcome
        return job_outcome.read_outcome(job_outcome.status_path(job.file))

    def record_outcome(self, claim: Claim, outcome: Outcome) -> None:
        """What the claim's watcher saw of the job's end, for recover() if its owner dies."""
        with self._lock:
            self._held(claim).outcome = outcome

    def renew(self, claim: Claim) -> bool:
        """True while the claim is this owner's (claims here last as long as their owner)."""
        job = self._jobs.get(claim.job_id)
        return job is not None and job.handle is claim.handle and claim.held

    def request_cancel(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """Ask a running job's watcher to stop it: the request beside its job file, where the
        watcher looks (lanekit.queue.outcome.cancel_path); it then fails as cancelled."""
        with self._lock:
            job = self._waiting(job_id, JobState.RUNNING)
            if job.file is None:  # mypy: a running job has its file
                raise QueueError(f"{self.where}: job {job_id} has no file", "a bug: report it")
            if not dry_run:
                Path(job_outcome.cancel_path(job.file)).write_text(
                    f"{CANCELLED}\n", encoding="utf-8"
                )
            source = self._place(job_id)
        return Moved(job_id, source, self._place(job_id, JobState.FAILED), JobState.FAILED)

    def cancel_requested(self, claim: Claim) -> bool:
        """Whether `lanekit cancel --stop` asked for the claim's job to stop."""
        return self.renew(claim) and Path(job_outcome.cancel_path(claim.file)).exists()

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Give back the claims whose owner is gone: settled by the recorded outcome when the
        job finished, back to run again otherwise (a crash spends no attempt)."""
        now = self.clock() if now is None else now
        recovered = []
        with self._lock:
            for job_id, job in sorted(self._jobs.items(), key=lambda item: item[1].seq):
                if job.owner is None or job.owner not in self._gone:
                    continue
                owner, outcome, attempts = job.owner, self._outcome(job), job.record.attempts
                if outcome is None:
                    kind = VerdictKind.STOPPED
                    error = f"owner {owner} died before its job's end was recorded: run again"
                else:
                    error = job_outcome.describe(outcome)
                    if outcome.cancelled:
                        kind, error = VerdictKind.GAVE_UP, CANCELLED
                    elif outcome.exit == 0:
                        kind = VerdictKind.SUCCEEDED
                    elif outcome.stopped:
                        kind = VerdictKind.STOPPED
                    else:
                        kind = VerdictKind.FAILED
                record, not_before = self._ending(job, kind, error, max_attempts, now)
                if not dry_run:
                    self._finish(job_id, job, record, not_before)
                if outcome is None or kind is VerdictKind.STOPPED:
                    attempts = max(attempts - 1, 0)  # cut short, not ended by the job
                place = self._place(job_id, record.state)
                exit_status = None if outcome is None else outcome.exit
                why = RecoverReason.OWNER_DEAD
                item = Recovered(job_id, why, place, record.state, owner, attempts, exit_status)
                recovered.append(item)
        return recovered

    def succeeded(self, job_id: str) -> bool:
        """The re-execution guard: True once `job_id` succeeded (also after a purge)."""
        return job_id in self._guard

    def counts(self, now: float | None = None) -> QueueCounts:
        """How many jobs are in each state, and the oldest queued job and claim."""
        from lanekit.queue.counts import QueueCounts

        now = self.clock() if now is None else now
        jobs = self._jobs.values()
        tally = Counter(tally_of(job) for job in jobs)
        queued = [job.enqueued_at for job in jobs if tally_of(job) is JobState.QUEUED]
        claims = [job.claimed_at for job in jobs if job.file is not None]
        return QueueCounts(
            queued=tally[JobState.QUEUED],
            delayed=tally["delayed"],
            claimed=tally[JobState.RUNNING],
            done=tally[JobState.SUCCEEDED],
            failed=tally[JobState.FAILED],
            oldest_queued_age=now - min(queued) if queued else None,
            oldest_claim_age=now - min(claims) if claims else None,
        )

    def claims(self, now: float | None = None) -> list[ClaimView]:
        """Every claim, oldest first: LIVE while its owner is, STRANDED once it is gone."""
        from lanekit.queue.counts import ClaimInfo

        now = self.clock() if now is None else now
        views = []
        for job_id, job in sorted(self._jobs.items(), key=lambda item: item[1].claimed_at):
            if job.owner is None or job.file is None:
                continue
            alive = job.owner not in self._gone
            # The owner is this process while it lives; a gone one had no process to name.
            pid = os.getpid() if alive else None
            info = ClaimInfo(job_id, Path(job.file), pid, None, None, now - job.claimed_at, alive)
            views.append(ClaimView(info, ClaimState.LIVE if alive else ClaimState.STRANDED))
        return views

    def page(
        self,
        page: int = 1,
        per_page: int = 20,
        state: JobState | None = None,
        *,
        delayed: bool | None = None,
    ) -> Page:
        """Page `page` of the jobs (all, or those in `state`; `delayed`: of the queued ones,
        only those waiting for their time, or only the ready ones), newest first."""
        from lanekit.queue.paging import Page, adjust_item_count, paginate

        newest = sorted(self._jobs.values(), key=lambda job: job.seq, reverse=True)
        chosen = [
            job
            for job in newest
            if (state is None or job.record.state is state)
            and (delayed is None or delayed is (job.not_before is not None))
        ]
        start, stop, meta = paginate(len(chosen), page, per_page)
        shown = chosen[start:stop]
        waiting = {
            job.record.job_id: iso_utc(job.not_before)
            for job in shown
            if job.not_before is not None and job.record.state is JobState.QUEUED
        }
        items = [job.record for job in shown]
        elsewhere = len(newest) if state is not None and not chosen else 0
        meta = adjust_item_count(meta, len(items))
        return Page(items, meta, [], state, elsewhere, waiting, delayed)

    def job(self, job_id: str) -> JobView | None:
        """Everything known about one job, or None when there is no trace of it."""
        from lanekit.queue.ids import validate_job_id
        from lanekit.queue.paging import JobView

        validate_job_id(job_id)
        job = self._jobs.get(job_id)
        if job is None:
            return None
        record = job.record
        error = (
            error_file_text(record.error)
            if record.state is JobState.FAILED and record.error
            else None
        )
        retry_at = None if job.not_before is None else iso_utc(job.not_before)
        return JobView(job_id, record.state, Path(self._place(job_id)), record, error, retry_at)

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job is now."""
        job = self._jobs.get(job_id)
        if job is None:
            return None
        return JobLocation(job_id, job.record.state, self._place(job_id))

    def contradictions(self) -> list[tuple[Record, JobLocation | None]]:
        """None: a job's record is where it is (one dict entry holds both)."""
        return []

    def attempts_between(self, start: float, end: float) -> list[AttemptSpan]:
        """None: only this machine claims from this queue, and its lanes' logs tell those runs."""
        return []

    def success_copies(self) -> Counter[str]:
        """One finished copy per succeeded job still kept."""
        return Counter(
            job_id for job_id, job in self._jobs.items() if job.record.state is JobState.SUCCEEDED
        )

    def failed_ids(self) -> list[str]:
        """Ids of the jobs that failed for good, oldest first."""
        failed = [
            (job.seq, job_id)
            for job_id, job in self._jobs.items()
            if job.record.state is JobState.FAILED
        ]
        return [job_id for _, job_id in sorted(failed)]

    def _waiting(self, job_id: str, state: JobState, delayed: bool | None = None) -> _Job:
        """The job, when it is in `state` (and, with `delayed`, waiting out a backoff or
        not); UsageError naming where it is otherwise. A running one is never waiting."""
        job = self._jobs.get(job_id)
        if job is not None and state is not JobState.RUNNING is job.record.state:
            raise UsageError(
                f"job {job_id} is running ({self._place(job_id)}): not moved",
                "stop it with `lanekit cancel --stop`, or wait for it to finish",
            )
        if (
            job is None
            or job.record.state is not state
            or (delayed is not None and delayed is (job.not_before is None))
        ):
            now = "not in the queue" if job is None else str(job.record.state)
            where = "delayed" if delayed else str(state)
            raise UsageError(f"job {job_id} is not {where} ({now})", f"only a {where} job")
        return job

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into the queue with all its attempts again."""
        stamp = iso_utc(self.clock() if now is None else now)
        with self._lock:
            job = self._waiting(job_id, JobState.FAILED)
            source = self._place(job_id)
            if not dry_run:
                job.record = replace(
                    job.record, state=JobState.QUEUED, attempts=0, updated_at=stamp
                )
        return Moved(job_id, source, self._place(job_id, JobState.QUEUED), JobState.QUEUED)

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A retry waiting out its backoff: queued now."""
        with self._lock:
            job = self._waiting(job_id, JobState.QUEUED, delayed=True)
            source = self._place(job_id)
            if not dry_run:
                job.not_before = None
        return Moved(job_id, source, self._place(job_id, JobState.QUEUED), JobState.QUEUED)

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or waiting job to failed, reason `cancelled`; never a running one."""
        stamp = iso_utc(self.clock() if now is None else now)
        with self._lock:
            job = self._waiting(job_id, JobState.QUEUED)
            source = self._place(job_id)
            if not dry_run:
                failed = replace(
                    job.record, state=JobState.FAILED, updated_at=stamp, error=CANCELLED
                )
                self._finish(job_id, job, failed, None)
        return Moved(job_id, source, self._place(job_id, JobState.FAILED), JobState.FAILED)

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Forget finished and failed jobs past retention; the guard outlives them."""
        now = self.clock() if now is None else now
        with self._lock:
            done, failed = [], []
            for job_id, job in sorted(self._jobs.items(), key=lambda item: item[1].seq):
                state = job.record.state
                if state is JobState.SUCCEEDED and now - job.finished_at >= keep_done:
                    done.append(job_id)
                elif state is JobState.FAILED and now - job.finished_at >= keep_failed:
                    failed.append(job_id)
            if not dry_run:
                for job_id in (*done, *failed):
                    del self._jobs[job_id]
                    output = self.output_path(job_id)
                    if output is not None:
                        Path(output).unlink(missing_ok=True)
        return Purged(tuple(done), tuple(failed), (), dry_run)

    def output_path(self, job_id: str) -> str | None:
        """<scratch>/output/<id>.log (None before ensure() made the scratch directory)."""
        from lanekit.queue.ids import validate_job_id

        if self._scratch is None:
            return None
        return str(self._scratch / "output" / f"{validate_job_id(job_id)}.log")

    def _place(self, job_id: str, state: JobState | None = None) -> str:
        """What stands for the job in results: a running job's file, `memory:NAME/<state>/<id>`
        otherwise."""
        job = self._jobs.get(job_id)
        if state is None and job is not None:
            if job.file is not None:
                return job.file
            state = job.record.state
        return f"{self.where}/{state}/{job_id}"


def tally_of(job: _Job) -> str:
    """Where counts() counts a job: its state, or `delayed` for a retry waiting out its
    backoff (as the directory queue's delayed/)."""
    return "delayed" if job.not_before is not None else job.record.state


class MemoryClaimer:
    """Claims for one owner, oldest job first."""

    def __init__(self, queue: MemoryQueue, owner: str, lane: str | None) -> None:
        self.queue = queue
        self.owner = owner
        self.lane = lane

    def claim(self) -> Claim | None:
        """The next job this owner holds, or None when nothing is claimable."""
        return self.queue._claim(self.owner, self.lane)

    def settle_and_claim(self, claim: Claim, verdict: Verdict) -> tuple[Settled, Claim | None]:
        """Settle, then claim (two steps: nothing to save in memory)."""
        settled = self.queue.settle(claim, verdict)
        return settled, self.claim()


_NAMED: dict[str, MemoryQueue] = {}


def named(location: str, **options: Any) -> MemoryQueue:
    """The process's memory queue at `location` (made on first use with `options`)."""
    queue = _NAMED.get(location)
    if queue is None:
        queue = _NAMED[location] = MemoryQueue(location, **options)
    return queue


def forget(location: str) -> None:
    """Drop the memory queue at `location` and its scratch files (a test's teardown)."""
    queue = _NAMED.pop(location, None)
    if queue is not None:
        queue.close()
