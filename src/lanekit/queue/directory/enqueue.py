"""Adding a job: the payload checked, written to tmp/, moved without replacing into queue/ (link
+ unlink: lanekit.system.fsops.publish_new), its `queued` record created where the id has none
(design.md section 3).

Builtin imports only for a job with a generated id, given by its queue's path (`add`): a single
`lanekit enqueue` runs this, and its start-up is a benchmark figure (lanekit.jobs.add). So the
queue's checks (lanekit.queue.directory.safety), the payload's (lanekit.queue.payload), the id
(lanekit.queue.ids) and the record's line (lanekit.queue.recordline) import no dataclass, enum,
json or pathlib, and a given id's checks, which read the queue's records, load the record
machinery only then. `Queue.enqueue` comes through `enqueue` and does the same.
"""

# ruff: noqa: PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import os

from lanekit.queue.directory.layout import delayed_name, has_id
from lanekit.queue.directory.recordfile import create_record, stage_record
from lanekit.queue.directory.safety import check_root
from lanekit.queue.ids import new_job_id, validate_job_id
from lanekit.queue.payload import payload_bytes
from lanekit.queue.recordline import iso_utc, record_line
from lanekit.system import fsops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

    from lanekit.queue.directory.state import QueueState

QUEUED = "queued"
"""JobState.QUEUED's value: a new job's record says it (the enum is not imported here)."""


def enqueue(
    q: QueueState,
    payload: Mapping[str, Any] | bytes | str,
    job_id: str | None = None,
    *,
    not_before: float | None = None,
) -> str:
    """Add a job to the queue `q`; returns its id (see `add`)."""
    return add(
        q.root,
        payload,
        job_id,
        durable=q.durable,
        clock=q.clock,
        max_job_bytes=q.max_job_bytes,
        state=q,
        not_before=not_before,
    )


def add(
    root: str,
    payload: Mapping[str, Any] | bytes | str,
    job_id: str | None = None,
    *,
    durable: bool,
    clock: Callable[[], float],
    max_job_bytes: int,
    state: QueueState | None = None,
    not_before: float | None = None,
) -> str:
    """Add a job to the queue directory `root`; returns its id. The payload must be a JSON
    object of at most `max_job_bytes` (UsageError otherwise). `state`: the queue's QueueState
    when the caller has one (a given id's checks need it; made here otherwise). `not_before`
    (epoch seconds) later than now: the job waits in delayed/<id>.<not-before>.json (the
    second rounded up, so it never runs early), as a retry waits out its backoff; each run
    moves it into queue/ once due.

    Written to tmp/, fsynced, moved without replacing into queue/<id>.json (or delayed/),
    directory fsynced (no fsyncs when not `durable`). A given id must pass validate_job_id and must
    not be anywhere in the queue already; an id whose record says succeeded is refused too
    (JobExistsError), because the guard would only skip it.

    Those checks only make the usual refusals explicit: a listing can miss a file that is
    being renamed. What holds under races is that enqueue never replaces anything: the job
    enters queue/ by a no-replace rename, and its `queued` record is created only where the
    id has none. A record that exists belongs to the id's earlier life (a claim about to
    finish, a success, an attempt count) and stays; the claimer's guard then decides.
    """
    check_root(root)
    data = payload_bytes(payload, max_job_bytes)
    if job_id is None:
        job_id = new_job_id(round(clock() * 1e9))
    else:
        validate_job_id(job_id)
        if state is None:
            from pathlib import Path

            from lanekit.queue.directory.state import QueueState

            state = QueueState(
                Path(root), durable=durable, clock=clock, max_job_bytes=max_job_bytes
            )
        refuse_existing(state, job_id)
    now = clock()
    wait = None if not_before is None or not_before <= now else -int(-not_before // 1)
    try:
        write_job(root, job_id, data, durable=durable, stamp=iso_utc(now), not_before=wait)
    except OSError as exc:
        from lanekit.queue.directory.fileio import queue_error

        raise queue_error(exc, "enqueue") from exc
    return job_id


def write_job(
    root: str, job_id: str, data: bytes, *, durable: bool, stamp: str, not_before: int | None = None
) -> None:
    """Stage the record, move the job into queue/ (delayed/ when it waits until `not_before`),
    create its record, then commit both with ONE full flush.

    Durably, the job file and the staged record are fsync'd (plain), the record's directory
    entry is fsync'd (plain) once it is in place, and the commit point is the full flush of
    queue/ (F_FULLFSYNC on macOS). fcntl(2) (xnu bsd/man/man2/fcntl.2): F_FULLFSYNC "does the
    same thing as fsync(2) then asks the drive to flush all buffered data to the permanent
    storage device", so it persists everything fsync'd before it, in records/ too; a second full
    flush (one per directory, as before) costs ~20 ms on an Apple SSD and buys nothing. A
    power cut before the commit point loses the enqueue (it had not returned): the job
    without its record (the settle of its first claim writes one), or a `queued` record
    without its job (which nothing runs)."""
    tmp_dir, records_dir = f"{root}/tmp", f"{root}/records"
    if not_before is None:
        queue_dir, target = f"{root}/queue", f"{root}/queue/{job_id}.json"
        where = "is already queued"
    else:
        queue_dir = f"{root}/delayed"
        target = f"{queue_dir}/{delayed_name(job_id, not_before)}"
        where = "already waits for its time"
    job_tmp = f"{tmp_dir}/.job.{fsops.tmp_suffix()}"
    fsops.write_new(job_tmp, data, durable=durable)
    tmp: str | None = job_tmp
    staged: str | None = None
    try:
        # Staged before the job is visible: a full disk then queues nothing. Moving it into
        # records/ later is a rename, which needs no free space.
        staged = stage_record(
            tmp_dir, record_line(job_id, QUEUED, 0, stamp, stamp), durable=durable
        )
        try:
            # link(2) + unlink(2): as exclusive as the no-replace rename, without ctypes
            # (fsops.publish_new says what the instant with two names costs).
            fsops.publish_new(job_tmp, target)
        except FileExistsError:
            from lanekit.queue.model import JobExistsError

            raise JobExistsError(
                f"job {job_id} {where} ({target})", "give the new job another id"
            ) from None
        tmp = None
        # create_record() owns the staged file from here on (it removes it unless it moved it).
        staged_record, staged = staged, None
        created, failure = False, None
        try:
            created = create_record(records_dir, staged_record, job_id, durable=False)
        except OSError as exc:
            failure = exc
        if durable:
            if created:
                fsops.sync_dir(records_dir)
            fsops.fsync_dir(queue_dir)
        if failure is not None:
            from lanekit.errors import QueueError

            raise QueueError(
                f"{failure.filename or f'{records_dir}/{job_id}.json'}: job {job_id} is "
                f"queued, but its record cannot be created ({failure.strerror or failure})",
                "the job will run (its record is written when it settles); check the queue's "
                "records/ directory (`lanekit doctor`)",
            ) from failure
    finally:
        for leftover in (tmp, staged):
            if leftover is not None:
                try:  # noqa: SIM105 - contextlib would cost a single enqueue's start-up
                    os.unlink(leftover)
                except OSError:
                    pass


def refuse_existing(q: QueueState, job_id: str) -> None:
    """JobExistsError when `job_id` is anywhere in the queue or already succeeded."""
    from lanekit.queue.directory.fileio import listdir
    from lanekit.queue.directory.observe import done_file
    from lanekit.queue.model import JobExistsError
    from lanekit.queue.records import JobState

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
