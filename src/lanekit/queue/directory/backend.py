"""The directory queue's JobQueue: `Queue`, one queue directory (see the package docstring)."""

from __future__ import annotations

import os

from lanekit.queue.directory.state import QueueState
from lanekit.queue.unleased import Unleased

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from lanekit.queue.counts import ClaimInfo, QueueCounts
    from lanekit.queue.directory.claim import Claimer
    from lanekit.queue.model import (
        Claim,
        Dropped,
        Moved,
        Purged,
        Recovered,
        Settled,
        Verdict,
    )
    from lanekit.queue.observed import ClaimView, JobLocation
    from lanekit.queue.outcome import Outcome
    from lanekit.queue.paging import AttemptSpan, JobView, Page
    from lanekit.queue.records import JobState, Record


class Queue(Unleased, QueueState):
    """A directory queue (see the module docstring): the directory backend of JobQueue, plus
    the directory-only views (listing, list_claims, counts by directory) tests and tools use.

    `durable=False` skips fsyncs (a power loss may then lose recent jobs and records; a process
    crash never does). Retries wait `backoff_base * 2**(attempt-1)` seconds in delayed/, capped
    at `backoff_max`; a base of 0 sends them straight back to queue/.
    """

    @property
    def where(self) -> str:
        """The queue directory (JobQueue.where)."""
        return self.root

    def missing(self) -> str | None:
        """Why the queue cannot be read yet: its queue/ directory does not exist (None: it
        does). counts() would say 0 everywhere; a queue that does not exist yet says so."""
        if os.path.isdir(self.queue_dir):  # noqa: PTH112 - a str path, like the claim path
            return None
        return f"{self.queue}: no such directory (`lanekit apply` creates it)"

    def ensure(self) -> None:
        """Create the directories that are missing (0700, parents included), then check()."""
        from lanekit.queue.directory import safety

        safety.ensure(self)

    def check(self) -> None:
        """Refuse (QueueError, exit 69) a queue whose directories could break exactly-once."""
        from lanekit.queue.directory import safety

        safety.check(self)

    def rename_failure(self) -> str | None:
        """The no-replace rename probed in this queue's own tmp/ (JobQueue.rename_failure):
        its volume is asked, not judged by its type's name."""
        from lanekit.system import fsops

        try:
            return fsops.probe_noreplace(self.tmp_dir)
        except OSError:
            return None  # tmp/ missing or unwritable: check() and doctor's queue checks say so

    def enqueue(
        self,
        payload: Mapping[str, Any] | bytes | str,
        job_id: str | None = None,
        *,
        not_before: float | None = None,
    ) -> str:
        """Add a job; returns its id (see lanekit.queue.directory.enqueue.enqueue)."""
        from lanekit.queue.directory import enqueue

        return enqueue.enqueue(self, payload, job_id, not_before=not_before)

    def output_path(self, job_id: str) -> str | None:
        """logs/output/<id>.log (lanekit.queue.directory.layout.output_name); the id is
        checked, as it becomes a file name."""
        from lanekit.queue.directory.layout import output_name
        from lanekit.queue.ids import validate_job_id

        return f"{self.root}/{output_name(validate_job_id(job_id))}"

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> Claimer:
        """A claimer for this process (see Claimer). Checks the queue first."""
        from lanekit.queue.directory import claim, safety

        safety.check(self)
        return claim.Claimer(self, lane=lane, on_drop=on_drop)

    def complete(self, claim: Claim) -> Path:
        """The job succeeded: record it, move it to done/<UTC day>/, drop the lock."""
        from lanekit.queue.directory import settle

        return settle.complete(self, claim)

    def fail(self, claim: Claim, error: str) -> Path:
        """The job failed for good: record it, move it to failed/ with <id>.error."""
        from lanekit.queue.directory import settle

        return settle.fail(self, claim, error)

    def release(
        self,
        claim: Claim,
        *,
        max_attempts: int,
        error: str = "",
        count_attempt: bool = True,
        delay: bool = True,
    ) -> Path:
        """Give the job back: delayed/, queue/, or failed/ when out of attempts."""
        from lanekit.queue.directory import settle

        return settle.release(
            self,
            claim,
            max_attempts=max_attempts,
            error=error,
            count_attempt=count_attempt,
            delay=delay,
        )

    def settle(self, claim: Claim, verdict: Verdict) -> Settled:
        """Finish a claim the way `verdict` says; where the job went, as a state."""
        from lanekit.queue.directory import settle

        return settle.settle(self, claim, verdict)

    def record_outcome(self, claim: Claim, outcome: Outcome) -> None:
        """Write the job's exit status next to the claim, as its watcher does."""
        from lanekit.queue import outcome as job_outcome
        from lanekit.system import fsops

        tmp = f"{self.tmp_dir}/.status.{fsops.tmp_suffix()}"
        fsops.replace_file(
            job_outcome.status_path(claim.file), outcome.to_bytes(), tmp=tmp, durable=False
        )

    def renew(self, claim: Claim) -> bool:
        """True: a directory claim lasts as long as its flock, no lease to renew."""
        return claim.held

    def cancel_requested(self, claim: Claim) -> bool:
        """Whether `lanekit cancel --stop` left its request beside the claim."""
        from lanekit.queue import outcome as job_outcome

        return os.path.lexists(job_outcome.cancel_path(claim.file))

    def succeeded(self, job_id: str) -> bool:
        """The re-execution guard: the record says succeeded, or the purge index lists it."""
        return self.store.succeeded(job_id, self.store.read(job_id))

    def promote_due(self, now: float | None = None) -> list[str]:
        """Move retries whose not-before time has come from delayed/ to queue/; their ids."""
        from lanekit.queue.directory import settle

        return settle.promote_due(self, now)

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Give back claims whose owner is gone (see lanekit.queue.directory.recover.recover)."""
        from lanekit.queue.directory import recover

        return recover.recover(
            self, stale_after=stale_after, max_attempts=max_attempts, dry_run=dry_run, now=now
        )

    def counts(self, now: float | None = None) -> QueueCounts:
        """How many jobs are in each directory, and the oldest queued job and claim."""
        from lanekit.queue.directory import census as counting

        return counting.counts(self, now)

    def list_claims(
        self, now: float | None = None, *, check_owners: bool = True
    ) -> list[ClaimInfo]:
        """Every claim with its owner and age, oldest first."""
        from lanekit.queue.directory import census as counting

        return counting.list_claims(self, now, check_owners=check_owners)

    def claims(self, now: float | None = None) -> list[ClaimView]:
        """Every claim, oldest first, classified (lanekit.queue.directory.liveness)."""
        from lanekit.queue.directory import observe

        return observe.claims(self, now)

    def page(
        self,
        page: int = 1,
        per_page: int = 20,
        state: JobState | None = None,
        *,
        delayed: bool | None = None,
    ) -> Page:
        """Page `page` of the jobs (all, or those in `state`; `delayed`: of the queued ones,
        those in delayed/ or those in queue/), newest first."""
        from lanekit.queue.directory import pages

        return pages.page_jobs(self, page, per_page, state, delayed=delayed)

    def job(self, job_id: str) -> JobView | None:
        """Everything known about one job, or None when there is no trace of it."""
        from lanekit.queue.directory import pages

        return pages.find_job(self, job_id)

    def contradictions(self) -> list[tuple[Record, JobLocation | None]]:
        """Records that contradict where their job's file is (a `queued` one with the lane its
        claim's running mark names: the lane that ran it)."""
        from lanekit.queue.directory import mark, observe

        return [(mark.with_lane(self, record), at) for record, at in observe.contradictions(self)]

    def attempts_between(self, start: float, end: float) -> list[AttemptSpan]:
        """None: only this machine claims from this queue, and its lanes' logs tell those runs."""
        return []

    def success_copies(self) -> Counter[str]:
        """Per id, its files in done/."""
        from lanekit.queue.directory import observe

        return observe.success_copies(self)

    def listing(self, state: JobState | None = None) -> dict[str, tuple[JobState, str, str | None]]:
        """Every job file as id -> (state, directory, file name or None for `<id>.json`)."""
        from lanekit.queue.directory import observe

        return observe.listing(self, state)

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job's file is now, or None if it is nowhere."""
        from lanekit.queue.directory import observe

        return observe.locate(self, job_id)

    def error_text(self, location: JobLocation) -> str | None:
        """The .error file next to a failed job, or None."""
        from lanekit.queue.directory import observe

        return observe.error_text(self, location)

    def failed_ids(self) -> list[str]:
        """Ids of the jobs in failed/ under their own name, oldest first (`retry --failed`)."""
        from lanekit.queue.directory import observe

        return observe.failed_ids(self)

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into queue/ with all its attempts again (`lanekit retry`)."""
        from lanekit.queue.directory import verbs

        return verbs.retry(self, job_id, dry_run=dry_run, now=now)

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A job waiting out its backoff in delayed/: into queue/ now (`lanekit requeue`)."""
        from lanekit.queue.directory import verbs

        return verbs.requeue(self, job_id, dry_run=dry_run)

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or delayed job to failed/ with reason `cancelled` (`lanekit cancel`)."""
        from lanekit.queue.directory import verbs

        return verbs.cancel(self, job_id, dry_run=dry_run, now=now)

    def request_cancel(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """Ask a running job's watcher to stop it, to be failed as cancelled (`cancel --stop`)."""
        from lanekit.queue.directory import verbs

        return verbs.request_cancel(self, job_id, dry_run=dry_run)

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Remove finished and failed jobs past their retention (`lanekit purge`)."""
        from lanekit.queue.directory import purge

        return purge.purge(
            self, keep_done=keep_done, keep_failed=keep_failed, dry_run=dry_run, now=now
        )
