"""lanekit.jobs.verbs: the operator verbs' core (end to end in tests/cli/test_job_cmds.py)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from lanekit.jobs import verbs as jobverbs
from lanekit.jobs.history import JobView
from lanekit.queue.model import Moved
from lanekit.queue.observed import JobLocation
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState
from lanekit.run import watcher

CLAIMED = Path("/q/claimed/s1.host.1.json")
FAILED = Path("/q/failed/s1.json")


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
        return JobView(job_id, JobState.FAILED, FAILED, None, error)


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
