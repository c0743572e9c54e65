"""`lanekit retry|requeue|cancel`: find each job's queue among the lanes and move the job.

The moves themselves are lanekit.queue's (`Queue.retry`, `requeue`, `cancel`,
`request_cancel`): it is the one owner of the queue layout. This module only finds which queue
holds a job id and makes a command all-or-nothing: every job is checked (a dry run of its move)
before any moves, so a typo in the third id of three changes nothing.

`cancel --stop` of a running job leaves a cancel request for the job's watcher (which holds the
claim's lock and knows the job's process group) and waits for the job to be settled to failed/
with reason `cancelled`: by the runner, or, when the runner is gone, by recovering the claim
here (the watcher recorded how the job ended, so it is settled by that, never run again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lanekit.config import LaneSpec
from lanekit.errors import LanekitError, StopPendingError, UsageError
from lanekit.queue import open_queue
from lanekit.queue.model import Moved
from lanekit.queue.observed import ClaimState
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState

STOP_MARGIN = 5.0
"""Seconds a stop may take beyond the watcher's look (CANCEL_POLL) and the lane's kill_grace:
the leftovers' grace, the settle, a loaded machine."""
STOP_POLL = 0.1


class Verb(StrEnum):
    """The job verbs."""

    RETRY = "retry"
    REQUEUE = "requeue"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class MovedJob:
    """One job a verb moved (or would move), with the queue it is in."""

    queue: str
    """The queue's name in lanes.toml."""
    lanes: tuple[str, ...]
    """The lanes that drain that queue."""
    item: Moved


@dataclass(frozen=True, slots=True)
class VerbResult:
    """What one verb did to its jobs, in the order they were given."""

    verb: Verb
    jobs: tuple[MovedJob, ...]
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class _QueueOf:
    name: str
    lanes: tuple[str, ...]
    queue: JobQueue
    specs: tuple[LaneSpec, ...] = ()
    """The lanes that drain it (their kill_grace bounds a stop's wait)."""


def _queues(lanes: Sequence[LaneSpec]) -> list[_QueueOf]:
    """Each queue of `lanes` once, with the lanes that drain it."""
    found: dict[str, list[LaneSpec]] = {}
    for lane in lanes:
        found.setdefault(str(lane.queue.dir), []).append(lane)
    return [
        _QueueOf(
            specs[0].queue.name,
            tuple(spec.name for spec in specs),
            open_queue(specs[0].queue.dir, durable=specs[0].queue.durable),
            tuple(specs),
        )
        for specs in found.values()
    ]


def _locate(queues: Sequence[_QueueOf], job_id: str) -> _QueueOf:
    holders = [
        q for q in queues if q.queue.missing() is None and q.queue.locate(job_id) is not None
    ]
    if not holders:
        where = ", ".join(q.name for q in queues) or "(none)"
        raise UsageError(
            f"no job {job_id!r} in any queue of these lanes (queues: {where}); nothing changed",
            "`lanekit jobs LANE` lists a lane's jobs",
        )
    if len(holders) > 1:
        names = ", ".join(q.name for q in holders)
        raise UsageError(
            f"job {job_id!r} is in several queues ({names}); nothing changed",
            "give --lane LANE to say which queue is meant",
        )
    return holders[0]


def _move_all(
    verb: Verb,
    targets: Sequence[tuple[_QueueOf, str]],
    move: Callable[[JobQueue, str, bool], Moved],
    dry_run: bool,
) -> VerbResult:
    return _move_each(verb, targets, lambda w, j, dry: move(w.queue, j, dry), dry_run)


def _move_each(
    verb: Verb,
    targets: Sequence[tuple[_QueueOf, str]],
    move: Callable[[_QueueOf, str, bool], Moved],
    dry_run: bool,
) -> VerbResult:
    # Every move is tried dry first: it raises, naming the job, before anything moved.
    planned = tuple(MovedJob(w.name, w.lanes, move(w, j, True)) for w, j in targets)
    if dry_run:
        return VerbResult(verb, planned, dry_run=True)
    return VerbResult(verb, tuple(MovedJob(w.name, w.lanes, move(w, j, False)) for w, j in targets))


def _by_id(lanes: Sequence[LaneSpec], job_ids: Sequence[str]) -> list[tuple[_QueueOf, str]]:
    if not job_ids:
        raise UsageError("which jobs? give one or more job ids", "`lanekit jobs LANE` lists them")
    queues = _queues(lanes)
    return [(_locate(queues, job_id), job_id) for job_id in dict.fromkeys(job_ids)]


def retry(
    lanes: Sequence[LaneSpec], job_ids: Sequence[str], *, dry_run: bool = False
) -> VerbResult:
    """Failed jobs back into their queue with all their attempts (Queue.retry)."""
    return _move_all(
        Verb.RETRY,
        _by_id(lanes, job_ids),
        lambda q, j, dry: q.retry(j, dry_run=dry),
        dry_run,
    )


def retry_failed(lane: LaneSpec, *, dry_run: bool = False) -> VerbResult:
    """Every job in failed/ of the lane's queue (shared queues: whichever lane failed it)."""
    (where,) = _queues([lane])
    ids = where.queue.failed_ids() if where.queue.missing() is None else []
    return _move_all(
        Verb.RETRY,
        [(where, job_id) for job_id in ids],
        lambda q, j, dry: q.retry(j, dry_run=dry),
        dry_run,
    )


def requeue(
    lanes: Sequence[LaneSpec], job_ids: Sequence[str], *, dry_run: bool = False
) -> VerbResult:
    """Delayed retries into queue/ now (Queue.requeue)."""
    return _move_all(
        Verb.REQUEUE,
        _by_id(lanes, job_ids),
        lambda q, j, dry: q.requeue(j, dry_run=dry),
        dry_run,
    )


def cancel(
    lanes: Sequence[LaneSpec],
    job_ids: Sequence[str],
    *,
    dry_run: bool = False,
    stop: bool = False,
) -> VerbResult:
    """Queued or delayed jobs to failed/ with reason `cancelled` (Queue.cancel); with `stop`,
    running ones too: stopped through their watcher, then failed/ `cancelled` (see the module
    docstring). Without `stop` a running job is refused (UsageError) and nothing moves."""

    def move(where: _QueueOf, job_id: str, dry: bool) -> Moved:
        location = where.queue.locate(job_id) if stop else None
        if location is None or location.state is not JobState.RUNNING:
            return where.queue.cancel(job_id, dry_run=dry)
        if dry:
            return where.queue.request_cancel(job_id, dry_run=True)
        return stop_and_cancel(where.queue, job_id, where.specs)

    return _move_each(Verb.CANCEL, _by_id(lanes, job_ids), move, dry_run)


def stop_and_cancel(queue: JobQueue, job_id: str, specs: Sequence[LaneSpec]) -> Moved:
    """Stop a running job through its watcher and wait until it is in failed/ as cancelled,
    its reason readable.

    StopPendingError (exit 3) when it has not ended within the lanes' kill_grace and a margin
    (the request stays: the watcher still acts on it); LanekitError (exit 1) when the job
    finished successfully before the stop reached it (nothing is cancelled then)."""
    from lanekit.run import watcher

    claim = queue.request_cancel(job_id).source
    grace = max((float(spec.kill_grace) for spec in specs), default=5.0)
    deadline = time.monotonic() + watcher.CANCEL_POLL + grace + STOP_MARGIN
    while True:
        location = queue.locate(job_id)
        state = None if location is None else location.state
        if location is not None and state is JobState.FAILED:
            # Return once the reason can be read too (`lanekit job` right after shows it), or at
            # the deadline: the view reads it from the record, written before the move, or from
            # the .error, written after it (the one left when the record could not be written).
            view = queue.job(job_id)
            if (view is not None and view.error is not None) or time.monotonic() >= deadline:
                return Moved(job_id, claim, location.where, JobState.FAILED)
            time.sleep(STOP_POLL)
            continue
        if location is not None and state is JobState.QUEUED:
            # Settled as not finished (a bootout stopped the run first): cancel it there. A
            # runner may claim it again meanwhile; then it is running, and asked again.
            try:
                return queue.cancel(job_id)
            except UsageError:
                claim = queue.request_cancel(job_id).source
                continue
        if state is JobState.SUCCEEDED:
            raise LanekitError(
                f"job {job_id} finished successfully before the stop reached it: not cancelled",
                "`lanekit job` shows its record",
            )
        if location is None:
            raise LanekitError(
                f"job {job_id} left its queue while it was being stopped: not cancelled",
                "`lanekit job` shows where it is",
            )
        if _owner_gone(queue, location.where, specs):
            continue  # recovered: settled by the status its watcher wrote (or given back)
        if time.monotonic() >= deadline:
            raise StopPendingError(
                f"job {job_id} was asked to stop but is still running ({location.where}) after "
                f"{grace:g} s of kill_grace: its watcher stops it and it goes to failed/ as "
                "cancelled when it ends",
                f"`lanekit job {job_id}` shows when it has",
            )
        time.sleep(STOP_POLL)


def _owner_gone(queue: JobQueue, claim: str, specs: Sequence[LaneSpec]) -> bool:
    """When the claim's runner and watcher are both gone (its lock is free), settle it here
    (recover, which any process may run); True if something was recovered."""
    for view in queue.claims():
        if str(view.info.path) == claim and view.state is ClaimState.STRANDED:
            spec = specs[0]
            return bool(
                queue.recover(stale_after=float(spec.stale_after), max_attempts=spec.max_attempts)
            )
    return False
