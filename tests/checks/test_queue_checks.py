"""queue.* checks on real queues: a runner SIGKILLed mid-job, a backlog under a frozen clock,
jobs out of attempts, and a job done twice."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import psutil
import pytest
from doctor_world import HEALTHY, World

from lanekit.doctor import Severity
from lanekit.lanelog import LaneLog
from lanekit.queue import Queue

SLEEPER = HEALTHY.replace('["true", "{job}"]', '["sleep", "30"]')


def wait_for(condition: Callable[[], bool], timeout: float = 20) -> None:
    """Poll until `condition()` holds (fails the test after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _ended(process: psutil.Process) -> bool:
    """Gone, or a zombie (an orphan's new parent may reap it late); either way it holds no lock."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def sleeping_world(tmp_path: Path) -> World:
    """An installed lane whose job command sleeps, with one job queued."""
    world = World.make(tmp_path, SLEEPER)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1}, job_id="job-1")
    return world


@pytest.fixture
def kill_later() -> Iterator[list[int]]:
    """Pids to SIGKILL at teardown if a test left them running."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_runner_killed_by_sigkill_leaves_a_stale_claim(
    sleeping_world: World, kill_later: list[int]
) -> None:
    """The real lane entrypoint claims the job and is SIGKILLed mid-job: the claim stays in
    claimed/ with a dead owner. Error; fix `lanekit recover funnel`."""
    world = sleeping_world
    lane = world.lane()
    runner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lanekit",
            "run",
            "funnel",
            "--snapshot",
            str(world.paths.snapshot_for(lane.label)),
        ],
        env={"PATH": ":".join(lane.path), "LANEKIT_LANE": "funnel"},
        cwd=lane.queue.dir,
    )
    kill_later.append(runner.pid)
    wait_for(lambda: bool(psutil.Process(runner.pid).children()))
    children = psutil.Process(runner.pid).children(recursive=True)
    kill_later.extend(c.pid for c in children)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    # The job holds the claim's lock for as long as it lives (it may still finish the work);
    # the claim is stranded once the job is gone too.
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    wait_for(lambda: all(_ended(c) for c in children))
    [finding] = world.run("queue.stale-claim", world.target())
    assert finding.severity is Severity.ERROR
    assert f"runner pid {runner.pid} is gone" in finding.message
    assert finding.fix == "lanekit recover funnel"


def test_unowned_claim_older_than_stale_after(tmp_path: Path) -> None:
    """A file moved into claimed/ by hand (no owner in its name) two hours ago: stale."""
    world = World.make(tmp_path)
    world.install()
    claimed = world.lane().queue.dir / "claimed" / "by-hand.json"
    claimed.write_text("{}")
    old = time.time() - 7200
    os.utime(claimed, (old, old))
    [finding] = world.run("queue.stale-claim", world.target())
    assert "oldest 2h 00m" in finding.message
    assert finding.fix == "lanekit recover funnel"


@pytest.mark.slow
def test_live_claim_older_than_stale_after_may_be_hung(
    sleeping_world: World, kill_later: list[int]
) -> None:
    """A live owner that has held its job longer than stale_after (clock frozen 2 h ahead) is
    not recoverable; the warning says how to check whether it hangs."""
    world = sleeping_world
    script = (
        "import sys, time\n"
        "from lanekit.queue import Queue\n"
        "claim = Queue(sys.argv[1]).claimer().claim()\n"
        "print(claim.job_id, flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(world.lane().queue.dir)], stdout=subprocess.PIPE
    )
    kill_later.append(holder.pid)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == b"job-1"
    later = datetime.now() + timedelta(hours=2)
    [finding] = world.run("queue.stale-claim", world.target(), now=later)
    assert finding.severity is Severity.WARNING
    assert f"live runner pid {holder.pid}" in finding.message
    assert finding.fix == f"if it is stuck: kill {holder.pid}, then `lanekit recover funnel`"
    holder.kill()
    holder.wait()


def test_backlog_older_than_two_periods(tmp_path: Path) -> None:
    """A job queued three days ago on a daily lane: the lane is not keeping up."""
    world = World.make(tmp_path)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    later = datetime.now() + timedelta(days=3)
    [finding] = world.run("queue.backlog", world.target(), now=later)
    assert finding.severity is Severity.WARNING
    assert "the oldest for 3d 0h" in finding.message
    assert finding.fix.startswith("lanekit kick funnel")


def test_fresh_backlog_is_fine(tmp_path: Path) -> None:
    """A job queued now waits for the next fire: nothing to say."""
    world = World.make(tmp_path)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    assert world.run("queue.backlog", world.target()) == []


def test_failed_jobs_wait_for_a_person(tmp_path: Path) -> None:
    """A job failed for good sits in failed/: warning with the command that lists why."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    queue.enqueue({"n": 1})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "boom")
    [finding] = world.run("queue.failed-jobs", world.target())
    assert finding.message.startswith("1 job in ")
    assert finding.fix.startswith("lanekit jobs funnel --state failed")


TWO_LANES = (
    HEALTHY
    + """
[lanes.pm]
queue = "notes"
command = ["true", "{job}"]
schedule = ["45 10 * * *"]
"""
)


def test_job_done_by_two_lanes(tmp_path: Path) -> None:
    """Seed 001's four runs of one JSON, as two lanes' logs record it: each lane that did it
    is told, with the command that shows the job's record."""
    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    LaneLog(world.lane("funnel").log_path, "funnel").event("done", job="job-7", exit=0)
    LaneLog(world.lane("pm").log_path, "pm").event("done", job="job-7", exit=0)
    LaneLog(world.lane("pm").log_path, "pm").event("done", job="job-8", exit=0)
    [funnel] = world.run("queue.duplicate-success", world.target("funnel"))
    [pm] = world.run("queue.duplicate-success", world.target("pm"))
    assert funnel.severity is Severity.ERROR
    assert "job job-7 succeeded more than once (2 `done` events" in funnel.message
    assert funnel.fix.startswith("lanekit job funnel job-7")
    assert pm.fix.startswith("lanekit job pm job-7")


def test_job_twice_in_done(tmp_path: Path) -> None:
    """The same id finished on two days (two files in done/): reported once, on the queue's
    first lane."""
    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    done = world.lane().queue.dir / "done"
    for day in ("2026-09-17", "2026-09-18"):
        (done / day).mkdir(parents=True)
        (done / day / "job.one.json").write_text("{}")
    [finding] = world.run("queue.duplicate-success", world.target("funnel"))
    assert "2 files in" in finding.message
    assert "job job.one " in finding.message
    assert world.run("queue.duplicate-success", world.target("pm")) == []


def test_queue_checks_are_quiet_on_a_clean_queue(tmp_path: Path) -> None:
    """A fresh queue with a just-enqueued job: no stale claim, failures or duplicates."""
    world = World.make(tmp_path)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    for check_id in ("queue.stale-claim", "queue.failed-jobs", "queue.duplicate-success"):
        assert world.run(check_id, world.target()) == []
