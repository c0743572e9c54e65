"""Recovering claims whose owner is gone (by the one claim-state answer, queue.liveness).

A claim is taken back only when nobody holds its flock and its owner on this host is dead
(or its pid reused) and no copy of its job still runs, or, for owners elsewhere, once it is
older than `stale_after`. A job that finished after its owner died is settled by the exit
status its watcher recorded; one with no status (its watcher died too, or the Mac did) runs
again without spending an attempt: a crash of lanekit's is not the job's failure.
"""

# ruff: noqa: PTH108, PTH116
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import time

from lanekit.queue import outcome as job_outcome
from lanekit.queue.directory.fileio import io_errors, listdir
from lanekit.queue.directory.layout import TMP_PREFIXES, delayed_name, queued_name
from lanekit.queue.directory.liveness import local_owner_gone
from lanekit.queue.directory.mark import attempt_record, held_elsewhere
from lanekit.queue.directory.mark import release as release_mark
from lanekit.queue.directory.mark import sweep as sweep_marks
from lanekit.queue.directory.safety import check
from lanekit.queue.directory.settle import (
    duplicate_to_failed,
    not_recorded,
    record_outcome,
    to_done,
    to_failed,
)
from lanekit.queue.ids import is_job_name, split_owned_name
from lanekit.queue.model import Recovered
from lanekit.queue.observed import RecoverReason
from lanekit.queue.policy import gave_up
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.system import fsops, procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState
    from lanekit.queue.ids import Owner

_TMP_MAX_AGE = 3600.0
"""Our own temp files in tmp/ older than this were left by a killed process."""


def recover(
    q: QueueState,
    *,
    stale_after: float,
    max_attempts: int,
    dry_run: bool = False,
    now: float | None = None,
) -> list[Recovered]:
    """Give back claims whose owner is gone; safe to run from many processes at once.

    On this host a claim is recovered when nobody holds its lock, its owner pid is dead
    or runs another process (start token differs), and no copy of its job still runs
    (job_outcome.job_copies). For owners on another host (or files without an owner) only age
    counts: older than `stale_after` seconds. The job goes back to queue/ (the attempt its
    runner's crash cut short not counted), or where its watcher's status or its record says
    it ended: done/ for succeeded, failed/ for failed (the owner died between recording the
    outcome and moving the file; the record is kept). Each candidate is locked and re-checked
    with stat before the move, and the move is a rename, so two recoverers never both act.
    `dry_run` reports what would move and moves nothing.
    """
    check(q)
    now = q.clock() if now is None else now
    results = []
    with io_errors("recover claims"):
        if not dry_run:
            # By the real time: tmp/ files carry the kernel's mtimes, and an emulated clock
            # days ahead would take a file being written right now for a leftover.
            sweep_tmp(q, time.time())
            sweep_statuses(q)
            sweep_marks(q, now)
        for name in listdir(q.claimed_dir):
            if not is_job_name(name):
                continue
            item = recover_one(q, name, stale_after, max_attempts, dry_run, now)
            if item is not None:
                results.append(item)
    return results


def sweep_tmp(q: QueueState, now: float) -> None:
    """Remove our own temp files (probe, record, job, .error) that a killed process left in
    tmp/ over an hour ago. Producers' files there are not ours and are left alone."""
    for name in listdir(q.tmp_dir):
        if not name.startswith(TMP_PREFIXES):
            continue
        path = f"{q.tmp_dir}/{name}"
        with contextlib.suppress(FileNotFoundError):
            if now - os.lstat(path).st_mtime > _TMP_MAX_AGE:
                os.unlink(path)


def recover_one(  # noqa: PLR0917 - recover()'s own values
    q: QueueState, name: str, stale_after: float, max_attempts: int, dry_run: bool, now: float
) -> Recovered | None:
    """Recover the claim `name` if its owner is gone (None: it stays)."""
    path = f"{q.claimed_dir}/{name}"
    parsed = split_owned_name(name)
    job_id, owner = (name[:-5], None) if parsed is None else parsed
    try:
        fd = fsops.open_regular(path)
    except FileNotFoundError:
        return None
    except (fsops.NotRegularFileError, PermissionError) as exc:
        return recover_bad_file(q, path, job_id, owner, exc, stale_after, dry_run, now)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its owner (or another recoverer) holds it
        if owner is not None and owner.host == procinfo.hosttag():
            gone = local_owner_gone(owner, path)
            if gone is None:
                return None
            reason = gone
        else:
            if now - os.fstat(fd).st_mtime <= stale_after:
                return None
            reason = RecoverReason.STALE
        # A listing can repeat or miss names during renames: act only if this name still
        # is the file we locked.
        try:
            current = os.stat(path)
        except FileNotFoundError:
            return None
        locked = os.fstat(fd)
        if (current.st_ino, current.st_dev) != (locked.st_ino, locked.st_dev):
            return None
        return give_back(
            q,
            path=path,
            job_id=job_id,
            owner=owner,
            reason=reason,
            max_attempts=max_attempts,
            dry_run=dry_run,
            now=now,
        )
    finally:
        os.close(fd)


def recover_bad_file(  # noqa: PLR0917 - called once, with recover's own values
    q: QueueState,
    path: str,
    job_id: str,
    owner: Owner | None,
    exc: OSError,
    stale_after: float,
    dry_run: bool,
    now: float,
) -> Recovered | None:
    """A claimed name that is no regular file, or one we may not read (it cannot be locked
    or run): once its owner is gone, to failed/ with the reason. A live owner is a claimer
    about to do exactly that itself."""
    if owner is not None and owner.host == procinfo.hosttag():
        gone = local_owner_gone(owner, path)
        if gone is None:
            return None
        reason = gone
    else:
        try:
            if now - os.lstat(path).st_mtime <= stale_after:
                return None
        except FileNotFoundError:
            return None
        reason = RecoverReason.STALE
    destination = f"{q.failed_dir}/{queued_name(job_id)}"
    owner_text = "" if owner is None else str(owner)
    if not dry_run:
        release_mark(q, job_id, owner_text, path)
        try:
            destination = to_failed(q, path, job_id, f"job file {exc.strerror}")
        except FileNotFoundError:
            return None  # another recoverer moved it first
    return Recovered(job_id, reason, destination, JobState.FAILED, owner_text, 0)


def give_back(
    q: QueueState,
    *,
    path: str,
    job_id: str,
    owner: Owner | None,
    reason: RecoverReason,
    max_attempts: int,
    dry_run: bool,
    now: float,
) -> Recovered | None:
    """Move a claim whose owner is gone to where its record or its watcher says."""
    owner_text = "" if owner is None else str(owner)
    why = {
        RecoverReason.OWNER_DEAD: f"owner {owner_text} died",
        RecoverReason.PID_REUSED: f"owner {owner_text} died (its pid now runs another process)",
        RecoverReason.STALE: f"claim by {owner_text or 'an unknown owner'} went stale",
    }[reason]
    prev: Record | None = None
    unreadable: str | None = None
    try:
        prev = q.store.read(job_id)
    except RecordError as exc:
        unreadable = exc.message
    else:
        # The attempt is counted by the claim's `running` line (or, for a claim by an earlier
        # version, its symlink mark or `running` record): lanekit.queue.directory.mark.
        prev = attempt_record(q, job_id, owner_text or None, prev, now)
    attempts = 0 if prev is None else prev.attempts
    # A settled record means the owner died between recording the outcome and moving the
    # file: finish the move and keep the record, never run the job again.
    settled = prev is not None and prev.state in {JobState.SUCCEEDED, JobState.FAILED}
    # The id's mark stands for another copy (ours died before marking): ours never started,
    # and the record, attempts and all, is that copy's, not ours to write or to count.
    foreign = not settled and unreadable is None and held_elsewhere(q, job_id, owner_text, path)
    status = job_outcome.status_path(path)
    outcome = None if settled or unreadable is not None else job_outcome.read_outcome(status)
    if outcome is not None:
        return settle_finished(
            q,
            path=path,
            job_id=job_id,
            owner_text=owner_text,
            reason=reason,
            prev=prev,
            outcome=outcome,
            max_attempts=max_attempts,
            dry_run=dry_run,
            now=now,
        )
    if prev is not None and prev.state is JobState.SUCCEEDED:
        state = JobState.SUCCEEDED
    elif unreadable is not None or settled:
        state = JobState.FAILED
    else:
        state = JobState.QUEUED
    # No status: the job's watcher died before the job ended (killed with the runner, or the
    # Mac went down), so the attempt was cut short by a crash of lanekit's, not ended by the
    # job, and its exit is unknown. It runs again and the attempt is not counted: crashes
    # never spend a job's attempts (issue: a watcher killed alone once sent succeeded jobs to
    # failed/). Its `running` line counted it (mark_running); a claim cut short before that
    # line never started an attempt.
    if state is JobState.QUEUED and prev is not None and prev.state is JobState.RUNNING:
        attempts = max(attempts - 1, 0)
    destination = _destination(q, job_id, state, now)
    if dry_run:
        return Recovered(job_id, reason, destination, state, owner_text, attempts)
    try:
        if state is JobState.SUCCEEDED:
            release_mark(q, job_id, owner_text, path)
            destination = to_done(q, path, job_id, now)
        elif state is JobState.FAILED:
            # Unreadable, or settled as failed by a settle cut short before the move.
            if unreadable is not None or prev is None:
                error = f"record unreadable: {unreadable}"
            else:
                error = prev.error or f"failed ({why} before moving it to failed/)"
            release_mark(q, job_id, owner_text, path)
            destination = to_failed(q, path, job_id, error)
        else:
            # The record first: it keeps the count once the mark is gone (we hold the
            # claim's flock, so no other recoverer moves it meanwhile).
            if not foreign:
                error = f"{why} before its job's end was recorded: run again, not counted"
                record = Record(job_id, JobState.QUEUED, 0, iso_utc(now), iso_utc(now), error=error)
                q.store.write(dataclasses.replace(record.carry_over(prev), attempts=attempts))
            release_mark(q, job_id, owner_text, path)
            try:
                fsops.rename_noreplace(path, destination)
            except FileExistsError:
                destination = duplicate_to_failed(q, path, job_id, destination)
                state = JobState.FAILED
    except FileNotFoundError:
        return None  # another recoverer moved it first
    _remove_beside(path)  # a dead watcher's .started note
    return Recovered(job_id, reason, destination, state, owner_text, attempts)


def _destination(q: QueueState, job_id: str, state: JobState, now: float) -> str:
    """Where a claim given back in `state` goes: done/<day>/, failed/ or queue/."""
    if state is JobState.SUCCEEDED:
        return f"{q.day_path(now)}/{queued_name(job_id)}"
    if state is JobState.FAILED:
        return f"{q.failed_dir}/{queued_name(job_id)}"
    return f"{q.queue_dir}/{queued_name(job_id)}"


def settle_finished(
    q: QueueState,
    *,
    path: str,
    job_id: str,
    owner_text: str,
    reason: RecoverReason,
    prev: Record | None,
    outcome: job_outcome.Outcome,
    max_attempts: int,
    dry_run: bool,
    now: float,
) -> Recovered | None:
    """A claim whose job finished after its owner died: settle it by the exit status its
    watcher recorded, exactly as the owner would have (cancelled -> failed/; 0 -> done/;
    stopped -> queue/ unspent; another failure -> retry with backoff, or failed/ when out
    of attempts),
    never run it again. The record is written before the move (see `_settle`), the status
    removed after it."""
    attempts = 0 if prev is None else prev.attempts
    stamp = iso_utc(now)
    error = job_outcome.describe(outcome)
    if outcome.cancelled:
        state, destination = JobState.FAILED, f"{q.failed_dir}/{queued_name(job_id)}"
    elif outcome.exit == 0:
        state, destination = JobState.SUCCEEDED, f"{q.day_path(now)}/{queued_name(job_id)}"
    elif outcome.stopped:
        state, destination = JobState.QUEUED, f"{q.queue_dir}/{queued_name(job_id)}"
    elif attempts >= max_attempts:
        state, destination = JobState.FAILED, f"{q.failed_dir}/{queued_name(job_id)}"
    else:
        wait = q.backoff(attempts)
        target = f"{q.delayed_dir}/{delayed_name(job_id, int(now + wait + 0.999))}"
        state, destination = (
            JobState.QUEUED,
            target if wait > 0 else f"{q.queue_dir}/{queued_name(job_id)}",
        )
    result = Recovered(job_id, reason, destination, state, owner_text, attempts, outcome.exit)
    if dry_run:
        return result
    try:
        if state is JobState.SUCCEEDED:
            record = Record(job_id, JobState.SUCCEEDED, 0, stamp, stamp)
            unwritten = record_outcome(q, record.carry_over(prev))
            release_mark(q, job_id, owner_text, path)
            destination = to_done(q, path, job_id, now)
            if unwritten is not None:
                raise not_recorded(q, record, unwritten, destination) from unwritten
        elif state is JobState.FAILED:
            error = error if outcome.cancelled else gave_up(error, attempts)
            failed = Record(job_id, JobState.FAILED, 0, stamp, stamp, error=error)
            unwritten = record_outcome(q, failed.carry_over(prev))
            release_mark(q, job_id, owner_text, path)
            destination = to_failed(q, path, job_id, error)
            if unwritten is not None:
                raise not_recorded(q, failed, unwritten, destination) from unwritten
        else:
            spent = attempts if not outcome.stopped else max(attempts - 1, 0)
            lane = None if prev is None else prev.lane
            queued_at = stamp if prev is None or not prev.queued_at else prev.queued_at
            q.store.write(Record(job_id, JobState.QUEUED, spent, queued_at, stamp, lane, error))
            release_mark(q, job_id, owner_text, path)
            try:
                fsops.rename_noreplace(path, destination)
            except FileExistsError:
                destination = duplicate_to_failed(q, path, job_id, destination)
                state = JobState.FAILED
    except FileNotFoundError:
        return None  # another recoverer moved it first
    _remove_beside(path)
    return Recovered(job_id, reason, destination, state, owner_text, attempts, outcome.exit)


def _remove_beside(claim: str) -> None:
    """Remove what the watcher and `lanekit cancel` left beside a settled claim."""
    for done_with in (
        job_outcome.status_path(claim),
        job_outcome.cancel_path(claim),
        job_outcome.started_path(claim),
    ):
        with contextlib.suppress(OSError):
            os.unlink(done_with)


_BESIDE_CLAIMS = (".status", ".cancel", ".started")
"""What the watcher and `lanekit cancel` leave beside a claim (lanekit.run.watcher)."""


def sweep_statuses(q: QueueState) -> None:
    """Remove status files, started notes and cancel requests whose claim is gone (a settle
    cut short between moving the job and removing them, a dead watcher's note, or a request
    that came too late). A watcher writes its note and status while its claim is in place,
    and only its own runner takes a claim of the same name again (after removing them), so
    this cannot race one."""
    for name in listdir(q.claimed_dir):
        if name[0] != "." or not name.endswith(_BESIDE_CLAIMS):
            continue
        claim = f"{q.claimed_dir}/{name[1:].rpartition('.')[0]}.json"
        if not os.path.lexists(claim):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{q.claimed_dir}/{name}")
