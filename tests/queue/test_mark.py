"""The running mark (lanekit.queue.mark): a claim's attempt count and the two-copies guard
without a record write at claim, and what becomes of marks and claims a crash, a failed
record write or an earlier version left behind."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crashes import Say, in_dying_process
from lanekit import procinfo
from lanekit.queue import Dropped, DropReason, Queue, RecordNotWrittenError
from lanekit.queue.layout import Mark, mark_id, mark_name, mark_text, own_owner
from lanekit.records import JobState, Record


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh queue, no fsyncs, no backoff wait."""
    q = Queue(tmp_path / "q", durable=False, backoff_base=0)
    q.ensure()
    return q


def dead_owner() -> str:
    """The owner tag of a process on this host that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{procinfo.hosttag()}-{child.pid}-12345"


def claim_and_die(queue: Queue) -> str:
    """A process claims one job for lane funnel and dies without settling it; the job's id."""

    def work(say: Say) -> None:
        claim = queue.claimer(lane="funnel").claim()
        say("" if claim is None else claim.job_id)

    return in_dying_process(work)


def test_mark_grammar_round_trips_and_refuses_other_text() -> None:
    """`<owner>.<attempt>[/<lane>]`: lanes may contain dots, never a slash; anything else is
    no mark (a symlink lanekit did not make is never taken for one)."""
    owner = own_owner()
    assert Mark.parse(mark_text(owner, 3, None)) == Mark(owner, 3, None)
    assert Mark.parse(mark_text(owner, 12, "pm.v2")) == Mark(owner, 12, "pm.v2")
    for text in ("", "x.1", f"{owner}", f"{owner}.", f"{owner}.x", f"{owner}.1/", "/etc/passwd"):
        assert Mark.parse(text) is None, text
    assert mark_name("2026-09-17.report") == ".2026-09-17.report.running"
    assert mark_id(".2026-09-17.report.running") == "2026-09-17.report"
    assert mark_id(".x.status") is None and mark_id("x.running") is None


def test_claim_writes_no_record_and_settle_writes_one(queue: Queue) -> None:
    """One record write per job: the claim leaves the record as enqueue made it (the mark
    counts the attempt), the settle writes the outcome and removes the mark."""
    job_id = queue.enqueue({"n": 1})
    before = queue.store.path(job_id).stat()
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    after = queue.store.path(job_id).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    mark = queue.claimed / mark_name(job_id)
    assert os.readlink(mark) == f"{claim.owner}.1/funnel"
    queue.release(claim, max_attempts=3)
    assert not os.path.lexists(mark)
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.lane) == (JobState.QUEUED, 1, "funnel")
    again = queue.claimer().claim()
    assert again is not None and again.attempt == 2
    assert os.readlink(mark) == f"{again.owner}.2/funnel"


def test_recovery_counts_the_attempt_from_the_mark(queue: Queue) -> None:
    """A runner that dies mid-job leaves its claim and mark; the record still says queued 0.
    Recovery counts the attempt the mark says, writes it, removes the mark; the next claim is
    attempt 2; out of attempts, the job fails with the count."""
    job_id = queue.enqueue({"n": 1})
    assert claim_and_die(queue) == job_id
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 0)
    view = queue.job(job_id)
    assert view is not None and view.record is not None
    assert (view.state, view.record.state, view.record.attempts, view.record.lane) == (
        JobState.RUNNING,
        JobState.RUNNING,
        1,
        "funnel",
    )
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.job_id, item.state, item.attempts) == (job_id, JobState.QUEUED, 1)
    assert not os.path.lexists(queue.claimed / mark_name(job_id))
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 1)
    claim_and_die(queue)
    [item] = queue.recover(stale_after=3600, max_attempts=2)
    assert (item.state, item.attempts) == (JobState.FAILED, 2)
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.FAILED, 2)


def test_a_claim_cut_short_before_its_mark_never_started(queue: Queue) -> None:
    """A claim without a mark whose record says queued was cut short between the claim
    rename and the mark: the job never ran, recovery gives it back with its count unchanged."""
    job_id = queue.enqueue({"n": 1})
    os.rename(queue.queue / f"{job_id}.json", queue.claimed / f"{job_id}.{dead_owner()}.json")
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)
    claim = queue.claimer().claim()
    assert claim is not None and claim.attempt == 1


def test_a_claim_left_by_the_previous_version_is_recovered(queue: Queue) -> None:
    """Upgrading mid-run: the previous version named its claim the same way but wrote a
    `running` record counting the attempt, and no mark. Recovery reads the count from that
    record; a second copy of the id is refused while such a claim runs."""
    queue.enqueue({"n": 1}, job_id="old")
    owner = dead_owner()
    os.rename(queue.queue / "old.json", queue.claimed / f"old.{owner}.json")
    queue.store.write(Record("old", JobState.RUNNING, 2, "2026-01-01T00:00:00.000Z", "u", "pm"))
    view = queue.job("old")
    assert view is not None and view.record is not None
    assert (view.state, view.record.attempts) == (JobState.RUNNING, 2)
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 2)
    record = queue.store.read("old")
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 2)
    claim = queue.claimer().claim()
    assert claim is not None and (claim.attempt, claim.record.lane) == (3, "pm")
    queue.complete(claim)

    # A claim of the previous version still in claimed/ (its runner's liveness is recovery's
    # business: a copy never runs beside it either way).
    queue.enqueue({"n": 2}, job_id="live-old")
    live = f"live-old.{procinfo.hosttag()}-{os.getppid()}-1.json"
    os.rename(queue.queue / "live-old.json", queue.claimed / live)
    queue.store.write(Record("live-old", JobState.RUNNING, 1, "q", "u"))
    (queue.queue / "live-old.json").write_text("{}")  # a producer bypassing lanekit
    drops: list[Dropped] = []
    other = Queue(queue.dir, durable=False)
    assert other.claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("live-old", DropReason.DUPLICATE)]
    assert (queue.claimed / live).exists()


def test_a_stale_mark_is_cleared_and_the_copy_runs(queue: Queue) -> None:
    """A mark whose claim is gone (an earlier version's recoverer moved the claim) does not
    block the id: the claimer clears it and runs the job under its own mark."""
    queue.enqueue({"n": 1}, job_id="j")
    mark = queue.claimed / mark_name("j")
    os.symlink(mark_text(dead_owner(), 1, None), mark)
    claim = queue.claimer().claim()
    assert claim is not None and claim.job_id == "j"
    assert os.readlink(mark) == f"{claim.owner}.1"
    queue.complete(claim)
    assert not os.path.lexists(mark)


def test_recovery_sweeps_stale_marks(queue: Queue) -> None:
    """recover() removes marks whose claim is gone, and leaves a live claim's mark."""
    queue.enqueue({"n": 1}, job_id="live")
    live = queue.claimer().claim()
    assert live is not None
    stale = queue.claimed / mark_name("gone")
    os.symlink(mark_text(dead_owner(), 1, None), stale)
    assert queue.recover(stale_after=3600, max_attempts=3) == []
    assert not os.path.lexists(stale)
    assert os.readlink(queue.claimed / mark_name("live")) == f"{live.owner}.1"
    queue.complete(live)


def test_a_symlink_lanekit_did_not_make_refuses_the_copy(queue: Queue) -> None:
    """Something at the mark's name that is no mark is never removed or taken for a free id:
    the copy is refused (failed/, saying where), the file left alone."""
    queue.enqueue({"n": 1}, job_id="j")
    mark = queue.claimed / mark_name("j")
    os.symlink("/etc/passwd", mark)
    drops: list[Dropped] = []
    assert queue.claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("j", DropReason.DUPLICATE)]
    assert str(mark) in (queue.failed / "j.error").read_text()
    assert os.readlink(mark) == "/etc/passwd"


def test_a_success_without_its_record_keeps_its_mark_as_proof(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disk full at the settle: the job still moves to done/, its record stays queued, and its
    mark stays: a copy of the id dropped in later is not run (done/ is asked), and the guard
    finishes the record."""
    queue.enqueue({"n": 1}, job_id="once")
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None

    def full(record: Record, *, durable: bool | None = None) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "records")

    monkeypatch.setattr(queue.store, "write", full)
    monkeypatch.setattr(queue.store, "settle", full)
    with pytest.raises(RecordNotWrittenError):
        queue.complete(claim)
    monkeypatch.undo()
    mark = queue.claimed / mark_name("once")
    assert os.path.lexists(mark)
    assert queue.contradictions()[0][0].lane == "funnel"  # the lane that ran it, from the mark
    (queue.queue / "once.json").write_text('{"n": 1}')
    drops: list[Dropped] = []
    assert queue.claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("once", DropReason.ALREADY_SUCCEEDED)]
    record = queue.store.read("once")
    assert record is not None and record.state is JobState.SUCCEEDED
    assert not os.path.lexists(mark)


def test_a_copy_whose_twin_settles_before_its_mark_does_not_run(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of one id: the other copy's settle lands between this claim's read of the
    record and its mark (record written as succeeded, that mark already gone). The claim must
    notice the record changed under it and decide again: skipped as already succeeded, not
    run a second time; its own mark is gone and the success is recorded once."""
    from lanekit.queue.mark import take as real_take

    job_id = queue.enqueue({"n": 1}, job_id="twin")
    settled: list[str] = []

    def twin_settles_first(*args: object, **kwargs: object) -> object:
        if not settled:  # what the other copy's complete() leaves: its record, no mark
            stamp = "2026-12-01T10:40:00Z"
            queue.store.write(Record(job_id, JobState.SUCCEEDED, 1, stamp, stamp, "funnel"))
            settled.append(job_id)
        return real_take(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("lanekit.queue.claim.take_mark", twin_settles_first)
    dropped: list[Dropped] = []
    assert queue.claimer(lane="funnel", on_drop=dropped.append).claim() is None
    assert [d.reason for d in dropped] == [DropReason.ALREADY_SUCCEEDED]
    assert not os.path.lexists(queue.claimed / mark_name(job_id))
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.SUCCEEDED, 1)
    assert [p.name for p in queue.claimed.iterdir()] == []
