"""The directory queue: exactly-once claims, no overwrites, recovery, safety checks."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.errors import ExitCode, QueueError, UsageError
from lanekit.queue.directory import claim as queue_module
from lanekit.queue.directory import enqueue as enqueue_module
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.layout import SUBDIRS
from lanekit.queue.directory.state import QueueState
from lanekit.queue.ids import Owner, new_job_id, own_owner, split_owned_name, validate_job_id
from lanekit.queue.model import Claim, Dropped, DropReason, JobExistsError, RecordNotWrittenError
from lanekit.queue.observed import RecoverReason
from lanekit.queue.records import JobState, Record
from lanekit.system import fsops, procinfo
from lanekit.system.fsops import NoReplaceRename

if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows only
    pytest.skip("multi-process tests fork", allow_module_level=True)
FORK = multiprocessing.get_context("fork")


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh, checked queue; retries go straight back to queue/ (no backoff)."""
    q = Queue(tmp_path / "q", durable=False, backoff_base=0)
    q.ensure()
    return q


@pytest.fixture(
    params=[
        pytest.param(None, id="native"),
        pytest.param(NoReplaceRename("link", None), id="link-unlink"),
    ]
)
def rename_strategy(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> NoReplaceRename | None:
    """Runs a test with each no-replace rename branch selected at the fsops seam."""
    strategy: NoReplaceRename | None = request.param
    if strategy is not None:
        monkeypatch.setattr(fsops, "_selected", strategy)
    return strategy


def names(directory: Path) -> list[str]:
    """Visible file names in a directory, sorted."""
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def day_dir(queue: Queue) -> Path:
    """Today's done/ bucket (UTC)."""
    return queue.done / time.strftime("%Y-%m-%d", time.gmtime())


def drain(queue: Queue, **kwargs: Any) -> list[Claim]:
    """Claim everything one claimer can get (not settling anything)."""
    claimer = queue.claimer(**kwargs)
    claims = []
    while (claim := claimer.claim()) is not None:
        claims.append(claim)
    return claims


def fake_claim(queue: Queue, job_id: str, owner: str, attempts: int = 1) -> Path:
    """Put a job in claimed/ as if `owner` had claimed it (its record says running)."""
    queue.enqueue({"id": job_id}, job_id=job_id)
    path = queue.claimed / f"{job_id}.{owner}.json"
    (queue.queue / f"{job_id}.json").rename(path)
    queue.store.write(Record(job_id, JobState.RUNNING, attempts, "q", "u"))
    return path


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def locked(path: Path) -> bool:
    """Whether some open file description holds the flock of `path`."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def hang_guard(seconds: float = 60.0) -> Iterator[None]:
    """Turn a call that would block forever into a test failure (a guard against hangs, not a
    timing assertion: a passing call returns at once)."""

    def hung(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("blocked: waited for a lock that is never released")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Killed(BaseException):
    """Stands for a SIGKILL in the middle of a write (raised from an injected seam)."""


def restart_serials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temp-name counters as in a fresh process (one that got a dead process's pid)."""
    monkeypatch.setattr(fsops, "_tmp_serial", itertools.count())


# -- ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("job_id", ["a", "A.b_c-1", "2026-09-17.report", "-x", "x" * 128])
def test_valid_ids(job_id: str) -> None:
    """Letters, digits, '.', '_' and '-' up to 128 characters are ids."""
    assert validate_job_id(job_id) == job_id


@pytest.mark.parametrize(
    ("job_id", "reason"),
    [
        ("../x", "starts with '.'"),
        ("a/../../x", "contains '/'"),
        ("/abs", "contains '/'"),
        (".hidden", "starts with '.'"),
        ("..", "starts with '.'"),
        ("a\x00b", "contains '\\\\x00'"),
        ("", "is empty"),
        ("x" * 129, "129 characters long"),
        ("a b", "contains ' '"),
        ("caf\u00e9", "contains"),
    ],
)
def test_path_escaping_ids_are_rejected(job_id: str, reason: str) -> None:
    """Ids become file names: separators, hidden names, NUL, empty and long ids are usage
    errors (exit 2) saying what is wrong."""
    with pytest.raises(UsageError, match=reason) as info:
        validate_job_id(job_id)
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize("job_id", ["../x", "/abs", ".hidden", "a\x00b"])
def test_enqueue_with_a_bad_id_writes_nothing(queue: Queue, job_id: str) -> None:
    """A rejected id leaves every queue directory as it was."""
    with pytest.raises(UsageError):
        queue.enqueue({"a": 1}, job_id=job_id)
    assert all(names(queue.dir / sub) == [] for sub in SUBDIRS)
    assert names(queue.dir.parent) == ["q"]


def test_generated_ids_sort_by_time() -> None:
    """Generated ids are `<ns>-<pid>-<random>`, zero-padded so string order is age order."""
    ids = [new_job_id(now_ns=ns) for ns in (5, 50, 10**18, 10**19 - 1)]
    assert sorted(ids) == ids
    assert validate_job_id(ids[0]) == ids[0]
    assert ids[0].startswith(f"{5:020d}-{os.getpid():07d}-")


def test_owner_names_parse_from_the_right() -> None:
    """Ids may hold dots, so the owner is the last dot-separated part before .json."""
    owner = f"{procinfo.hosttag()}-123-456"
    assert split_owned_name(f"a.b.c.{owner}.json") == (
        "a.b.c",
        Owner(procinfo.hosttag(), 123, "456"),
    )
    assert split_owned_name("a.b.json") is None
    assert split_owned_name(f"{owner}.json") is None
    assert Owner.parse("zzzzzzzz-1-2") is None
    assert Owner.parse(owner) is not None and str(Owner.parse(owner)) == owner


# -- enqueue ---------------------------------------------------------------------------------


def test_enqueue_writes_the_job_and_a_queued_record(queue: Queue) -> None:
    """The job lands in queue/<id>.json as a JSON object; its record says queued, 0 attempts;
    no temp file is left behind."""
    job_id = queue.enqueue({"file": "a.txt"})
    assert json.loads((queue.queue / f"{job_id}.json").read_bytes()) == {"file": "a.txt"}
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.error) == (JobState.QUEUED, 0, None)
    assert names(queue.tmp) == []
    assert list(queue.tmp.iterdir()) == []


def test_enqueue_keeps_given_bytes_exactly(queue: Queue) -> None:
    """A payload given as bytes (a file, stdin) is stored byte for byte."""
    data = b'{ "b": 2,\n  "a": [1, 2] }\n'
    queue.enqueue(data, job_id="given")
    assert (queue.queue / "given.json").read_bytes() == data


def test_durable_enqueue(tmp_path: Path) -> None:
    """With fsyncs on, enqueue works the same (file, rename, directory fsync)."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    job_id = queue.enqueue("{}")
    assert names(queue.queue) == [f"{job_id}.json"]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"[1, 2]", "a JSON array, not an object"),
        ('"text"', "a JSON string, not an object"),
        (b"3", "a JSON number, not an object"),
        (b"null", "a JSON null, not an object"),
        (b"true", "a JSON boolean, not an object"),
        (b"{", "not valid JSON"),
        (b'{"a": 1} {"b": 2}', "Extra data"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b"\xff{}", "not valid JSON"),
        ({"when": object()}, "cannot be written as JSON"),
        ({"x": float("inf")}, "cannot be written as JSON"),
    ],
)
def test_payload_must_be_a_json_object(queue: Queue, payload: Any, reason: str) -> None:
    """Anything but one JSON object is refused with the reason, and nothing is written."""
    with pytest.raises(UsageError, match=reason):
        queue.enqueue(payload)
    assert all(list((queue.dir / sub).iterdir()) == [] for sub in SUBDIRS)


@pytest.mark.parametrize("where", ["queue", "claimed", "delayed", "failed"])
def test_enqueue_refuses_an_id_already_in_the_queue(tmp_path: Path, where: str) -> None:
    """An id that exists anywhere in the queue is refused (exit 2), and the existing job is
    untouched."""
    queue = Queue(tmp_path / "q", durable=False, backoff_base=60)
    queue.ensure()
    queue.enqueue({"v": 1}, job_id="dup")
    if where != "queue":
        claim = drain(queue)[0]
        if where == "delayed":
            queue.release(claim, max_attempts=3, error="exit 1")
        elif where == "failed":
            queue.fail(claim, "exit 1")
    before = {sub: names(queue.dir / sub) for sub in ("queue", "claimed", "delayed", "failed")}
    with pytest.raises(JobExistsError, match="job dup") as info:
        queue.enqueue({"v": 2}, job_id="dup")
    assert info.value.exit_code == ExitCode.USAGE
    assert before == {sub: names(queue.dir / sub) for sub in before}


def test_enqueue_refuses_an_id_that_already_succeeded(queue: Queue) -> None:
    """The guard would only skip it, so enqueue says so instead of queueing a no-op."""
    queue.enqueue({}, job_id="once")
    queue.complete(drain(queue)[0])
    with pytest.raises(JobExistsError, match="already succeeded"):
        queue.enqueue({}, job_id="once")
    assert names(queue.queue) == []


def test_enqueue_of_an_id_differing_only_in_case_is_refused_as_such(queue: Queue) -> None:
    """On a case-insensitive volume (default APFS) `job1` opens `Job1`'s record: enqueue says
    the ids differ only in case (exit 2), never "remove or repair the record file". The
    volume's answer is planted as the file it would return."""
    from lanekit.queue.directory.recordstore import IdCaseCollisionError

    queue.enqueue({}, job_id="Job1")
    queue.complete(drain(queue)[0])
    record = queue.dir / "records" / "Job1.json"
    (queue.dir / "records" / "job1.json").write_bytes(record.read_bytes())
    with pytest.raises(IdCaseCollisionError) as caught:
        queue.enqueue({}, job_id="job1")
    assert "differs from job 'Job1' only in case" in caught.value.message
    assert caught.value.exit_code == 2
    assert names(queue.queue) == []


def test_enqueue_refused_by_a_late_collision_leaves_the_record_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry that a runner promotes from delayed/ to queue/ while enqueue's checks run (a
    listing can miss a file that is being renamed): the no-replace rename refuses the new job,
    and the record (its attempt count) is untouched, so max_attempts still holds."""
    queue = Queue(tmp_path / "q", durable=False, backoff_base=60)
    queue.ensure()
    queue.enqueue({"n": 1}, job_id="inv.42")
    for _ in range(3):
        queue.promote_due(now=time.time() + 10**6)
        queue.release(drain(queue)[0], max_attempts=5, error="boom")
    before = queue.store.read("inv.42")
    assert before is not None and (before.state, before.attempts) == (JobState.QUEUED, 3)

    def checks_missed_the_promotion(q: QueueState, job_id: str) -> None:
        queue.promote_due(now=time.time() + 10**6)  # another runner, right now

    monkeypatch.setattr(enqueue_module, "refuse_existing", checks_missed_the_promotion)
    with pytest.raises(JobExistsError, match="already queued"):
        queue.enqueue({"n": 2}, job_id="inv.42")
    assert queue.store.read("inv.42") == before
    assert json.loads((queue.queue / "inv.42.json").read_bytes()) == {"n": 1}
    assert list(queue.tmp.iterdir()) == []


def test_enqueue_never_overwrites_a_record_that_changed_after_the_checks(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """enqueue's checks are advisory (a listing can miss a file that is being renamed): when
    the id's running copy completes right after them, enqueue keeps the succeeded record, and
    the claimer's guard skips the new copy instead of running the id a second time."""
    queue.enqueue({"n": 1}, job_id="pay-7")
    claim = drain(queue)[0]

    def checks_missed_the_claim(q: QueueState, job_id: str) -> None:
        queue.complete(claim)  # ... which finishes right after the checks passed

    monkeypatch.setattr(enqueue_module, "refuse_existing", checks_missed_the_claim)
    assert queue.enqueue({"n": 1}, job_id="pay-7") == "pay-7"
    record = queue.store.read("pay-7")
    assert record is not None and (record.state, record.attempts) == (JobState.SUCCEEDED, 1)
    drops: list[Dropped] = []
    assert drain(queue, on_drop=drops.append) == []
    assert [(d.job_id, d.reason) for d in drops] == [("pay-7", DropReason.ALREADY_SUCCEEDED)]
    assert queue.store.read("pay-7") == record


def test_a_failed_id_enqueued_again_gets_a_fresh_attempt_count(queue: Queue) -> None:
    """Once its failed/ file is removed, a failed id may be enqueued again: enqueue leaves the
    failed record alone, and the claimer starts a new count (the failed record closed the old
    life of the id), so the new copy has all its attempts."""
    queue.enqueue({}, job_id="fixme")
    for _ in range(2):
        queue.release(drain(queue)[0], max_attempts=2, error="exit 1")
    assert names(queue.failed) == ["fixme.error", "fixme.json"]
    for name in names(queue.failed):
        (queue.failed / name).unlink()
    queue.enqueue({"fixed": True}, job_id="fixme")
    record = queue.store.read("fixme")
    assert record is not None and (record.state, record.attempts) == (JobState.FAILED, 2)
    claim = drain(queue)[0]
    assert claim.attempt == 1
    assert (claim.record.state, claim.record.error) == (JobState.RUNNING, None)


def test_enqueue_that_cannot_stage_its_record_queues_nothing(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is written (to tmp/) before the job becomes visible: a full disk at that
    point is a QueueError (exit 69) and leaves no job and no temp file behind."""
    real = fsops.write_new

    def full_for_records(path: str, data: bytes, **kwargs: Any) -> None:
        if os.path.basename(path).startswith(".rec."):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        real(path, data, **kwargs)

    monkeypatch.setattr(fsops, "write_new", full_for_records)
    with pytest.raises(QueueError, match="cannot enqueue") as info:
        queue.enqueue({}, job_id="full")
    assert info.value.exit_code == ExitCode.UNAVAILABLE
    assert all(list((queue.dir / sub).iterdir()) == [] for sub in SUBDIRS)


def test_enqueue_whose_record_cannot_be_created_says_the_job_is_queued(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the record cannot be put in place after the job entered queue/ (EIO), the error
    says the job is queued (so nobody enqueues it twice), no temp file stays, and it runs as
    any producer's job: claimed as attempt 1, its record written when it settles."""

    def broken(records_dir: str, staged: str, job_id: str, *, durable: bool) -> bool:
        os.unlink(staged)
        raise OSError(errno.EIO, "Input/output error", str(queue.store.path(job_id)))

    monkeypatch.setattr(enqueue_module, "create_record", broken)
    with pytest.raises(QueueError, match="job late-record is queued, but its record") as info:
        queue.enqueue({}, job_id="late-record")
    assert info.value.exit_code == ExitCode.UNAVAILABLE
    assert names(queue.queue) == ["late-record.json"]
    assert list(queue.tmp.iterdir()) == [] and queue.store.read("late-record") is None
    monkeypatch.undo()
    claim = drain(queue)[0]
    view = queue.job("late-record")
    assert view is not None and view.record is not None
    assert (view.state, view.record.state, view.record.attempts) == (
        JobState.RUNNING,
        JobState.RUNNING,
        1,
    )
    queue.complete(claim)
    record = queue.store.read("late-record")
    assert record is not None and (record.state, record.attempts) == (JobState.SUCCEEDED, 1)


def test_enqueue_after_a_killed_process_with_the_same_pid(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temp files a SIGKILLed enqueue left in tmp/ never collide with the names a later
    process with the same pid picks (its counters start again at 0)."""
    restart_serials(monkeypatch)
    created: list[str] = []
    real_write_new, real_publish = fsops.write_new, fsops.publish_new

    def recording_write_new(path: str, data: bytes, **kwargs: Any) -> None:
        created.append(path)
        real_write_new(path, data, **kwargs)

    def killed(src: str, dst: str) -> None:
        raise Killed

    monkeypatch.setattr(fsops, "write_new", recording_write_new)
    monkeypatch.setattr(fsops, "publish_new", killed)  # the job's move into queue/
    with pytest.raises(Killed):
        queue.enqueue({"n": 1}, job_id="after-kill")
    monkeypatch.setattr(fsops, "publish_new", real_publish)
    for path in created:  # SIGKILL runs no cleanup: the temp files stay
        Path(path).write_bytes(b"left over")
    assert len(os.listdir(queue.tmp)) == len(created) == 2
    restart_serials(monkeypatch)
    assert queue.enqueue({"n": 2}, job_id="after-kill") == "after-kill"
    assert json.loads((queue.queue / "after-kill.json").read_bytes()) == {"n": 2}
    record = queue.store.read("after-kill")
    assert record is not None and record.state is JobState.QUEUED
    claim = drain(queue)[0]
    restart_serials(monkeypatch)
    assert queue.fail(claim, "exit 1") == queue.failed / "after-kill.json"


def test_enqueue_on_an_unchecked_queue_is_refused(tmp_path: Path) -> None:
    """Nothing moves before the directories are checked: a missing queue is exit 69."""
    with pytest.raises(QueueError) as info:
        Queue(tmp_path / "nowhere").enqueue({})
    assert info.value.exit_code == ExitCode.UNAVAILABLE


# -- claim -----------------------------------------------------------------------------------


def test_claim_is_one_rename_named_after_its_owner(queue: Queue) -> None:
    """claimed/<id>.<hosttag>-<pid>-<start token>.json, attempt 1, running with its lane; the
    running mark claimed/.<id>.running is a second name of that file, and the attempt is the
    `running` line the claim appends to the record (no file is created at claim)."""
    job_id = queue.enqueue({"n": 1})
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    owner = f"{procinfo.hosttag()}-{os.getpid()}-{procinfo.self_token()}"
    assert claim.owner == owner == own_owner()
    assert claim.path == queue.claimed / f"{job_id}.{owner}.json"
    assert names(queue.queue) == []
    assert claim.attempt == 1
    assert (claim.record.state, claim.record.attempts, claim.record.lane) == (
        JobState.RUNNING,
        1,
        "funnel",
    )
    assert os.path.samefile(queue.claimed / f".{job_id}.running", claim.path)
    assert queue.store.read(job_id) == claim.record
    view = queue.job(job_id)
    assert view is not None and view.record is not None
    assert (view.state, view.record.state, view.record.attempts) == (
        JobState.RUNNING,
        JobState.RUNNING,
        1,
    )
    queue.complete(claim)
    assert sorted(os.listdir(queue.claimed)) == []
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.lane) == (JobState.SUCCEEDED, 1, "funnel")


def test_claim_holds_a_lock_until_settled(queue: Queue) -> None:
    """While claimed, nobody else can take the file's flock; settling releases it."""
    import fcntl

    queue.enqueue({})
    claim = drain(queue)[0]
    fd = os.open(claim.path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        queue.complete(claim)
        assert not claim.held
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_single_claimer_walks_the_queue_in_age_order(queue: Queue) -> None:
    """A claimer alone on its queue (nothing claimed) takes the oldest job first and then the
    rest in age order."""
    ids = [queue.enqueue({"n": n}) for n in range(150)]
    assert [c.job_id for c in drain(queue)] == ids


def test_lone_runs_never_leave_old_jobs_behind(queue: Queue) -> None:
    """Issue 12 item 7: a lane running alone with max_jobs = 10 on 100 queued jobs took jobs
    6-15, 16-25 and 37-46 in three runs (a random start among the oldest 64) while 0-5 waited.
    Three lone runs now take 0-9, 10-19 and 20-29."""
    ids = [queue.enqueue({"n": n}) for n in range(100)]
    for run in range(3):
        claimer = queue.claimer()
        taken = []
        for _ in range(10):
            claim = claimer.claim()
            assert claim is not None
            taken.append(claim.job_id)
            queue.complete(claim)
        assert taken == ids[10 * run : 10 * run + 10]


def test_claimers_spread_when_others_are_claiming(queue: Queue) -> None:
    """With a claim in progress (another runner on the queue), a claimer starts at its own
    random offset near the head instead of piling onto the oldest job with the others."""
    ids = [queue.enqueue({"n": n}) for n in range(200)]
    other = queue.claimer().claim()
    assert other is not None and other.job_id == ids[0]
    starts = set()
    for _ in range(20):
        claim = queue.claimer().claim()
        assert claim is not None
        starts.add(ids.index(claim.job_id))
    assert len(starts) > 10


def test_claimer_does_not_list_again_for_each_claim(queue: Queue) -> None:
    """A job that appears after the claimer listed queue/ is taken only once that listing is
    used up, even though it is older than every listed job."""
    listed = [queue.enqueue({"n": n}) for n in range(3)]
    claimer = queue.claimer()
    first = claimer.claim()
    assert first is not None
    queue.enqueue({}, job_id="0000-late-but-oldest")
    later = [claimer.claim() for _ in range(3)]
    assert all(c is not None for c in later)
    taken = [c.job_id for c in later if c is not None]
    assert sorted(taken[:2]) == sorted(i for i in listed if i != first.job_id)
    assert taken[2] == "0000-late-but-oldest"
    assert claimer.claim() is None


def test_files_that_are_not_jobs_never_hide_the_jobs(queue: Queue) -> None:
    """A big queue is first windowed to its oldest names; when those are all files that are
    not jobs (hidden, or not .json), the claimer still finds the jobs behind them."""
    jobs = [queue.enqueue({"n": n}) for n in range(3)]
    window = queue_module._FIRST_WINDOW
    for n in range(4 * window + 1):
        (queue.queue / f"{n:05d}.partial").write_bytes(b"")
    assert sorted(c.job_id for c in drain(queue)) == sorted(jobs)


def test_lost_race_is_silent(queue: Queue) -> None:
    """Jobs taken by someone else after our listing are skipped without an error."""
    for n in range(5):
        queue.enqueue({"n": n})
    claimer = queue.claimer()
    assert claimer.claim() is not None
    for path in queue.queue.iterdir():
        path.rename(queue.done / path.name)  # another runner got there first
    assert claimer.claim() is None


def test_claim_passes_over_a_job_whose_lock_a_leftover_process_holds(queue: Queue) -> None:
    """A leftover process of an earlier attempt (one that inherited the claim's lock) can
    still hold the flock of a job file that is back in queue/: claim() never waits for it.
    The file goes back to queue/ unchanged, like a lost race, and the other jobs are claimed."""
    queue.enqueue({"n": 1}, job_id="stuck")
    other = queue.enqueue({"n": 2})
    fd = os.open(queue.queue / "stuck.json", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: like another process
        with hang_guard():
            claims = drain(queue)
    finally:
        os.close(fd)
    assert [c.job_id for c in claims] == [other]
    assert names(queue.queue) == ["stuck.json"]
    assert json.loads((queue.queue / "stuck.json").read_bytes()) == {"n": 1}
    record = queue.store.read("stuck")
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 0)


def test_a_locked_job_that_cannot_go_back_is_failed_as_a_duplicate(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If a copy of the id was re-sent to queue/ while the claimer held the locked file, the
    locked file cannot go back (no-replace): it goes to failed/ as a duplicate, reported to
    on_drop, and the re-sent copy stays queued."""
    queue.enqueue({"copy": 1}, job_id="stuck")
    fd = os.open(queue.queue / "stuck.json", os.O_RDONLY)
    real_flock = fcntl.flock

    def resend_then_flock(lock_fd: int, operation: int) -> None:
        if lock_fd != fd and not (queue.queue / "stuck.json").exists():
            (queue.queue / "stuck.json").write_bytes(b'{"copy": 2}')
        real_flock(lock_fd, operation)

    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        monkeypatch.setattr(fcntl, "flock", resend_then_flock)
        drops: list[Dropped] = []
        with hang_guard():
            assert drain(queue, on_drop=drops.append) == []
    finally:
        os.close(fd)
    assert [(d.job_id, d.reason) for d in drops] == [("stuck", DropReason.DUPLICATE)]
    assert json.loads((queue.failed / "stuck.json").read_bytes()) == {"copy": 1}
    assert "duplicate" in (queue.failed / "stuck.error").read_text()
    assert (queue.queue / "stuck.json").read_bytes() == b'{"copy": 2}'
    assert names(queue.claimed) == []


def test_a_process_given_the_claim_lock_fd_keeps_the_claim_locked(queue: Queue) -> None:
    """Claim.lock_fd is the descriptor whose flock marks the claim alive: a child given it
    (pass_fds) keeps the claim locked after this process closed its own copy, so recover()
    cannot take a claim whose job still runs; the lock ends with its last holder."""
    queue.enqueue({})
    claim = drain(queue)[0]
    assert claim.lock_fd >= 0 and not os.get_inheritable(claim.lock_fd)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        pass_fds=(claim.lock_fd,),
    )
    try:
        claim.handle.release()  # as when the runner is SIGKILLed: its descriptors close
        assert claim.lock_fd == -1
        assert locked(claim.path)
        assert queue.recover(stale_after=0, max_attempts=3) == []
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert not locked(claim.path)


def test_claim_on_an_empty_queue_is_none(queue: Queue) -> None:
    """Nothing to do is not an error."""
    assert queue.claimer().claim() is None


def test_producer_without_lanekit(queue: Queue) -> None:
    """A job written to tmp/ and renamed into queue/ by any program is claimed like any other;
    its record is created by the claim's `running` line, queued_at from the file's time."""
    tmp = queue.tmp / "anything.partial"
    tmp.write_text('{"from": "bash"}')
    os.utime(tmp, (1_700_000_000, 1_700_000_000))
    tmp.rename(queue.queue / "report-7.json")
    claim = queue.claimer().claim()
    assert claim is not None and claim.job_id == "report-7"
    assert claim.record.queued_at == "2023-11-14T22:13:20.000Z"
    assert claim.record.attempts == 1
    assert queue.store.read("report-7") == claim.record  # the attempt, as it starts
    queue.complete(claim)
    record = queue.store.read("report-7")
    assert record is not None
    assert (record.state, record.attempts, record.queued_at) == (
        JobState.SUCCEEDED,
        1,
        "2023-11-14T22:13:20.000Z",
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"not json", "job file is not valid JSON"),
        (b"[1, 2]", "job file is a JSON array, not an object"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"", "job file is not valid JSON"),
    ],
)
def test_corrupt_job_goes_to_failed_and_claiming_goes_on(
    queue: Queue, content: bytes, why: str
) -> None:
    """A corrupt job file moves to failed/ with <id>.error giving the reason, is reported to
    on_drop, and claim() moves on to the next job."""
    (queue.queue / "0-bad.json").write_bytes(content)
    good = queue.enqueue({"ok": True})
    drops: list[Dropped] = []
    claims = drain(queue, on_drop=drops.append)
    assert [c.job_id for c in claims] == [good]
    assert [(d.job_id, d.reason, d.state) for d in drops] == [
        ("0-bad", DropReason.CORRUPT, JobState.FAILED)
    ]
    assert why in drops[0].detail
    assert Path(drops[0].destination) == queue.failed / "0-bad.json"
    assert (queue.failed / "0-bad.json").read_bytes() == content
    assert why in (queue.failed / "0-bad.error").read_text()
    record = queue.store.read("0-bad")
    assert record is not None and record.state is JobState.FAILED and why in (record.error or "")


def test_job_named_with_an_invalid_id_goes_to_failed(queue: Queue) -> None:
    """A producer's file whose name is not a valid id is failed, not run, and gets no record."""
    (queue.queue / "has space.json").write_text("{}")
    drops: list[Dropped] = []
    assert drain(queue, on_drop=drops.append) == []
    assert [d.reason for d in drops] == [DropReason.INVALID_ID]
    assert names(queue.failed) == ["has space.error", "has space.json"]
    assert names(queue.records) == []


def test_a_name_too_long_to_claim_goes_to_failed(queue: Queue) -> None:
    """A producer's file whose name leaves no room for the owner part (NAME_MAX) cannot be
    claimed by rename; it is moved to failed/ instead of blocking the queue forever."""
    name = "x" * 250 + ".json"
    (queue.queue / name).write_text("{}")
    good = queue.enqueue({})
    drops: list[Dropped] = []
    assert [c.job_id for c in drain(queue, on_drop=drops.append)] == [good]
    assert [(d.job_id, d.reason) for d in drops] == [("x" * 250, DropReason.INVALID_ID)]
    moved = Path(drops[0].destination)
    assert moved.parent == queue.failed and moved.read_text() == "{}"
    error = moved.with_suffix(".error").read_text()
    assert "too long" in error and name in error


def test_already_succeeded_job_is_not_run_again(queue: Queue) -> None:
    """The re-execution guard: a job whose record says succeeded is moved to done/ (under its
    claimed name, next to the first run) and reported as already-succeeded, never handed out."""
    queue.enqueue({"n": 1}, job_id="once")
    first = drain(queue)[0]
    done = queue.complete(first)
    (queue.queue / "once.json").write_text('{"n": 1}')  # a producer re-sends it
    drops: list[Dropped] = []
    assert drain(queue, on_drop=drops.append) == []
    assert [(d.reason, d.state) for d in drops] == [
        (DropReason.ALREADY_SUCCEEDED, JobState.SUCCEEDED)
    ]
    assert Path(drops[0].destination).parent == done.parent
    assert Path(drops[0].destination).name == f"once.{own_owner()}.json"
    assert done.exists()
    record = queue.store.read("once")
    assert record is not None and (record.state, record.attempts) == (JobState.SUCCEEDED, 1)


def test_unreadable_record_fails_the_job_and_keeps_the_record(queue: Queue) -> None:
    """If the record cannot be read, the guard cannot decide: the job goes to failed/ (not run,
    not skipped) and the damaged record stays for inspection."""
    queue.enqueue({}, job_id="j")
    damaged = b'{"state":"succeeded","state":"running"}'
    queue.store.path("j").write_bytes(damaged)
    drops: list[Dropped] = []
    assert drain(queue, on_drop=drops.append) == []
    assert [d.reason for d in drops] == [DropReason.RECORD_UNREADABLE]
    assert "duplicate key 'state'" in (queue.failed / "j.error").read_text()
    assert queue.store.path("j").read_bytes() == damaged


def _drain_and_report_drops(root: str, out: Connection) -> None:
    drops: list[Dropped] = []
    claims = drain(Queue(Path(root), durable=False), on_drop=drops.append)
    out.send(
        ([c.job_id for c in claims], [(d.job_id, d.reason, str(d.destination)) for d in drops])
    )


def test_a_second_copy_of_a_running_job_is_not_run(queue: Queue) -> None:
    """Two files with one id: while one copy runs (its running mark held by a live owner),
    another process fails the second copy as a duplicate instead of running it concurrently."""
    queue.enqueue({}, job_id="twin")
    running = drain(queue)[0]
    (queue.queue / "twin.json").write_text("{}")  # a producer bypassing lanekit
    receiver, sender = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_drain_and_report_drops, args=(str(queue.dir), sender))
    child.start()
    claimed, drops = receiver.recv()
    child.join()
    assert claimed == []
    assert [(job_id, reason) for job_id, reason, _ in drops] == [("twin", DropReason.DUPLICATE)]
    assert "is running" in (queue.failed / "twin.error").read_text()
    assert running.path.exists()
    before = queue.store.read("twin")
    assert before == running.record  # untouched by the copy
    assert os.path.samefile(queue.claimed / ".twin.running", running.path)
    queue.complete(running)
    after = queue.store.read("twin")
    assert after is not None and (after.state, after.attempts) == (JobState.SUCCEEDED, 1)


def test_a_second_copy_under_the_same_owner_waits(queue: Queue) -> None:
    """The process already running an id does not claim a second copy of it (its claimed name
    would collide): the copy stays in queue/ for later, nothing is overwritten."""
    queue.enqueue({"copy": 1}, job_id="twin")
    claimer = queue.claimer()
    running = claimer.claim()
    assert running is not None
    (queue.queue / "twin.json").write_text('{"copy": 2}')
    assert claimer.claim() is None
    assert (queue.queue / "twin.json").read_text() == '{"copy": 2}'
    assert json.loads(running.path.read_text()) == {"copy": 1}


# -- settling --------------------------------------------------------------------------------


def test_complete_moves_to_todays_bucket(queue: Queue) -> None:
    """done/<UTC day>/<id>.json; the record says succeeded, attempts kept, no error."""
    job_id = queue.enqueue({})
    claim = drain(queue)[0]
    path = queue.complete(claim)
    assert path == day_dir(queue) / f"{job_id}.json"
    assert path.exists() and names(queue.claimed) == []
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.error) == (JobState.SUCCEEDED, 1, None)


def test_a_claim_is_settled_once(queue: Queue) -> None:
    """Settling twice is a QueueError, not a second move (and never a double close)."""
    queue.enqueue({})
    claim = drain(queue)[0]
    queue.complete(claim)
    with pytest.raises(QueueError, match="already settled"):
        queue.fail(claim, "again")


def test_fail_writes_the_reason(queue: Queue) -> None:
    """failed/<id>.json plus failed/<id>.error; the record says failed with the error."""
    job_id = queue.enqueue({})
    path = queue.fail(drain(queue)[0], "exit 3")
    assert path == queue.failed / f"{job_id}.json"
    assert (queue.failed / f"{job_id}.error").read_text() == "exit 3\n"
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.error) == (JobState.FAILED, "exit 3")


def test_release_counts_an_attempt_and_retries(queue: Queue) -> None:
    """A failed attempt goes back to queue/ (no backoff here); the next claim is attempt 2 and
    the record keeps the error until then."""
    job_id = queue.enqueue({})
    path = queue.release(drain(queue)[0], max_attempts=3, error="exit 1")
    assert path == queue.queue / f"{job_id}.json"
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.error) == (JobState.QUEUED, 1, "exit 1")
    again = drain(queue)[0]
    assert again.attempt == 2 and again.record.error is None


def test_release_out_of_attempts_goes_to_failed(queue: Queue) -> None:
    """The attempt that reaches max_attempts fails the job for good, saying so."""
    job_id = queue.enqueue({})
    for _ in range(2):
        queue.release(drain(queue)[0], max_attempts=3, error="exit 1")
    last = drain(queue)[0]
    assert last.attempt == 3
    path = queue.release(last, max_attempts=3, error="exit 1")
    assert path == queue.failed / f"{job_id}.json"
    assert "exit 1; gave up after 3 attempts" in (queue.failed / f"{job_id}.error").read_text()


def test_release_after_a_signal_spends_no_attempt(tmp_path: Path) -> None:
    """count_attempt=False, delay=False (SIGTERM): straight back to queue/, even with backoff
    configured, and the next claim has the same attempt number."""
    queue = Queue(tmp_path / "q", durable=False, backoff_base=30)
    queue.ensure()
    job_id = queue.enqueue({})
    path = queue.release(drain(queue)[0], max_attempts=1, count_attempt=False, delay=False)
    assert path == queue.queue / f"{job_id}.json"
    assert drain(queue)[0].attempt == 1


def test_retry_waits_in_delayed_until_due(tmp_path: Path) -> None:
    """With a backoff base, the job waits in delayed/<id>.<not-before>.json; promote_due moves
    it back only once the time has come."""
    queue = Queue(tmp_path / "q", durable=False, backoff_base=30)
    queue.ensure()
    job_id = queue.enqueue({})
    before = time.time()
    path = queue.release(drain(queue)[0], max_attempts=3, error="exit 1")
    assert path.parent == queue.delayed
    not_before = int(path.name.rsplit(".", 2)[1])
    assert before + 30 <= not_before <= time.time() + 31
    assert queue.claimer().claim() is None
    assert queue.promote_due(now=not_before - 1) == []
    assert queue.promote_due(now=not_before) == [job_id]
    assert names(queue.queue) == [f"{job_id}.json"]


@pytest.mark.parametrize(
    ("attempt", "seconds"),
    [(1, 30.0), (2, 60.0), (3, 120.0), (7, 1920.0), (8, 3600.0), (20, 3600.0)],
)
def test_backoff_doubles_per_attempt_up_to_the_cap(attempt: int, seconds: float) -> None:
    """30 s x 2^(attempt-1), capped at an hour (the defaults)."""
    assert Queue(Path("/nonexistent")).backoff(attempt) == seconds


def test_complete_never_overwrites_a_finished_copy(
    queue: Queue, rename_strategy: NoReplaceRename | None
) -> None:
    """If done/<day>/<id>.json exists (another copy finished today), the first stays byte for
    byte and ours is kept beside it under its claimed name (both rename branches)."""
    job_id = queue.enqueue({"copy": 2})
    claim = drain(queue)[0]
    day_dir(queue).mkdir(exist_ok=True)
    first = day_dir(queue) / f"{job_id}.json"
    first.write_bytes(b'{"copy": 1}')
    path = queue.complete(claim)
    assert first.read_bytes() == b'{"copy": 1}'
    assert path == day_dir(queue) / claim.path.name
    assert json.loads(path.read_bytes()) == {"copy": 2}


def test_release_never_overwrites_a_queued_copy(
    queue: Queue, rename_strategy: NoReplaceRename | None
) -> None:
    """If queue/<id>.json is taken (a producer re-sent it), the queued copy stays and ours is
    parked in failed/ as a duplicate, explained (both rename branches)."""
    job_id = queue.enqueue({"copy": 1})
    claim = drain(queue)[0]
    (queue.queue / f"{job_id}.json").write_bytes(b'{"copy": 2}')
    path = queue.release(claim, max_attempts=3, error="exit 1")
    assert (queue.queue / f"{job_id}.json").read_bytes() == b'{"copy": 2}'
    assert path == queue.failed / f"{job_id}.json"
    assert "duplicate" in (queue.failed / f"{job_id}.error").read_text()


def test_a_release_on_a_broken_disk_is_a_queue_error_and_keeps_the_job(queue: Queue) -> None:
    """An OS error while giving a job back (here records/ replaced by a file) is a QueueError
    (exit 69) naming the file; the job stays in claimed/ for recovery, nothing is lost."""
    queue.enqueue({})
    claim = drain(queue)[0]
    queue.records.rename(queue.dir / "records.away")
    queue.records.write_text("")
    with pytest.raises(QueueError, match="cannot release the job") as info:
        queue.release(claim, max_attempts=3, error="exit 1")
    assert info.value.exit_code == ExitCode.UNAVAILABLE
    assert claim.path.exists() and not claim.held


@pytest.mark.parametrize(
    ("settle", "where"), [("complete", "done"), ("fail", "failed"), ("give-up", "failed")]
)
def test_a_settle_that_cannot_write_its_record_still_moves_the_job(
    queue: Queue, monkeypatch: pytest.MonkeyPatch, settle: str, where: str
) -> None:
    """If the final record cannot be written (disk full, EIO), the finished job still leaves
    claimed/ (a rename needs no space) and the settle raises RecordNotWrittenError (a
    QueueError, exit 69) naming the record and where the job went: left in claimed/ with its
    running record, recover() would run it again."""
    job_id = queue.enqueue({})
    claim = drain(queue)[0]

    def disk_full(record: Record, held: object = None, *, durable: bool | None = None) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(queue.store.path(job_id)))

    monkeypatch.setattr(queue.store, "write", disk_full)
    monkeypatch.setattr(queue.store, "settle", disk_full)  # the settles' own write
    with pytest.raises(
        RecordNotWrittenError, match=f"records/{job_id}.json: cannot record"
    ) as info:
        if settle == "complete":
            queue.complete(claim)
        elif settle == "fail":
            queue.fail(claim, "exit 3")
        else:
            queue.release(claim, max_attempts=1, error="exit 3")
    assert info.value.exit_code == ExitCode.UNAVAILABLE
    assert not claim.held and names(queue.claimed) == []
    moved = (day_dir(queue) if where == "done" else queue.failed) / f"{job_id}.json"
    assert moved.exists() and str(moved) in info.value.message
    assert (Path(info.value.moved_to), info.value.state) == (
        moved,
        JobState.SUCCEEDED if where == "done" else JobState.FAILED,
    )
    monkeypatch.undo()
    assert queue.recover(stale_after=0, max_attempts=3) == []
    assert queue.claimer().claim() is None


def test_a_cleaned_away_day_bucket_is_recreated(queue: Queue) -> None:
    """If today's done/ bucket is removed while a runner works, the next completion makes it
    again instead of failing."""
    first, second = queue.enqueue({}), queue.enqueue({})
    claims = {c.job_id: c for c in drain(queue)}
    queue.complete(claims[first])
    (day_dir(queue) / f"{first}.json").unlink()
    day_dir(queue).rmdir()
    assert queue.complete(claims[second]) == day_dir(queue) / f"{second}.json"


# -- recover ---------------------------------------------------------------------------------


def _claim_and_hang(root: str, ready: Connection) -> None:
    queue = Queue(Path(root), durable=False)
    claim = queue.claimer().claim()
    ready.send(None if claim is None else claim.job_id)
    time.sleep(60)


@pytest.mark.slow
def test_sigkill_mid_job_then_recover_returns_it(queue: Queue) -> None:
    """A runner killed with SIGKILL mid-job leaves its claim; while it lives recover() leaves
    it alone, after its death recover() puts the job back in queue/ and the next claim is
    attempt 1 again: the job never ended, its runner crashed, which spends no attempt."""
    job_id = queue.enqueue({"n": 1})
    receiver, sender = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_claim_and_hang, args=(str(queue.dir), sender))
    child.start()
    try:
        assert receiver.recv() == job_id
        assert queue.recover(stale_after=0, max_attempts=3) == []  # alive, holding its lock
        assert queue.list_claims()[0].owner_alive is True
    finally:
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join()
    assert queue.list_claims()[0].owner_alive is False
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.job_id, r.reason, r.state, r.attempts) for r in recovered] == [
        (job_id, RecoverReason.OWNER_DEAD, JobState.QUEUED, 0)
    ]
    assert Path(recovered[0].destination) == queue.queue / f"{job_id}.json"
    owner = Owner.parse(recovered[0].owner)
    assert owner is not None and (owner.host, owner.pid) == (procinfo.hosttag(), child.pid)
    assert names(queue.claimed) == []
    assert drain(queue)[0].attempt == 1


def test_pid_reuse_is_detected_by_start_token(queue: Queue) -> None:
    """A claim naming a live pid (ours) with another start token belongs to a dead process
    whose pid was reused: recovered as pid-reused."""
    fake_claim(queue, "reused", f"{procinfo.hosttag()}-{os.getpid()}-1")
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.job_id, r.reason) for r in recovered] == [("reused", RecoverReason.PID_REUSED)]
    assert names(queue.queue) == ["reused.json"]


def test_dead_pid_is_recovered(queue: Queue) -> None:
    """A claim whose owner pid no longer exists is recovered as owner-dead."""
    fake_claim(queue, "orphan", f"{procinfo.hosttag()}-{dead_pid()}-1")
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.job_id, r.reason) for r in recovered] == [("orphan", RecoverReason.OWNER_DEAD)]
    record = queue.store.read("orphan")
    assert record is not None and record.state is JobState.QUEUED and "died" in (record.error or "")


def test_live_owner_in_this_process_is_left_alone(queue: Queue) -> None:
    """Our own unsettled claim is never recovered (its lock is held)."""
    queue.enqueue({})
    claim = drain(queue)[0]
    assert queue.recover(stale_after=0, max_attempts=3) == []
    assert claim.path.exists()


def test_other_host_claims_recover_only_when_stale(queue: Queue) -> None:
    """An owner on another host cannot be checked: only age counts (stale_after)."""
    other = "00000000" if procinfo.hosttag() != "00000000" else "11111111"
    fake_claim(queue, "far", f"{other}-{os.getpid()}-{procinfo.self_token()}")
    assert queue.recover(stale_after=3600, max_attempts=3) == []
    assert queue.list_claims()[0].owner_alive is None
    later = time.time() + 7200
    recovered = queue.recover(stale_after=3600, max_attempts=3, now=later)
    assert [(r.job_id, r.reason) for r in recovered] == [("far", RecoverReason.STALE)]


def test_recover_at_the_last_attempt_runs_it_again(queue: Queue) -> None:
    """A dead owner's job at its last attempt goes back to queue/ with that attempt taken
    back: a crash never spends a job's attempts (the job never ended)."""
    fake_claim(queue, "spent", f"{procinfo.hosttag()}-{dead_pid()}-1", attempts=3)
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.state, Path(r.destination), r.attempts) for r in recovered] == [
        (JobState.QUEUED, queue.queue / "spent.json", 2)
    ]


def test_recover_finishes_a_success_instead_of_rerunning(queue: Queue) -> None:
    """Owner died after recording success but before moving the file: the job goes to done/,
    not back to queue/."""
    fake_claim(queue, "finished", f"{procinfo.hosttag()}-{dead_pid()}-1")
    queue.store.write(Record("finished", JobState.SUCCEEDED, 1, "q", "u"))
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.state, Path(r.destination)) for r in recovered] == [
        (JobState.SUCCEEDED, day_dir(queue) / "finished.json")
    ]


def test_recover_finishes_a_failure_instead_of_rerunning(queue: Queue) -> None:
    """Owner died after recording a failure for good but before moving the file, with
    attempts left: the job goes to failed/ with its recorded error (not back to queue/), and
    the failed record is kept as it is."""
    fake_claim(queue, "broken", f"{procinfo.hosttag()}-{dead_pid()}-1")
    failed = Record("broken", JobState.FAILED, 1, "q", "u", error="exit 3")
    queue.store.write(failed)
    assert [
        (r.state, Path(r.destination))
        for r in queue.recover(stale_after=3600, max_attempts=3, dry_run=True)
    ] == [(JobState.FAILED, queue.failed / "broken.json")]
    recovered = queue.recover(stale_after=3600, max_attempts=3)
    assert [(r.state, Path(r.destination), r.attempts) for r in recovered] == [
        (JobState.FAILED, queue.failed / "broken.json", 1)
    ]
    assert (queue.failed / "broken.error").read_text() == "exit 3\n"
    assert queue.store.read("broken") == failed
    assert names(queue.queue) == names(queue.claimed) == []


def test_dry_run_moves_nothing(queue: Queue) -> None:
    """dry_run reports what would be recovered, and where to, without touching anything."""
    path = fake_claim(queue, "maybe", f"{procinfo.hosttag()}-{dead_pid()}-1")
    recovered = queue.recover(stale_after=3600, max_attempts=3, dry_run=True)
    assert [(r.job_id, Path(r.destination)) for r in recovered] == [
        ("maybe", queue.queue / "maybe.json")
    ]
    assert path.exists() and names(queue.queue) == []


def test_recover_sweeps_our_stale_temp_files_only(queue: Queue) -> None:
    """Temp files a killed lanekit process left in tmp/ over an hour ago are removed; fresh
    ones and producers' own files are not."""
    old, fresh, foreign = queue.tmp / ".rec.1.1", queue.tmp / ".rec.1.2", queue.tmp / "x.partial"
    for path in (old, fresh, foreign):
        path.write_bytes(b"")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    os.utime(foreign, (time.time() - 7200, time.time() - 7200))
    queue.recover(stale_after=3600, max_attempts=3, dry_run=True)
    assert old.exists()
    queue.recover(stale_after=3600, max_attempts=3)
    assert not old.exists() and fresh.exists() and foreign.exists()


def _recover_worker(root: str, barrier: Barrier, out: Connection) -> None:
    queue = Queue(Path(root), durable=False)
    barrier.wait()
    out.send([r.job_id for r in queue.recover(stale_after=3600, max_attempts=5)])


@pytest.mark.slow
def test_concurrent_recoverers_never_both_act(queue: Queue) -> None:
    """Four processes recovering the same dead claims at once: each claim is recovered exactly
    once in total, and every job is back in queue/."""
    pid = dead_pid()
    ids = [f"dead{n}" for n in range(40)]
    for job_id in ids:
        fake_claim(queue, job_id, f"{procinfo.hosttag()}-{pid}-1")
    barrier = FORK.Barrier(4)
    pipes = [FORK.Pipe(duplex=False) for _ in range(4)]
    workers = [
        FORK.Process(target=_recover_worker, args=(str(queue.dir), barrier, send))
        for _, send in pipes
    ]
    for worker in workers:
        worker.start()
    results = [receive.recv() for receive, _ in pipes]
    for worker in workers:
        worker.join()
    recovered = Counter(job_id for result in results for job_id in result)
    assert recovered == Counter(ids)
    assert names(queue.queue) == sorted(f"{i}.json" for i in ids)
    assert names(queue.claimed) == []


# -- many processes --------------------------------------------------------------------------


def _drain_worker(root: str, barrier: Barrier, out: Connection, hold: float) -> None:
    queue = Queue(Path(root), durable=False)
    claimer = queue.claimer()
    barrier.wait()
    taken = []
    while (claim := claimer.claim()) is not None:
        taken.append(claim.job_id)
        if hold:
            time.sleep(hold)
        queue.complete(claim)
    out.send(taken)


def run_drainers(queue: Queue, workers: int, hold: float = 0.0) -> list[list[str]]:
    """`workers` processes claim and complete until the queue is empty; what each took."""
    barrier = FORK.Barrier(workers)
    pipes = [FORK.Pipe(duplex=False) for _ in range(workers)]
    processes = [
        FORK.Process(target=_drain_worker, args=(str(queue.dir), barrier, send, hold))
        for _, send in pipes
    ]
    for process in processes:
        process.start()
    taken = [receive.recv() for receive, _ in pipes]
    for process in processes:
        process.join()
        assert process.exitcode == 0
    return taken


@pytest.mark.slow
@given(jobs=st.integers(min_value=1, max_value=60), workers=st.integers(min_value=1, max_value=6))
@settings(max_examples=6, deadline=None)
def test_every_job_is_claimed_exactly_once(jobs: int, workers: int) -> None:
    """Any number of processes draining any number of jobs: every job is claimed and completed
    exactly once, and nothing is left behind."""
    with tempfile.TemporaryDirectory() as root:
        queue = Queue(Path(root) / "q", durable=False)
        queue.ensure()
        ids = [queue.enqueue({"n": n}) for n in range(jobs)]
        taken = run_drainers(queue, workers)
        assert Counter(i for t in taken for i in t) == Counter(ids)
        assert names(day_dir(queue)) == sorted(f"{i}.json" for i in ids)
        assert names(queue.queue) == names(queue.claimed) == []


@pytest.mark.slow
def test_32_worker_drain_starves_no_one(queue: Queue) -> None:
    """32 processes start together on 128 jobs that each take a moment: every process gets at
    least one job (no herd at the head of the queue), and no job runs twice."""
    ids = [queue.enqueue({"n": n}) for n in range(128)]
    taken = run_drainers(queue, 32, hold=0.05)
    assert all(len(t) >= 1 for t in taken), [len(t) for t in taken]
    assert Counter(i for t in taken for i in t) == Counter(ids)


# -- check -----------------------------------------------------------------------------------


def build(root: Path) -> Path:
    """Queue directories made by hand (so check() runs on exactly this layout)."""
    root.mkdir(mode=0o700)
    for sub in SUBDIRS:
        (root / sub).mkdir(mode=0o700)
    return root


def test_ensure_creates_private_directories(tmp_path: Path) -> None:
    """ensure() creates every directory with mode 0700 and the queue passes check()."""
    queue = Queue(tmp_path / "new" / "q")
    queue.ensure()
    for sub in SUBDIRS:
        assert ((queue.dir / sub).stat().st_mode & 0o777) == 0o700
    queue.check()
    assert names(queue.tmp) == []


def test_missing_directory_is_named(tmp_path: Path) -> None:
    """A missing subdirectory is a QueueError (exit 69) naming it."""
    root = build(tmp_path / "q")
    (root / "claimed").rmdir()
    with pytest.raises(QueueError, match=r"q/claimed: queue directory is missing") as info:
        Queue(root).check()
    assert info.value.exit_code == ExitCode.UNAVAILABLE
    assert "lanekit apply" in info.value.hint


def test_cross_device_directory_is_refused(tmp_path: Path) -> None:
    """claimed/ on another filesystem (a symlink into /dev/shm) is refused: a rename across
    filesystems is a copy, not an atomic claim."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on a filesystem other than the work dir")
    root = build(tmp_path / "q")
    (root / "claimed").rmdir()
    with tempfile.TemporaryDirectory(dir=shm) as elsewhere:
        (root / "claimed").symlink_to(elsewhere)
        with pytest.raises(QueueError, match=r"claimed: is a symlink to .*different filesystem"):
            Queue(root).check()
        with pytest.raises(QueueError):
            Queue(root).enqueue({})
        assert list(Path(elsewhere).iterdir()) == []


def test_symlinked_directory_is_refused_even_on_the_same_filesystem(tmp_path: Path) -> None:
    """A queue directory must be a real directory inside the queue, not a link elsewhere."""
    root = build(tmp_path / "q")
    (root / "tmp").rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (root / "tmp").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(QueueError, match=r"tmp: is a symlink to .*must be real directories"):
        Queue(root).check()


def test_a_file_where_a_directory_belongs(tmp_path: Path) -> None:
    """queue/ being a file is refused by name."""
    root = build(tmp_path / "q")
    (root / "queue").rmdir()
    (root / "queue").write_text("")
    with pytest.raises(QueueError, match="q/queue: not a directory"):
        Queue(root).check()


@pytest.mark.parametrize(
    ("mode", "who"), [(0o770, "its group"), (0o707, "others"), (0o777, "group and others")]
)
def test_directories_writable_by_others_are_refused(tmp_path: Path, mode: int, who: str) -> None:
    """A directory others can write to lets them add, take or replace jobs: refused, with the
    chmod that fixes it."""
    root = build(tmp_path / "q")
    (root / "failed").chmod(mode)
    with pytest.raises(QueueError, match=f"failed: writable by {who}") as info:
        Queue(root).check()
    assert info.value.hint == f"chmod go-w {root / 'failed'}"


def test_directories_owned_by_someone_else_are_refused(tmp_path: Path) -> None:
    """A directory owned by another user is refused (its owner controls it)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    root = build(tmp_path / "q")
    os.chown(root / "done", 12345, -1)
    with pytest.raises(QueueError, match="done: owned by uid 12345"):
        Queue(root).check()


@pytest.mark.parametrize(
    ("folder", "engine"),
    [("Dropbox", "Dropbox"), ("Library/Mobile Documents/com~apple~CloudDocs", "iCloud Drive")],
)
def test_sync_engine_folders_are_refused(tmp_path: Path, folder: str, engine: str) -> None:
    """A queue inside a sync engine's folder is refused by name."""
    parent = tmp_path / folder
    parent.mkdir(parents=True)
    with pytest.raises(QueueError, match=engine):
        Queue(parent / "q").ensure()


def test_a_passed_check_is_remembered_for_the_process(queue: Queue) -> None:
    """check() is cheap on repeat (the runner calls it every run): once passed, it is not
    redone in this process; ensure() checks again."""
    (queue.dir / "failed").chmod(0o770)
    Queue(queue.dir).check()
    with pytest.raises(QueueError):
        queue.ensure()
    (queue.dir / "failed").chmod(0o700)


def test_probe_leaves_no_trace(tmp_path: Path) -> None:
    """The probe file renamed through every directory is removed again."""
    root = build(tmp_path / "q")
    Queue(root).check()
    assert all(list((root / sub).iterdir()) == [] for sub in SUBDIRS)


# -- status ----------------------------------------------------------------------------------


def test_counts_and_claims(queue: Queue) -> None:
    """counts() reports every directory and the oldest ages; list_claims() the owners."""
    for n in range(5):
        queue.enqueue({"n": n})
    claims = drain(queue)
    queue.complete(claims[0])
    queue.fail(claims[1], "exit 1")
    queue.release(claims[2], max_attempts=3)
    counts = queue.counts()
    assert (counts.queued, counts.delayed, counts.claimed, counts.done, counts.failed) == (
        1,
        0,
        2,
        1,
        1,
    )
    assert counts.oldest_queued_age is not None and counts.oldest_queued_age >= 0
    assert counts.oldest_claim_age is not None and counts.oldest_claim_age >= 0
    infos = queue.list_claims()
    assert sorted(i.job_id for i in infos) == sorted(c.job_id for c in claims[3:])
    assert all(
        (i.pid, i.token, i.host, i.owner_alive)
        == (os.getpid(), procinfo.self_token(), procinfo.hosttag(), True)
        for i in infos
    )


def test_a_retried_job_waits_from_its_retry(tmp_path: Path) -> None:
    """A job that failed and is retried three days after its enqueue waits from the retry
    (counts' oldest age, which queue.backlog reads), generated id or not; a job enqueued before
    the retry and still waiting is then the oldest."""
    now = [1_800_000_000.0]
    queue = Queue(tmp_path / "q", clock=lambda: now[0])
    queue.ensure()
    generated = queue.enqueue({"n": 1})
    custom = queue.enqueue({"n": 2}, "custom-id")
    os.utime(queue.queue / "custom-id.json", (now[0], now[0]))
    claimer = queue.claimer()
    for _ in range(2):
        claim = claimer.claim()
        assert claim is not None
        queue.fail(claim, "exit 1")
    now[0] += 3 * 86400
    queue.retry(generated)
    queue.retry(custom)
    now[0] += 60
    assert queue.counts().oldest_queued_age == 60
    now[0] -= 600
    waiting = queue.enqueue({"n": 3})
    now[0] += 600
    assert queue.counts().oldest_queued_age == 600
    assert waiting not in {generated, custom}


def test_counts_of_an_empty_queue(queue: Queue) -> None:
    """Empty is zeros and no ages."""
    counts = queue.counts()
    assert (counts.queued, counts.claimed, counts.oldest_queued_age, counts.oldest_claim_age) == (
        0,
        0,
        None,
        None,
    )


def test_locate(queue: Queue) -> None:
    """locate() finds a job in whichever directory holds it."""
    queued = queue.enqueue({})
    assert queue.locate(queued) is not None
    claim = drain(queue)[0]
    where = queue.locate(queued)
    assert where is not None and (where.state, Path(where.where)) == (JobState.RUNNING, claim.path)
    queue.complete(claim)
    where = queue.locate(queued)
    assert where is not None and where.state is JobState.SUCCEEDED
    assert queue.locate("missing") is None


def test_start_up_probe_refuses_a_volume_without_no_replace_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exFAT/FAT-like volume (no RENAME_EXCL, no hard links, but plain rename works) is
    refused by the start-up probe with the real cause, instead of passing the probe and then
    failing every claim: the probe uses the no-replace rename claims use."""
    from lanekit.errors import QueueError
    from lanekit.system import fsops

    def no_links(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM), src, None, dst)

    # The volume as macOS's msdosfs/exfat answer: renameatx_np(RENAME_EXCL) is ENOTSUP, so the
    # strategy falls back to link+unlink, and link(2) is refused.
    monkeypatch.setattr(
        fsops, "_selected", fsops.NoReplaceRename("renameatx_np", lambda s, d: errno.ENOTSUP)
    )
    monkeypatch.setattr(fsops, "link_unlink", no_links)
    queue = Queue(tmp_path / "q")
    with pytest.raises(QueueError) as caught:
        queue.ensure()
    assert "cannot rename without replacing" in caught.value.message
    assert "exFAT" in caught.value.message
    assert "APFS" in caught.value.hint
    assert not list((tmp_path / "q").rglob(".probe-*")), "the probe file is cleaned up"


def test_start_up_probe_refuses_a_volume_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A volume that renames without replacing but has no hard links is refused at start-up
    with the cause: each claim's running mark is a hard link in claimed/."""
    from lanekit.errors import QueueError

    real_link = os.link

    def no_links(src: str, dst: str, **kwargs: object) -> None:
        if ".probe-" in str(src):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), src, None, dst)
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", no_links)
    queue = Queue(tmp_path / "q")
    with pytest.raises(QueueError) as caught:
        queue.ensure()
    assert "no hard links" in caught.value.message
    assert str(queue.claimed) in caught.value.message
    assert "APFS" in caught.value.hint
    assert not list((tmp_path / "q").rglob(".probe-*")), "the probe file is cleaned up"
    monkeypatch.undo()
    queue.ensure()  # a volume with hard links passes, and leaves nothing behind
    assert not list((tmp_path / "q").rglob(".probe-*"))


@given(
    names=st.lists(
        st.text(alphabet="0123456789-ab.", min_size=1, max_size=12), unique=True, max_size=600
    ),
    count=st.integers(min_value=1, max_value=40),
    order=st.sampled_from(["as-drawn", "sorted", "reversed"]),
)
def test_oldest_is_nsmallest_whatever_the_order(names: list[str], count: int, order: str) -> None:
    """The first listing's window is exactly heapq.nsmallest, in any listing order (a
    directory's order is the filesystem's: ext4 hash order, or sorted, or anything)."""
    import heapq

    from lanekit.queue.directory.claim import oldest

    if order == "sorted":
        names = sorted(names)
    elif order == "reversed":
        names = sorted(names, reverse=True)
    assert oldest(names, count) == heapq.nsmallest(count, names)


def test_oldest_of_a_big_generated_listing_is_nsmallest() -> None:
    """100,000 generated ids in a shuffled order, the claimer's window of 1,024."""
    import heapq
    import random

    rng = random.Random(7)
    names = [f"{rng.randrange(10**19):020d}-{n:07d}-{n:08x}.json" for n in range(100_000)]
    rng.shuffle(names)
    from lanekit.queue.directory.claim import oldest

    assert oldest(names, 1024) == heapq.nsmallest(1024, names)
