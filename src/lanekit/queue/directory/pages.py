"""The directory backend's history: newest-first pages of a queue's jobs (`lanekit jobs`) and
one job's whole story (`lanekit job`), reading only the page's records.

The list of jobs comes from the directory listings (a job's directory is its state, so
`--state` needs no record either); it is ordered newest first by the time in the id (generated
ids start with it), falling back to the job file's mtime for custom ids (one stat each, only for
those). Only the records of the requested page are then opened (lanekit.queue.paging has the page's
shape and the paging rules).
"""

# ruff: noqa: PTH116, PTH208
# (os.stat and os.listdir on str and bytes paths: listings of 100k names are the cost here)
from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from lanekit.queue.directory.layout import delayed_until, stem_id
from lanekit.queue.directory.mark import claim_record
from lanekit.queue.directory.observe import error_text, locate
from lanekit.queue.ids import is_job_name, new_job_id, owned_id, validate_job_id
from lanekit.queue.model import error_file_text
from lanekit.queue.paging import JobView, Page, Unreadable, adjust_item_count, paginate
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState


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


def _sources(
    queue: QueueState, state: JobState | None, delayed: bool | None = None
) -> list[_Source]:
    """The directories of `state` (all when None; of the queued, only delayed/ or only queue/
    with `delayed`), the live ones first: when one id has files in several places (a
    duplicate), claimed/ wins over queue/, then delayed/, failed/, and done/ (newest day
    first)."""
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
    if delayed is not None:
        skip = str(queue.queue) if delayed else str(queue.delayed)
        wanted = [where for where in wanted if where[1] != skip]
    sources = [_Source(*where) for where in wanted if state is None or where[0] is state]
    return [source for source in sources if source.names]


def page_jobs(
    queue: QueueState,
    page: int = 1,
    per_page: int = 20,
    state: JobState | None = None,
    *,
    delayed: bool | None = None,
) -> Page:
    """Page `page` of the queue's jobs (all, or those in `state`; `delayed`: of the queued,
    those in delayed/ or those in queue/), newest first; each job on it that waits in
    delayed/ with its due time."""
    sources = _sources(queue, state, delayed)
    waiting_in = next((s for s in sources if s.directory == str(queue.delayed)), None)
    ready_in = next((s for s in sources if s.directory == str(queue.queue)), None)
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
    not_before: dict[str, str] = {}
    # claimed/ comes first in `sources` when it holds anything (it is small: one name a claim).
    claimed = sources[0] if sources and sources[0].state is JobState.RUNNING else None
    for name in ordered[start:stop]:
        job_id = os.fsdecode(name[:-5])
        try:
            record = queue.store.read(job_id)
        except RecordError as exc:
            unreadable.append(Unreadable(job_id, queue.store.path(job_id), exc.message))
            continue
        unsettled = record is None or record.state is JobState.QUEUED
        if claimed is not None and unsettled and name in claimed:
            # Claimed: running, with the attempt its mark counts (the record is written only
            # when the claim settles).
            record = claim_record(queue, claimed.path(name), record)
        if record is None:
            source = next(s for s in sources if len(sources) == 1 or name in s)
            record = _unrecorded(job_id, source.state, source.path(name))
        ready = ready_in is not None and name in ready_in
        if waiting_in is not None and name in waiting_in and not ready:
            due = delayed_until(waiting_in.files.get(name) or os.fsdecode(name))
            if due is not None and record.state is JobState.QUEUED:
                not_before[job_id] = iso_utc(due[1])
        items.append(record)
    elsewhere = _distinct(_sources(queue, None)) if state is not None and total == 0 else 0
    meta = adjust_item_count(meta, len(items))
    return Page(items, meta, unreadable, state, elsewhere, not_before, delayed)


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


def find_job(queue: QueueState, job_id: str) -> JobView | None:
    """The job with this id, or None if neither its file nor its record exists.

    UsageError for an id that is not a valid job id; RecordError if its record is unreadable.
    """
    validate_job_id(job_id)
    location = locate(queue, job_id)
    record = queue.store.read(job_id)
    if location is None:
        if record is None:
            return None
        return JobView(job_id, record.state, None, record, record.error)
    if location.state is JobState.RUNNING:
        record = claim_record(queue, location.where, record)
    error = error_text(queue, location)
    if error is None and record is not None and location.state is record.state is JobState.FAILED:
        # A failure's record (with its reason) is written before the move into failed/, its
        # .error after it: between the two (or after a crash there) the record says why.
        error = None if record.error is None else error_file_text(record.error)
    path = Path(location.where)
    return JobView(job_id, location.state, path, record, error, _retry_at(queue, path))


def _retry_at(queue: QueueState, path: Path) -> str | None:
    """delayed/<id>.<not-before epoch>.json -> that time; None for any other place."""
    if path.parent != queue.delayed:
        return None
    due = delayed_until(path.name)
    return None if due is None else iso_utc(due[1])
