"""Doctor's queue checks on the in-memory backend: the problems are made through the JobQueue
seam (a memory owner's death is `owner_gone`, its stand-in for a killed runner), and each
check finds what it finds on a queue directory (tests/doctor/checks/test_queue_checks.py),
worded with where the memory queue keeps the job (`memory:NAME/<state>`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World

from lanekit.config import Config
from lanekit.doctor import (
    DoctorContext,
    Finding,
    Severity,
    SubjectKind,
    lane_target,
    queue_targets,
    run_checks,
)
from lanekit.queue import open_queue
from lanekit.queue.memory import MemoryQueue
from lanekit.queue.model import JobExistsError, Verdict
from lanekit.run.lanelog import EventName, LaneLog, Reason
from lanekit.state.paths import Paths
from lanekit.system import volumes
from memory_config import on_memory

TWO_LANES = (
    HEALTHY
    + """
[lanes.pm]
queue = "notes"
command = ["true", "{job}"]
schedule = ["45 10 * * *"]
"""
)


@dataclass(frozen=True)
class OnMemory:
    """A lanes.toml whose queue `notes` is the test's memory queue."""

    paths: Paths
    config: Config
    queue: MemoryQueue

    def run(
        self,
        check_id: str,
        *,
        lane: str = "funnel",
        now: datetime | None = None,
        stale_claim_after: float | None = None,
    ) -> list[Finding]:
        """The findings of one check on lane `lane`'s queue (on the lane itself, for a
        check of lanes)."""
        ctx = DoctorContext(
            self.paths,
            config=self.config,
            now=(lambda: now) if now is not None else datetime.now,
            stale_claim_after=stale_claim_after,
        )
        spec = self.config.lanes[lane]
        [queue] = queue_targets([spec], self.config)
        target = queue if check_id.startswith("queue.") else lane_target(spec, self.paths)
        return ctx.findings(check_id, target)

    def log(self, lane: str, event: str, **fields: object) -> None:
        """An event in lane `lane`'s log."""
        path = self.config.lanes[lane].log_path
        path.parent.mkdir(parents=True, exist_ok=True)
        LaneLog(path, lane).event(event, **fields)


def on(tmp_path: Path, location: str, text: str = HEALTHY) -> OnMemory:
    """lanes.toml `text` under tmp_path, its queue `notes` at the memory `location`."""
    world = World.make(tmp_path, text)
    queue = open_queue(location)
    assert isinstance(queue, MemoryQueue)
    return OnMemory(world.paths, on_memory(world.config(), location), queue)


@pytest.fixture
def memory(tmp_path: Path, memory_queue: str) -> OnMemory:
    """The healthy lanes.toml on the test's memory queue."""
    return on(tmp_path, memory_queue)


def test_a_dead_owners_claim_is_stale_until_recovered(memory: OnMemory) -> None:
    """A claim whose owner is gone is an error right away, named where the memory queue holds
    it, with `lanekit recover` as the fix; it is stranded, not orphaned (no job of it outlives
    its owner here); once recovered, nothing is left to say."""
    memory.queue.enqueue({"n": 1}, job_id="job-1")
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    memory.queue.owner_gone(claim.owner)
    later = datetime.now() + timedelta(hours=2)
    [finding] = memory.run("queue.stale-claim", now=later)
    assert finding.severity is Severity.ERROR
    assert finding.message.startswith(
        f"1 claimed job in {memory.queue.where}/running belongs to no live runner"
    )
    assert "oldest 2h 00m" in finding.message
    assert "runner pid" not in finding.message  # no process of this one's died
    assert finding.fix == "lanekit recover funnel"
    assert (finding.subject, finding.kind) == ("notes", SubjectKind.QUEUE)
    assert memory.run("queue.orphaned-job", now=later) == []
    [recovered] = memory.queue.recover(stale_after=3600, max_attempts=3)
    assert recovered.job_id == "job-1"
    assert memory.run("queue.stale-claim", now=later) == []


def test_a_live_claim_held_past_stale_after_may_be_hung(memory: OnMemory) -> None:
    """A live owner holding its job past stale_after (clock 2 h ahead) is warned about, not
    recovered; `[watch] stale_claim_after` says so sooner and names itself; a fresh live
    claim is fine."""
    memory.queue.enqueue({"n": 1}, job_id="job-1")
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    assert memory.run("queue.stale-claim") == []
    [finding] = memory.run("queue.stale-claim", now=datetime.now() + timedelta(hours=2))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "job job-1 has been running for 2h 00m (longer than stale_after) in live runner pid "
        f"{os.getpid()}"
    )
    assert finding.fix == f"if it is stuck: kill {os.getpid()}, then `lanekit recover funnel`"
    soon = datetime.now() + timedelta(minutes=20)
    [sooner] = memory.run("queue.stale-claim", now=soon, stale_claim_after=600)
    assert "(longer than stale_claim_after)" in sooner.message
    assert memory.run("queue.orphaned-job", now=soon) == []
    memory.queue.settle(claim, Verdict.succeeded())
    assert memory.run("queue.stale-claim", now=soon, stale_claim_after=600) == []


def test_a_memory_backlog_older_than_two_periods(memory: OnMemory) -> None:
    """A job queued three days ago on a daily lane: the lane is not keeping up; a job
    queued now waits for the next fire."""
    memory.queue.enqueue({"n": 1})
    assert memory.run("queue.backlog") == []
    [finding] = memory.run("queue.backlog", now=datetime.now() + timedelta(days=3))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("1 job queued, the oldest for 3d 0h")
    assert finding.fix.startswith("lanekit kick funnel")


def test_failed_memory_jobs_wait_for_a_person_until_retried(memory: OnMemory) -> None:
    """A job failed for good: a warning naming where the memory queue keeps it and the
    command that lists why; a retry clears it."""
    job_id = memory.queue.enqueue({"n": 1})
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    memory.queue.settle(claim, Verdict.gave_up("boom"))
    [finding] = memory.run("queue.failed-jobs")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(f"1 job in {memory.queue.where}/failed ran out of attempts")
    assert finding.fix.startswith("lanekit jobs funnel --state failed")
    memory.queue.retry(job_id)
    assert memory.run("queue.failed-jobs") == []


def test_checks_are_quiet_on_a_working_memory_queue(memory: OnMemory) -> None:
    """Jobs queued, waiting out a backoff, done, failed and one held by a live owner: records
    and places agree (one entry holds both in memory), and the live claim is neither stale nor
    orphaned; of every check, on the queue only the failed job is worth saying (the checks of
    queue directories have none to examine)."""
    for job_id in ("done-1", "failed-1", "waiting-1", "held-1", "queued-1"):
        memory.queue.enqueue({"n": 1}, job_id=job_id)
    claimer = memory.queue.claimer(lane="funnel")
    claims = {c.job_id: c for c in iter(claimer.claim, None)}
    memory.queue.settle(claims["done-1"], Verdict.succeeded())
    memory.queue.settle(claims["failed-1"], Verdict.gave_up("exit 1"))
    memory.queue.settle(claims["waiting-1"], Verdict.failed("exit 1", max_attempts=3))
    memory.queue.settle(claims["queued-1"], Verdict.stopped())
    for check_id in (
        "queue.record-mismatch",
        "queue.orphaned-job",
        "queue.stale-claim",
        "queue.backlog",
        "queue.duplicate-success",
        "queue.resubmitted",
    ):
        assert memory.run(check_id) == [], check_id
    ctx = DoctorContext(memory.paths, config=memory.config)
    report = run_checks(queue_targets(list(memory.config.lanes.values()), memory.config), ctx)
    assert [f.id for f in report.findings] == ["queue.failed-jobs"]


def test_a_memory_job_done_by_two_lanes(tmp_path: Path, memory_queue: str) -> None:
    """Two lanes' logs each say they did job-7, which the memory queue holds as succeeded
    once: reported once, on the queue, naming both lanes; the memory queue keeps one copy
    of a success (it refuses the id again at enqueue), so the logs are the evidence."""
    memory = on(tmp_path, memory_queue, TWO_LANES)
    memory.queue.enqueue({"n": 7}, job_id="job-7")
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    memory.queue.settle(claim, Verdict.succeeded())
    with pytest.raises(JobExistsError):
        memory.queue.enqueue({"n": 7}, job_id="job-7")
    memory.log("funnel", EventName.DONE, job="job-7", exit=0)
    memory.log("pm", EventName.DONE, job="job-7", exit=0)
    [finding] = memory.run("queue.duplicate-success")
    assert finding.severity is Severity.ERROR
    assert (finding.subject, finding.kind, finding.lanes) == (
        "notes",
        SubjectKind.QUEUE,
        ("funnel", "pm"),
    )
    assert "job job-7 succeeded more than once (2 `done` events" in finding.message
    assert "funnel, pm" in finding.message
    assert "files in" not in finding.message
    assert finding.fix.startswith("lanekit job funnel job-7")
    assert memory.run("queue.duplicate-success", lane="pm") == [finding]


def test_a_skipped_resubmission_is_info_not_a_duplicate(memory: OnMemory) -> None:
    """A job that succeeded once (its one copy in the memory queue, its `done` in the log)
    and was skipped by the guard once: re-submitted (info), not a second success."""
    memory.queue.enqueue({"n": 1}, job_id="job-1")
    claim = memory.queue.claimer(lane="funnel").claim()
    assert claim is not None
    memory.queue.settle(claim, Verdict.succeeded())
    memory.log("funnel", EventName.DONE, job="job-1", exit=0)
    memory.log("funnel", EventName.SKIPPED, job="job-1", reason=Reason.ALREADY_SUCCEEDED)
    assert memory.run("queue.duplicate-success") == []
    [finding] = memory.run("queue.resubmitted")
    assert finding.severity is Severity.INFO
    assert "job job-1 was re-submitted after it succeeded (once) and skipped" in finding.message


BURSTY = HEALTHY.replace(
    'schedule = ["40 10 * * *"]', 'schedule = ["40 10 * * *"]\nnice = 10\nlow_priority_io = true'
)


def test_a_background_lane_with_a_memory_burst_waiting(tmp_path: Path, memory_queue: str) -> None:
    """Nice 10 + LowPriorityIO while 25 jobs wait in a memory queue: the lane check asks the
    queue (not a directory) how many wait; a trickle is fine."""
    memory = on(tmp_path, memory_queue, BURSTY)
    memory.queue.enqueue({"n": 0})
    assert memory.run("priority.background-burst") == []
    for n in range(1, 25):
        memory.queue.enqueue({"n": n})
    [finding] = memory.run("priority.background-burst")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("Nice 10 and LowPriorityIO make the lane yield")
    assert "25 jobs wait" in finding.message


def test_a_memory_queue_has_no_volume_to_judge(
    memory: OnMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The volume checks judge where a queue directory is; a memory queue has none, so the
    volume of the working directory (what its relative `memory:NAME` would resolve against),
    here a removable exFAT one, is not taken for the queue's."""
    exfat = volumes.VolumeFacts("exfat", volumes.MNT_LOCAL | volumes.MNT_REMOVABLE)

    def facts(path: str, *, platform: str | None = None) -> volumes.VolumeFacts | None:
        return exfat if not os.path.isabs(path) else None

    monkeypatch.setattr(volumes, "volume_facts", facts)
    assert memory.run("volume.no-rename-excl") == []
    assert memory.run("volume.external") == []
