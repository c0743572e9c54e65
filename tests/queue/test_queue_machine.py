"""A hypothesis state machine over the queue: enqueue, claim, complete, release, fail, crash
(a real process that claims and dies, at any step of the claim or of its settle) and recover,
in any order. After every step: no job is lost, none succeeded twice, and each job's attempts
are exactly the starts it had.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from crashes import Say, in_dying_process
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.state import QueueState
from lanekit.queue.model import Claim, Verdict
from lanekit.queue.records import JobState, Record

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
        self.after_recovery: dict[str, JobState] = {}
        """Where recovery must put a claim whose process died in its settle."""
        self.cut_short: set[str] = set()
        """Crashed claims whose attempt had started and was never settled: recovery takes
        the attempt back (a crash is not the job's failure)."""
        self.serial = 0

    def teardown(self) -> None:
        """Close the claims still held, then remove the queue."""
        for claim in self.held.values():
            claim.handle.release()
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

        def work(say: Say) -> None:
            claim = self.queue.claimer().claim()
            say("" if claim is None else claim.job_id)

        job_id = in_dying_process(work)
        assert job_id in self._queued()
        self.attempts[job_id] += 1  # its `running` line, until recovery takes it back
        self.crashed.add(job_id)
        self.cut_short.add(job_id)
        self.after_recovery[job_id] = JobState.QUEUED

    @rule(
        point=st.sampled_from(
            [
                "before-mark",
                "before-running",
                "mid-record",
                "mid-replace",
                "after-record",
                "after-unmark",
            ]
        ),
        succeeded=st.booleans(),
    )
    def crash_at(self, point: str, succeeded: bool) -> None:
        """A real process dies at one step of the hot path: after the claim rename but before
        the running mark, or after the mark but before the `running` line that starts the
        attempt (either way the attempt never started); in the settle while its record line is
        appended (cut short half-way) or, where the file must be replaced, before the new one
        is renamed in (the old one, with the `running` line, still there): either way the
        outcome is lost and the job runs again, the attempt not counted (a crash is not the
        job's failure); or after the record was written, before or after the mark was removed
        (the outcome counts)."""
        if not self._queued():
            return
        job_id = in_dying_process(lambda say: self._die_at(point, succeeded, say))
        assert job_id in self._queued()
        self.crashed.add(job_id)
        if point in {"before-mark", "before-running"}:
            self.after_recovery[job_id] = JobState.QUEUED
            return
        self.attempts[job_id] += 1
        if point in {"mid-record", "mid-replace"}:
            self.cut_short.add(job_id)
            self.after_recovery[job_id] = JobState.QUEUED
        elif succeeded:
            self.successes[job_id] = self.successes.get(job_id, 0) + 1
            self.after_recovery[job_id] = JobState.SUCCEEDED
        else:
            spent = self.attempts[job_id] >= MAX_ATTEMPTS
            self.after_recovery[job_id] = JobState.FAILED if spent else JobState.QUEUED

    def _die_at(self, point: str, succeeded: bool, say: Say) -> None:  # pragma: no cover
        """In the child: claim, settle, and exit at `point` (the claim's id said first)."""
        from lanekit.queue.directory import claim as claiming
        from lanekit.queue.directory import settle as settling
        from lanekit.system import fdio, fsops

        patch = pytest.MonkeyPatch()  # in the child only: it exits without undoing

        def die(*_args: object, **_kwargs: object) -> None:
            os._exit(0)

        if point == "before-mark":

            def unmarked(_q: object, job_id: str, *_args: object) -> None:
                say(job_id)
                os._exit(0)

            patch.setattr(claiming, "take_mark", unmarked)
        elif point == "before-running":
            from lanekit.queue.directory.recordstore import RecordStore

            def marked(_store: object, _held: object, record: Record) -> None:
                say(record.job_id)
                os._exit(0)

            patch.setattr(RecordStore, "mark_running", marked)
        claim = self.queue.claimer().claim()
        assert claim is not None
        say(claim.job_id)
        if point == "after-record":
            patch.setattr(settling, "drop_mark", die)
        elif point == "mid-record":

            def half_then_die(fd: int, data: bytes) -> None:
                os.write(fd, data[: len(data) // 2])
                os._exit(0)

            patch.setattr(fdio, "write_all", half_then_die)  # the record line's append
        elif point == "mid-replace":
            from lanekit.queue.directory import recordstore

            # The line would outgrow the record's block: the settle replaces the file, by
            # either way it appends (through the claim's open record, or by the name).
            patch.setattr(recordstore, "FILE_LIMIT", 0)
            patch.setattr(os, "replace", die)  # the record's rename into place (fsops)
        else:
            from lanekit.queue.directory.mark import drop as unmark

            def unmark_then_die_moving(q: QueueState, job_id: str) -> None:
                unmark(q, job_id)
                patch.setattr(fsops, "rename_noreplace", die)

            patch.setattr(settling, "drop_mark", unmark_then_die_moving)
        verdict = Verdict.succeeded() if succeeded else Verdict.failed("exit 1", MAX_ATTEMPTS)
        self.queue.settle(claim, verdict)

    @rule()
    def recover(self) -> None:
        """Recovery gives back exactly the crashed claims, never a held one."""
        recovered = self.queue.recover(stale_after=3600, max_attempts=MAX_ATTEMPTS)
        assert {item.job_id for item in recovered} == self.crashed
        for item in recovered:
            spent = self.attempts[item.job_id] >= MAX_ATTEMPTS
            expected = self.after_recovery.pop(
                item.job_id, JobState.FAILED if spent else JobState.QUEUED
            )
            assert item.state is expected, item
            self.where[item.job_id] = expected
            if item.job_id in self.cut_short:
                self.attempts[item.job_id] -= 1
        self.crashed.clear()
        self.cut_short.clear()

    @invariant()
    def nothing_lost_nothing_twice(self) -> None:
        """Every job is exactly where the model says, its record agrees, attempts exact."""
        listing = self.queue.listing()
        assert set(listing) == set(self.where)
        for job_id, state in self.where.items():
            seen = JobState.RUNNING if job_id in self.crashed else state
            assert listing[job_id][0] is seen, job_id
            # The job as the queue reports it (`lanekit job`): a claimed job's attempt is
            # counted by its running mark, the others' by their record.
            view = self.queue.job(job_id)
            assert view is not None
            record = view.record
            assert record is not None
            assert record.attempts == self.attempts[job_id], job_id
            if job_id in self.held:
                assert (view.state, record.state) == (JobState.RUNNING, JobState.RUNNING), job_id
            if state is JobState.SUCCEEDED:
                assert record.state is JobState.SUCCEEDED
        assert all(count == 1 for count in self.successes.values())
        counts = self.queue.counts()
        assert counts.done == sum(s is JobState.SUCCEEDED for s in self.where.values())


QueueMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_queue_machine = QueueMachine.TestCase
