"""Settling a claim: complete, fail, release (and due retries back from delayed/). The record
goes first (its line appended after the claim's `running` line), then the claim's running mark
is removed (lanekit.queue.directory.mark), then the move out of claimed/ by a no-replace rename (see
settle_record_first)."""

# ruff: noqa: PTH119
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lanekit.errors import QueueError
from lanekit.queue.directory.fileio import io_errors, listdir, queue_error, rename_into
from lanekit.queue.directory.layout import delayed_name, delayed_until, error_name, queued_name
from lanekit.queue.directory.mark import drop as drop_mark
from lanekit.queue.directory.state import ClaimLock
from lanekit.queue.model import RecordNotWrittenError, Settled, VerdictKind, error_file_text
from lanekit.queue.policy import DEFER_SECONDS, gave_up
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record
from lanekit.system import fsops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from lanekit.queue.directory.recordstore import OpenRecord
    from lanekit.queue.directory.state import QueueState
    from lanekit.queue.model import Claim, Verdict


def settle(q: QueueState, claim: Claim, verdict: Verdict) -> Settled:
    """Finish `claim` the way `verdict` says (see VerdictKind); where the job went."""
    kind = verdict.kind
    if kind is VerdictKind.SUCCEEDED:
        return Settled(claim.job_id, JobState.SUCCEEDED, str(complete(q, claim)))
    if kind is VerdictKind.GAVE_UP:
        return Settled(claim.job_id, JobState.FAILED, str(fail(q, claim, verdict.error)))
    spent = kind is VerdictKind.FAILED
    where = release(
        q,
        claim,
        max_attempts=verdict.max_attempts,
        error=verdict.error,
        count_attempt=spent,
        delay=spent or kind is VerdictKind.DEFERRED,
        at_least=DEFER_SECONDS if kind is VerdictKind.DEFERRED else 0.0,
    )
    target = str(where)
    if target.startswith(q.failed_dir + "/"):
        return Settled(claim.job_id, JobState.FAILED, target)
    due = delayed_until(where.name) if target.startswith(q.delayed_dir + "/") else None
    return Settled(claim.job_id, JobState.QUEUED, target, None if due is None else float(due[1]))


def complete(q: QueueState, claim: Claim) -> Path:
    """The job succeeded: record it, move it to done/<UTC day>/, drop the lock.

    If the record cannot be written the job still moves to done/, then
    RecordNotWrittenError (see
    `settle_record_first`)."""
    require_held(claim)
    try:
        now = q.clock()
        running = claim.record
        job_id = claim.job_id
        record = Record(
            job_id,
            JobState.SUCCEEDED,
            running.attempts,
            running.queued_at,
            iso_utc(now),
            running.lane,
        )
        unwritten = record_outcome(q, record, lock_of(claim).record)
        if unwritten is None:
            drop_mark(q, job_id)  # kept otherwise: the guard then asks done/ (queue.mark)
        day = q.done_bucket(now)
        target = to_terminal(q, claim.file, day, job_id)
        if unwritten is not None:
            raise not_recorded(q, record, unwritten, target) from unwritten
        # A child of the bucket's Path costs less than parsing a new Path (on every job).
        return q.day_dir / target[len(day) + 1 :]
    except OSError as exc:
        raise queue_error(exc, "complete the job") from exc
    finally:
        lock_of(claim).release()


def fail(q: QueueState, claim: Claim, error: str) -> Path:
    """The job failed for good: record it, move it to failed/ with <id>.error, drop the lock.

    If the record cannot be written the job still moves to failed/, then
    RecordNotWrittenError."""
    require_held(claim)
    try:
        with io_errors("fail the job"):
            return Path(fail_claimed(q, claim, error or "failed without a message"))
    finally:
        lock_of(claim).release()


def release(
    q: QueueState,
    claim: Claim,
    *,
    max_attempts: int,
    error: str = "",
    count_attempt: bool = True,
    delay: bool = True,
    at_least: float = 0.0,
) -> Path:
    """Give the job back: to delayed/ (backoff, and `at_least` seconds with `delay`), queue/
    (no delay), or failed/ when out of attempts. `count_attempt=False, delay=False` is for a
    run stopped by a signal: the job did not fail, so it neither spends an attempt nor
    waits."""
    require_held(claim)
    try:
        with io_errors("release the job"):
            return Path(
                release_claim(q, claim, max_attempts, error, count_attempt, delay, at_least)
            )
    finally:
        lock_of(claim).release()


def release_claim(  # noqa: PLR0917 - release()'s own values, in its order
    q: QueueState,
    claim: Claim,
    max_attempts: int,
    error: str,
    count_attempt: bool,
    delay: bool,
    at_least: float = 0.0,
) -> str:
    """release() without the lock handling: where the job went."""
    attempts = claim.record.attempts
    if count_attempt and attempts >= max_attempts:
        return fail_claimed(q, claim, gave_up(error or "released", attempts))
    if not count_attempt:
        attempts = max(attempts - 1, 0)
    now = q.clock()
    wait = max(q.backoff(claim.record.attempts), at_least) if delay else 0.0
    record = Record(
        claim.job_id,
        JobState.QUEUED,
        attempts,
        claim.record.queued_at,
        iso_utc(now),
        lane=claim.record.lane,
        error=error or None,
    )
    q.store.settle(record, lock_of(claim).record)
    drop_mark(q, claim.job_id)
    if wait > 0:
        not_before = int(now + wait + 0.999)
        target = f"{q.delayed_dir}/{delayed_name(claim.job_id, not_before)}"
    else:
        target = f"{q.queue_dir}/{queued_name(claim.job_id)}"
    src = claim.file
    try:
        fsops.rename_noreplace(src, target)
    except FileExistsError:
        return duplicate_to_failed(q, src, claim.job_id, target)
    return target


def promote_due(q: QueueState, now: float | None = None) -> list[str]:
    """Move retries whose not-before time has come from delayed/ to queue/; their ids."""
    with io_errors("move due retries back to queue/"):
        return promote_due_at(q, q.clock() if now is None else now)


def promote_due_at(q: QueueState, now: float) -> list[str]:
    """promote_due() at `now`, OSErrors left to the caller."""
    promoted = []
    for name in listdir(q.delayed_dir):
        due = delayed_until(name)
        if due is None or due[1] > now:
            continue
        job_id = due[0]
        src = f"{q.delayed_dir}/{name}"
        try:
            fsops.rename_noreplace(src, f"{q.queue_dir}/{job_id}.json")
        except FileNotFoundError:
            continue  # another runner promoted it
        except FileExistsError:
            duplicate_to_failed(q, src, job_id, f"{q.queue_dir}/{job_id}.json")
            continue
        promoted.append(job_id)
    return promoted


def lock_of(claim: Claim) -> ClaimLock:
    """The claim's flock and open record (this backend's handle); QueueError for a claim
    another backend handed out."""
    handle = claim.handle
    if not isinstance(handle, ClaimLock):
        raise QueueError(
            f"{claim.path}: claim of job {claim.job_id} is not a directory queue's",
            "settle a claim through the queue that handed it out",
        )
    return handle


def require_held(claim: Claim) -> None:
    """QueueError for a claim that was already settled (each is settled once)."""
    if lock_of(claim).fd < 0:
        raise QueueError(
            f"{claim.path}: claim of job {claim.job_id} was already settled",
            "settle each claim once (complete, fail or release)",
        )


def to_terminal(q: QueueState, src: str, directory: str, job_id: str) -> str:
    """Move into done/ or failed/: <id>.json, or the unique claimed name if that is taken."""
    target = f"{directory}/{job_id}.json"
    try:
        rename_into(src, target)
    except FileExistsError:
        target = f"{directory}/{os.path.basename(src)}"
        try:
            rename_into(src, target)
        except FileExistsError:
            raise QueueError(
                f"{target}: already exists; {src} was left where it is",
                "two copies of one job under one owner: inspect both files",
            ) from None
    return target


def to_done(q: QueueState, src: str, job_id: str, now: float) -> str:
    """Move into today's done/ bucket."""
    return to_terminal(q, src, q.done_bucket(now), job_id)


def to_failed(q: QueueState, src: str, job_id: str, error: str) -> str:
    """Move into failed/ and write its .error (why)."""
    target = to_terminal(q, src, q.failed_dir, job_id)
    error_file = error_name(target)
    fsops.replace_file(
        error_file,
        error_file_text(error).encode("utf-8", "replace"),
        tmp=q.tmp_name("error"),
        durable=q.durable,
    )
    # Its mtime is when the job failed (retention reads it), by the queue's clock.
    stamp = q.clock()
    with contextlib.suppress(OSError):
        os.utime(error_file, (stamp, stamp), follow_symlinks=False)
    return target


def write_failed_record(
    q: QueueState, job_id: str, prev: Record | None, error: str, now: float
) -> None:
    """Record that the job failed for good, carrying over what `prev` knew."""
    stamp = iso_utc(now)
    record = Record(job_id, JobState.FAILED, 0, stamp, stamp, error=error)
    q.store.write(record.carry_over(prev))


def fail_claimed(q: QueueState, claim: Claim, error: str) -> str:
    """fail() without the lock handling: where the job went."""
    stamp = iso_utc(q.clock())
    record = Record(claim.job_id, JobState.FAILED, 0, stamp, stamp, error=error)
    return settle_record_first(
        q,
        record.carry_over(claim.record),
        lambda: to_failed(q, claim.file, claim.job_id, error),
        mark=True,
        held=lock_of(claim).record,
    )


def settle_record_first(
    q: QueueState,
    record: Record,
    move: Callable[[], str],
    *,
    mark: bool = False,
    held: OpenRecord | None = None,
) -> str:
    """Write a finished job's record, then `move` its file out of claimed/ (to done/ or
    failed/); returns where it went.

    The record goes first: if the process dies between the two, recover() reads the record
    and finishes the move instead of running the job again. If the record cannot be written
    (disk full, EIO), the file is moved all the same (a rename needs no free space): left in
    claimed/ with its `running` record, it would be recovered to queue/ and run again. The
    missing record is then a RecordNotWrittenError (a QueueError: the run exits 69), naming
    the record that was not updated and where the job went.
    `mark`: the claim is this process's and has a running mark, removed between the two once
    the record is written (kept when it is not: lanekit.queue.directory.mark); `held`, its open
    record (record_outcome).
    (complete() does the same steps inline: it is on every job's path.)
    """
    unwritten = record_outcome(q, record, held)
    if mark and unwritten is None:
        drop_mark(q, record.job_id)
    target = move()
    if unwritten is not None:
        raise not_recorded(q, record, unwritten, target) from unwritten
    return target


def record_outcome(q: QueueState, record: Record, held: OpenRecord | None = None) -> OSError | None:
    """Write a settling record (its claim's mark stands meanwhile: RecordStore.settle, through
    the claim's open record `held` if it has one); the OSError if it could not be written (see
    `settle_record_first`)."""
    try:
        q.store.settle(record, held)
    except OSError as exc:
        return exc
    return None


def not_recorded(q: QueueState, record: Record, exc: OSError, target: str) -> RecordNotWrittenError:
    """The RecordNotWrittenError for a settle whose record failed."""
    return RecordNotWrittenError(
        f"{q.store.path(record.job_id)}: cannot record that job {record.job_id} "
        f"{record.state} ({exc.strerror or exc}); the job was moved to {target}, "
        "its record was not updated",
        "free space (or fix permissions) in the queue's filesystem "
        "(`lanekit doctor`); the job is finished and will not be recovered",
        state=record.state,
        moved_to=target,
    )


def duplicate_to_failed(q: QueueState, src: str, job_id: str, taken: str) -> str:
    """A live copy of this id already sits at `taken`: park ours in failed/, explained."""
    return to_failed(
        q, src, job_id, f"duplicate: another copy of job {job_id} is already at {taken}"
    )
