"""Settling a claim (lanekit.queue.directory.settle): the outcome's line goes through the record
the claim
keeps open since its `running` line, while the record's name still is that file, and a claim
holds no descriptor once settled or dropped."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lanekit.queue.directory.backend import Queue
from lanekit.queue.model import Claim, Dropped
from lanekit.queue.records import JobState, Record
from lanekit.system import fsops


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh queue, no fsyncs, no backoff wait."""
    q = Queue(tmp_path / "q", durable=False, backoff_base=0)
    q.ensure()
    return q


def claimed(queue: Queue) -> Claim:
    claim = queue.claimer(lane="funnel").claim()
    assert claim is not None
    return claim


def by_name_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """An append by the record's name fails the test: the settle must not need one."""

    def refuse(*_args: object, **_kwargs: object) -> bool:
        raise AssertionError("the settle opened the record by its name")

    monkeypatch.setattr(fsops, "append_line", refuse)


@pytest.mark.parametrize("settle", ["complete", "release", "fail"])
def test_the_outcome_goes_through_the_claims_open_record(
    queue: Queue, monkeypatch: pytest.MonkeyPatch, settle: str
) -> None:
    """Each settle appends its line on the descriptor the claim read the record through (no
    open by name), into the same file, after the claim's `running` line."""
    job_id = queue.enqueue({"n": 1})
    before = queue.store.path(job_id).stat().st_ino
    claim = claimed(queue)
    by_name_refused(monkeypatch)
    if settle == "complete":
        queue.complete(claim)
        expected = JobState.SUCCEEDED
    elif settle == "release":
        queue.release(claim, max_attempts=3, error="exit 1")
        expected = JobState.QUEUED
    else:
        queue.fail(claim, "exit 1")
        expected = JobState.FAILED
    path = queue.store.path(job_id)
    assert path.stat().st_ino == before
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3  # enqueue's, the claim's `running` line, the outcome
    assert b'"state": "running"' in lines[1]
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts, record.lane) == (expected, 1, "funnel")


def test_a_record_replaced_during_the_run_gets_the_outcome(queue: Queue) -> None:
    """A record replaced while the job runs (a hand's `lanekit retry` of a failed copy of the id
    writes a new file) gets the outcome by its name: the file the claim holds open is no
    longer the record, and a success written there would be lost (the id would run again)."""
    job_id = queue.enqueue({"n": 1})
    claim = claimed(queue)
    stamp = claim.record.updated_at
    queue.store.write(Record(job_id, JobState.QUEUED, 0, stamp, stamp, error="retried by hand"))
    replaced = queue.store.path(job_id).stat().st_ino
    queue.complete(claim)
    assert queue.store.path(job_id).stat().st_ino == replaced
    record = queue.store.read(job_id)
    assert record is not None and record.state is JobState.SUCCEEDED
    assert queue.claimer().claim() is None


def test_an_outgrown_record_is_replaced_with_the_outcome(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line that would take the record past its block replaces the file (one rename), from
    the open record's size: never an append by name past the limit."""
    from lanekit.queue.directory import recordstore

    job_id = queue.enqueue({"n": 1})
    before = queue.store.path(job_id).stat().st_ino
    claim = claimed(queue)
    by_name_refused(monkeypatch)
    monkeypatch.setattr(recordstore, "FILE_LIMIT", queue.store.path(job_id).stat().st_size)
    queue.complete(claim)
    path = queue.store.path(job_id)
    assert path.stat().st_ino != before
    assert len(path.read_bytes().splitlines()) == 1
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.SUCCEEDED, 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")
def test_a_claim_holds_no_descriptor_once_settled_or_dropped(queue: Queue) -> None:
    """A claim holds two descriptors (its file's flock, its record); each settle closes both,
    and so does a claim dropped on the spot (a corrupt job)."""

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    base = open_fds()
    for settle in ("complete", "release", "fail"):
        queue.enqueue({"n": settle})
        claim = claimed(queue)
        assert open_fds() == base + 2
        if settle == "complete":
            queue.complete(claim)
        elif settle == "release":
            queue.release(claim, max_attempts=1)  # out of attempts: to failed/
        else:
            queue.fail(claim, "exit 1")
        assert open_fds() == base, settle
    (queue.queue / "corrupt.json").write_bytes(b"{not json")
    drops: list[Dropped] = []
    assert queue.claimer(on_drop=drops.append).claim() is None
    assert [drop.job_id for drop in drops] == ["corrupt"]
    assert open_fds() == base
