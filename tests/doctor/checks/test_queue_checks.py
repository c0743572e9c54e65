"""queue.* checks on real queues: a runner SIGKILLed mid-job (its job orphaned, then its claim
stranded), a backlog under a frozen clock, jobs out of attempts, records a failed record write
left behind, and a job done twice."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
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

from lanekit.doctor import Severity, SubjectKind
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.liveness import claim_locked, classify_claim
from lanekit.queue.model import RecordNotWrittenError
from lanekit.queue.observed import ClaimState
from lanekit.queue.records import Record
from lanekit.run.lanelog import LaneLog
from lanekit.system.procinfo import Liveness

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
def test_runner_sigkilled_mid_job_orphans_the_job_then_strands_the_claim(
    sleeping_world: World, kill_later: list[int]
) -> None:
    """The real lane entrypoint claims the job and only the runner is SIGKILLed: the job still
    runs holding the claim's lock, so queue.orphaned-job warns (naming the job, the dead runner
    and how to find the job) and queue.stale-claim stays quiet, even past stale_after. Once the
    job is killed too, the orphan finding goes and the stale claim is an error."""
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
    [claim] = Queue(lane.queue.dir).list_claims()
    # What the fix's `lsof PATH` relies on: the job keeps the claimed file open.
    assert any(f.path == str(claim.path) for c in children for f in c.open_files())

    [orphan] = world.run("queue.orphaned-job", world.queue_target())
    assert orphan.severity is Severity.WARNING
    assert orphan.message.startswith("job job-1 still runs, claimed ")
    assert f"its runner (pid {runner.pid}) is gone" in orphan.message
    assert orphan.fix == (
        "wait for it to finish, then `lanekit recover funnel` (the lane's next run does it "
        f"too); or find it (`pgrep -f {claim.path}` or `lsof {claim.path}`), stop it, then "
        "`lanekit recover funnel`"
    )
    assert world.run("queue.stale-claim", world.queue_target()) == []
    later = datetime.now() + timedelta(hours=2)
    [orphan] = world.run("queue.orphaned-job", world.queue_target(), now=later)
    assert "claimed 2h 00m ago" in orphan.message
    assert world.run("queue.stale-claim", world.queue_target(), now=later) == []

    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    wait_for(lambda: all(_ended(c) for c in children))
    assert world.run("queue.orphaned-job", world.queue_target()) == []
    [finding] = world.run("queue.stale-claim", world.queue_target())
    assert finding.severity is Severity.ERROR
    assert f"runner pid {runner.pid} is gone" in finding.message
    assert finding.fix == "lanekit recover funnel"


@pytest.mark.parametrize(
    ("runner", "locked", "state"),
    [
        (None, False, ClaimState.UNKNOWN),
        (None, True, ClaimState.UNKNOWN),
        (Liveness.ALIVE, True, ClaimState.LIVE),
        (Liveness.ALIVE, False, ClaimState.LIVE),
        (Liveness.UNKNOWN, False, ClaimState.LIVE),
        (Liveness.DEAD, True, ClaimState.ORPHANED),
        (Liveness.REUSED, True, ClaimState.ORPHANED),
        (Liveness.DEAD, False, ClaimState.STRANDED),
        (Liveness.REUSED, False, ClaimState.STRANDED),
    ],
)
def test_claim_states(runner: Liveness | None, locked: bool, state: ClaimState) -> None:
    """A claim is live while its runner is (or may be) alive, orphaned when its runner is dead
    but its lock is held (the job outlived it), stranded when nobody holds it, and unknown
    when its owner cannot be checked from this host."""
    assert classify_claim(runner, locked) is state


def test_lock_probe_sees_a_held_claim_and_leaves_no_lock(tmp_path: Path) -> None:
    """The probe says True for a claim whose lock is held, False for a free one (and takes
    nothing: an exclusive lock is still free afterwards), None once the file is gone."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    queue.enqueue({}, job_id="held")
    claim = queue.claimer().claim()
    assert claim is not None
    assert claim_locked(claim.path) is True
    free = queue.claimed / "by-hand.json"
    free.write_text("{}")
    assert claim_locked(free) is False
    fd = os.open(free, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    queue.complete(claim)
    assert claim_locked(claim.path) is None


def test_unowned_claim_older_than_stale_after(tmp_path: Path) -> None:
    """A file moved into claimed/ by hand (no owner in its name) two hours ago: stale."""
    world = World.make(tmp_path)
    world.install()
    claimed = world.lane().queue.dir / "claimed" / "by-hand.json"
    claimed.write_text("{}")
    old = time.time() - 7200
    os.utime(claimed, (old, old))
    [finding] = world.run("queue.stale-claim", world.queue_target())
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
        "from lanekit.queue.directory.backend import Queue\n"
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
    [finding] = world.run("queue.stale-claim", world.queue_target(), now=later)
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
    [finding] = world.run("queue.backlog", world.queue_target(), now=later)
    assert finding.severity is Severity.WARNING
    assert "the oldest for 3d 0h" in finding.message
    assert finding.fix.startswith("lanekit kick funnel")


def test_fresh_backlog_is_fine(tmp_path: Path) -> None:
    """A job queued now waits for the next fire: nothing to say."""
    world = World.make(tmp_path)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    assert world.run("queue.backlog", world.queue_target()) == []


def test_backlog_counts_only_fires_after_the_job_was_queued(tmp_path: Path) -> None:
    """Issue 32 item 11: a daytime lane (`0,30 9-17 * * 1-5`) with a job queued at 18:00 is no
    backlog all night (no fire was due); it is once two fires passed without taking it."""
    import os

    from lanekit.queue.ids import new_job_id

    world = World.make(
        tmp_path, HEALTHY.replace('schedule = ["40 10 * * *"]', 'schedule = "0,30 9-17 * * 1-5"')
    )
    world.install()
    queued = datetime(2026, 12, 1, 18, 0)  # a Tuesday evening
    queue = Queue(world.lane().queue.dir)
    job_id = queue.enqueue({"n": 1}, job_id=new_job_id(round(queued.timestamp() * 1e9)))
    os.utime(world.lane().queue.dir / "queue" / f"{job_id}.json", (queued.timestamp(),) * 2)
    night = datetime(2026, 12, 2, 3, 0)
    assert world.run("queue.backlog", world.queue_target(), now=night) == []
    one_fire = datetime(2026, 12, 2, 9, 10)
    assert world.run("queue.backlog", world.queue_target(), now=one_fire) == []
    [finding] = world.run("queue.backlog", world.queue_target(), now=datetime(2026, 12, 2, 9, 31))
    assert "through at least 2 scheduled runs" in finding.message


def test_failed_jobs_wait_for_a_person(tmp_path: Path) -> None:
    """A job failed for good sits in failed/: warning with the command that lists why."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    queue.enqueue({"n": 1})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "boom")
    [finding] = world.run("queue.failed-jobs", world.queue_target())
    assert finding.message.startswith("1 job in ")
    assert finding.fix.startswith("lanekit jobs funnel --state failed")


def test_a_cancelled_job_is_not_out_of_attempts(tmp_path: Path) -> None:
    """Issue 32 item 12: a job cancelled on purpose is in failed/ but is no finding (so the
    watchdog does not alert); beside a job that did run out of attempts it is counted apart,
    and the fix says `lanekit retry`."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    cancelled = queue.enqueue({"n": 1})
    queue.cancel(cancelled)
    assert world.run("queue.failed-jobs", world.queue_target()) == []
    queue.enqueue({"n": 2})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "boom")
    [finding] = world.run("queue.failed-jobs", world.queue_target())
    assert finding.message.startswith("1 job in ")
    assert "ran out of attempts" in finding.message
    assert "(1 more there were cancelled on purpose)" in finding.message
    assert "lanekit retry ID" in finding.fix
    assert "lanekit retry --failed funnel" in finding.fix
    assert "enqueue the fixed ones again" not in finding.fix


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
    """Seed 001's four runs of one JSON, as two lanes' logs record it: reported once, on the
    queue (subject: the queue, listing both lanes), naming the lanes whose logs show it and
    the command that shows the job's record."""
    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    LaneLog(world.lane("funnel").log_path, "funnel").event("done", job="job-7", exit=0)
    LaneLog(world.lane("pm").log_path, "pm").event("done", job="job-7", exit=0)
    LaneLog(world.lane("pm").log_path, "pm").event("done", job="job-8", exit=0)
    [finding] = world.run("queue.duplicate-success", world.queue_target("funnel"))
    assert finding.severity is Severity.ERROR
    assert (finding.subject, finding.kind, finding.lanes) == (
        "notes",
        SubjectKind.QUEUE,
        ("funnel", "pm"),
    )
    assert "job job-7 succeeded more than once (2 `done` events" in finding.message
    assert "funnel, pm" in finding.message
    assert finding.fix.startswith("lanekit job funnel job-7")
    assert world.run("queue.duplicate-success", world.queue_target("pm")) == [finding]


def test_job_twice_in_done(tmp_path: Path) -> None:
    """The same id finished on two days (two files in done/): reported once, on the queue."""
    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    done = world.lane().queue.dir / "done"
    for day in ("2026-09-17", "2026-09-18"):
        (done / day).mkdir(parents=True)
        (done / day / "job.one.json").write_text("{}")
    [finding] = world.run("queue.duplicate-success", world.queue_target("funnel"))
    assert "2 files in" in finding.message
    assert "job job.one " in finding.message
    assert finding.subject == "notes"


def disk_full(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every record write of `queue` fail as on a full disk."""

    def refuse(record: Record, held: object = None, *, durable: bool | None = None) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(queue.store.path(record.job_id)))

    monkeypatch.setattr(queue.store, "write", refuse)
    monkeypatch.setattr(queue.store, "settle", refuse)  # the settles' own write


@pytest.mark.parametrize(("settle", "outcome"), [("complete", "succeeded"), ("fail", "failed")])
def test_settle_without_its_record_leaves_a_running_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settle: str, outcome: str
) -> None:
    """A settle whose record write fails (RecordNotWrittenError) still moves the job out of
    claimed/; its record keeps saying running (the claim's line). The warning names the id,
    the record's word, where the file is and what happened; the fix is the command that shows
    the job."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    queue.enqueue({"n": 1}, job_id="job-1")
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    disk_full(queue, monkeypatch)
    with pytest.raises(RecordNotWrittenError) as info:
        if settle == "complete":
            queue.complete(claim)
        else:
            queue.fail(claim, "exit 3")
    monkeypatch.undo()
    [finding] = world.run("queue.record-mismatch", world.queue_target())
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("job job-1: its record says running, but no file of it")
    assert (
        f"the file is in {Path(info.value.moved_to).parent}: the job {outcome}" in finding.message
    )
    stale = "finished" if outcome == "succeeded" else "failed"
    assert finding.fix == (
        f"lanekit job funnel job-1  (the record is stale: the job {stale}, it is not running)"
    )


def test_succeeded_record_with_its_file_back_in_queue(tmp_path: Path) -> None:
    """A producer that bypasses `enqueue` drops a succeeded id into queue/ again: warning that
    the next run will not run it. It is right: the next claim moves it to done/ unrun, and the
    record and the files agree again."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    queue.enqueue({"n": 1}, job_id="job-1")
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    queue.complete(claim)
    (queue.tmp / "incoming").write_text('{"n": 1}')
    os.rename(queue.tmp / "incoming", queue.queue / "job-1.json")
    [finding] = world.run("queue.record-mismatch", world.queue_target())
    assert finding.severity is Severity.WARNING
    assert finding.message == (
        f"job job-1: its record says succeeded, but its file waits in {queue.queue}: the next "
        "run will not run it (the guard moves it to done/ unrun)."
    )
    assert finding.fix.startswith("lanekit job funnel job-1  (to inspect it)")
    assert queue.claimer(lane="funnel").claim() is None
    assert world.run("queue.record-mismatch", world.queue_target()) == []


def test_record_mismatch_is_reported_on_the_lane_that_ran_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two lanes share a queue: the stale record of a job lane pm ran is reported once, on the
    queue, with pm (the lane that ran it) in the fix."""
    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    queue = Queue(world.lane("pm").queue.dir)
    queue.enqueue({"n": 1}, job_id="job-1")
    claim = queue.claimer(lane="pm").claim()
    assert claim is not None
    disk_full(queue, monkeypatch)
    with pytest.raises(RecordNotWrittenError):
        queue.complete(claim)
    monkeypatch.undo()
    [finding] = world.run("queue.record-mismatch", world.queue_target("funnel"))
    assert finding.subject == "notes"
    assert finding.fix.startswith("lanekit job pm job-1 ")


def test_new_checks_are_quiet_on_a_working_queue(tmp_path: Path) -> None:
    """Jobs queued, done, failed and one claimed by a live process (this one): records and
    files agree, and the live claim is neither orphaned nor stale."""
    world = World.make(tmp_path)
    world.install()
    queue = Queue(world.lane().queue.dir)
    for job_id in ("done-1", "failed-1", "held-1", "queued-1"):
        queue.enqueue({"n": 1}, job_id=job_id)
    claimer = queue.claimer(lane="funnel")
    claims = {c.job_id: c for c in iter(claimer.claim, None)}
    queue.complete(claims["done-1"])
    queue.fail(claims["failed-1"], "exit 1")
    queue.release(claims["queued-1"], max_attempts=3, error="exit 1")
    for check_id in ("queue.record-mismatch", "queue.orphaned-job", "queue.stale-claim"):
        assert world.run(check_id, world.target()) == [], check_id
    queue.complete(claims["held-1"])


def test_queue_checks_are_quiet_on_a_clean_queue(tmp_path: Path) -> None:
    """A fresh queue with a just-enqueued job: no stale claim, failures or duplicates."""
    world = World.make(tmp_path)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    for check_id in (
        "queue.stale-claim",
        "queue.orphaned-job",
        "queue.failed-jobs",
        "queue.record-mismatch",
        "queue.duplicate-success",
    ):
        assert world.run(check_id, world.target()) == []


TIMING_OUT = HEALTHY.replace(
    'schedule = ["40 10 * * *"]',
    'schedule = ["40 10 * * *"]\ntimeout = "1s"\nkill_grace = 0\nmax_attempts = 1',
).replace('command = ["true", "{job}"]', 'command = ["sleep", "30"]')


@pytest.mark.slow
def test_lane_that_keeps_timing_out(tmp_path: Path) -> None:
    """Three real jobs that hang past the lane's 1 s timeout: `queue.timeouts` names the
    count, the limit and the latest job, and its fix starts with that job's command; two
    timeouts are not yet a pattern."""
    from lanekit.config import run_spec
    from lanekit.run import runner

    world = World.make(tmp_path, TIMING_OUT)
    world.install()
    lane = world.lane()
    queue = Queue(lane.queue.dir)
    ids = [queue.enqueue({"n": n}) for n in range(3)]
    spec = dataclasses.replace(run_spec(lane), max_jobs=2)
    runner.run_lane(spec, handle_signals=False)
    assert world.run("queue.timeouts", world.target()) == []
    runner.run_lane(spec, handle_signals=False)
    [finding] = world.run("queue.timeouts", world.target())
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("3 of the lane's last 3 jobs timed out (timeout 1s)")
    assert finding.fix.split()[:3] == ["lanekit", "job", "funnel"]
    assert finding.fix.split()[3] in ids


def test_resubmitted_success_is_info_not_a_duplicate(tmp_path: Path) -> None:
    """A job id dropped into queue/ again after it succeeded is skipped by the guard (its copy
    kept in done/): doctor reports it as re-submitted (info), not `queue.duplicate-success`."""
    import shutil

    from lanekit.queue.directory.backend import Queue
    from lanekit.run.runner import run_lane
    from lanekit.state.snapshot import RunSpec

    world = World.make(tmp_path)
    world.install()
    lane = world.lane()
    spec = RunSpec.load(world.paths.snapshot_for(lane.label))
    queue = Queue(lane.queue.dir)
    job_id = queue.enqueue({"note": 1})
    assert run_lane(spec, handle_signals=False).exit_code == 0
    (done,) = (lane.queue.dir / "done").rglob("*.json")
    shutil.copyfile(done, lane.queue.dir / "queue" / f"{job_id}.json")
    assert run_lane(spec, handle_signals=False).exit_code == 0
    assert len(list((lane.queue.dir / "done").rglob("*.json"))) == 2
    assert world.run("queue.duplicate-success", world.queue_target()) == []
    [finding] = world.run("queue.resubmitted", world.queue_target())
    assert finding.severity is Severity.INFO
    assert f"job {job_id} was re-submitted after it succeeded (once) and skipped" in finding.message


def test_a_shared_queue_is_reported_once_on_the_queue(tmp_path: Path) -> None:
    """Two lanes drain queue notes, which has a stale claim: a full doctor run reports
    queue.stale-claim once, with the queue as subject and both lanes listed, not once per
    lane (the healthy lane included)."""
    from lanekit.doctor import DoctorRequest, diagnose

    world = World.make(tmp_path, TWO_LANES)
    world.install("funnel")
    world.install("pm")
    claimed = world.lane().queue.dir / "claimed" / "by-hand.json"
    claimed.write_text("{}")
    old = time.time() - 7200
    os.utime(claimed, (old, old))
    report = diagnose(
        DoctorRequest(config_path=world.config_path, checks=("queue.stale-claim",)),
        world.paths,
        env={},
    )
    stale = [f for f in report.findings if f.id == "queue.stale-claim"]
    assert [(f.subject, f.kind, f.lanes) for f in stale] == [
        ("notes", SubjectKind.QUEUE, ("funnel", "pm"))
    ]
    assert report.subjects == ("funnel", "pm", "notes")
