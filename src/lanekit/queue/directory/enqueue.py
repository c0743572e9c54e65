"""Adding a job: the payload checked, written to tmp/, renamed without replacing into queue/,
its `queued` record created where the id has none (design.md section 3)."""

# ruff: noqa: PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import os

from lanekit.errors import QueueError
from lanekit.queue.directory.fileio import io_errors, listdir
from lanekit.queue.directory.layout import has_id
from lanekit.queue.directory.observe import done_file
from lanekit.queue.directory.safety import check
from lanekit.queue.ids import new_job_id, validate_job_id
from lanekit.queue.model import JobExistsError
from lanekit.queue.payload import payload_bytes
from lanekit.queue.records import JobState, Record, iso_utc
from lanekit.system import fsops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from lanekit.queue.directory.state import QueueState


def enqueue(
    q: QueueState, payload: Mapping[str, Any] | bytes | str, job_id: str | None = None
) -> str:
    """Add a job; returns its id. The payload must be a JSON object of at most the queue's
    max_job_bytes (UsageError otherwise).

    Written to tmp/, fsynced, renamed without replacing into queue/<id>.json, directory
    fsynced (no fsyncs when durable=False). A given id must pass validate_job_id and must
    not be anywhere in the queue already; an id whose record says succeeded is refused too
    (JobExistsError), because the guard would only skip it.

    Those checks only make the usual refusals explicit: a listing can miss a file that is
    being renamed. What holds under races is that enqueue never replaces anything: the job
    enters queue/ by a no-replace rename, and its `queued` record is created only where the
    id has none. A record that exists belongs to the id's earlier life (a claim about to
    finish, a success, an attempt count) and stays; the claimer's guard then decides.
    """
    check(q)
    data = payload_bytes(payload, q.max_job_bytes)
    if job_id is None:
        job_id = new_job_id(round(q.clock() * 1e9))
    else:
        validate_job_id(job_id)
        refuse_existing(q, job_id)
    with io_errors("enqueue"):
        write_job(q, job_id, data)
    return job_id


def write_job(q: QueueState, job_id: str, data: bytes) -> None:
    """Stage the record, move the job into queue/, create its record, then commit both with
    ONE full flush.

    Durably, the job file and the staged record are fsync'd (plain), the record's directory
    entry is fsync'd (plain) once it is in place, and the commit point is the full flush of
    queue/ (F_FULLFSYNC on macOS). fcntl(2) (xnu bsd/man/man2/fcntl.2): F_FULLFSYNC "does the
    same thing as fsync(2) then asks the drive to flush all buffered data to the permanent
    storage device", so it persists everything fsync'd before it, in records/ too; a second full
    flush (one per directory, as before) costs ~20 ms on an Apple SSD and buys nothing. A
    power cut before the commit point loses the enqueue (it had not returned): the job
    without its record (the settle of its first claim writes one), or a `queued` record
    without its job (which nothing runs)."""
    stamp = iso_utc(q.clock())
    job_tmp = q.tmp_name("job")
    fsops.write_new(job_tmp, data, durable=q.durable)
    tmp: str | None = job_tmp
    staged: str | None = None
    target = f"{q.queue_dir}/{job_id}.json"
    try:
        # Staged before the job is visible: a full disk then queues nothing. Moving it into
        # records/ later is a rename, which needs no free space.
        staged = q.store.stage(Record(job_id, JobState.QUEUED, 0, stamp, stamp))
        try:
            fsops.rename_noreplace(job_tmp, target)
        except FileExistsError:
            raise JobExistsError(
                f"job {job_id} is already queued ({target})", "give the new job another id"
            ) from None
        tmp = None
        # create() owns the staged file from here on (it removes it unless it moved it).
        staged_record, staged = staged, None
        created, failure = False, None
        try:
            created = q.store.create(staged_record, job_id, durable=False)
        except OSError as exc:
            failure = exc
        if q.durable:
            if created:
                fsops.sync_dir(q.store.dir_path)
            fsops.fsync_dir(q.queue_dir)
        if failure is not None:
            raise QueueError(
                f"{failure.filename or q.store.path(job_id)}: job {job_id} is queued, but "
                f"its record cannot be created ({failure.strerror or failure})",
                "the job will run (its record is written when it settles); check the queue's "
                "records/ directory (`lanekit doctor`)",
            ) from failure
    finally:
        for leftover in (tmp, staged):
            if leftover is not None:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)


def refuse_existing(q: QueueState, job_id: str) -> None:
    """JobExistsError when `job_id` is anywhere in the queue or already succeeded."""
    hint = "give the new job another id"
    for path, what in (
        (f"{q.queue_dir}/{job_id}.json", "is already queued"),
        (f"{q.failed_dir}/{job_id}.json", "already failed"),
    ):
        if os.path.lexists(path):
            raise JobExistsError(f"job {job_id} {what} ({path})", hint)
    for directory, what in ((q.claimed_dir, "is running"), (q.delayed_dir, "awaits a retry")):
        for name in listdir(directory):
            if has_id(name, job_id):
                raise JobExistsError(f"job {job_id} {what} ({directory}/{name})", hint)
    record = q.store.read(job_id)
    proof: Path | str | None
    if record is not None and record.state is JobState.SUCCEEDED:
        proof = q.store.path(job_id)
    elif q.store.succeeded(job_id, record):  # no record: the purge index knows it
        proof = q.store.guard_dir
    else:
        proof = done_file(q, job_id)
    if proof is not None:
        raise JobExistsError(
            f"job {job_id} already succeeded ({proof})",
            "lanekit never runs a succeeded id again: give the new job another id",
        )
