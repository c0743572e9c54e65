"""The cheap watchdog pass over a busy lane: jobs run through the queue for real (enqueued, the
lane started by the emulated launchd, claimed, run, settled into done/), so claimed/, queue/,
done/ and records/ move between two passes. The incremental forms of the queue checks
(lanekit.doctor.checks.queue.READS) keep such a pass cheap, and anything they cannot account for
sends it to the full checks, which must agree with a pass from scratch."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_watch_entry import Cheap

from lanekit.queue.directory.backend import Queue

THROTTLE = 11
"""Seconds past the hourly lane's ThrottleInterval (launchd's default, 10)."""


@pytest.fixture
def cheap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cheap]:
    """A world whose hourly lane has run a job (its lane lock and today's done/ bucket exist:
    each moves done/ or logs/ once) and a pass since."""
    world = Cheap(tmp_path, monkeypatch)
    _run(world, 1)
    world.next()
    yield world


def _run(cheap: Cheap, jobs: int) -> list[str]:
    """Enqueue `jobs` jobs on the hourly lane and let launchd run it until they are done (the
    domain's clock moved past the lane's ThrottleInterval first, so the start is not held)."""
    lane = cheap.world.lane("hourly")
    ids = [Queue(lane.queue.dir).enqueue({"n": n}) for n in range(jobs)]
    domain = cheap.world.domain
    domain.set_clock(time.time() + domain.offset() + THROTTLE)
    assert domain.kickstart(lane.label) is not None
    assert cheap.world.domain.wait_idle(lane.label, 60)
    return ids


def _done(cheap: Cheap) -> Path:
    return cheap.world.lane("hourly").queue.dir / "done"


def test_a_lane_that_ran_its_jobs_keeps_the_pass_cheap(cheap: Cheap) -> None:
    """Three jobs run between two passes (done/, claimed/, queue/ and records/ all moved):
    the pass stays cheap, and what it leaves open is what a pass from scratch finds."""
    assert cheap.next()
    for round_ in range(2):
        ids = _run(cheap, 3)
        day = next(_done(cheap).iterdir())
        assert {f"{job}.json" for job in ids} <= {p.name for p in day.iterdir()}, round_
        assert cheap.next()
        assert cheap.agrees() == set()


def test_a_copy_dropped_into_done_by_hand_alerts(cheap: Cheap) -> None:
    """A second copy of a finished job put into its done/ bucket by hand (no `done` event
    explains it): the next pass is full and alerts on the duplicate success, as a pass from
    scratch does."""
    (job,) = _run(cheap, 1)
    assert cheap.next()
    day = next(_done(cheap).iterdir())
    shutil.copy(day / f"{job}.json", day / f"{job}.deadbeef-{os.getpid()}-1.json")
    assert not cheap.next()
    assert "queue.duplicate-success" in cheap.agrees()


def test_a_done_whose_file_is_gone_agrees(cheap: Cheap) -> None:
    """A job logged `done` whose file was moved out of done/ before the pass (by hand): one
    success, no copy; the pass leaves open what a pass from scratch finds."""
    assert cheap.next()
    (job,) = _run(cheap, 1)
    day = next(_done(cheap).iterdir())
    (day / f"{job}.json").rename(cheap.world.root / "moved.json")
    cheap.next()
    assert cheap.agrees() == set()


def test_a_file_gone_from_done_is_looked_at_again(cheap: Cheap) -> None:
    """A finished job's file removed from its bucket with no run since: the bucket lost a
    name no rule accounts for, so the pass is a full one, and agrees."""
    (job,) = _run(cheap, 1)
    assert cheap.next()
    day = next(_done(cheap).iterdir())
    (day / f"{job}.json").unlink()
    assert not cheap.next()
    cheap.agrees()


def test_a_job_left_in_the_queue_is_looked_at_again(cheap: Cheap) -> None:
    """queue/ moved and is not empty (a job waits): the backlog's verdict moves with time, so
    the pass is a full one."""
    assert cheap.next()
    Queue(cheap.world.lane("hourly").queue.dir).enqueue({"n": 1})
    assert not cheap.next()
    cheap.agrees()


def test_a_new_day_bucket_is_looked_at_again(cheap: Cheap) -> None:
    """done/ itself moved (a bucket added): the pass is a full one, then cheap again."""
    assert cheap.next()
    (_done(cheap) / "2026-01-01").mkdir()
    assert not cheap.next()
    assert cheap.next()
    cheap.agrees()


def test_jobs_waiting_keep_the_pass_cheap_until_they_are_a_backlog(cheap: Cheap) -> None:
    """Jobs wait in queue/ for the hourly lane's next fire (nothing runs): passes are cheap
    while the oldest is younger than two periods (lanekit.doctor.checks.queue.backlog_expiry), and
    the first pass after that is a full one that finds what a pass from scratch finds."""
    lane = cheap.world.lane("hourly")
    Queue(lane.queue.dir).enqueue({"n": 1})
    assert not cheap.next()  # queue/ gained a job
    domain = cheap.world.domain
    start = time.time() + domain.offset()
    assert cheap.next()
    domain.set_clock(start + 1800)
    cheap.next()  # the domain's clock moved (its state file): reused or not, it agrees
    assert cheap.next()
    cheap.agrees()
    domain.set_clock(start + 2 * 3600 + 60)
    assert not cheap.next()
    assert "queue.backlog" in cheap.agrees()
