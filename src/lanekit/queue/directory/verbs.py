"""The operator verbs on one job: retry (failed/ -> queue/), requeue (delayed/ -> queue/ now)
and cancel (queue/ or delayed/ -> failed/). Each is one no-replace rename, so it races fairly
with claimers; a running job is never touched."""

# ruff: noqa: PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lanekit.errors import UsageError
from lanekit.queue.directory.fileio import io_errors, job_names
from lanekit.queue.directory.layout import error_name, has_id
from lanekit.queue.directory.observe import locate
from lanekit.queue.directory.safety import check
from lanekit.queue.directory.settle import to_failed, write_failed_record
from lanekit.queue.ids import validate_job_id
from lanekit.queue.model import CANCELLED, JobExistsError, Moved
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.system import fsops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState

_VERB_HINT = "`lanekit job` shows where the job is now"


def read_text(path: str) -> str | None:
    """The text of `path`, or None when it is gone."""
    try:
        return Path(path).read_text("utf-8", "replace")
    except FileNotFoundError:
        return None


def retry(q: QueueState, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
    """A failed job back into queue/ with all its attempts again (`lanekit retry`).

    The record is rewritten first (queued, attempts 0, the reason it failed kept in its
    `error` as `retried by hand; it had failed: ...`), then the job file, dated now (it waits
    from the retry on, not from its first enqueue), moves by a no-replace rename and its
    `.error` is removed. A job that is not in failed/ under its
    own name is a UsageError and nothing changes; so is one whose record says succeeded
    (the guard would only skip it)."""
    validate_job_id(job_id)
    check(q)
    src = f"{q.failed_dir}/{job_id}.json"
    target = f"{q.queue_dir}/{job_id}.json"
    try:
        links = os.lstat(src).st_nlink
    except OSError:
        raise not_there(q, job_id, "failed", "only a failed job can be retried") from None
    prev = q.store.read(job_id)
    if q.store.succeeded(job_id, prev):
        raise JobExistsError(
            f"job {job_id} already succeeded ({q.store.path(job_id)}); not retried",
            "lanekit never runs a succeeded id again: enqueue the work under a new id",
        )
    if os.path.lexists(target):
        raise JobExistsError(f"job {job_id} is already queued ({target})", _VERB_HINT)
    moved = Moved(job_id, src, target, JobState.QUEUED)
    if dry_run:
        return moved
    now = q.clock() if now is None else now
    error_file = error_name(src)
    reason = (prev.error if prev is not None else None) or read_text(error_file)
    stamp = iso_utc(now)
    record = Record(
        job_id,
        JobState.QUEUED,
        0,
        prev.queued_at if prev is not None else stamp,
        stamp,
        prev.lane if prev is not None else None,
        "retried by hand; it had failed: " + (reason or "(no reason recorded)").strip(),
    )
    with io_errors("retry the job"):
        q.store.write(record)
        # It waits from now on (queue.backlog's age): dated here, the rename carries it along.
        # Not a hard link to a file elsewhere (a claim refuses it again): lanekit changes no
        # file it did not create.
        if links == 1:
            os.utime(src, (now, now), follow_symlinks=False)
        try:
            fsops.rename_noreplace(src, target)
        except (FileExistsError, FileNotFoundError):
            if prev is not None:
                q.store.write(prev)
            raise JobExistsError(
                f"job {job_id} moved while it was being retried; nothing changed",
                _VERB_HINT,
            ) from None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(error_file)
        if q.durable:
            fsops.fsync_dir(q.queue_dir)
    return moved


def requeue(q: QueueState, job_id: str, *, dry_run: bool = False) -> Moved:
    """A job waiting out its retry backoff in delayed/: into queue/ now (`lanekit
    requeue`). Its record is unchanged (the attempts it spent still count)."""
    validate_job_id(job_id)
    check(q)
    src = delayed_file(q, job_id)
    if src is None:
        raise not_there(q, job_id, "delayed", "only a job awaiting a retry can be requeued")
    target = f"{q.queue_dir}/{job_id}.json"
    moved = Moved(job_id, src, target, JobState.QUEUED)
    if dry_run:
        return moved
    with io_errors("requeue the job"):
        try:
            fsops.rename_noreplace(src, target)
        except FileNotFoundError:
            raise JobExistsError(
                f"job {job_id} left delayed/ meanwhile (its retry came due); nothing changed",
                _VERB_HINT,
            ) from None
        except FileExistsError:
            raise JobExistsError(f"job {job_id} is already queued ({target})", _VERB_HINT) from None
        if q.durable:
            fsops.fsync_dir(q.queue_dir)
    return moved


def cancel(q: QueueState, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
    """A queued or delayed job to failed/ with reason `cancelled` (`lanekit cancel`).

    The move is one rename out of queue/ or delayed/, so it races fairly with a claimer:
    if a runner took the job first, it is running and the cancel is refused (UsageError),
    as for a job that is running already. A running job is never touched here."""
    validate_job_id(job_id)
    check(q)
    src = f"{q.queue_dir}/{job_id}.json"
    if not os.path.lexists(src):
        src = delayed_file(q, job_id) or ""
    if not src:
        location = locate(q, job_id)
        if location is not None and location.state is JobState.RUNNING:
            raise running_error(q, job_id, location.where)
        raise not_there(q, job_id, "queued", "only a queued or delayed job can be cancelled")
    moved = Moved(job_id, src, f"{q.failed_dir}/{job_id}.json", JobState.FAILED)
    if dry_run:
        return moved
    now = q.clock() if now is None else now
    with io_errors("cancel the job"):
        try:
            target = to_failed(q, src, job_id, CANCELLED)
        except FileNotFoundError:
            location = locate(q, job_id)
            raise running_error(
                q, job_id, location.where if location is not None else q.claimed_dir
            ) from None
        prev: Record | None
        try:
            prev = q.store.read(job_id)
        except RecordError:
            prev = None
        write_failed_record(q, job_id, prev, CANCELLED, now)
    return Moved(job_id, src, target, JobState.FAILED)


def delayed_file(q: QueueState, job_id: str) -> str | None:
    """The job's file in delayed/, or None."""
    for name in job_names(q.delayed_dir):
        if has_id(name, job_id):
            return f"{q.delayed_dir}/{name}"
    return None


def not_there(q: QueueState, job_id: str, where: str, why: str) -> UsageError:
    location = locate(q, job_id)
    now = "is nowhere in this queue" if location is None else f"is {location.state}"
    return UsageError(
        f"job {job_id} {now} ({q.dir}), not {where}: {why}; nothing changed",
        "`lanekit job` shows where a job is",
    )


def running_error(q: QueueState, job_id: str, path: str) -> UsageError:
    return UsageError(
        f"job {job_id} is running ({path}): not cancelled",
        "`lanekit cancel --stop JOB` stops it and cancels it, or let the run finish",
    )


def request_cancel(q: QueueState, job_id: str, *, dry_run: bool = False) -> Moved:
    """Ask the watcher of a running job to stop it (`lanekit cancel --stop`): a cancel request
    next to its claim (claimed/.<claim name>.cancel, written atomically); the claim's path. The
    watcher stops the job's group (SIGTERM, SIGKILL after kill_grace) and its settler, the
    runner or a recoverer, moves it to failed/ with reason `cancelled` (the Moved says from
    where to where). A job that is not running is a UsageError and nothing is written."""
    from lanekit.queue import outcome as job_outcome

    validate_job_id(job_id)
    check(q)
    location = locate(q, job_id)
    if location is None or location.state is not JobState.RUNNING:
        raise not_there(q, job_id, "running", "only a running job can be stopped")
    if not dry_run:
        with io_errors("ask the job's watcher to stop it"):
            fsops.replace_file(
                job_outcome.cancel_path(location.where),
                f"{CANCELLED} {iso_utc(q.clock())} by pid {os.getpid()}\n".encode(),
                tmp=q.tmp_name("cancel"),
                durable=False,
            )
    return Moved(job_id, location.where, f"{q.failed_dir}/{job_id}.json", JobState.FAILED)
