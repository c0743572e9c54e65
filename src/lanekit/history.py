"""Newest-first paging of a queue's jobs (`lanekit jobs`), reading only the page's records.

The list of jobs comes from the directory listings (a job's directory is its state, so
`--state` needs no record either); it is ordered newest first by the time in the id (generated
ids start with it), falling back to the job file's mtime for custom ids (one stat each, only for
those). Only the records of the requested page are then opened. PageMeta follows the shape of
seed 003's paging: pages are 1-based, out-of-range pages clamp to the last page, per_page <= 0
returns everything, and from/to are adjusted to the items actually read. Records that cannot be
read are listed in `Page.unreadable`, never silently dropped.
"""

# ruff: noqa: PTH116, PTH208
# (os.stat and os.listdir on str and bytes paths: listings of 100k names are the cost here)
from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lanekit.queue import Queue
from lanekit.queue.layout import (
    delayed_until,
    is_job_name,
    new_job_id,
    owned_id,
    stem_id,
    validate_job_id,
)
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
    state: JobState | None = None
    """The state asked for (None: every state)."""
    elsewhere: int = 0
    """With `state`, when no job is in it: how many jobs the queue holds in other states (so
    an empty answer can say "no failed jobs (702 in other states)"); 0 otherwise."""

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


_WIDTH = len(new_job_id(now_ns=0)) + len(".json") + 1
"""A `<generated id>.json` name and the NUL that joins it to the next: generated ids all have
one length (20 digits of ns, 7 of pid, 8 hex)."""


def _only_generated(joined: bytes, count: int, *, dotless: bool) -> bool:
    """Whether `joined` (`count` names joined by NUL) holds only `<generated id>.json` names
    (`dotless`: and no other dot, so that no name can be an owned duplicate).

    Such names have one length, so each test reads a column of the listing (a strided
    slice) instead of looping over its names in Python."""
    if not count or len(joined) != _WIDTH * count - 1:
        return False
    columns = {_WIDTH - 1: b"\0"[0], 20: b"-"[0]}
    columns.update(enumerate(b".json", _WIDTH - 6))
    for column, byte in columns.items():
        expected = count - 1 if column == _WIDTH - 1 else count
        if joined[column::_WIDTH].count(byte) != expected:
            return False
    if not all(joined[column::_WIDTH].isdigit() for column in range(20)):
        return False
    return not dotless or joined.count(b".") == count


class _Source:
    """The job files of one directory as `<id>.json` names (bytes, as listed), for paging.

    Most directories hold only `<generated id>.json` files; that is checked with a few
    whole-listing operations (join, strided slices, count), so a 100k-entry directory costs its
    readdir and no per-file Python. Otherwise names are looked at one by one: to find custom
    ids, and to parse the others (owned duplicates, delayed retries, hidden or foreign files).
    """

    __slots__ = ("_members", "customs", "directory", "files", "names", "state")

    def __init__(self, state: JobState, directory: str, naming: str) -> None:
        self.state = state
        self.directory = directory
        self.files: dict[bytes, str] = {}
        """`<id>.json` -> the file's real name, where they differ."""
        self._members: set[bytes] | None = None
        try:
            listed = os.listdir(os.fsencode(directory))
        except FileNotFoundError:
            listed = []
        count = len(listed)
        joined = b"\0".join(listed)
        self.customs: list[bytes] = []
        """Names whose id is not a generated one (they sort by their file's mtime)."""
        if naming != "delayed" and _only_generated(joined, count, dotless=naming == "owned"):
            self.names = listed
            return
        if not (
            naming != "delayed"
            and joined.count(b".") == count  # each name's only dot is its .json
            and joined.count(b".json\0") == count - 1
            and joined.endswith(b".json")
            and not joined.startswith(b".")
        ):
            listed = self._job_names(listed, naming)
        self.names = listed
        self.customs = [n for n in listed if not (n[20:21] == b"-" and n[:20].isdigit())]

    def _job_names(self, listed: list[bytes], naming: str) -> list[bytes]:
        names = []
        seen: set[bytes] = set()
        for raw in listed:
            name = os.fsdecode(raw)
            if not is_job_name(name):
                continue
            stem = name[:-5]
            if naming == "delayed":
                job_id = stem_id(name)
            elif naming == "owned" and "." in stem:  # generated ids have no dots
                job_id = owned_id(name)
            else:
                job_id = stem
            key = os.fsencode(job_id + ".json")
            if key in seen:  # a duplicate kept under its claimed name beside the first copy
                continue
            seen.add(key)
            if job_id != stem:
                self.files[key] = name
            names.append(key)
        return names

    def __contains__(self, name: bytes) -> bool:
        if self._members is None:
            self._members = set(self.names)
        return name in self._members

    def path(self, name: bytes) -> str:
        """The job file of `name` (`<id>.json`) in this directory."""
        return f"{self.directory}/{self.files.get(name) or os.fsdecode(name)}"


def _sources(queue: Queue, state: JobState | None) -> list[_Source]:
    """The directories of `state` (all when None), the live ones first: when one id has files
    in several places (a duplicate), claimed/ wins over queue/, then delayed/, failed/, and
    done/ (newest day first)."""
    wanted = [
        (JobState.RUNNING, str(queue.claimed), "owned"),
        (JobState.QUEUED, str(queue.queue), "plain"),
        (JobState.QUEUED, str(queue.delayed), "delayed"),
        (JobState.FAILED, str(queue.failed), "owned"),
    ]
    if state is None or state is JobState.SUCCEEDED:
        try:
            days = os.listdir(queue.done)
        except FileNotFoundError:
            days = []
        days = sorted((d for d in days if d[:1].isdigit()), reverse=True)
        wanted += [(JobState.SUCCEEDED, f"{queue.done}/{day}", "owned") for day in days]
    sources = [_Source(*where) for where in wanted if state is None or where[0] is state]
    return [source for source in sources if source.names]


def page_jobs(
    queue: Queue, page: int = 1, per_page: int = 20, state: JobState | None = None
) -> Page:
    """Page `page` of the queue's jobs (all, or those in `state`), newest first."""
    sources = _sources(queue, state)
    # An id may have files in several directories (a duplicate): count and show it once. The
    # biggest listing is used as it is; only the others are collected into a set.
    biggest: list[bytes] = max((source.names for source in sources), key=len, default=[])
    others: set[bytes] = set()
    for source in sources:
        if source.names is not biggest:
            others.update(source.names)
    if others:
        others.difference_update(others.intersection(biggest))
    total = len(biggest) + len(others)
    pool = itertools.chain(biggest, others)
    start, stop, meta = paginate(total, page, per_page)
    # Generated ids begin with their enqueue time, so their names are their own sort keys;
    # custom ids sort by their file's mtime (one stat each), spelled like a generated id.
    keys: dict[bytes, bytes] = {}
    raw_customs: set[bytes] = set()
    for source in sources:  # the live copy's file time places an id found in several
        for name in source.customs:
            if name not in raw_customs:
                raw_customs.add(name)
                keys[_custom_key(name, source.path(name))] = name
    candidates = itertools.chain(pool, keys)
    wanted = stop + len(raw_customs)  # the raw custom names in the pool are skipped below
    if wanted < total // 8:
        top = heapq.nlargest(wanted, candidates)
    else:
        top = sorted(candidates, reverse=True)
    ordered = [keys.get(key, key) for key in top if key not in raw_customs]
    items: list[Record] = []
    unreadable: list[Unreadable] = []
    for name in ordered[start:stop]:
        job_id = os.fsdecode(name[:-5])
        try:
            record = queue.store.read(job_id)
        except RecordError as exc:
            unreadable.append(Unreadable(job_id, queue.store.path(job_id), exc.message))
            continue
        if record is None:
            source = next(s for s in sources if len(sources) == 1 or name in s)
            record = _unrecorded(job_id, source.state, source.path(name))
        items.append(record)
    elsewhere = _distinct(_sources(queue, None)) if state is not None and total == 0 else 0
    return Page(items, adjust_item_count(meta, len(items)), unreadable, state, elsewhere)


def _distinct(sources: Sequence[_Source]) -> int:
    """How many job ids the listings hold (an id in several directories counts once)."""
    names: set[bytes] = set()
    for source in sources:
        names.update(source.names)
    return len(names)


def _custom_key(name: bytes, path: str) -> bytes:
    """A custom id sorts by its file's mtime, in the shape of a generated id (20 digits of ns)."""
    try:
        mtime_ns = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        mtime_ns = 0
    return b"%020d-%s" % (mtime_ns, name)


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
    retry_at: str | None = None
    """For a retry waiting in delayed/, when it is due (ISO 8601 UTC); None otherwise."""


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
        _retry_at(queue, location.path),
    )


def _retry_at(queue: Queue, path: Path) -> str | None:
    """delayed/<id>.<not-before epoch>.json -> that time; None for any other place."""
    if path.parent != queue.delayed:
        return None
    due = delayed_until(path.name)
    return None if due is None else iso_utc(due[1])
