"""lanekit.jobs.verbs: the operator verbs' core (end to end in tests/cli/test_job_cmds.py)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from lanekit.config.model import LaneSpec, QueueSpec
from lanekit.errors import UsageError
from lanekit.jobs import verbs as jobverbs
from lanekit.queue import open_queue
from lanekit.queue.model import Moved, Verdict
from lanekit.queue.observed import JobLocation
from lanekit.queue.paging import JobView
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState
from lanekit.run import watcher
from lanekit.schedule import Schedule

CLAIMED = "/q/claimed/s1.host.1.json"
FAILED = "/q/failed/s1.json"


class _Settling:
    """A queue whose job s1 is already in failed/ but whose .error is written only after
    `late` more looks, as a settle leaves it for a moment (the move, then the reason)."""

    def __init__(self, late: int) -> None:
        self.late = late
        self.looks = 0

    def request_cancel(self, job_id: str, *, dry_run: bool = False) -> Moved:
        return Moved(job_id, CLAIMED, FAILED, JobState.FAILED)

    def locate(self, job_id: str) -> JobLocation:
        return JobLocation(job_id, JobState.FAILED, FAILED)

    def job(self, job_id: str) -> JobView:
        self.looks += 1
        error = "cancelled\n" if self.looks > self.late else None
        return JobView(job_id, JobState.FAILED, Path(FAILED), None, error)


def test_cancel_stop_returns_once_the_reason_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cancel --stop` waits past the moment the job is in failed/ without its .error, so
    whoever reads the reason right after the command finds it."""
    monkeypatch.setattr(jobverbs, "STOP_POLL", 0.001)
    queue = _Settling(late=3)
    moved = jobverbs.stop_and_cancel(cast(JobQueue, queue), "s1", [])
    assert moved == Moved("s1", CLAIMED, FAILED, JobState.FAILED)
    assert queue.looks == 4


def test_cancel_stop_without_a_reason_returns_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A .error that is never written (a full disk) holds the command only until its
    deadline: the job is in failed/ all the same."""
    monkeypatch.setattr(jobverbs, "STOP_POLL", 0.001)
    # No lanes: kill_grace 5 s; the margin taken back leaves a deadline 0.2 s away.
    monkeypatch.setattr(jobverbs, "STOP_MARGIN", 0.2 - watcher.CANCEL_POLL - 5.0)
    queue = _Settling(late=10**9)
    moved = jobverbs.stop_and_cancel(cast(JobQueue, queue), "s1", [])
    assert moved.destination == FAILED
    assert queue.looks > 1


# --- on the in-memory backend -------------------------------------------------------------


def memory_lane(tmp_path: Path, location: str) -> LaneSpec:
    """Lane `work` draining the in-memory queue at `location`."""
    return LaneSpec(
        name="work",
        label="test.work",
        queue=QueueSpec(name="jobs", dir=Path(location)),
        command=("tool", "{job}"),
        schedule=Schedule(interval=900),
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
        log_path=tmp_path / "work.log",
    )


def settled(queue: JobQueue, verdict: Verdict) -> str:
    """Claim the next job and settle it with `verdict`; its id."""
    claim = queue.claimer(lane="work").claim()
    assert claim is not None
    queue.settle(claim, verdict)
    return claim.job_id


def test_the_verbs_move_jobs_in_a_memory_queue(tmp_path: Path, memory_queue: str) -> None:
    """retry, requeue and cancel find a job by id in the lane's queue, whatever keeps it:
    a dry run moves nothing, then each job lands where the verb says."""
    lane = memory_lane(tmp_path, memory_queue)
    queue = open_queue(memory_queue)
    failed = queue.enqueue({"n": 1}, job_id="failed-one")
    settled(queue, Verdict.gave_up("exit 3"))
    waiting = queue.enqueue({"n": 2}, job_id="waiting-one")
    settled(queue, Verdict.failed("exit 1", max_attempts=3))
    queued = queue.enqueue({"n": 3}, job_id="queued-one")
    counts = queue.counts()
    assert (counts.failed, counts.delayed, counts.queued) == (1, 1, 1)

    dry = jobverbs.retry([lane], [failed], dry_run=True)
    assert dry.dry_run and queue.failed_ids() == [failed]
    [moved] = jobverbs.retry([lane], [failed]).jobs
    assert (moved.queue, moved.lanes, moved.item.state) == ("jobs", ("work",), JobState.QUEUED)
    [moved] = jobverbs.requeue([lane], [waiting]).jobs
    assert moved.item.state is JobState.QUEUED
    [moved] = jobverbs.cancel([lane], [queued]).jobs
    assert moved.item.state is JobState.FAILED
    view = queue.job(queued)
    assert view is not None and view.error == "cancelled\n"
    counts = queue.counts()
    assert (counts.failed, counts.delayed, counts.queued) == (1, 0, 2)
    assert jobverbs.retry_failed(lane).jobs[0].item.job_id == queued


def test_cancel_leaves_a_running_memory_job_alone(tmp_path: Path, memory_queue: str) -> None:
    """Without --stop a running job is refused, naming it, and nothing moves; an id in no
    queue of the lanes is refused the same way."""
    lane = memory_lane(tmp_path, memory_queue)
    queue = open_queue(memory_queue)
    job_id = queue.enqueue({"n": 1})
    claim = queue.claimer().claim()
    assert claim is not None
    with pytest.raises(UsageError, match="running"):
        jobverbs.cancel([lane], [job_id])
    with pytest.raises(UsageError, match="no job 'nowhere'"):
        jobverbs.cancel([lane], ["nowhere"])
    assert queue.counts().claimed == 1 and claim.held
