"""The directory queue (design.md section 3): exactly-once claims by one atomic rename.

Layout under the queue directory, all on one local filesystem:

    tmp/      writers build files here, then rename them into place
    queue/    <id>.json, ready to run; generated ids start with the UTC time in ns (sort = age)
    claimed/  <id>.<owner>.json, owner = <hosttag>-<pid>-<start token>: claim and owner are one
              rename, and the owner holds a flock on the file while the job runs
    delayed/  <id>.<not-before epoch>.json, retries waiting out their backoff
    done/     <YYYY-MM-DD>/<id>.json (UTC day buckets, so no directory grows without bound)
    failed/   <id>.json plus <id>.error (why)
    records/  <id>.json status records (lanekit.records), the re-execution guard
    logs/     lane logs (written by the runner)

Every move is a no-replace rename (lanekit.fsops): a collision is an error, never an overwrite.
In done/ and failed/ a second copy of an id keeps its claimed name (<id>.<owner>.json) next to
the first; in queue/ and delayed/ it goes to failed/ as a duplicate. No job file is deleted.

Producers in any language can enqueue without lanekit: write tmp/<anything>, then rename it to
queue/<id>.json. The claimer creates the record of such a job when it claims it.

The package: `layout` (ids, owners, the one file-name grammar), `state` (what the parts share),
`safety` (setup and refusals), `enqueue`, `claim`, `settle`, `recover`, `observe`, `verbs`,
`purge`, and `Queue` below, the façade that scripts, benchmarks and the runner use.
"""

from __future__ import annotations

from lanekit.queue import claim, enqueue, observe, purge, recover, safety, settle, verbs
from lanekit.queue.claim import _FIRST_WINDOW, Claimer
from lanekit.queue.enqueue import payload_problem
from lanekit.queue.layout import (
    MAX_ID_LENGTH,
    SUBDIRS,
    Owner,
    new_job_id,
    own_owner,
    split_owned_name,
    validate_job_id,
)
from lanekit.queue.model import (
    Claim,
    ClaimInfo,
    ClaimLock,
    Dropped,
    DropReason,
    JobExistsError,
    JobLocation,
    Moved,
    Purged,
    QueueCounts,
    RecordNotWrittenError,
    Recovered,
    RecoverReason,
)
from lanekit.queue.safety import location_error
from lanekit.queue.state import DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX, QueueState
from lanekit.queue.verbs import CANCELLED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from lanekit.records import JobState

__all__ = [
    "CANCELLED",
    "DEFAULT_BACKOFF_BASE",
    "DEFAULT_BACKOFF_MAX",
    "MAX_ID_LENGTH",
    "SUBDIRS",
    "_FIRST_WINDOW",
    "Claim",
    "ClaimInfo",
    "ClaimLock",
    "Claimer",
    "DropReason",
    "Dropped",
    "JobExistsError",
    "JobLocation",
    "Moved",
    "Owner",
    "Purged",
    "Queue",
    "QueueCounts",
    "RecordNotWrittenError",
    "RecoverReason",
    "Recovered",
    "location_error",
    "new_job_id",
    "own_owner",
    "payload_problem",
    "split_owned_name",
    "validate_job_id",
]


class Queue(QueueState):
    """A directory queue (see the module docstring).

    `durable=False` skips fsyncs (a power loss may then lose recent jobs and records; a process
    crash never does). Retries wait `backoff_base * 2**(attempt-1)` seconds in delayed/, capped
    at `backoff_max`; a base of 0 sends them straight back to queue/.
    """

    def ensure(self) -> None:
        """Create the directories that are missing (0700, parents included), then check()."""
        safety.ensure(self)

    def check(self) -> None:
        """Refuse (QueueError, exit 69) a queue whose directories could break exactly-once."""
        safety.check(self)

    def enqueue(self, payload: Mapping[str, Any] | bytes | str, job_id: str | None = None) -> str:
        """Add a job; returns its id (see lanekit.queue.enqueue.enqueue)."""
        return enqueue.enqueue(self, payload, job_id)

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> Claimer:
        """A claimer for this process (see Claimer). Checks the queue first."""
        safety.check(self)
        return claim.Claimer(self, lane=lane, on_drop=on_drop)

    def complete(self, claim: Claim) -> Path:
        """The job succeeded: record it, move it to done/<UTC day>/, drop the lock."""
        return settle.complete(self, claim)

    def fail(self, claim: Claim, error: str) -> Path:
        """The job failed for good: record it, move it to failed/ with <id>.error."""
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
        return settle.release(
            self,
            claim,
            max_attempts=max_attempts,
            error=error,
            count_attempt=count_attempt,
            delay=delay,
        )

    def promote_due(self, now: float | None = None) -> list[str]:
        """Move retries whose not-before time has come from delayed/ to queue/; their ids."""
        return settle.promote_due(self, now)

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Give back claims whose owner is gone (see lanekit.queue.recover.recover)."""
        return recover.recover(
            self, stale_after=stale_after, max_attempts=max_attempts, dry_run=dry_run, now=now
        )

    def counts(self, now: float | None = None) -> QueueCounts:
        """How many jobs are in each directory, and the oldest queued job and claim."""
        return observe.counts(self, now)

    def list_claims(
        self, now: float | None = None, *, check_owners: bool = True
    ) -> list[ClaimInfo]:
        """Every claim with its owner and age, oldest first."""
        return observe.list_claims(self, now, check_owners=check_owners)

    def listing(self, state: JobState | None = None) -> dict[str, tuple[JobState, str, str | None]]:
        """Every job file as id -> (state, directory, file name or None for `<id>.json`)."""
        return observe.listing(self, state)

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job's file is now, or None if it is nowhere."""
        return observe.locate(self, job_id)

    def error_text(self, location: JobLocation) -> str | None:
        """The .error file next to a failed job, or None."""
        return observe.error_text(self, location)

    def failed_ids(self) -> list[str]:
        """Ids of the jobs in failed/ under their own name, oldest first (`retry --failed`)."""
        return observe.failed_ids(self)

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into queue/ with all its attempts again (`lanekit retry`)."""
        return verbs.retry(self, job_id, dry_run=dry_run, now=now)

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A job waiting out its backoff in delayed/: into queue/ now (`lanekit requeue`)."""
        return verbs.requeue(self, job_id, dry_run=dry_run)

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or delayed job to failed/ with reason `cancelled` (`lanekit cancel`)."""
        return verbs.cancel(self, job_id, dry_run=dry_run, now=now)

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Remove finished and failed jobs past their retention (`lanekit purge`)."""
        return purge.purge(
            self, keep_done=keep_done, keep_failed=keep_failed, dry_run=dry_run, now=now
        )
