"""Running marks: claimed/.<id>.running, a hard link to the claim's file: the guard against
two copies of one id running at once (see lanekit.queue.directory.layout). The attempt a claim
starts (and its lane) is its `running` line in the job's record (RecordStore.mark_running).

A mark is created by link(2), which never replaces a name: of two copies of one id, the second
to try collides with the first one's mark, and finds its holder by inode (the claim in claimed/
that is the same file). It is removed only by whoever settles its claim (the owner, or a
recoverer holding the claim's flock), after the settling record is written and before the file
leaves claimed/: a live mark's claim is in claimed/ for the whole of the mark's life. A mark
whose file is no claim in claimed/ any more is stale (a settle whose record could not be
written moved the file on and kept the mark, or an earlier version's recoverer moved the
claim). It is cleared only by whoever holds the flock of its file, which is the claim's lock:
a claim's owner and its recoverer hold it for as long as the claim can still settle, and
nobody marks a file without it, so the mark stays the one that was judged until it is removed.

Marks made by the previous version are symlinks, `<owner>.<attempt>[/<lane>]`, and carry the
attempt themselves: they are still read (and cleared under an exclusive flock on claimed/).
"""

# ruff: noqa: PTH108, PTH115, PTH116
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
from dataclasses import dataclass

from lanekit.queue.directory.fileio import listdir
from lanekit.queue.directory.layout import Mark, claimed_name, has_id, mark_id, mark_name
from lanekit.queue.directory.observe import done_file
from lanekit.queue.ids import id_time, own_owner, split_owned_name
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState

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


_S_IFMT, _S_IFREG, _S_IFLNK = 0o170000, 0o100000, 0o120000
"""File types by st_mode (stat is not imported on the claim path)."""
_OPEN_MARK = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""A mark is opened only to flock its file: never through a symlink, never waiting on a FIFO."""
_OURS = Held("")
"""_holder's answer for a mark that already is a link to the claim's own file."""


def take(q: QueueState, job_id: str, claim: str, st: os.stat_result) -> Held | None:
    """Mark `job_id` as running for the claim at `claim` (its fstat `st`, its flock held);
    None once marked, else why the claim must not run (another copy runs or waits for
    recovery, or it already succeeded)."""
    path = mark_path(q, job_id)
    for _ in range(_TRIES):
        try:
            # link(2) itself, not linkat(2) with no flag: xnu's link.2 says the latter "may
            # result in some file systems returning an error" (ENOTSUP) on macOS. `claim` is no
            # symlink to follow: the claimer opened it O_NOFOLLOW and holds it, in claimed/.
            os.link(claim, path)
        except FileExistsError:
            held = _holder(q, job_id, path, st)
            if held is _OURS:
                return None
            if held is not None:
                return held
            continue
        return None
    return Held(path)


def _holder(q: QueueState, job_id: str, path: str, ours: os.stat_result) -> Held | None:
    """What holds the mark at `path`; None if there is no mark any more or a stale one was
    cleared (the caller tries again); _OURS if it is a link to our own claim's file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    kind = st.st_mode & _S_IFMT
    if kind == _S_IFLNK:
        return _symlink_holder(q, job_id, path)
    if kind != _S_IFREG:
        return Held(path)  # not lanekit's mark: leave it, and refuse rather than run twice
    if (st.st_ino, st.st_dev) == (ours.st_ino, ours.st_dev):
        # Left by an earlier claim of this very file (a settle whose record could not be
        # written, the file then given back by hand): we hold its flock, so it is ours now.
        return _OURS
    claim = linked_claim(q, job_id, st)
    if claim is not None:
        return Held(claim)
    # Its file is no claim any more: stale. A settle keeps the mark when its record cannot be
    # written (complete, settle_record_first): done/ is then the proof.
    done = done_file(q, job_id)
    if done is not None:
        return Held(done, succeeded=True)
    clear_stale(q, job_id)
    return None


def _symlink_holder(q: QueueState, job_id: str, path: str) -> Held | None:
    """_holder for a mark of the previous version (a symlink naming its owner)."""
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
    # and the claim being admitted has no mark yet): stale.
    done = done_file(q, job_id)
    if done is not None:
        return Held(done, succeeded=True)
    clear_stale(q, job_id, own_is_stale=True)
    return None


def linked_claim(
    q: QueueState, job_id: str, mark: os.stat_result, names: list[str] | None = None
) -> str | None:
    """The claim of `job_id` in claimed/ that is the file `mark` (a link mark's lstat), or None.
    `names`: a listing of claimed/ just made. Never on the common path (only a collision or a
    sweep asks), so claimed/ is listed: the holder's claim name is there, unchanged, for as
    long as its mark is (a listing can miss only a name renamed while it reads)."""
    for name in listdir(q.claimed_dir) if names is None else names:
        if name[:1] == "." or not has_id(name, job_id):
            continue
        path = f"{q.claimed_dir}/{name}"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if (st.st_ino, st.st_dev) == (mark.st_ino, mark.st_dev):
            return path
    return None


def clear_stale(q: QueueState, job_id: str, *, own_is_stale: bool = False) -> bool:
    """Remove the mark of `job_id` if its file is no claim in claimed/ any more; True if one
    was removed. A link mark is judged and removed holding its file's flock (the claim's lock:
    see the module docstring); a symlink of the previous version under the exclusive flock on
    claimed/. `own_is_stale`: a symlink of this process's counts as stale too (a claimer
    admitting its claim of the id, see _symlink_holder)."""
    path = mark_path(q, job_id)
    try:
        fd = os.open(path, _OPEN_MARK)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _clear_stale_symlink(q, job_id, own_is_stale=own_is_stale)
        return False  # not ours to open: leave it
    try:
        st = os.fstat(fd)
        if st.st_mode & _S_IFMT != _S_IFREG:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its claim's owner or recoverer holds it: not stale
        try:
            now = os.lstat(path)
        except FileNotFoundError:
            return False
        if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            return False  # cleared and marked again since we opened it
        if linked_claim(q, job_id, st) is not None:
            return False  # a claim whose owner died: its recoverer releases the mark
        return _unlink(path)
    finally:
        os.close(fd)


def _clear_stale_symlink(q: QueueState, job_id: str, *, own_is_stale: bool) -> bool:
    """clear_stale for a mark of the previous version, under the exclusive flock on claimed/."""
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
        return _unlink(path)
    finally:
        os.close(fd)


def _unlink(path: str) -> bool:
    """Remove a mark judged stale; False if it was gone already."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def read(q: QueueState, job_id: str, owner: str | None = None) -> Mark | None:
    """The previous version's mark of `job_id` (a symlink carrying the attempt) if it belongs
    to the claim of `owner` (any claim's when None); None when there is none, it is another
    claim's, or it is a link mark (whose attempt is in the record: readlink fails on it)."""
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


def _whose(path: str, owner: str, claim: str) -> tuple[bool | None, os.stat_result | None]:
    """Whether the mark at `path` is the claim's at `claim` (`owner`'s; None: there is no
    mark), with the mark's lstat: a link mark by inode, a previous version's symlink by the
    owner it names."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if st.st_mode & _S_IFMT == _S_IFLNK:
        try:
            mark = Mark.parse(os.readlink(path))
        except OSError:
            return None, None
        return mark is not None and mark.owner == owner, st
    try:
        mine = os.lstat(claim)
    except FileNotFoundError:
        return False, st
    return (mine.st_ino, mine.st_dev) == (st.st_ino, st.st_dev), st


def release(q: QueueState, job_id: str, owner: str, claim: str) -> None:
    """Remove the mark of `job_id` if it is the claim's at `claim` (`owner`'s: a recoverer
    settling that claim, its record written, the claim still in place). Another claim's mark
    is left alone."""
    path = mark_path(q, job_id)
    if _whose(path, owner, claim)[0]:
        try:  # noqa: SIM105 - contextlib.suppress costs more than the unlink on this path
            os.unlink(path)
        except FileNotFoundError:
            pass


def held_elsewhere(q: QueueState, job_id: str, owner: str, claim: str) -> bool:
    """Whether the id's mark stands for another claim in claimed/ than the one at `claim`
    (`owner`'s): a claim without its mark then never started, and the record is the marked
    claim's. A mark that is no claim's (stale, or its job replaced its own file by a rename)
    stands for nobody."""
    ours, st = _whose(mark_path(q, job_id), owner, claim)
    if ours is not False or st is None:
        return False
    if st.st_mode & _S_IFMT == _S_IFLNK:
        return True
    return linked_claim(q, job_id, st) is not None


def sweep(q: QueueState, now: float) -> list[str]:
    """Remove the stale marks in claimed/ (their file is no claim there); the ids whose mark
    went. A stale mark of an id in done/ is a success whose record could not be written: the
    record is written first (it stays while that fails: the guard asks done/ while it is
    there)."""
    names = listdir(q.claimed_dir)
    present = set(names)
    cleared = []
    for name in names:
        job_id = mark_id(name)
        if job_id is None:
            continue
        path = f"{q.claimed_dir}/{name}"
        try:
            st = os.lstat(path)
        except OSError:
            continue
        mark: Mark | None = None
        if st.st_mode & _S_IFMT == _S_IFLNK:
            try:
                mark = Mark.parse(os.readlink(path))
            except OSError:
                continue
            if mark is None or claimed_name(job_id, mark.owner) in present:
                continue
        elif st.st_mode & _S_IFMT != _S_IFREG or linked_claim(q, job_id, st, names):
            continue
        if done_file(q, job_id) is not None and not _record_success(q, job_id, mark, now):
            continue
        if clear_stale(q, job_id):
            cleared.append(job_id)
    return cleared


def _record_success(q: QueueState, job_id: str, mark: Mark | None, now: float) -> bool:
    """Write the succeeded record a settle could not; False if it still cannot be written.
    The attempt is the claim's `running` line's (the record as it is), or a symlink mark's."""
    try:
        prev = q.store.read(job_id)
    except RecordError:
        return False  # kept for inspection; the claimer refuses the id meanwhile
    if prev is not None and prev.state is JobState.SUCCEEDED:
        return True
    stamp = iso_utc(now)
    queued_at = prev.queued_at if prev is not None and prev.queued_at else stamp
    attempts = mark.attempt if mark is not None else 0 if prev is None else prev.attempts
    lane = mark.lane if mark is not None and mark.lane else None if prev is None else prev.lane
    try:
        q.store.write(Record(job_id, JobState.SUCCEEDED, attempts, queued_at, stamp, lane))
    except OSError:
        return False
    return True


def attempt_record(
    q: QueueState, job_id: str, owner: str | None, prev: Record | None, claimed_at: float
) -> Record | None:
    """The record a claim of `owner` amounts to: `prev` (the job's record) itself, whose last
    line is the claim's `running` line once the attempt started (before it, the attempt never
    started: a claim cut short between its claim rename, its mark and that line); or, for a
    claim of the previous version whose symlink mark carries the attempt, `prev` with that
    attempt, as `running`. Earlier versions' claims have no mark and a `running` record.
    `prev` when it is already settled (the claim's own settle, cut short before the move)."""
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
    claim's symlink mark (the previous version's) names: the mark stays until the record is
    written. A link mark's claim left its lane in its `running` line."""
    if record.state is not JobState.QUEUED:
        return record
    left = read(q, record.job_id)
    if left is None or left.lane is None:
        return record
    return dataclasses.replace(record, lane=left.lane)
