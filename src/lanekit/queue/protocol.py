"""The JobQueue seam (design.md section 11): what runner, history, status, doctor, watch and
the CLI may ask of a queue, whatever stores it.

The directory queue (lanekit.queue.directory) and the in-memory one (lanekit.queue.memory) are
its backends, and lanekit.queue.open_queue picks one from the queue's location; the next is
PostgreSQL, so that several Macs can drain one queue (rename is not atomic across machines).
Nothing here names a directory: results say where a job is as text, and a backend hands a job
to its command as a file path (`Claim.path`, the `{job}` of a lane's command): the directory
backend's claimed file, a materialized payload for another backend. A Claim is neutral: its
attempt is the fencing token, its handle the backend's own. tests/queue/test_contract.py is
what every backend must pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Callable, Mapping
    from typing import Any

    from lanekit.queue.counts import QueueCounts
    from lanekit.queue.model import (
        Claim,
        Dropped,
        LeaseRenewal,
        LeaseTerms,
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


class JobClaimer(Protocol):
    """Hands out claims for one process, one at a time."""

    def claim(self) -> Claim | None:
        """The next job this process owns, or None when nothing is left to claim."""
        ...

    def settle_and_claim(self, claim: Claim, verdict: Verdict) -> tuple[Settled, Claim | None]:
        """Settle `claim` as JobQueue.settle does, then claim the next job as claim() does:
        a runner going on to its next job, in one step where the backend can make it one (a
        server queue: one statement, one round trip). A fenced settle raises ClaimFencedError
        and claims nothing; any other failure of the settle claims nothing either. The next
        claim is None when nothing is ready right then (the job just settled and put back
        may be claimed by a later claim())."""
        ...


class JobQueue(Protocol):
    """One queue, as everything outside its backend sees it.

    The promise (lanekit.PROMISE) is the backend's to keep: a claim is exclusive, a success is
    recorded exactly once, a succeeded id never runs again (the guard), attempts are counted
    at claim, a claim whose owner is gone is recovered (and settled by its recorded exit
    status when its job finished), and nothing is ever overwritten.
    """

    @property
    def where(self) -> str:
        """Where the queue lives, for messages (a directory; a database and name)."""
        ...

    @property
    def max_job_bytes(self) -> int:
        """The largest job, in bytes: enqueue refuses a larger payload (UsageError), and a
        larger job handed to the backend any other way is failed unread, never run."""
        ...

    def missing(self) -> str | None:
        """Why the queue cannot be read yet (not created), or None when it exists."""
        ...

    def ensure(self) -> None:
        """Create what is missing, then check()."""
        ...

    def check(self) -> None:
        """Refuse (QueueError) a queue that could break the promise."""
        ...

    def rename_failure(self) -> str | None:
        """What goes wrong with the no-replace rename a claim relies on, asked of the storage
        itself where the queue keeps its files (doctor's volume.no-rename-excl); None when it
        works, when the backend needs none, or when it cannot be asked (not created)."""
        ...

    def enqueue(
        self,
        payload: Mapping[str, Any] | bytes | str,
        job_id: str | None = None,
        *,
        not_before: float | None = None,
    ) -> str:
        """Add a job (a JSON object); its id. JobExistsError for an id already there. With
        `not_before` (epoch seconds) later than now, the job waits as a retry waits out its
        backoff (counted delayed, listed with its time, claimed only once due; `requeue`
        makes it due now); its record says queued."""
        ...

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> JobClaimer:
        """A claimer for this process; jobs that cannot run go to `on_drop`."""
        ...

    def settle(self, claim: Claim, verdict: Verdict) -> Settled:
        """Finish a claim the way `verdict` says; where the job went, as a state."""
        ...

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Give back the claims whose owner is gone; safe from many processes at once."""
        ...

    def record_outcome(self, claim: Claim, outcome: Outcome) -> None:
        """Keep how the claim's job ended (its watcher saw it), so that recover() settles a
        job that finished after its runner died by that, never running it again. A watcher
        process writes the same outcome beside the job file (lanekit.queue.outcome.status_path
        of `Claim.file`): recover() reads it there too."""
        ...

    def renew(self, claim: Claim) -> bool:
        """Extend the claim's lease; False when the claim is no longer this owner's (it
        lapsed, or was settled). A backend without leases answers True while it is held."""
        ...

    def lease_terms(self, claim: Claim) -> LeaseTerms | None:
        """What the claim's watcher needs to renew its lease (and to stop the job before the
        lease can lapse); None for a claim without a lease (it lasts as long as its owner)."""
        ...

    def renew_lease(self, terms: LeaseTerms) -> LeaseRenewal:
        """Renew by terms (the watcher's side of renew, in a process of its own), fenced by
        the token: `held` False when the lease was lost."""
        ...

    def keep_outcome(self, terms: LeaseTerms, outcome: Outcome) -> None:
        """The watcher's record_outcome for a leased claim (fenced by the token), so that
        recover() on any machine settles the job by it if its runner is gone."""
        ...

    def cancel_requested(self, claim: Claim) -> bool:
        """Whether `request_cancel` asked for the claim's job to stop (it leaves the request
        beside the job file, lanekit.queue.outcome.cancel_path, where the watcher looks)."""
        ...

    def output_path(self, job_id: str) -> str | None:
        """The file on this machine where the job's output is kept (its stdout and stderr,
        attempt by attempt: lanekit.run.joboutput), whether or not it exists yet; None for a
        backend that keeps none. purge() removes it with the job."""
        ...

    def succeeded(self, job_id: str) -> bool:
        """The re-execution guard: True once `job_id` succeeded (also after a purge)."""
        ...

    def counts(self, now: float | None = None) -> QueueCounts:
        """How many jobs are in each state, and the oldest queued job and claim."""
        ...

    def claims(self, now: float | None = None) -> list[ClaimView]:
        """Every claim, oldest first, with what it amounts to (live, orphaned, stranded)."""
        ...

    def page(
        self,
        page: int = 1,
        per_page: int = 20,
        state: JobState | None = None,
        *,
        delayed: bool | None = None,
    ) -> Page:
        """Page `page` of the jobs (all, or those in `state`), newest first. With `delayed`,
        of the queued ones only those waiting for their time (True) or only those ready
        (False). The page says when each waiting job on it is due (`Page.not_before`)."""
        ...

    def job(self, job_id: str) -> JobView | None:
        """Everything known about one job, or None when there is no trace of it."""
        ...

    def attempts_between(self, start: float, end: float) -> list[AttemptSpan]:
        """The claims running at some time in [start, end) (epoch seconds), oldest first, with
        the host that made each: one read, for `lanekit timeline` to draw the runs of other
        machines. Empty for a backend one machine keeps (directory, memory): its lanes' logs
        on this machine already tell every run."""
        ...

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job is now (its state and the file that stands for it)."""
        ...

    def contradictions(self) -> list[tuple[Record, JobLocation | None]]:
        """Records that contradict where their job is (see queue.record-mismatch)."""
        ...

    def success_copies(self) -> Counter[str]:
        """Per id, how many finished copies the queue keeps (more than one: look closer)."""
        ...

    def failed_ids(self) -> list[str]:
        """Ids of the jobs that failed for good, oldest first."""
        ...

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into the queue with all its attempts again."""
        ...

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A retry waiting out its backoff: queued now."""
        ...

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or waiting job to failed, reason `cancelled`; never a running one."""
        ...

    def request_cancel(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """Ask a running job's watcher to stop it; its settler fails it as `cancelled`
        (`lanekit cancel --stop`). The Moved is where it is and where it will be."""
        ...

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Remove finished and failed jobs past retention; the guard outlives them."""
        ...
