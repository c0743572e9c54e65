"""A durable enqueue commits the job and its record with ONE full flush (issue 15 item 8).

fcntl(2) on F_FULLFSYNC: it does what fsync(2) does, then asks the drive to flush all buffered
data to permanent storage; so one full flush at the commit point persists every plain fsync
issued before it, in any directory. Counted here through the one seam (fsops.full_fsync, which
is F_FULLFSYNC on darwin and fsync elsewhere), on the Linux branch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lanekit.queue.directory.backend import Queue
from lanekit.queue.model import Verdict
from lanekit.system import fsops


def _count(monkeypatch: pytest.MonkeyPatch, queue: Queue, events: list[str]) -> None:
    """Record each plain fsync, plain directory sync and full flush, with what is in place
    when the full flush runs."""
    plain_fd, plain_dir, full = fsops.fsync_fd, fsops.sync_dir, fsops.full_fsync

    def fd_sync(fd: int) -> None:
        events.append("fsync")
        plain_fd(fd)

    def dir_sync(path: str) -> None:
        events.append(f"sync {os.path.basename(path)}/")
        plain_dir(path)

    def full_flush(fd: int) -> None:
        jobs = len(os.listdir(queue.queue))
        records = len([n for n in os.listdir(queue.records) if n.endswith(".json")])
        events.append(f"full (queue/ {jobs}, records/ {records})")
        full(fd)

    monkeypatch.setattr(fsops, "fsync_fd", fd_sync)
    monkeypatch.setattr(fsops, "sync_dir", dir_sync)
    monkeypatch.setattr(fsops, "full_fsync", full_flush)


def test_a_durable_enqueue_is_one_full_flush_after_both_are_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Job file and staged record are fsync'd, records/ is synced once the record is in place,
    and the one full flush comes last, with the job in queue/ and its record in records/."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    events: list[str] = []
    _count(monkeypatch, queue, events)
    queue.enqueue({"n": 1}, job_id="first")
    assert events == ["fsync", "fsync", "sync records/", "full (queue/ 1, records/ 1)"]
    assert sum(event.startswith("full") for event in events) == 1


def test_an_enqueue_whose_record_exists_still_commits_with_one_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id whose record stays (a failed one enqueued again) syncs no record directory but
    still commits the job with exactly one full flush."""
    queue = Queue(tmp_path / "q", backoff_base=0)
    queue.ensure()
    queue.enqueue({}, job_id="again")
    claim = queue.claimer().claim()
    assert claim is not None
    failed = queue.settle(claim, Verdict.gave_up("broken"))
    os.unlink(failed.destination)
    events: list[str] = []
    _count(monkeypatch, queue, events)
    queue.enqueue({}, job_id="again")
    assert events == ["fsync", "fsync", "full (queue/ 1, records/ 1)"]


def test_a_fast_queue_never_flushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """durable = false issues no fsync of any kind."""
    queue = Queue(tmp_path / "q", durable=False)
    queue.ensure()
    events: list[str] = []
    _count(monkeypatch, queue, events)
    queue.enqueue({})
    assert events == []


def test_a_payload_over_max_job_bytes_is_refused_and_nothing_queued(tmp_path: Path) -> None:
    """enqueue refuses a payload larger than the queue's max_job_bytes (bytes before they
    are parsed, a mapping once written as JSON) with a UsageError naming the size, the limit
    and the key; one at the limit is queued (issue 30 item 12)."""
    from lanekit.errors import UsageError

    queue = Queue(tmp_path / "q", durable=False, max_job_bytes=32)
    queue.ensure()
    fits = b'{"pad": "' + b"x" * 21 + b'"}'
    assert len(fits) == 32
    with pytest.raises(UsageError) as caught:
        queue.enqueue(fits[:-2] + b'x"}')
    assert caught.value.message == (
        "job payload is 33 bytes, over the queue's max_job_bytes (32 bytes)"
    )
    assert "max_job_bytes in [queues.NAME]" in caught.value.hint
    with pytest.raises(UsageError, match="over the queue's max_job_bytes"):
        queue.enqueue({"pad": "x" * 40})
    assert os.listdir(queue.queue) == []
    queue.enqueue(fits, job_id="fits")
    assert os.listdir(queue.queue) == ["fits.json"]
