"""enqueue_jsonl: one job per line, each line on its own (enqueued whole or not at all), bad
lines reported by number (issue 12 item 11)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanekit.errors import ExitCode, QueueError, UsageError
from lanekit.jobs.batch import enqueue_jsonl, enqueue_lines
from lanekit.queue.directory.backend import Queue


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh queue under tmp_path."""
    made = Queue(tmp_path / "q", durable=False)
    made.ensure()
    return made


def queued(queue: Queue) -> list[str]:
    """The ids in queue/, sorted."""
    return sorted(p.name.removesuffix(".json") for p in queue.queue.iterdir())


def test_every_good_line_is_one_job(queue: Queue, tmp_path: Path) -> None:
    """Three lines, three jobs with the lines' bytes as payloads, ids in input order; blank
    lines are no jobs."""
    source = tmp_path / "jobs.jsonl"
    source.write_bytes(b'{"n": 1}\n\n{"n": 2}\r\n  {"n": 3}  \n')
    batch = enqueue_jsonl(queue, str(source))
    assert batch.exit_code is ExitCode.OK
    assert [line for line, _ in batch.enqueued] == [1, 3, 4]
    ids = [job_id for _, job_id in batch.enqueued]
    assert sorted(ids) == queued(queue)
    assert [(queue.queue / f"{i}.json").read_bytes() for i in ids] == [
        b'{"n": 1}',
        b'{"n": 2}',
        b'{"n": 3}',
    ]


def test_bad_lines_are_reported_and_the_rest_enqueued(queue: Queue) -> None:
    """Not JSON, not an object, a bad id, an id given twice: each is a bad line with its
    number and enqueues nothing; every other line is enqueued; exit 1."""
    lines = [
        b'{"id": "a", "n": 1}',
        b"not json",
        b"[1, 2]",
        b'{"id": "../etc"}',
        b'{"id": 7}',
        b'{"id": "a", "n": 2}',
        b'{"n": 3}',
    ]
    batch = enqueue_lines(queue, lines, source="x.jsonl", id_field="id")
    assert batch.exit_code is ExitCode.FAILURE
    assert [bad.line for bad in batch.bad] == [2, 3, 4, 5, 6]
    assert "not valid JSON" in batch.bad[0].message
    assert "array" in batch.bad[1].message
    assert batch.bad[3].message == '"id" is int, not a string'
    assert "already queued" in batch.bad[4].message
    assert [line for line, _ in batch.enqueued] == [1, 7]
    assert batch.enqueued[0][1] == "a"
    assert len(queued(queue)) == 2
    assert (queue.queue / "a.json").read_bytes() == b'{"id": "a", "n": 1}'


def test_without_id_field_ids_are_generated(queue: Queue) -> None:
    """An `id` key is payload unless --id-field names it."""
    batch = enqueue_lines(queue, [b'{"id": "a"}'], source="x")
    assert batch.enqueued[0][1] != "a"


def test_stdin(queue: Queue) -> None:
    """`-` reads stdin."""
    batch = enqueue_jsonl(queue, "-", stdin=io.BytesIO(b'{"n": 1}\n{"n": 2}\n'))
    assert (len(batch.enqueued), batch.source) == (2, "stdin")


def test_missing_file_is_a_usage_error(queue: Queue, tmp_path: Path) -> None:
    """An input that cannot be opened is exit 2, nothing enqueued."""
    with pytest.raises(UsageError, match="no such file"):
        enqueue_jsonl(queue, str(tmp_path / "nope.jsonl"))
    assert queued(queue) == []


def test_an_unusable_queue_stops_before_any_line(tmp_path: Path) -> None:
    """A queue that fails its checks is one QueueError (exit 69) before any line is read."""
    missing = Queue(tmp_path / "missing", durable=False)
    with pytest.raises(QueueError):
        enqueue_lines(missing, [b'{"n": 1}'], source="x")


def test_a_queue_failing_mid_batch_keeps_what_was_done(queue: Queue) -> None:
    """When the queue breaks mid-way (here: its tmp/ vanishes), the batch stops with that
    error; the lines before it stay enqueued and are reported, nothing is half-written."""

    def breaking() -> Iterator[bytes]:
        yield b'{"n": 1}'
        queue.tmp.rmdir()
        yield b'{"n": 2}'

    batch = enqueue_lines(queue, breaking(), source="x")
    assert [line for line, _ in batch.enqueued] == [1]
    assert batch.stopped is not None
    assert batch.exit_code == batch.stopped.exit_code
    assert len(queued(queue)) == 1


def test_a_line_over_max_job_bytes_is_a_bad_line_never_held_whole(tmp_path: Path) -> None:
    """A line longer than the queue's max_job_bytes is a bad line with its size, read through
    in bounded pieces (no read asks for a whole line); the lines after it are enqueued
    (issue 30 item 12)."""
    queue = Queue(tmp_path / "q", durable=False, max_job_bytes=64)
    queue.ensure()
    long_line = b'{"pad": "' + b"x" * 10_000 + b'"}\n'
    asked: list[int] = []

    class Recording(io.BytesIO):
        def readline(self, size: int | None = -1, /) -> bytes:
            asked.append(-1 if size is None else size)
            return super().readline(size)

    stream = Recording(b'{"n": 1}\n' + long_line + b'{"n": 2}\n')
    batch = enqueue_jsonl(queue, "-", stdin=stream)
    assert batch.exit_code is ExitCode.FAILURE
    assert [line for line, _ in batch.enqueued] == [1, 3]
    [bad] = batch.bad
    assert bad.line == 2
    assert bad.message == (
        f"job payload is {len(long_line) - 1} bytes, over the queue's max_job_bytes (64 bytes)"
    )
    assert max(asked) <= 1 << 16
    assert all(size > 0 for size in asked)
