"""What observing a directory queue returns: what each claim amounts to, where a job is, and
why a claim may be taken from its owner (counts and claims with their owners are
lanekit.queue.counts's). Split from lanekit.queue.model so that observing creates only these
few classes, and from counting so that `lanekit status` (benchmark (i)) creates none of them.
Frozen dataclasses and closed vocabularies, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.counts import ClaimInfo
    from lanekit.queue.records import JobState


class RecoverReason(StrEnum):
    """Why recover() took a claim away from its owner."""

    OWNER_DEAD = "owner-dead"
    PID_REUSED = "pid-reused"
    STALE = "stale"
    """Owner on another host (or unnamed) and the claim is older than stale_after."""
    LEASE_EXPIRED = "lease-expired"
    """A server queue's lease lapsed unrenewed (its holder died, slept or was cut off)."""


@dataclass(frozen=True, slots=True)
class JobLocation:
    """Where a job is, and its state there."""

    job_id: str
    state: JobState
    where: str
    """What stands for the job, for messages: the directory backend's file (a running job's
    is the job file its command was given)."""


class ClaimState(StrEnum):
    """What a claim amounts to, from its owner's liveness and its lock (one answer: recover()
    acts on it, doctor reports it)."""

    LIVE = "live"
    """Its runner is running (or the OS will not say: never judged dead on a guess)."""
    ORPHANED = "orphaned"
    """Its runner is dead but the job still runs (its watcher holds the claim's lock, or,
    with the watcher dead too, a copy of the job is alive: lanekit.queue.outcome.job_copies): not
    stale,
    recover() leaves it alone until every copy has ended."""
    STRANDED = "stranded"
    """Its runner is dead, nobody holds the lock and no copy of the job runs: recover()
    gives it back."""
    UNKNOWN = "unknown"
    """Its owner is on another host, or unnamed: only its age can tell."""


@dataclass(frozen=True, slots=True)
class ClaimView:
    """One claim and what it amounts to."""

    info: ClaimInfo
    state: ClaimState
