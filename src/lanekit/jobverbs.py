"""`lanekit retry|requeue|cancel`: find each job's queue among the lanes and move the job.

The moves themselves are lanekit.queue's (`Queue.retry`, `requeue`, `cancel`): it is the one
owner of the queue layout. This module only finds which queue holds a job id and makes a
command all-or-nothing: every job is checked (a dry run of its move) before any moves, so a
typo in the third id of three changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lanekit.config import LaneSpec
from lanekit.errors import UsageError
from lanekit.queue import JobQueue, Moved, open_queue


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


def _queues(lanes: Sequence[LaneSpec]) -> list[_QueueOf]:
    """Each queue of `lanes` once, with the lanes that drain it."""
    found: dict[str, tuple[LaneSpec, list[str]]] = {}
    for lane in lanes:
        key = str(lane.queue.dir)
        if key not in found:
            found[key] = (lane, [])
        found[key][1].append(lane.name)
    return [
        _QueueOf(
            lane.queue.name,
            tuple(names),
            open_queue(lane.queue.dir, durable=lane.queue.durable),
        )
        for lane, names in found.values()
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
    # Every move is tried dry first: it raises, naming the job, before anything moved.
    planned = tuple(MovedJob(w.name, w.lanes, move(w.queue, j, True)) for w, j in targets)
    if dry_run:
        return VerbResult(verb, planned, dry_run=True)
    return VerbResult(
        verb, tuple(MovedJob(w.name, w.lanes, move(w.queue, j, False)) for w, j in targets)
    )


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
    lanes: Sequence[LaneSpec], job_ids: Sequence[str], *, dry_run: bool = False
) -> VerbResult:
    """Queued or delayed jobs to failed/ with reason `cancelled` (Queue.cancel)."""
    return _move_all(
        Verb.CANCEL,
        _by_id(lanes, job_ids),
        lambda q, j, dry: q.cancel(j, dry_run=dry),
        dry_run,
    )
