"""Watchdog passes over a lane whose queue is in memory: the problems are made through the
JobQueue seam, not by a lane's run, and the pass (doctor's alert checks + its memory of what
it sent) alerts on them through the real `command` channel as it does over a queue directory
(tests/watch/test_watchdog.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from watch_world import WatchWorld

from lanekit.config import Config
from lanekit.queue import open_queue
from lanekit.queue.memory import MemoryQueue
from lanekit.queue.model import Verdict
from lanekit.reconcile import apply
from memory_config import on_memory


class OnMemory:
    """WATCHED applied with its queue `notes` in memory, and passes over it."""

    def __init__(self, world: WatchWorld, location: str) -> None:
        self.world = world
        self.config: Config = on_memory(world.config(), location)
        queue = open_queue(location)
        assert isinstance(queue, MemoryQueue)
        self.queue = queue
        apply(self.config, world.paths, world.domain, interpreter=sys.executable)

    def watch(self, at: datetime) -> list[tuple[str, str, str]]:
        """One pass at `at`: (kind, check, subject) of each notice it sent."""
        result = self.world.watch(now=_at(at), config=self.config)
        assert result.failed_deliveries == ()
        return [(str(n.kind), n.check, n.subject) for n in result.notices]

    def fail(self, count: int = 1) -> list[str]:
        """`count` jobs claimed by lane funnel and failed for good; their ids."""
        ids = [self.queue.enqueue({"n": n}) for n in range(count)]
        claimer = self.queue.claimer(lane="funnel")
        for _ in ids:
            claim = claimer.claim()
            assert claim is not None
            self.queue.settle(claim, Verdict.gave_up("exit 1"))
        return ids


def _at(moment: datetime) -> Callable[[], datetime]:
    """A frozen clock."""
    return lambda: moment


@pytest.fixture
def memory(tmp_path: Path, memory_queue: str) -> OnMemory:
    """The watched world, applied, its queue in memory."""
    return OnMemory(WatchWorld.make(tmp_path), memory_queue)


def test_a_failed_memory_job_alerts_once_repeats_and_resolves_when_retried(
    memory: OnMemory,
) -> None:
    """A job failed for good in the memory queue is sent once as new, again only after
    `repeat` (6h) on the pass's clock, and once as resolved when `retry` puts it back;
    a healthy world sends nothing before or after."""
    base = datetime.now()
    assert memory.watch(base) == []
    [job_id] = memory.fail()
    failed = ("queue.failed-jobs", "notes")
    for hours, expected in ((0, ["new"]), (1, []), (5, []), (6.1, ["repeat"]), (7, [])):
        sent = memory.watch(base + timedelta(hours=hours))
        assert sent == [(kind, *failed) for kind in expected], hours
    memory.queue.retry(job_id)
    assert memory.watch(base + timedelta(hours=8)) == [("resolved", *failed)]
    assert memory.watch(base + timedelta(hours=9)) == []
    sent = [(n["kind"], n["id"], n["subject"]) for n in memory.world.sent()]
    assert sent == [("new", *failed), ("repeat", *failed), ("resolved", *failed)]
    [first] = memory.world.sent()[:1]
    assert f"1 job in {memory.queue.where}/failed ran out of attempts" in first["message"]


def test_more_memory_failures_are_one_new_alert_naming_how_many(memory: OnMemory) -> None:
    """Jobs that fail in the memory queue after the first alert make it new again, once,
    saying how many failed since (queue.failed-jobs' tally, counted through the seam)."""
    base = datetime.now()
    memory.fail()
    assert memory.watch(base) == [("new", "queue.failed-jobs", "notes")]
    memory.fail(3)
    result = memory.world.watch(now=_at(base + timedelta(minutes=5)), config=memory.config)
    [notice] = result.notices
    assert (notice.kind, notice.check) == ("new", "queue.failed-jobs")
    assert notice.message.startswith("3 more jobs failed in queue notes since the last pass")
    assert memory.watch(base + timedelta(minutes=10)) == []


def test_a_dead_owners_memory_claim_alerts_until_recovered(memory: OnMemory) -> None:
    """A claim whose owner is gone (the memory queue's kill -9) is one new queue.stale-claim
    alert; once `recover` gives the job back, one resolved notice."""
    base = datetime.now()
    memory.queue.enqueue({"n": 1})
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    assert memory.watch(base) == []  # a live owner's fresh claim is no alert
    memory.queue.owner_gone(claim.owner)
    stale = ("queue.stale-claim", "notes")
    assert memory.watch(base + timedelta(minutes=5)) == [("new", *stale)]
    assert memory.watch(base + timedelta(minutes=10)) == []
    [recovered] = memory.queue.recover(stale_after=3600, max_attempts=3)
    assert recovered.job_id == claim.job_id
    assert memory.watch(base + timedelta(minutes=15)) == [("resolved", *stale)]
