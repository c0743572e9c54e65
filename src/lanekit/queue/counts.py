"""What counting a directory queue returns (lanekit.queue.directory.census): how many jobs are
where, and one claim with what is known about its owner. Apart from lanekit.queue.observed, so that
`lanekit status` (benchmark (i)) creates only these two classes. Frozen dataclasses, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """How many jobs are where, for status and doctor."""

    queued: int
    delayed: int
    claimed: int
    done: int
    failed: int
    oldest_queued_age: float | None
    """Seconds since the oldest job in queue/ was enqueued (None when queue/ is empty)."""
    oldest_claim_age: float | None
    """Seconds since the oldest current claim was taken (None when nothing is claimed)."""
    leases: tuple[HostLeases, ...] | None = None
    """The running jobs' leases by host (a server queue's); None for a queue without leases
    (a directory queue's claims are held by their owner's lock, not by a lease)."""


@dataclass(frozen=True, slots=True)
class HostLeases:
    """The leases one host holds on a server queue: its running jobs, and how many of those
    leases lapsed (a holder gone or cut off: the next run on any host recovers them)."""

    host: str
    running: int
    expired: int


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """One file in claimed/ and what is known about its owner."""

    job_id: str
    path: Path
    pid: int | None
    token: str | None
    host: str | None
    age: float
    """Seconds since the claim was taken."""
    owner_alive: bool | None
    """True/False for owners on this host; None when it cannot be checked (another host)."""
