"""Claiming: one no-replace rename from queue/ to claimed/<id>.<owner>.json, then the flock,
the re-execution guard, the running mark (claimed/.<id>.running, a hard link of the claimed
file, lanekit.queue.directory.mark) and the attempt's `running` line appended to the record: a claim
creates no file (design.md section 3; why a mark and not the name, lanekit.queue.directory.layout).

The claim path uses `os` with `str` paths and imports nothing heavy: it runs once per job.
"""

# ruff: noqa: PTH119
# (str paths and os.* on purpose: the claim path)
from __future__ import annotations

import contextlib
import errno
import fcntl
import os

from lanekit.errors import QueueError
from lanekit.queue.directory.fileio import job_names, listdir, rename_into
from lanekit.queue.directory.layout import claimed_name, has_id
from lanekit.queue.directory.mark import clear_stale, held_elsewhere, mark_path
from lanekit.queue.directory.mark import release as release_mark
from lanekit.queue.directory.mark import take as take_mark
from lanekit.queue.directory.observe import done_file
from lanekit.queue.directory.settle import promote_due, settle, to_failed, write_failed_record
from lanekit.queue.directory.state import ClaimLock
from lanekit.queue.ids import (
    MAX_ID_LENGTH,
    id_problem,
    id_time,
    is_job_name,
    own_owner,
    owner_tail_problem,
)
from lanekit.queue.model import Claim, Dropped, DropReason
from lanekit.queue.payload import payload_problem
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.system import fsops
from lanekit.system.fdio import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from lanekit.queue.directory.mark import Held
    from lanekit.queue.directory.state import QueueState
    from lanekit.queue.model import Settled, Verdict


_MISS_LIMIT = 4
"""Consecutive lost races after which a claimer jumps to a random place in its listing."""
_SPREAD_PER_CLAIM = 32
"""With claims in progress, a claimer starts at a random offset among the oldest 32 x (claims in
progress + 1) jobs (at least 64), so runners that drain together spread apart. With none it is
alone and starts at the oldest job: a lone lane never leaves old jobs waiting behind new ones."""
_SPREAD_MIN = 64
_HOP = 64
"""After a lost race, jump ahead by up to 64 x 2^misses: out of the winner's trail, not into it."""
_FIRST_WINDOW = 1024
"""A claimer's first listing keeps only the oldest this many names (one run usually takes a few
jobs: selecting them is O(n), sorting 100k names would cost more than listing them)."""


def oldest(names: list[str], count: int) -> list[str]:
    """The `count` smallest of `names`, in order: exactly heapq.nsmallest(count, names), in
    ~0.7x its time on a big listing (100,000 generated names, 1,024 kept: 18 ms against 26,
    timeit here; figure d): both pay one comparison a name, this one in a comprehension
    rather than heapq's Python loop. A cutoff is read off an evenly spaced sample of about
    2 x `count` names, at the rank that about 2 x `count` names of the whole pass; only those
    are sorted. The names may come in any order: when fewer than `count` pass, or many more
    than expected, nsmallest decides."""
    import heapq

    step = len(names) // (2 * count)
    if step < 2:
        return heapq.nsmallest(count, names)
    sample = sorted(names[::step])
    cutoff = sample[min(len(sample) - 1, 2 * count // step)]
    passed = [name for name in names if name <= cutoff]
    if count <= len(passed) <= 8 * count:
        passed.sort()
        return passed[:count]
    return heapq.nsmallest(count, names)


_OWN_RECORD = frozenset({DropReason.CORRUPT, DropReason.TOO_LARGE})
"""Drops whose failed record _drop writes: the file is this id's job, and it can never run."""


class _LostRaceError(Exception):
    """Internal: the rename lost the race (or the name cannot be ours): try another job."""


class Claimer:
    """Claims jobs for one process, oldest first, without herding at the head of the queue.

    Each claimer lists queue/ once, sorts by name (= age for generated ids), and walks forward
    from its start, wrapping around. Alone (no claim in progress in claimed/ when it lists) it
    starts at the oldest job; otherwise at its own random offset near the head (among the
    oldest 64, wider the more claims are in progress). Claimers that list at the same instant
    all see no claim in progress and meet at the head: their first lost race spreads them.
    A lost race (ENOENT) is silent; it jumps ahead by a growing random stride (anywhere, after
    `_MISS_LIMIT` losses in a row), and lists again only after a full pass or once it lost
    more races than it won on this listing. Never one listing per claim: with 100k queued
    files a listing costs tens of milliseconds, and runners that all re-list and go for the
    head collapse throughput (design.md section 3).

    claim() hands out only jobs that can run. Files that cannot (corrupt, invalid id, record
    unreadable, already succeeded, a duplicate of a running id) are settled on the spot and
    reported to `on_drop`, so the runner can log `failed reason=corrupt` or
    `skipped reason=already-succeeded`.
    """

    def __init__(
        self,
        queue: QueueState,
        *,
        lane: str | None = None,
        on_drop: Callable[[Dropped], None] | None = None,
    ) -> None:
        self.queue = queue
        self.lane = lane
        self.on_drop = on_drop
        self._names: list[str] = []
        self._pos = 0
        self._left = 0
        self._misses = 0
        self._lost = 0
        self._won = 0
        self._first = True
        self._skip: set[str] = set()
        self._rng = int.from_bytes(os.urandom(8), "little") | 1

    def _random(self, bound: int) -> int:
        # xorshift64: no `random` import on the claim path, and no syscall per draw
        x = self._rng
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        self._rng = x
        return x % bound if bound > 1 else 0

    def claim(self) -> Claim | None:
        """The next job this process owns, or None when queue/ has nothing left to claim."""
        while True:
            if self._left <= 0 and not self._relist():
                return None
            name = self._names[self._pos]
            try:
                taken = self._take(name)
            except _LostRaceError:
                self._lost_here()
                continue
            self._misses = 0
            self._won += 1
            self._pos = (self._pos + 1) % len(self._names)
            self._left -= 1
            if isinstance(taken, Claim):
                return taken
            if self.on_drop is not None:
                self.on_drop(taken)

    def settle_and_claim(self, claim: Claim, verdict: Verdict) -> tuple[Settled, Claim | None]:
        """Settle, then claim (two steps: renames on a local filesystem cost no round trip)."""
        settled = settle(self.queue, claim, verdict)
        return settled, self.claim()

    def _lost_here(self) -> None:
        """After a lost race: hop ahead, further each time; after a few misses in a row go
        somewhere random in the listing; list again once it loses more than it wins there."""
        self._misses += 1
        self._lost += 1
        self._left -= 1
        size = len(self._names)
        if self._lost > max(_MISS_LIMIT, self._won):
            self._left = 0  # more losses than wins: the listing is mostly stale
        elif self._misses >= _MISS_LIMIT:
            self._misses = 0
            self._pos = self._random(size)
        else:
            self._pos = (self._pos + 1 + self._random(_HOP << (self._misses - 1))) % size

    def _relist(self) -> bool:
        promote_due(self.queue)
        listed = listdir(self.queue.queue_dir)
        names: list[str] = []
        if self._first and len(listed) > 4 * _FIRST_WINDOW:
            names = self._jobs_among(oldest(listed, _FIRST_WINDOW))
        if not names:  # not windowed, or the window held only hidden or foreign files
            listed.sort()
            names = self._jobs_among(listed)
        self._first = False
        self._names = names
        self._misses = self._lost = self._won = 0
        if not names:
            self._left = 0
            return False
        busy = len(job_names(self.queue.claimed_dir))  # not the marks and statuses beside them
        if busy:
            spread = max(_SPREAD_MIN, _SPREAD_PER_CLAIM * (busy + 1))
            self._pos = self._random(min(len(names), spread))
        else:
            self._pos = 0  # alone: oldest first (issue 12 item 7)
        self._left = len(names)
        return True

    def _jobs_among(self, listed: list[str]) -> list[str]:
        """The job files among `listed` names (kept in order), minus those this claimer skips."""
        skip = self._skip
        return [n for n in listed if is_job_name(n) and n not in skip]

    def _take(self, name: str) -> Claim | Dropped:
        queue = self.queue
        job_id = name[:-5]
        src = f"{queue.queue_dir}/{name}"
        owner = own_owner()
        claimed = claimed_name(job_id, owner)
        path = f"{queue.claimed_dir}/{claimed}"
        try:
            fsops.rename_noreplace(src, path)
        except FileNotFoundError:
            raise _LostRaceError from None
        except FileExistsError:
            self._skip.add(name)  # this process already holds a claim on that id
            raise _LostRaceError from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                return self._refuse_unclaimable(src, job_id, name)
            raise QueueError(
                f"{src}: cannot claim ({exc.strerror})",
                f"check that {queue.queue_dir} and {queue.claimed_dir} are writable "
                "(`lanekit doctor`)",
            ) from None
        try:
            # Regular files only, checked on the descriptor before anything else: a symlink is
            # never followed, a FIFO never waited on (see fsops.open_regular).
            # Its fstat serves below as well: the file is ours since the rename, nobody writes it.
            fd, st = fsops.open_regular_stat(path)
        except (fsops.NotRegularFileError, PermissionError) as exc:
            return self._refuse_file(job_id, path, f"job file {exc.strerror}")
        except OSError as exc:
            with contextlib.suppress(OSError):
                fsops.rename_noreplace(path, src)
            raise QueueError(
                f"{path}: cannot open the claimed job ({exc.strerror})",
                f"check the permissions of the files in {queue.queue_dir}",
            ) from None
        lock = ClaimLock(fd)
        try:
            try:
                # Never blocking: a process left over from an earlier attempt (the job, or a
                # daemon it started, inherited the lock) can hold it for any length of time.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.release()
                return self._pass_over(name, src, path, job_id)
            if st.st_nlink > 1:  # from the fstat above: no syscall for a job with one name
                linked = self._linked(name, src, path, job_id, lock, st)
                if isinstance(linked, Dropped):
                    return linked
                st = linked
            # The claim's age starts now (rename keeps the old mtime), by the queue's clock, which
            # claim ages are read against. Best effort: a file we may not touch keeps its mtime.
            stamp = self.queue.clock()
            try:  # noqa: SIM105 - contextlib.suppress costs more than the rest of this line
                os.utime(fd, (stamp, stamp))
            except OSError:
                pass
            return self._admit(
                job_id=job_id,
                path=path,
                claimed_name=claimed,
                owner=owner,
                lock=lock,
                # Larger than the queue takes: never read (_admit refuses it by its size).
                data=read_all(fd, st.st_size) if st.st_size <= queue.max_job_bytes else None,
                st=st,
            )
        except BaseException as exc:
            if lock.held:
                # Never strand a claim on an unexpected error: put the job back.
                with contextlib.suppress(OSError):
                    fsops.rename_noreplace(path, src)
                lock.release()
            if isinstance(exc, OSError):
                raise QueueError(
                    f"{exc.filename or path}: cannot claim job {job_id} ({exc.strerror or exc})",
                    "check free space and permissions in the queue directory (`lanekit doctor`)",
                ) from exc
            raise

    def _pass_over(self, name: str, src: str, path: str, job_id: str) -> Dropped:
        """The file's lock is held by someone else: put it back in queue/ and skip it in this
        claimer, silently, like a lost race (a recoverer holding it for an instant is one
        too). If a copy of the id took its place in queue/ meanwhile, ours is the duplicate."""
        self._skip.add(name)
        try:
            fsops.rename_noreplace(path, src)
        except FileExistsError:
            detail = f"duplicate: another copy of job {job_id} is already at {src}"
            target = to_failed(self.queue, path, job_id, detail)
            return Dropped(job_id, DropReason.DUPLICATE, detail, target)
        raise _LostRaceError

    def _admit(
        self,
        *,
        job_id: str,
        path: str,
        claimed_name: str,
        owner: str,
        lock: ClaimLock,
        data: bytes | None,
        st: os.stat_result,
    ) -> Claim | Dropped:
        """`data`: the job file's bytes; None for a file over the queue's max_job_bytes."""
        queue = self.queue
        now = queue.clock()
        problem = id_problem(job_id)
        if problem is not None:
            detail = f"job id {job_id!r} {problem}"
            return self._drop(
                job_id, path, lock, DropReason.INVALID_ID, detail=detail, prev=None, now=now
            )
        try:
            # Kept open: the attempt's `running` line is appended through it (mark_running),
            # and, once admitted, the settle's line too (the claim's lock keeps it).
            prev, seen, held = queue.store.read_open(job_id)
        except RecordError as exc:
            return self._drop(
                job_id,
                path,
                lock,
                DropReason.RECORD_UNREADABLE,
                detail=exc.message,
                prev=None,
                now=now,
            )
        try:
            succeeded = self._succeeded_before(job_id, prev)
            if succeeded is not None:
                return self._drop(
                    job_id,
                    path,
                    lock,
                    DropReason.ALREADY_SUCCEEDED,
                    detail=succeeded,
                    prev=prev,
                    now=now,
                )
            if data is None:
                detail = (
                    f"job file is {st.st_size} bytes, over the queue's max_job_bytes "
                    f"({queue.max_job_bytes}); put bulk data in a file the job names, or raise "
                    "max_job_bytes in [queues.NAME] of lanes.toml"
                )
                return self._drop(
                    job_id, path, lock, DropReason.TOO_LARGE, detail=detail, prev=prev, now=now
                )
            payload = payload_problem(data)
            if payload is not None:
                detail = f"job file is {payload}"
                return self._drop(
                    job_id, path, lock, DropReason.CORRUPT, detail=detail, prev=prev, now=now
                )
            stamp = iso_utc(now)
            if prev is not None and prev.state is JobState.FAILED:
                # A failed record is the end of the id's earlier life (a failed job's file is in
                # failed/, so this copy was enqueued again): a new life, with all its attempts. Its
                # record is replaced now (rare: only a new life pays a write at claim), so that a
                # failed record next to a mark always is this claim's own settle (recover.py).
                queue.store.write(Record(job_id, JobState.QUEUED, 0, stamp, stamp, self.lane))
                held.close()  # the file it read is replaced: the `running` line replaces it too
                prev, seen = None, queue.store.identity(job_id)
            elif prev is not None and prev.state is JobState.RUNNING:
                # A `running` record is another claim's attempt (its `running` line, or an
                # earlier version's record with no mark): while that claim is in claimed/, ours
                # is a duplicate; it is found by name.
                other = self._other_claim(job_id, claimed_name)
                if other is not None:
                    detail = f"another copy of job {job_id} is running ({other})"
                    return self._drop(
                        job_id, path, lock, DropReason.DUPLICATE, detail=detail, prev=prev, now=now
                    )
            # The attempt's state, built in one step (records.Record.carry_over).
            queued_at, lane, attempts = self._attempt(job_id, prev, st.st_mtime)
            taken = take_mark(queue, job_id, path, st)
            if taken is not None:
                return self._refuse_held(job_id, path, lock, taken, prev, now)
            if queue.store.identity(job_id) != seen:
                # Another copy of the id settled between our read of the record and our mark (a
                # settle writes its record, then removes its mark): what we read is stale, and
                # running on it could succeed twice. Decide again on what that settle wrote.
                release_mark(queue, job_id, owner, path)
                return self._admit(
                    job_id=job_id,
                    path=path,
                    claimed_name=claimed_name,
                    owner=owner,
                    lock=lock,
                    data=data,
                    st=st,
                )
            record = Record(job_id, JobState.RUNNING, attempts, queued_at, stamp, lane)
            # The attempt starts with this line (the mark only says the id is taken): one
            # write into the record's block, on the descriptor it was read through, no file
            # created. Cut short before it, the attempt never started
            # (lanekit.queue.directory.mark).
            try:
                queue.store.mark_running(held, record)
            except OSError:
                release_mark(queue, job_id, owner, path)
                raise
            lock.record = held
            return Claim(job_id, path, attempts, owner, record, lock)
        finally:
            if lock.record is not held:
                held.close()

    def _succeeded_before(self, job_id: str, prev: Record | None) -> str | None:
        """How the id is known to have succeeded (its record, the guard's purge index, or
        done/), else None."""
        queue = self.queue
        if prev is not None and prev.state is JobState.SUCCEEDED:
            return f"record {queue.store.path(job_id)} says succeeded"
        if prev is None and queue.store.succeeded(job_id, prev):
            return f"job {job_id} succeeded before its record was purged (records/.guard/)"
        if prev is None or prev.state is JobState.RUNNING:
            # No record, or one a settle could not finish (observe.done_file): done/ decides.
            # Never on the common path, where the record says queued.
            done = done_file(queue, job_id)
            if done is not None:
                return f"{done} shows it succeeded"
        return None

    def _attempt(
        self, job_id: str, prev: Record | None, written: float
    ) -> tuple[str, str | None, int]:
        """(queued_at, lane, attempt number) of the attempt a claim starts: what carries over
        from the previous record (records.Record.carry_over), or a first attempt's."""
        lane = self.lane
        if prev is None or not prev.queued_at:
            born = id_time(job_id)
            queued_at = iso_utc(written if born is None else born)
        else:
            queued_at = prev.queued_at
        if prev is None:
            return queued_at, lane, 1
        return queued_at, prev.lane if lane is None else lane, prev.attempts + 1

    def _refuse_held(  # noqa: PLR0917 - _admit's own values
        self, job_id: str, path: str, lock: ClaimLock, held: Held, prev: Record | None, now: float
    ) -> Dropped:
        """Our copy may not run: another claim holds the id's mark, or a stale mark says a
        success could not write its record (done/ shows it)."""
        if held.succeeded:
            reason, detail = DropReason.ALREADY_SUCCEEDED, f"{held.path} shows it succeeded"
        else:
            reason = DropReason.DUPLICATE
            detail = f"another copy of job {job_id} is running ({held.path})"
        return self._drop(job_id, path, lock, reason, detail=detail, prev=prev, now=now)

    def _other_claim(self, job_id: str, ours: str) -> str | None:
        for name in job_names(self.queue.claimed_dir):
            if name != ours and has_id(name, job_id):
                return f"{self.queue.claimed_dir}/{name}"
        return None

    def _drop(
        self,
        job_id: str,
        path: str,
        lock: ClaimLock,
        reason: DropReason,
        *,
        detail: str,
        prev: Record | None,
        now: float,
    ) -> Dropped:
        queue = self.queue
        try:
            if reason is DropReason.ALREADY_SUCCEEDED:
                # Kept under its claimed name: done/ already holds the run that succeeded.
                target = f"{queue.done_bucket(now)}/{os.path.basename(path)}"
                rename_into(path, target)
                if prev is None or prev.state is not JobState.SUCCEEDED:
                    # Finish what the success could not write (best effort: done/ stays proof,
                    # and so does the stale mark it may have left, until the record is there).
                    stamp = iso_utc(now)
                    done = Record(job_id, JobState.SUCCEEDED, 0, stamp, stamp)
                    with contextlib.suppress(OSError):
                        queue.store.write(done.carry_over(prev))
                        clear_stale(queue, job_id)
            else:
                # Only a corrupt (or too large) job's record is ours to change: a duplicate's
                # belongs to the copy that runs, an unreadable one stays for inspection, an
                # invalid id has none. So does a corrupt copy's while another copy of the id
                # runs (its mark): the record then holds that copy's `running` line, which
                # counts its attempt.
                if reason in _OWN_RECORD and not held_elsewhere(queue, job_id, own_owner(), path):
                    write_failed_record(queue, job_id, prev, detail, now)
                # An id with an owner's tail is renamed on its way (`~` is in no id): under its
                # own name it would read as another id in failed/ (see owner_tail_problem).
                name = (
                    f"{job_id[:160]}~{os.urandom(4).hex()}"
                    if reason is DropReason.INVALID_ID and owner_tail_problem(job_id)
                    else job_id
                )
                target = to_failed(queue, path, name, detail)
        finally:
            lock.release()
        return Dropped(job_id, reason, detail, target)

    def _linked(  # noqa: PLR0917 - _take's own values
        self, name: str, src: str, path: str, job_id: str, lock: ClaimLock, st: os.stat_result
    ) -> os.stat_result | Dropped:
        """The claimed file (its flock held by `lock`) has other names (st_nlink > 1): the
        fstat to go on with when every other name is lanekit's; else it is put back and passed
        over (_LostRaceError), or refused to failed/ (its Dropped); either way `lock` released.

        A hard link dropped into queue/ shares its inode, contents and mtime with a file
        elsewhere, which lanekit did not create: the claim would date it (os.utime) and the job
        could change it. So it is refused. Legitimate extra names are brief or lanekit's own:
        the job's running mark left by an earlier claim of this very file (mark.take adopts
        it); a producer between its `ln tmp/x queue/<id>.json` and its `rm tmp/x` (README), an
        enqueue between the same two calls (fsops.publish_new), or a rename done as link +
        unlink (fsops.link_unlink), whose other name is in tmp/ or claimed/: that file is put
        back and passed over, to be claimed once the name is gone. Never on the common path
        (a job file has one name), so tmp/ and claimed/ may be listed.
        """
        queue = self.queue
        inode = (st.st_ino, st.st_dev)

        def same_file(other: str) -> bool:
            try:
                found = os.lstat(other)
            except OSError:
                return False
            return (found.st_ino, found.st_dev) == inode

        mark = mark_path(queue, job_id)
        ours = 2 if same_file(mark) else 1
        if st.st_nlink <= ours:
            return st
        passing = [f"{queue.tmp_dir}/{n}" for n in listdir(queue.tmp_dir)] + [
            f"{queue.claimed_dir}/{n}" for n in listdir(queue.claimed_dir)
        ]
        if any(same_file(other) for other in passing if other not in (path, mark)):
            lock.release()
            return self._pass_over(name, src, path, job_id)
        now = os.fstat(lock.fd)  # the other name may have gone since (the producer's `rm`)
        if now.st_nlink <= ours:
            return now
        detail = (
            f"job file has {now.st_nlink} hard links: it is a file elsewhere too, and lanekit "
            "changes no file it did not create; copy the job into queue/ instead of linking it"
        )
        try:
            return self._refuse_file(job_id, path, detail, DropReason.LINKED)
        finally:
            lock.release()

    def _refuse_file(
        self, job_id: str, path: str, detail: str, reason: DropReason = DropReason.UNREADABLE
    ) -> Dropped:
        """A claimed name that is no job file (or not one lanekit may read or run): to failed/
        with the reason. Its record says failed unless it says succeeded (the guard stays) or
        cannot be read (kept for inspection); an invalid id has no record to write."""
        queue = self.queue
        now = queue.clock()
        # Not while another copy of the id runs (its mark): the record is that copy's.
        if id_problem(job_id) is None and not held_elsewhere(queue, job_id, own_owner(), path):
            try:
                prev = queue.store.read(job_id)
            except RecordError:
                pass
            else:
                if prev is None or prev.state is not JobState.SUCCEEDED:
                    with contextlib.suppress(OSError):
                        write_failed_record(queue, job_id, prev, detail, now)
        target = to_failed(queue, path, job_id, detail)
        return Dropped(job_id, reason, detail, target)

    def _refuse_unclaimable(self, src: str, job_id: str, name: str) -> Dropped:
        """A name too long to carry an owner: straight to failed/ (a rename, so one mover wins),
        under a shortened name so that its .error fits beside it."""
        short = f"{job_id[:160]}~{os.urandom(4).hex()}"
        detail = (
            f"job id is too long to claim ({len(job_id)} characters, at most {MAX_ID_LENGTH}); "
            f"the file was {name}"
        )
        try:
            target = to_failed(self.queue, src, short, detail)
        except FileNotFoundError:
            raise _LostRaceError from None
        self._skip.add(name)
        return Dropped(job_id, DropReason.INVALID_ID, detail, target)
