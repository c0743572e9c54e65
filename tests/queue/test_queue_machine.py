"""A hypothesis state machine over the queue: enqueue, claim, complete, release, fail, crash
(a real process that claims and dies) and recover, in any order. After every step: no job is
lost, none succeeded twice, and each job's attempts are exactly the starts it had.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lanekit.queue import Claim, Queue, Verdict
from lanekit.records import JobState

MAX_ATTEMPTS = 3


class QueueMachine(RuleBasedStateMachine):
    """The queue against a model: id -> (where, attempts)."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="lanekit-machine-"))
        self.queue = Queue(self.root / "q", durable=False, backoff_base=0)
        self.queue.ensure()
        self.where: dict[str, JobState] = {}
        """The model: each id's state (QUEUED also covers a crashed claim not yet recovered,
        which the queue reports as claimed: see `crashed`)."""
        self.attempts: dict[str, int] = {}
        self.held: dict[str, Claim] = {}
        self.crashed: set[str] = set()
        self.successes: dict[str, int] = {}
        self.serial = 0

    def teardown(self) -> None:
        """Close the claims still held, then remove the queue."""
        for claim in self.held.values():
            claim.lock.release()
        shutil.rmtree(self.root, ignore_errors=True)

    def _queued(self) -> list[str]:
        return [i for i, s in self.where.items() if s is JobState.QUEUED and i not in self.crashed]

    @rule()
    def enqueue(self) -> None:
        """A new job (fresh id: a succeeded id is refused, which the contract suite pins)."""
        self.serial += 1
        job_id = self.queue.enqueue({"n": self.serial}, job_id=f"job-{self.serial}")
        self.where[job_id] = JobState.QUEUED
        self.attempts[job_id] = 0

    @rule()
    def claim(self) -> None:
        """Claim the next job: one of the queued ones, its attempt counted."""
        claim = self.queue.claimer().claim()
        if claim is None:
            assert self._queued() == []
            return
        assert claim.job_id in self._queued()
        self.attempts[claim.job_id] += 1
        assert claim.attempt == self.attempts[claim.job_id]
        self.where[claim.job_id] = JobState.RUNNING
        self.held[claim.job_id] = claim

    def _take(self, data: st.DataObject) -> Claim:
        job_id = data.draw(st.sampled_from(sorted(self.held)))
        return self.held.pop(job_id)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        """A held claim succeeds."""
        claim = self._take(data)
        assert self.queue.settle(claim, Verdict.succeeded()).state is JobState.SUCCEEDED
        self.where[claim.job_id] = JobState.SUCCEEDED
        self.successes[claim.job_id] = self.successes.get(claim.job_id, 0) + 1

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        """A held claim's attempt fails: back to the queue, or failed when spent."""
        claim = self._take(data)
        settled = self.queue.settle(claim, Verdict.failed("exit 1", MAX_ATTEMPTS))
        spent = self.attempts[claim.job_id] >= MAX_ATTEMPTS
        expected = JobState.FAILED if spent else JobState.QUEUED
        assert settled.state is expected
        self.where[claim.job_id] = expected

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def stop(self, data: st.DataObject) -> None:
        """A held claim's run is stopped: back at once, the attempt not spent."""
        claim = self._take(data)
        assert self.queue.settle(claim, Verdict.stopped()).state is JobState.QUEUED
        self.where[claim.job_id] = JobState.QUEUED
        self.attempts[claim.job_id] -= 1

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def fail(self, data: st.DataObject) -> None:
        """A held claim fails for good."""
        claim = self._take(data)
        assert self.queue.settle(claim, Verdict.gave_up("broken")).state is JobState.FAILED
        self.where[claim.job_id] = JobState.FAILED

    @rule()
    def crash(self) -> None:
        """A real process claims a job and dies without settling it (no cleanup runs)."""
        if not self._queued():
            return
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                claim = self.queue.claimer().claim()
                os.write(write, b"" if claim is None else claim.job_id.encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            job_id = pipe.read().decode()
        os.waitpid(pid, 0)
        assert job_id in self._queued()
        self.attempts[job_id] += 1
        self.crashed.add(job_id)

    @rule()
    def recover(self) -> None:
        """Recovery gives back exactly the crashed claims, never a held one."""
        recovered = self.queue.recover(stale_after=3600, max_attempts=MAX_ATTEMPTS)
        assert {item.job_id for item in recovered} == self.crashed
        for item in recovered:
            spent = self.attempts[item.job_id] >= MAX_ATTEMPTS
            expected = JobState.FAILED if spent else JobState.QUEUED
            assert item.state is expected
            self.where[item.job_id] = expected
        self.crashed.clear()

    @invariant()
    def nothing_lost_nothing_twice(self) -> None:
        """Every job is exactly where the model says, its record agrees, attempts exact."""
        listing = self.queue.listing()
        assert set(listing) == set(self.where)
        for job_id, state in self.where.items():
            seen = JobState.RUNNING if job_id in self.crashed else state
            assert listing[job_id][0] is seen, job_id
            record = self.queue.store.read(job_id)
            assert record is not None
            assert record.attempts == self.attempts[job_id], job_id
            if state is JobState.SUCCEEDED:
                assert record.state is JobState.SUCCEEDED
        assert all(count == 1 for count in self.successes.values())
        counts = self.queue.counts()
        assert counts.done == sum(s is JobState.SUCCEEDED for s in self.where.values())


QueueMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_queue_machine = QueueMachine.TestCase
