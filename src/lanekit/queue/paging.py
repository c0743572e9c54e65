"""Newest-first paging of a queue's jobs (`lanekit jobs`, JobQueue.page) and one job's story
(`lanekit job`, JobQueue.job): the page's shape and its rules, whatever backend fills it (the
directory backend's is lanekit.queue.directory.pages, which reads only the page's records).

PageMeta follows the shape of seed 003's paging: pages are 1-based, out-of-range pages clamp to
the last page, per_page <= 0 returns everything, and from/to are adjusted to the items actually
read. Records that cannot be read are listed in `Page.unreadable`, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from lanekit.queue.records import JobState, Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True, slots=True)
class PageMeta:
    """What a pager needs; JSON keys are the field names, except `from_` -> "from"."""

    page: int
    """1-based; an out-of-range request is clamped to the last page (1 when empty)."""
    per_page: int
    """The page size used (the total when the request was <= 0: everything on one page)."""
    total: int
    total_pages: int
    has_prev: bool
    has_next: bool
    prev_page: int
    """0 when there is no previous page."""
    next_page: int
    """0 when there is no next page."""
    from_: int
    """1-based position of the first item shown (0 when nothing is shown)."""
    to: int
    """1-based position of the last item shown (0 when nothing is shown)."""

    def to_json(self) -> dict[str, int | bool]:
        """The JSON object (`from_` is spelled "from")."""
        return {
            "page": self.page,
            "per_page": self.per_page,
            "total": self.total,
            "total_pages": self.total_pages,
            "has_prev": self.has_prev,
            "has_next": self.has_next,
            "prev_page": self.prev_page,
            "next_page": self.next_page,
            "from": self.from_,
            "to": self.to,
        }


def paginate(total: int, page: int, per_page: int) -> tuple[int, int, PageMeta]:
    """(start, stop, meta): the slice of a newest-first list of `total` items to show."""
    if per_page <= 0:
        size, pages, page = total, (1 if total else 0), 1
    else:
        size = per_page
        pages = -(-total // per_page)
        page = min(max(page, 1), max(pages, 1))
    start = min((page - 1) * size, total)
    stop = min(start + size, total)
    has_prev, has_next = page > 1, page < pages
    meta = PageMeta(
        page=page,
        per_page=size,
        total=total,
        total_pages=pages,
        has_prev=has_prev,
        has_next=has_next,
        prev_page=page - 1 if has_prev else 0,
        next_page=page + 1 if has_next else 0,
        from_=start + 1 if stop > start else 0,
        to=stop,
    )
    return start, stop, meta


def adjust_item_count(meta: PageMeta, count: int) -> PageMeta:
    """`meta` with from/to matching the `count` items actually read (seed 003's AdjustItemCount)."""
    if count <= 0:
        return replace(meta, from_=0, to=0)
    start = meta.from_ if meta.from_ > 0 else 1
    return replace(meta, from_=start, to=start + count - 1)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A job on the page whose record could not be read, and why."""

    job_id: str
    path: Path
    reason: str


@dataclass(frozen=True, slots=True)
class Page:
    """One page of jobs, newest first."""

    items: list[Record]
    meta: PageMeta
    unreadable: list[Unreadable]
    state: JobState | None = None
    """The state asked for (None: every state)."""
    elsewhere: int = 0
    """With `state`, when no job is in it: how many jobs the queue holds in other states (so
    an empty answer can say "no failed jobs (702 in other states)"); 0 otherwise."""
    not_before: dict[str, str] = field(default_factory=dict)
    """The jobs on the page that wait for their time (a retry's backoff, `enqueue --at`): id
    -> when it is due (ISO 8601 UTC). A job not here is ready (or not queued)."""
    delayed: bool | None = None
    """The `delayed` filter asked for along with `state` (None: none)."""

    def state_of(self, record: Record) -> str:
        """A job's state as `lanekit jobs` shows it: its record's, `delayed` for a queued job
        that waits for its time."""
        return "delayed" if record.job_id in self.not_before else str(record.state)

    def to_json(self) -> dict[str, Any]:
        """`items`, `page` (PageMeta), `unreadable` and `delayed` (the page's jobs that wait
        for their time, with when), for `lanekit jobs --json`."""
        return {
            "items": [record.to_dict() for record in self.items],
            "page": self.meta.to_json(),
            "unreadable": [
                {"job_id": u.job_id, "path": str(u.path), "reason": u.reason}
                for u in self.unreadable
            ],
            "delayed": [
                {"job_id": job_id, "not_before": due} for job_id, due in self.not_before.items()
            ],
        }


@dataclass(frozen=True, slots=True)
class AttemptView:
    """One claim of a job, as a server queue keeps it (`lanekit job` lists them)."""

    attempt: int
    host: str
    pid: int
    outcome: str | None
    """succeeded, failed, stopped, orphaned (its lease lapsed), or None while it runs."""
    started_at: str
    ended_at: str | None

    def to_json(self) -> dict[str, Any]:
        """The JSON object (`lanekit job --json`'s `attempt_history` items)."""
        return {
            "attempt": self.attempt,
            "host": self.host,
            "pid": self.pid,
            "outcome": self.outcome,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


@dataclass(frozen=True, slots=True)
class AttemptSpan:
    """One claim of some job as a server queue keeps it, with the host that ran it: what
    JobQueue.attempts_between returns (`lanekit timeline` draws other hosts' runs by it)."""

    job_id: str
    lane: str | None
    """The lane that claimed it, as that host named it (None: claimed without a lane)."""
    attempt: int
    host: str
    """The claiming machine's host name (socket.gethostname() there)."""
    pid: int
    outcome: str | None
    """succeeded, failed, stopped, orphaned (its lease lapsed), or None while it runs."""
    started: float
    """Epoch seconds, on the server's clock."""
    ended: float | None
    """Epoch seconds; None while it runs."""


@dataclass(frozen=True, slots=True)
class JobView:
    """Everything known about one job, for `lanekit job LANE ID`."""

    job_id: str
    state: JobState
    """From the job file's directory; from the record when the file is nowhere."""
    path: Path | None
    """The job file (None when only the record remains)."""
    record: Record | None
    error: str | None
    """The failed/<id>.error text, for failed jobs."""
    retry_at: str | None = None
    """For a retry waiting in delayed/, when it is due (ISO 8601 UTC); None otherwise."""
    history: tuple[AttemptView, ...] = ()
    """Every claim of the job with its host and outcome, where the backend keeps them (a
    server queue); empty otherwise."""
