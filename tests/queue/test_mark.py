"""The running mark (lanekit.queue.directory.mark): a hard link to the claim's file, the two-copies
guard, with the attempt in the claim's `running` line appended to the record (no file created
at claim), and what becomes of marks and claims a crash, a failed record write or an earlier
version (symlink marks, `running` records) left behind."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crashes import Say, in_dying_process
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.layout import Mark, mark_id, mark_name, mark_text
from lanekit.queue.ids import own_owner
from lanekit.queue.model import Dropped, DropReason, RecordNotWrittenError
from lanekit.queue.records import JobState, Record
from lanekit.system import procinfo


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


def test_previous_mark_grammar_round_trips_and_refuses_other_text() -> None:
    """The previous version's symlink marks, `<owner>.<attempt>[/<lane>]`, are still read:
    lanes may contain dots, never a slash; anything else is no mark (a symlink lanekit did
    not make is never taken for one)."""
    owner = own_owner()
    assert Mark.parse(mark_text(owner, 3, None)) == Mark(owner, 3, None)
    assert Mark.parse(mark_text(owner, 12, "pm.v2")) == Mark(owner, 12, "pm.v2")
    for text in ("", "x.1", f"{owner}", f"{owner}.", f"{owner}.x", f"{owner}.1/", "/etc/passwd"):
        assert Mark.parse(text) is None, text
    assert mark_name("2026-09-17.report") == ".2026-09-17.report.running"
    assert mark_id(".2026-09-17.report.running") == "2026-09-17.report"
    assert mark_id(".x.status") is None and mark_id("x.running") is None


def test_claim_creates_no_file_and_appends_its_attempt(queue: Queue) -> None:
    """A claim creates no file: its mark is a second name of the claimed file, and the attempt
    it starts is one `running` line appended to the record enqueue made (same file). The
    settle appends the outcome and removes the mark."""
    job_id = queue.enqueue({"n": 1})
    before = queue.store.path(job_id).stat()
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    after = queue.store.path(job_id).stat()
    assert after.st_ino == before.st_ino
    assert after.st_size == before.st_size + len(claim.record.to_bytes())
    record = queue.store.read(job_id)
    assert record == claim.record
    assert (record.state, record.attempts, record.lane) == (JobState.RUNNING, 1, "funnel")
    mark = queue.claimed / mark_name(job_id)
    assert not mark.is_symlink() and os.path.samefile(mark, claim.path)
    assert claim.path.stat().st_nlink == 2
    assert sorted(p.name for p in queue.tmp.iterdir()) == []
    queue.release(claim, max_attempts=3)
    assert not os.path.lexists(mark)
    assert queue.store.path(job_id).stat().st_ino == before.st_ino
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.lane) == (JobState.QUEUED, 1, "funnel")
    assert (queue.queue / f"{job_id}.json").stat().st_nlink == 1
    again = queue.claimer().claim()
    assert again is not None and again.attempt == 2
    assert os.path.samefile(mark, again.path)


def test_recovery_counts_the_attempt_from_the_running_line(queue: Queue) -> None:
    """A runner that dies mid-job leaves its claim, its mark and its `running` line.
    Recovery takes that attempt back (a crash is not the job's failure), writes the count,
    removes the mark; the next claim is attempt 1 again."""
    job_id = queue.enqueue({"n": 1})
    assert claim_and_die(queue) == job_id
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.RUNNING, 1)
    view = queue.job(job_id)
    assert view is not None and view.record is not None
    assert (view.state, view.record.state, view.record.attempts, view.record.lane) == (
        JobState.RUNNING,
        JobState.RUNNING,
        1,
        "funnel",
    )
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.job_id, item.state, item.attempts) == (job_id, JobState.QUEUED, 0)
    assert not os.path.lexists(queue.claimed / mark_name(job_id))
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 0)
    assert "before its job's end was recorded" in (record.error or "")
    claim_and_die(queue)
    [item] = queue.recover(stale_after=3600, max_attempts=1)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)  # never spends the last one
    claim = queue.claimer().claim()
    assert claim is not None and claim.attempt == 1


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
    assert (item.state, item.attempts) == (JobState.QUEUED, 1)  # the crashed one taken back
    record = queue.store.read("old")
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 1)
    claim = queue.claimer().claim()
    assert claim is not None and (claim.attempt, claim.record.lane) == (2, "pm")
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


def test_a_stale_mark_is_cleared_and_the_copy_runs(queue: Queue, tmp_path: Path) -> None:
    """A mark whose file is no claim any more (its claim moved on and the mark stayed) does
    not block the id: the claimer clears it and runs the job under its own mark. So does a
    symlink mark of the previous version whose claim is gone."""
    queue.enqueue({"n": 1}, job_id="j")
    mark = queue.claimed / mark_name("j")
    elsewhere = tmp_path / "moved-on.json"
    elsewhere.write_text("{}")
    os.link(elsewhere, mark)
    claim = queue.claimer().claim()
    assert claim is not None and claim.job_id == "j"
    assert os.path.samefile(mark, claim.path)
    assert elsewhere.stat().st_nlink == 1  # only the stale name went
    queue.complete(claim)
    assert not os.path.lexists(mark)

    queue.enqueue({"n": 2}, job_id="k")
    old = queue.claimed / mark_name("k")
    os.symlink(mark_text(dead_owner(), 1, None), old)
    claim = queue.claimer().claim()
    assert claim is not None and claim.job_id == "k"
    assert os.path.samefile(old, claim.path) and not old.is_symlink()
    queue.complete(claim)


def test_a_dead_claims_mark_holds_its_id_until_recovery(queue: Queue) -> None:
    """A claim whose runner died keeps its mark (its file is still the claim in claimed/): a
    copy of the id is refused as a duplicate meanwhile, and recovery, not the copy, settles
    the dead claim's attempt."""
    job_id = queue.enqueue({"n": 1}, job_id="j")
    assert claim_and_die(queue) == job_id
    (queue.queue / "j.json").write_text('{"n": 2}')  # a producer bypassing lanekit
    drops: list[Dropped] = []
    assert queue.claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("j", DropReason.DUPLICATE)]
    [dead] = [p for p in queue.claimed.iterdir() if p.name.endswith(".json")]
    assert str(dead) in (queue.failed / "j.error").read_text()
    assert os.path.samefile(queue.claimed / mark_name("j"), dead)
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)


def test_a_mark_is_not_cleared_while_its_files_lock_is_held(queue: Queue, tmp_path: Path) -> None:
    """Whoever clears a stale mark holds its file's flock (the claim's lock) while it judges
    and removes it: a mark whose file someone holds locked (an owner or recoverer settling
    it, with the file already moved on) is left, and the copy is refused, not run beside it."""
    import fcntl

    from lanekit.queue.directory import mark as marks

    queue.enqueue({"n": 1}, job_id="j")
    mark = queue.claimed / mark_name("j")
    moving = tmp_path / "settling.json"
    moving.write_text("{}")
    os.link(moving, mark)
    fd = os.open(moving, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert marks.clear_stale(queue, "j") is False
        drops: list[Dropped] = []
        assert queue.claimer(on_drop=drops.append).claim() is None
        assert [(d.job_id, d.reason) for d in drops] == [("j", DropReason.DUPLICATE)]
        assert os.path.samefile(mark, moving)
    finally:
        os.close(fd)
    assert marks.clear_stale(queue, "j") is True
    assert not os.path.lexists(mark) and moving.exists()


def test_a_claim_cut_short_between_its_mark_and_its_running_line_never_started(
    queue: Queue,
) -> None:
    """A claim with its mark but no `running` line died before its attempt started: recovery
    gives it back with its count unchanged and removes the mark."""
    job_id = queue.enqueue({"n": 1})
    claimed = queue.claimed / f"{job_id}.{dead_owner()}.json"
    os.rename(queue.queue / f"{job_id}.json", claimed)
    os.link(claimed, queue.claimed / mark_name(job_id))
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)
    assert not os.path.lexists(queue.claimed / mark_name(job_id))
    claim = queue.claimer().claim()
    assert claim is not None and claim.attempt == 1


def test_an_unmarked_copy_recovered_beside_a_running_one_leaves_its_record(
    queue: Queue,
) -> None:
    """Two copies of one id: one runs (its mark, its `running` line), the other's runner
    died between its claim rename and its mark. Recovering the unmarked copy must not write
    the record (it is the running copy's: its attempt would be lost), nor fail the copy on
    the running copy's attempts."""
    job_id = queue.enqueue({"n": 1}, job_id="twin")
    running = queue.claimer().claim()
    assert running is not None
    before = queue.store.path(job_id).read_bytes()
    (queue.queue / "twin.json").write_text('{"n": 2}')
    os.rename(queue.queue / "twin.json", queue.claimed / f"twin.{dead_owner()}.json")
    [item] = queue.recover(stale_after=3600, max_attempts=1)
    assert item.state is JobState.QUEUED
    assert queue.store.path(job_id).read_bytes() == before
    assert os.path.samefile(queue.claimed / mark_name(job_id), running.path)
    queue.complete(running)
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.SUCCEEDED, 1)


def test_a_corrupt_copy_beside_a_running_one_leaves_its_record(queue: Queue) -> None:
    """A corrupt copy of an id that is running goes to failed/ as corrupt, and the record,
    which holds the running copy's `running` line, is left as it is: that copy's crash would
    otherwise be read as settled."""
    job_id = queue.enqueue({"n": 1}, job_id="twin")
    assert claim_and_die(queue) == job_id
    before = queue.store.path(job_id).read_bytes()
    (queue.queue / "twin.json").write_text("{not json")
    drops: list[Dropped] = []
    assert queue.claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("twin", DropReason.CORRUPT)]
    assert queue.store.path(job_id).read_bytes() == before
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)


def test_a_job_that_replaced_its_own_file_is_still_counted(queue: Queue) -> None:
    """A job that rewrites its claimed file by a rename (`sed -i {job}`) leaves its mark a
    link to the old file. Its runner dies: recovery still finds the attempt its `running`
    line started (and takes it back: a crash); the mark, now no claim's, is swept."""
    job_id = queue.enqueue({"n": 1})
    assert claim_and_die(queue) == job_id
    [claimed] = [p for p in queue.claimed.iterdir() if p.name.endswith(".json")]
    rewritten = queue.tmp / "rewritten"
    rewritten.write_text('{"n": 2}')
    os.rename(rewritten, claimed)
    [item] = queue.recover(stale_after=3600, max_attempts=1)
    assert (item.state, item.attempts) == (JobState.QUEUED, 0)
    assert queue.recover(stale_after=3600, max_attempts=1) == []
    assert not os.path.lexists(queue.claimed / mark_name(job_id))


def test_a_claim_marked_by_the_previous_version_is_recovered(queue: Queue) -> None:
    """Upgrading mid-run from the version whose marks were symlinks carrying the attempt
    (and no `running` line): recovery counts the attempt from the symlink and removes it; a
    copy is refused while such a claim's owner lives."""
    queue.enqueue({"n": 1}, job_id="sym")
    owner = dead_owner()
    os.rename(queue.queue / "sym.json", queue.claimed / f"sym.{owner}.json")
    os.symlink(mark_text(owner, 2, "pm"), queue.claimed / mark_name("sym"))
    view = queue.job("sym")
    assert view is not None and view.record is not None
    assert (view.record.state, view.record.attempts, view.record.lane) == (
        JobState.RUNNING,
        2,
        "pm",
    )
    [item] = queue.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.attempts) == (JobState.QUEUED, 1)
    assert not os.path.lexists(queue.claimed / mark_name("sym"))
    again = queue.claimer().claim()
    assert again is not None and (again.attempt, again.record.lane) == (2, "pm")
    queue.complete(again)

    queue.enqueue({"n": 2}, job_id="live")
    live = f"{procinfo.hosttag()}-{os.getppid()}-1"
    os.rename(queue.queue / "live.json", queue.claimed / f"live.{live}.json")
    os.symlink(mark_text(live, 1, None), queue.claimed / mark_name("live"))
    (queue.queue / "live.json").write_text("{}")
    drops: list[Dropped] = []
    assert Queue(queue.dir, durable=False).claimer(on_drop=drops.append).claim() is None
    assert [(d.job_id, d.reason) for d in drops] == [("live", DropReason.DUPLICATE)]


def test_recovery_sweeps_stale_marks(queue: Queue, tmp_path: Path) -> None:
    """recover() removes marks whose file is no claim in claimed/ (a link to a file moved on,
    a symlink of the previous version whose claim is gone), and leaves a live claim's mark."""
    queue.enqueue({"n": 1}, job_id="live")
    live = queue.claimer().claim()
    assert live is not None
    stale = queue.claimed / mark_name("gone")
    os.symlink(mark_text(dead_owner(), 1, None), stale)
    moved = tmp_path / "moved.json"
    moved.write_text("{}")
    linked = queue.claimed / mark_name("moved")
    os.link(moved, linked)
    assert queue.recover(stale_after=3600, max_attempts=3) == []
    assert not os.path.lexists(stale) and not os.path.lexists(linked)
    assert os.path.samefile(queue.claimed / mark_name("live"), live.path)
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

    def full(record: Record, held: object = None, *, durable: bool | None = None) -> None:
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
    from lanekit.queue.directory.mark import take as real_take

    job_id = queue.enqueue({"n": 1}, job_id="twin")
    settled: list[str] = []

    def twin_settles_first(*args: object, **kwargs: object) -> object:
        if not settled:  # what the other copy's complete() leaves: its record, no mark
            stamp = "2026-12-01T10:40:00Z"
            queue.store.write(Record(job_id, JobState.SUCCEEDED, 1, stamp, stamp, "funnel"))
            settled.append(job_id)
        return real_take(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("lanekit.queue.directory.claim.take_mark", twin_settles_first)
    dropped: list[Dropped] = []
    assert queue.claimer(lane="funnel", on_drop=dropped.append).claim() is None
    assert [d.reason for d in dropped] == [DropReason.ALREADY_SUCCEEDED]
    assert not os.path.lexists(queue.claimed / mark_name(job_id))
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.SUCCEEDED, 1)
    assert [p.name for p in queue.claimed.iterdir()] == []
