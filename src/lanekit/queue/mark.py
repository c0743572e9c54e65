"""Running marks: claimed/.<id>.running -> `<owner>.<attempt>[/<lane>]`, the claim's attempt
count (and lane) and the guard against two copies of one id running at once (see
lanekit.queue.layout).

A mark is created by symlink(2), which never replaces a name: of two copies of one id, the
second to try collides with the first one's mark. It is removed only by whoever settles its
claim (the owner, or a recoverer holding the claim's flock), after the settling record is
written and before the file leaves claimed/: a live mark's claim file exists for the whole of
the mark's life. A mark whose claim is gone is stale (an earlier version's recoverer moved the
claim, or a settle's unlink failed); it is cleared only under an exclusive flock on claimed/
itself, so that two clearers never remove each other's fresh mark: nobody else removes a
stale mark and symlink(2) cannot replace it, so between reading it and removing it under the
lock it stays the mark that was judged.
"""

# ruff: noqa: PTH108, PTH115, PTH116, PTH211
# (str paths and os.* on purpose: the claim path, see lanekit.queue)
from __future__ import annotations

import dataclasses
import fcntl
import os
from dataclasses import dataclass

from lanekit.queue.fileio import listdir
from lanekit.queue.layout import (
    Mark,
    claimed_name,
    id_time,
    mark_id,
    mark_name,
    mark_text,
    own_owner,
    split_owned_name,
)
from lanekit.queue.observe import done_file
from lanekit.records import JobState, Record, RecordError, iso_utc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.state import QueueState

_SETTLED = frozenset({JobState.SUCCEEDED, JobState.FAILED})
_TRIES = 4
"""Attempts to create a mark when the one in the way keeps vanishing (each settles a claim)."""


def mark_path(q: QueueState, job_id: str) -> str:
    """claimed/.<id>.running."""
    return f"{q.claimed_dir}/{mark_name(job_id)}"


@dataclass(frozen=True, slots=True)
class Held:
    """Why a claim of an id may not run: another claim holds its mark (`path`), or a stale
    mark was left by a success whose record could not be written (`path` in done/)."""

    path: str
    succeeded: bool = False


def take(q: QueueState, job_id: str, owner: str, attempt: int, lane: str | None) -> Held | None:
    """Mark `job_id` as running as `attempt` under `owner` for `lane`; None once marked, else
    why ours must not run (another copy runs or waits for recovery, or it already succeeded)."""
    path = mark_path(q, job_id)
    text = mark_text(owner, attempt, lane)
    for _ in range(_TRIES):
        try:
            os.symlink(text, path)
        except FileExistsError:
            held = _holder(q, job_id, path)
            if held is not None:
                return held
            continue
        return None
    return Held(path)


def _holder(q: QueueState, job_id: str, path: str) -> Held | None:
    """What holds the mark at `path`; None if there is no mark any more or a stale one was
    cleared (the caller tries again)."""
    try:
        text = os.readlink(path)
    except FileNotFoundError:
        return None
    except OSError:
        return Held(path)  # not a symlink we can read: never guess that the id is free
    mark = Mark.parse(text)
    if mark is None:
        return Held(path)  # not lanekit's mark: leave it, and refuse rather than run twice
    claim = f"{q.claimed_dir}/{mark.claim_name(job_id)}"
    if mark.owner != own_owner() and os.path.lexists(claim):
        return Held(claim)
    # Its claim is gone, or it is this process's own (a process claims an id once at a time,
    # and the claim being admitted has no mark yet): stale. A settle keeps the mark when its
    # record cannot be written (complete, settle_record_first): done/ is then the proof.
    done = done_file(q, job_id)
    if done is not None:
        return Held(done, succeeded=True)
    clear_stale(q, job_id, own_is_stale=True)
    return None


def clear_stale(q: QueueState, job_id: str, *, own_is_stale: bool = False) -> bool:
    """Remove the mark of `job_id` if its claim is gone, under the exclusive flock on claimed/;
    True if one was removed. `own_is_stale`: a mark of this process's counts as stale too (a
    claimer admitting its claim of the id, see _holder)."""
    fd = os.open(q.claimed_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        path = mark_path(q, job_id)
        try:
            text = os.readlink(path)
        except OSError:
            return False
        mark = Mark.parse(text)
        if mark is None:
            return False
        claim = f"{q.claimed_dir}/{mark.claim_name(job_id)}"
        if not (own_is_stale and mark.owner == own_owner()) and os.path.lexists(claim):
            return False
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True
    finally:
        os.close(fd)


def read(q: QueueState, job_id: str, owner: str | None = None) -> Mark | None:
    """The mark of `job_id` if it belongs to the claim of `owner` (any claim's when None);
    None when there is none (or it is another claim's)."""
    try:
        text = os.readlink(mark_path(q, job_id))
    except OSError:
        return None
    mark = Mark.parse(text)
    return mark if mark is not None and owner in {None, mark.owner} else None


def drop(q: QueueState, job_id: str) -> None:
    """Remove the mark of a claim this process admitted, now that its settling record is
    written (the mark is the claim's until then: nobody else removes a mark whose claim is
    there)."""
    try:  # noqa: SIM105 - contextlib.suppress costs more than the unlink on this path
        os.unlink(mark_path(q, job_id))
    except FileNotFoundError:
        pass


def release(q: QueueState, job_id: str, owner: str) -> None:
    """Remove the mark of `job_id` if it is `owner`'s (a recoverer settling that claim, its
    record written). Another claim's mark is left alone."""
    path = mark_path(q, job_id)
    try:
        text = os.readlink(path)
    except FileNotFoundError:
        return
    mark = Mark.parse(text)
    if mark is not None and mark.owner == owner:
        try:  # noqa: SIM105 - contextlib.suppress costs more than the unlink on this path
            os.unlink(path)
        except FileNotFoundError:
            pass


def sweep(q: QueueState, now: float) -> list[str]:
    """Remove the stale marks in claimed/ (their claim is gone); the ids whose mark went. A
    stale mark of an id in done/ is a success whose record could not be written: the record
    is written first (it stays while that fails: the guard asks done/ while it is there)."""
    names = listdir(q.claimed_dir)
    present = set(names)
    cleared = []
    for name in names:
        job_id = mark_id(name)
        if job_id is None:
            continue
        try:
            mark = Mark.parse(os.readlink(f"{q.claimed_dir}/{name}"))
        except OSError:
            continue
        if mark is None or claimed_name(job_id, mark.owner) in present:
            continue
        if done_file(q, job_id) is not None and not _record_success(q, job_id, mark, now):
            continue
        if clear_stale(q, job_id):
            cleared.append(job_id)
    return cleared


def _record_success(q: QueueState, job_id: str, mark: Mark, now: float) -> bool:
    """Write the succeeded record a settle could not; False if it still cannot be written."""
    try:
        prev = q.store.read(job_id)
    except RecordError:
        return False  # kept for inspection; the claimer refuses the id meanwhile
    if prev is not None and prev.state is JobState.SUCCEEDED:
        return True
    stamp = iso_utc(now)
    queued_at = prev.queued_at if prev is not None and prev.queued_at else stamp
    lane = mark.lane or (None if prev is None else prev.lane)
    try:
        q.store.write(Record(job_id, JobState.SUCCEEDED, mark.attempt, queued_at, stamp, lane))
    except OSError:
        return False
    return True


def attempt_record(
    q: QueueState, job_id: str, owner: str | None, prev: Record | None, claimed_at: float
) -> Record | None:
    """The record a claim of `owner` amounts to: `prev` (the job's record) with the attempt its
    mark counts, as `running`, the way earlier versions wrote it at claim. `prev` itself when
    the claim has no mark (an earlier version's claim, whose `running` record counts the
    attempt, or one cut short before its mark: the attempt never started) or when `prev` is
    already settled (the claim's own settle, cut short before the move: it counts them)."""
    if owner is None or (prev is not None and prev.state in _SETTLED):
        return prev
    mark = read(q, job_id, owner)
    if mark is None:
        return prev
    if prev is not None and prev.queued_at:
        queued_at = prev.queued_at
    else:
        born = id_time(job_id)
        queued_at = iso_utc(claimed_at if born is None else born)
    lane = mark.lane or (None if prev is None else prev.lane)
    return Record(job_id, JobState.RUNNING, mark.attempt, queued_at, iso_utc(claimed_at), lane)


def claim_record(q: QueueState, path: str, prev: Record | None) -> Record | None:
    """What `lanekit job` and `jobs` show for the claim at `path` (claimed/<id>.<owner>.json):
    its record as the mark counts it, updated when the claim was taken (its mtime)."""
    parsed = split_owned_name(path.rpartition("/")[2])
    if parsed is None:
        return prev
    try:
        claimed_at = os.stat(path).st_mtime
    except FileNotFoundError:
        return prev
    return attempt_record(q, parsed[0], str(parsed[1]), prev, claimed_at)


def with_lane(q: QueueState, record: Record) -> Record:
    """A `queued` record a settle could not update (observe.contradictions), with the lane its
    claim's mark names: the mark stays until the record is written."""
    if record.state is not JobState.QUEUED:
        return record
    left = read(q, record.job_id)
    if left is None or left.lane is None:
        return record
    return dataclasses.replace(record, lane=left.lane)
