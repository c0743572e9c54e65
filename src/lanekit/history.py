"""Newest-first paging of a queue's jobs (`lanekit jobs`), reading only the page's records.

The list of jobs comes from the directory listings (a job's directory is its state, so
`--state` needs no record either); it is ordered newest first by the time in the id (generated
ids start with it), falling back to the job file's mtime for custom ids (one stat each, only for
those). Only the records of the requested page are then opened. PageMeta follows the shape of
seed 003's paging: pages are 1-based, out-of-range pages clamp to the last page, per_page <= 0
returns everything, and from/to are adjusted to the items actually read. Records that cannot be
read are listed in `Page.unreadable`, never silently dropped.
"""

# ruff: noqa: PTH116
# (os.stat on str paths: custom ids are stat'ed in bulk when a page is sorted)
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from lanekit.queue import Queue, validate_job_id
from lanekit.records import JobState, Record, RecordError, iso_utc

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

    def to_json(self) -> dict[str, Any]:
        """`items`, `page` (PageMeta) and `unreadable`, for `lanekit jobs --json`."""
        return {
            "items": [record.to_dict() for record in self.items],
            "page": self.meta.to_json(),
            "unreadable": [
                {"job_id": u.job_id, "path": str(u.path), "reason": u.reason}
                for u in self.unreadable
            ],
        }


def _custom_key(job_id: str, path: str) -> str:
    """A custom id sorts by its file's mtime, in the shape of a generated id (20 digits of ns)."""
    try:
        mtime_ns = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        mtime_ns = 0
    return f"{mtime_ns:020d}-{job_id}"


def _job_path(job_id: str, entry: tuple[JobState, str, str | None]) -> str:
    return f"{entry[1]}/{entry[2] or job_id + '.json'}"


def page_jobs(
    queue: Queue, page: int = 1, per_page: int = 20, state: JobState | None = None
) -> Page:
    """Page `page` of the queue's jobs (all, or those in `state`), newest first."""
    listing = queue.listing(state)
    total = len(listing)
    start, stop, meta = paginate(total, page, per_page)
    # Generated ids begin with their enqueue time, so they are their own sort keys; only
    # custom ids need one (their file's mtime, one stat each).
    custom = [j for j in listing if j[20:21] != "-" or not j[:20].isdigit()]  # not generated
    keys: dict[str, str] = {}
    if custom:
        keys = {
            _custom_key(job_id, _job_path(job_id, listing[job_id])): job_id for job_id in custom
        }
        ordered = [*(listing.keys() - set(custom)), *keys]
    else:
        ordered = list(listing)
    if stop < total // 8:
        import heapq

        chosen = heapq.nlargest(stop, ordered)[start:stop]
    else:
        ordered.sort(reverse=True)
        chosen = ordered[start:stop]
    items: list[Record] = []
    unreadable: list[Unreadable] = []
    for key in chosen:
        job_id = keys.get(key, key)
        try:
            record = queue.store.read(job_id)
        except RecordError as exc:
            unreadable.append(Unreadable(job_id, queue.store.path(job_id), exc.message))
            continue
        if record is None:
            entry = listing[job_id]
            record = _unrecorded(job_id, entry[0], _job_path(job_id, entry))
        items.append(record)
    return Page(items, adjust_item_count(meta, len(items)), unreadable)


def _unrecorded(job_id: str, state: JobState, path: str) -> Record:
    """A job without a record yet (a producer dropped it into queue/): what its file tells."""
    try:
        stamp = iso_utc(os.stat(path).st_mtime)
    except FileNotFoundError:
        stamp = ""
    return Record(job_id, state, 0, stamp, stamp)


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


def find_job(queue: Queue, job_id: str) -> JobView | None:
    """The job with this id, or None if neither its file nor its record exists.

    UsageError for an id that is not a valid job id; RecordError if its record is unreadable.
    """
    validate_job_id(job_id)
    location = queue.locate(job_id)
    record = queue.store.read(job_id)
    if location is None:
        if record is None:
            return None
        return JobView(job_id, record.state, None, record, record.error)
    return JobView(
        job_id,
        location.state,
        location.path,
        record,
        queue.error_text(location),
    )
