"""The JobQueue contract (lanekit.queue.protocol): what every queue backend must do, asked only
through the protocol. Parametrized over the backends (BACKENDS: the directory queue, the
in-memory one, and PostgreSQL on a real server the suite starts, tests/pgserver.py).

Crashes are real for the directory queue: a forked process claims and dies without settling
(os._exit), so its owner is dead by the same test the runner's recovery uses. The memory
queue lives in one process, so its owner's death is said (MemoryQueue.owner_gone). A postgres
claim is also taken by a forked process (with a session of its own) that dies; its lease is
then made to lapse on the server (as its 30 s would), which is how a dead owner is known there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from crashes import Say, in_dying_process
from lanekit.errors import QueueError, UsageError
from lanekit.queue import open_queue
from lanekit.queue.directory.backend import Queue
from lanekit.queue.memory import MemoryQueue
from lanekit.queue.model import Claim, JobExistsError, Verdict
from lanekit.queue.observed import ClaimState
from lanekit.queue.outcome import Outcome
from lanekit.queue.policy import DEFER_SECONDS
from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState
from pgserver import PgServer


@dataclass(frozen=True)
class Backend:
    """How the suite makes one backend's queue and crashes one of its owners."""

    make: Callable[..., JobQueue]
    """A fresh queue (not yet ensured) under the test's tmp_path (given first), then the
    values of the fixtures `needs` names."""
    crash: Callable[[JobQueue, Outcome | None], str]
    """Claim one job in an owner that dies without settling it (with `outcome`, recorded
    first, as its watcher would); the claimed id once the owner is gone."""
    needs: tuple[str, ...] = ()
    """Fixtures `make` needs (a server, a schema of the test's own)."""


def _crash_a_process(queue: JobQueue, outcome: Outcome | None) -> str:
    """Fork a process that claims one job and dies without settling it (as under SIGKILL: no
    cleanup runs); returns the claimed id once the process is reaped."""

    def work(say: Say) -> None:
        claim = queue.claimer().claim()
        if claim is not None and outcome is not None:
            queue.record_outcome(claim, outcome)
        say("" if claim is None else claim.job_id)

    return in_dying_process(work)


def _crash_an_owner(queue: JobQueue, outcome: Outcome | None) -> str:
    """The memory queue lives in this process: its owner's end is said, not forked."""
    assert isinstance(queue, MemoryQueue)
    claim = queue.claimer().claim()
    if claim is None:
        return ""
    if outcome is not None:
        queue.record_outcome(claim, outcome)
    queue.owner_gone(claim.owner)
    return claim.job_id


def _directory(root: Path) -> JobQueue:
    """The directory queue, no fsyncs, retries straight back (no backoff wait)."""
    queue: JobQueue = Queue(root / "q", durable=False, backoff_base=0)
    return queue


def _memory(root: Path) -> JobQueue:
    """The in-memory queue, its claims' files under the test's tmp_path."""
    return MemoryQueue(backoff_base=0, scratch=root)


def _postgres(root: Path, server: PgServer, schema: str) -> JobQueue:
    """A postgres queue in a schema of the test's own, migrated; retries straight back."""
    queue = PostgresQueue(
        PgLocation("contract", server.dsn, schema=schema),
        backoff_base=0,
        spool=root / "spool",
    )
    queue.migrate()
    return queue


def _crash_a_lease_holder(queue: JobQueue, outcome: Outcome | None) -> str:
    """A forked process claims (through a session of its own) and dies; then its lease is made
    to lapse on the server, as it would 30 s later."""
    assert isinstance(queue, PostgresQueue)
    taken = _crash_a_process(queue, outcome)
    if taken:
        expire_lease(queue, taken)
    return taken


def expire_lease(queue: PostgresQueue, job_id: str) -> None:
    """Make the job's lease lapse now, on the server's clock (what time would do)."""
    queue.session.rows(
        f"UPDATE \"{queue.location.schema}\".jobs SET lease_expires = now() - interval '1 s' "
        "WHERE queue = %s AND id = %s",
        (queue.location.queue, job_id),
    )


BACKENDS: dict[str, Backend] = {
    "directory": Backend(_directory, _crash_a_process),
    "memory": Backend(_memory, _crash_an_owner),
    "postgres": Backend(_postgres, _crash_a_lease_holder, ("pg_server", "pg_schema")),
}
"""Every backend the contract runs over."""


@pytest.fixture(params=sorted(BACKENDS))
def backend_kind(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn."""
    return BACKENDS[request.param]


@pytest.fixture
def backend(backend_kind: Backend, tmp_path: Path, request: pytest.FixtureRequest) -> JobQueue:
    """A fresh, ensured queue of each backend."""
    needed = [request.getfixturevalue(name) for name in backend_kind.needs]
    queue = backend_kind.make(tmp_path, *needed)
    queue.ensure()
    return queue


@pytest.fixture
def claim_in_dead_process(backend_kind: Backend) -> Callable[..., str]:
    """Claim one job in an owner that dies (see Backend.crash); the claimed id."""

    def crash(queue: JobQueue, outcome: Outcome | None = None) -> str:
        taken = backend_kind.crash(queue, outcome)
        assert taken, "the owner claimed nothing"
        return taken

    return crash


def claim_one(queue: JobQueue, lane: str | None = None) -> Claim:
    """The next claim (the test fails if there is none)."""
    claim = queue.claimer(lane=lane).claim()
    assert claim is not None
    return claim


def test_the_directory_queue_is_a_job_queue(tmp_path: Path) -> None:
    """open_queue hands out a JobQueue (mypy checks the assignment; this checks it runs)."""
    queue: JobQueue = open_queue(tmp_path / "q")
    assert queue.missing() is not None
    queue.ensure()
    assert queue.missing() is None
    assert str(tmp_path / "q") in queue.where


def test_the_factory_picks_the_backend_from_the_location(memory_queue: str) -> None:
    """`memory:NAME` is the process's one memory queue of that name (every caller shares it);
    anything else is a queue directory."""
    queue = open_queue(memory_queue)
    assert isinstance(queue, MemoryQueue)
    assert open_queue(memory_queue) is queue
    assert queue.where == memory_queue
    job_id = queue.enqueue({})
    assert open_queue(memory_queue).locate(job_id) is not None


def test_a_claim_hands_the_job_to_its_command_as_a_file(backend: JobQueue) -> None:
    """The claim carries the id, attempt 1, and a file holding the payload ({job})."""
    job_id = backend.enqueue({"file": "a.txt"})
    claim = claim_one(backend, lane="work")
    assert (claim.job_id, claim.attempt) == (job_id, 1)
    assert json.loads(claim.path.read_bytes()) == {"file": "a.txt"}
    assert backend.claimer().claim() is None


def test_every_job_is_claimed_exactly_once(backend: JobQueue) -> None:
    """Two claimers interleaved take every job once between them."""
    ids = {backend.enqueue({"n": n}) for n in range(30)}
    first, second = backend.claimer(), backend.claimer()
    taken: list[str] = []
    while True:
        got = [c for c in (first.claim(), second.claim()) if c is not None]
        if not got:
            break
        for claim in got:
            taken.append(claim.job_id)
            backend.settle(claim, Verdict.succeeded())
    assert sorted(taken) == sorted(ids)


def test_success_is_recorded_once_and_guards_the_id(backend: JobQueue) -> None:
    """A success says SUCCEEDED, counts as done, and the id can never be enqueued again."""
    backend.enqueue({}, job_id="report-7")
    settled = backend.settle(claim_one(backend), Verdict.succeeded())
    assert (settled.job_id, settled.state) == ("report-7", JobState.SUCCEEDED)
    assert backend.succeeded("report-7")
    assert backend.counts().done == 1
    with pytest.raises(JobExistsError, match="already succeeded"):
        backend.enqueue({}, job_id="report-7")
    view = backend.job("report-7")
    assert view is not None and view.state is JobState.SUCCEEDED


def test_a_failed_attempt_retries_until_the_attempts_are_spent(backend: JobQueue) -> None:
    """FAILED goes back to run again, then fails for good at max_attempts; attempts count
    every start; retry gives all attempts back."""
    backend.enqueue({}, job_id="flaky")
    first = claim_one(backend)
    again = backend.settle(first, Verdict.failed("exit 1", max_attempts=2))
    assert again.state is JobState.QUEUED
    second = claim_one(backend)
    assert second.attempt == 2
    final = backend.settle(second, Verdict.failed("exit 1", max_attempts=2))
    assert final.state is JobState.FAILED
    assert backend.failed_ids() == ["flaky"]
    assert not backend.succeeded("flaky")
    backend.retry("flaky")
    assert claim_one(backend).attempt == 1


def test_a_stopped_run_spends_no_attempt(backend: JobQueue) -> None:
    """STOPPED puts the job back at once and the next claim is the same attempt number."""
    backend.enqueue({}, job_id="stopped")
    settled = backend.settle(claim_one(backend), Verdict.stopped("signal"))
    assert settled.state is JobState.QUEUED
    assert claim_one(backend).attempt == 1


def test_a_deferred_job_waits_out_of_queue_and_spends_no_attempt(backend: JobQueue) -> None:
    """DEFERRED (the lane cannot run it now) keeps the job queued but not claimable for
    DEFER_SECONDS at least, even without a retry backoff, and spends no attempt."""
    backend.enqueue({}, job_id="deferred")
    before = time.time()
    settled = backend.settle(claim_one(backend), Verdict.deferred("cannot start 'tool'"))
    assert settled.state is JobState.QUEUED
    assert settled.not_before is not None and settled.not_before >= before + DEFER_SECONDS - 1
    assert backend.claimer(lane="t").claim() is None
    assert backend.counts().delayed == 1
    backend.requeue("deferred")
    assert claim_one(backend).attempt == 1


def test_gave_up_fails_for_good(backend: JobQueue) -> None:
    """GAVE_UP fails the job whatever attempts are left."""
    backend.enqueue({}, job_id="hopeless")
    settled = backend.settle(claim_one(backend), Verdict.gave_up("no such file"))
    assert settled.state is JobState.FAILED
    assert backend.counts().failed == 1


def test_a_claim_is_settled_once(backend: JobQueue) -> None:
    """Settling a settled claim is refused, and changes nothing."""
    backend.enqueue({})
    claim = claim_one(backend)
    backend.settle(claim, Verdict.succeeded())
    with pytest.raises(QueueError, match="already settled"):
        backend.settle(claim, Verdict.failed("late", max_attempts=3))
    assert backend.counts().done == 1


def test_settle_and_claim_settles_then_hands_out_the_next_job(backend: JobQueue) -> None:
    """A runner going on to its next job: each step settles its claim (where the job went, as
    settle says) and hands out the next job, until none is left; two claimers chaining side
    by side take every job once."""
    ids = [backend.enqueue({"n": n}, job_id=f"job-{n:02}") for n in range(12)]
    first, second = backend.claimer(lane="work"), backend.claimer(lane="work")
    held = [first.claim(), second.claim()]
    taken: list[str] = []
    while any(held):
        for at, claimer in enumerate((first, second)):
            claim = held[at]
            if claim is None:
                continue
            taken.append(claim.job_id)
            assert json.loads(claim.path.read_bytes()) == {"n": int(claim.job_id[4:])}
            settled, held[at] = claimer.settle_and_claim(claim, Verdict.succeeded())
            assert (settled.job_id, settled.state) == (claim.job_id, JobState.SUCCEEDED)
            assert not claim.held
    assert sorted(taken) == ids
    assert backend.counts().done == 12
    assert all(backend.succeeded(job_id) for job_id in ids)


def test_settle_and_claim_of_a_failure_puts_the_job_back_for_a_later_claim(
    backend: JobQueue,
) -> None:
    """A failed attempt settled by settle_and_claim goes back (attempts counted) and is run
    again, by the next claim that step made or by a later one."""
    backend.enqueue({}, job_id="flaky")
    backend.enqueue({}, job_id="other")
    claimer = backend.claimer()
    first = claimer.claim()
    assert first is not None and first.job_id == "flaky"
    settled, after = claimer.settle_and_claim(first, Verdict.failed("exit 1", max_attempts=3))
    assert settled.state is JobState.QUEUED
    assert after is not None
    seen = {after.job_id: after.attempt}
    settled, last = claimer.settle_and_claim(after, Verdict.succeeded())
    assert settled.state is JobState.SUCCEEDED
    last = last or claimer.claim()
    assert last is not None
    seen[last.job_id] = last.attempt
    assert seen == {"flaky": 2, "other": 1}
    backend.settle(last, Verdict.succeeded())
    assert claimer.claim() is None


def test_settle_and_claim_of_a_settled_claim_claims_nothing(backend: JobQueue) -> None:
    """A claim settled already is refused as settle refuses it, and no job is claimed."""
    backend.enqueue({}, job_id="a")
    backend.enqueue({}, job_id="b")
    claimer = backend.claimer()
    claim = claimer.claim()
    assert claim is not None
    backend.settle(claim, Verdict.succeeded())
    with pytest.raises(QueueError, match="already settled"):
        claimer.settle_and_claim(claim, Verdict.succeeded())
    counts = backend.counts()
    assert (counts.claimed, counts.queued) == (0, 1)


def test_a_live_claim_is_left_alone_and_reported_live(backend: JobQueue) -> None:
    """A claim this process holds is LIVE and recover() does not take it."""
    backend.enqueue({})
    claim = claim_one(backend)
    assert [view.state for view in backend.claims()] == [ClaimState.LIVE]
    assert backend.recover(stale_after=0, max_attempts=3) == []
    backend.settle(claim, Verdict.succeeded())
    assert backend.claims() == []


def test_a_dead_owners_claim_is_recovered_without_spending_an_attempt(
    backend: JobQueue, claim_in_dead_process: Callable[..., str]
) -> None:
    """A process that dies holding a claim: the claim is STRANDED, recover() gives the job
    back (to queue), and the next claim is attempt 1 again: the attempt was cut short by a
    crash of lanekit's, not ended by the job, so it is not counted."""
    backend.enqueue({}, job_id="crashy")
    assert claim_in_dead_process(backend) == "crashy"
    assert [view.state for view in backend.claims()] == [ClaimState.STRANDED]
    [item] = backend.recover(stale_after=3600, max_attempts=3)
    assert (item.job_id, item.state, item.attempts) == ("crashy", JobState.QUEUED, 0)
    assert claim_one(backend).attempt == 1


def test_a_crash_at_the_last_attempt_never_fails_the_job(
    backend: JobQueue, claim_in_dead_process: Callable[..., str]
) -> None:
    """Recovered at its last attempt, the job runs again: crashes never spend attempts."""
    backend.enqueue({}, job_id="last")
    claim_in_dead_process(backend)
    [item] = backend.recover(stale_after=3600, max_attempts=1)
    assert item.state is JobState.QUEUED
    assert backend.failed_ids() == []
    assert claim_one(backend).attempt == 1


def test_a_job_that_finished_after_its_owner_died_is_not_run_again(
    backend: JobQueue, claim_in_dead_process: Callable[..., str]
) -> None:
    """The watcher recorded exit 0 before the owner died: recover() settles the job as
    succeeded by that status (the guard then holds), never back into the queue."""
    backend.enqueue({}, job_id="finished")
    claim_in_dead_process(backend, Outcome(exit=0))
    [item] = backend.recover(stale_after=3600, max_attempts=3)
    assert (item.state, item.exit) == (JobState.SUCCEEDED, 0)
    assert backend.succeeded("finished")
    assert backend.claimer().claim() is None


def test_recover_dry_run_moves_nothing(
    backend: JobQueue, claim_in_dead_process: Callable[..., str]
) -> None:
    """dry_run reports the claim it would give back and leaves it stranded."""
    backend.enqueue({})
    claim_in_dead_process(backend)
    assert len(backend.recover(stale_after=3600, max_attempts=3, dry_run=True)) == 1
    assert [view.state for view in backend.claims()] == [ClaimState.STRANDED]


def test_counts_pages_and_jobs_agree(backend: JobQueue) -> None:
    """counts, page and job tell one story: newest first, each job once, in its state."""
    ids = [backend.enqueue({"n": n}) for n in range(5)]
    backend.settle(claim_one(backend), Verdict.succeeded())
    counts = backend.counts()
    assert (counts.queued, counts.done, counts.claimed) == (4, 1, 0)
    page = backend.page(1, 3)
    assert page.meta.total == 5
    assert [record.job_id for record in page.items] == ids[::-1][:3]
    queued = backend.page(1, 0, JobState.QUEUED)
    assert {record.job_id for record in queued.items} == set(ids[1:])
    view = backend.job(ids[1])
    assert view is not None and view.state is JobState.QUEUED
    assert backend.job("no-such-job") is None


def test_a_job_for_later_waits_for_its_time(backend: JobQueue) -> None:
    """enqueue(not_before=later) keeps the job out of reach until then: not claimed, counted
    delayed, listed (filter `delayed`) with its due time and a record that says queued;
    `requeue` makes it due now. A not_before already past queues the job as usual."""
    later = time.time() + 3600
    backend.enqueue({"n": 1}, job_id="later", not_before=later)
    backend.enqueue({"n": 2}, job_id="past", not_before=time.time() - 60)
    assert claim_one(backend).job_id == "past"
    assert backend.claimer().claim() is None
    assert backend.counts().delayed == 1
    waiting = backend.page(1, 0, JobState.QUEUED, delayed=True)
    assert [record.job_id for record in waiting.items] == ["later"]
    assert waiting.items[0].state is JobState.QUEUED
    due = waiting.not_before["later"]
    assert due.endswith("Z") and due[:16] == time.strftime("%Y-%m-%dT%H:%M", time.gmtime(later))
    assert waiting.state_of(waiting.items[0]) == "delayed"
    assert backend.page(1, 0, JobState.QUEUED, delayed=False).items == []
    assert backend.page(1, 0).not_before == {"later": due}
    with pytest.raises(JobExistsError):
        backend.enqueue({"n": 3}, job_id="later")
    backend.requeue("later")
    assert claim_one(backend).job_id == "later"


def test_a_jobs_output_file_goes_with_the_job(backend: JobQueue) -> None:
    """output_path names one file per job (or None: the backend keeps none); purging the
    job removes the file with it."""
    backend.enqueue({}, job_id="talker")
    where = backend.output_path("talker")
    assert where is not None and where != backend.output_path("other")
    Path(where).parent.mkdir(parents=True, exist_ok=True)
    Path(where).write_text("--- attempt 1 ---\nhello\n")
    backend.settle(claim_one(backend), Verdict.succeeded())
    backend.purge(keep_done=0, keep_failed=0, now=time.time() + 2 * 86400)
    assert not Path(where).exists()
    with pytest.raises(UsageError):
        backend.output_path("../escape")


def test_cancel_takes_a_waiting_job_never_a_running_one(backend: JobQueue) -> None:
    """cancel fails a queued job with reason `cancelled`; a running one is refused."""
    backend.enqueue({}, job_id="wait")
    backend.enqueue({}, job_id="run")
    moved = backend.cancel("wait")
    assert moved.state is JobState.FAILED
    claim = claim_one(backend)
    assert claim.job_id == "run"
    with pytest.raises(UsageError, match="running"):
        backend.cancel("run")
    backend.settle(claim, Verdict.succeeded())


def test_a_consistent_queue_has_no_contradictions(backend: JobQueue) -> None:
    """After ordinary work, no record contradicts where its job is, and each success is one
    finished copy."""
    for n in range(3):
        backend.enqueue({"n": n}, job_id=f"j{n}")
    backend.settle(claim_one(backend), Verdict.succeeded())
    backend.settle(claim_one(backend), Verdict.failed("x", max_attempts=1))
    assert backend.contradictions() == []
    assert sorted(backend.success_copies().values()) == [1]


def test_purge_keeps_the_guard(backend: JobQueue) -> None:
    """Purging a finished job removes it, and its id still cannot run again."""
    backend.enqueue({}, job_id="old")
    backend.settle(claim_one(backend), Verdict.succeeded())
    purged = backend.purge(keep_done=0, keep_failed=0, now=4_000_000_000)
    assert purged.done == ("old",)
    assert backend.succeeded("old")
    with pytest.raises(JobExistsError):
        backend.enqueue({}, job_id="old")


def test_attempts_in_a_window_name_the_host_that_ran_them(
    backend: JobQueue, claim_in_dead_process: Callable[..., str]
) -> None:
    """A server queue tells every claim that ran in a window, with its host, outcome and lane
    (an orphaned one as orphaned), and none outside it; a queue one machine keeps tells none
    (its lanes' logs are the whole story: lanekit timeline draws nothing extra)."""
    import socket

    before = time.time() - 1
    backend.enqueue({}, job_id="ran")
    backend.settle(claim_one(backend, lane="work"), Verdict.succeeded())
    backend.enqueue({}, job_id="lost")
    claim_in_dead_process(backend)
    backend.recover(stale_after=0, max_attempts=3)
    after = time.time() + 1
    spans = backend.attempts_between(before, after)
    if not isinstance(backend, PostgresQueue):
        assert spans == []
        return
    here = socket.gethostname()
    assert [(s.job_id, s.lane, s.attempt, s.host, s.outcome) for s in spans] == [
        ("ran", "work", 1, here, "succeeded"),
        ("lost", None, 1, here, "orphaned"),
    ]
    assert all(before <= s.started <= (s.ended or 0) <= after for s in spans)
    assert backend.attempts_between(after, after + 60) == []
    assert backend.attempts_between(before - 3600, before) == []
