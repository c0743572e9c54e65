"""History paging: newest first, only the page's records read, seed 003's PageMeta rules."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.errors import UsageError
from lanekit.queue import open_queue
from lanekit.queue.directory.backend import Queue
from lanekit.queue.ids import new_job_id, own_owner
from lanekit.queue.model import Verdict
from lanekit.queue.paging import adjust_item_count, paginate
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState, Record


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh, checked queue without retry backoff."""
    q = Queue(tmp_path / "q", durable=False, backoff_base=0)
    q.ensure()
    return q


def finished(queue: Queue, count: int) -> list[str]:
    """`count` succeeded jobs with ids one second apart (oldest first), made without claiming."""
    day = queue.done / "2026-01-01"
    day.mkdir(exist_ok=True)
    ids = []
    base = 1_750_000_000 * 10**9
    for n in range(count):
        job_id = new_job_id(now_ns=base + n * 10**9)
        (day / f"{job_id}.json").write_text("{}")
        queue.store.write(Record(job_id, JobState.SUCCEEDED, 1, "q", "u"))
        ids.append(job_id)
    return ids


@pytest.mark.parametrize(
    ("total", "page", "per_page", "expected"),
    [
        # empty: page 1, nothing shown
        (0, 1, 20, (1, 20, 0, 0, False, False, 0, 0, 0, 0)),
        (0, 5, 20, (1, 20, 0, 0, False, False, 0, 0, 0, 0)),
        # one page
        (5, 1, 20, (1, 20, 5, 1, False, False, 0, 0, 1, 5)),
        # a middle page of an exact multiple
        (60, 2, 20, (2, 20, 60, 3, True, True, 1, 3, 21, 40)),
        # the last, partial page
        (45, 3, 20, (3, 20, 45, 3, True, False, 2, 0, 41, 45)),
        # out of range: clamped to the last page
        (45, 10, 20, (3, 20, 45, 3, True, False, 2, 0, 41, 45)),
        # below range: page 1
        (45, 0, 20, (1, 20, 45, 3, False, True, 0, 2, 1, 20)),
        (45, -3, 20, (1, 20, 45, 3, False, True, 0, 2, 1, 20)),
        # per_page <= 0: everything on one page
        (45, 3, 0, (1, 45, 45, 1, False, False, 0, 0, 1, 45)),
        (45, 1, -1, (1, 45, 45, 1, False, False, 0, 0, 1, 45)),
        (0, 1, 0, (1, 0, 0, 0, False, False, 0, 0, 0, 0)),
    ],
)
def test_paginate(total: int, page: int, per_page: int, expected: tuple[int | bool, ...]) -> None:
    """PageMeta for the edges: empty, one page, clamped pages, per_page <= 0 returns all."""
    fields = (
        "page",
        "per_page",
        "total",
        "total_pages",
        "has_prev",
        "has_next",
        "prev_page",
        "next_page",
        "from_",
        "to",
    )
    start, stop, result = paginate(total, page, per_page)
    assert tuple(getattr(result, name) for name in fields) == expected
    assert (start, stop) == (max(result.from_ - 1, 0), result.to)


def test_page_meta_json_keys() -> None:
    """The JSON object has exactly the documented keys, `from` spelled as a keyword."""
    _, _, result = paginate(45, 2, 20)
    assert list(result.to_json()) == [
        "page",
        "per_page",
        "total",
        "total_pages",
        "has_prev",
        "has_next",
        "prev_page",
        "next_page",
        "from",
        "to",
    ]
    assert result.to_json()["from"] == 21


def test_adjust_item_count() -> None:
    """from/to follow the items actually read; none read shows 0-0 (seed 003)."""
    _, _, result = paginate(45, 2, 20)
    assert (adjust_item_count(result, 18).from_, adjust_item_count(result, 18).to) == (21, 38)
    assert (adjust_item_count(result, 0).from_, adjust_item_count(result, 0).to) == (0, 0)
    assert adjust_item_count(result, 18).total == 45


def test_newest_first(queue: Queue) -> None:
    """Page 1 holds the newest jobs, in descending age order."""
    ids = finished(queue, 30)
    page = queue.page(1, 10)
    assert [r.job_id for r in page.items] == ids[::-1][:10]
    assert (page.meta.total, page.meta.total_pages, page.meta.next_page) == (30, 3, 2)


def test_empty_queue_is_page_one_of_nothing(queue: Queue) -> None:
    """No jobs: page 1, total 0, from/to 0, no items."""
    page = queue.page(3, 10)
    assert page.items == [] and page.unreadable == []
    assert (page.meta.page, page.meta.total, page.meta.from_, page.meta.to) == (1, 0, 0, 0)


def test_out_of_range_page_is_the_last_page(queue: Queue) -> None:
    """Asking for page 99 shows the last page (the oldest jobs)."""
    ids = finished(queue, 25)
    page = queue.page(99, 10)
    assert page.meta.page == 3
    assert [r.job_id for r in page.items] == ids[:5][::-1]


def test_per_page_zero_returns_everything(queue: Queue) -> None:
    """per_page <= 0 is no paging: all jobs, newest first."""
    ids = finished(queue, 12)
    assert [r.job_id for r in queue.page(2, 0).items] == ids[::-1]


@given(count=st.integers(min_value=0, max_value=40), per_page=st.integers(min_value=1, max_value=9))
@settings(max_examples=25, deadline=None)
def test_pages_cover_every_job_once_newest_first(count: int, per_page: int) -> None:
    """Walking pages 1..total_pages yields every job exactly once, newest first, and each
    page's from/to matches its position."""
    with tempfile.TemporaryDirectory() as root:
        queue = Queue(Path(root) / "q", durable=False)
        queue.ensure()
        ids = finished(queue, count)
        seen: list[str] = []
        first = queue.page(1, per_page)
        for number in range(1, max(first.meta.total_pages, 1) + 1):
            page = queue.page(number, per_page)
            assert page.meta.from_ == (len(seen) + 1 if page.items else 0)
            seen.extend(r.job_id for r in page.items)
            assert page.meta.to == len(seen)
        assert seen == ids[::-1]


def test_only_the_page_records_are_read(queue: Queue) -> None:
    """Records off the page are never opened: a damaged one there does not show up."""
    ids = finished(queue, 30)
    queue.store.path(ids[0]).write_bytes(b"{broken")  # the oldest: on page 3 of 3
    page = queue.page(1, 10)
    assert page.unreadable == [] and len(page.items) == 10


def test_unreadable_records_are_reported_not_dropped(queue: Queue) -> None:
    """A damaged record on the page is listed in `unreadable` with its reason, and from/to
    count only the items read."""
    ids = finished(queue, 5)
    damaged = ids[-1]
    queue.store.path(damaged).write_bytes(b'{"state": "succeeded", "state": "running"}')
    page = queue.page(1, 10)
    assert [r.job_id for r in page.items] == ids[::-1][1:]
    assert [(u.job_id, u.path) for u in page.unreadable] == [(damaged, queue.store.path(damaged))]
    assert "duplicate key 'state'" in page.unreadable[0].reason
    assert (page.meta.total, page.meta.from_, page.meta.to) == (5, 1, 4)
    assert page.to_json()["unreadable"][0]["job_id"] == damaged


def test_state_filter_follows_the_directories(queue: Queue) -> None:
    """--state lists the jobs whose files are in that state's directories (delayed counts as
    queued)."""
    done_ids = finished(queue, 2)
    a, b, c, d = (queue.enqueue({"n": n}) for n in range(4))
    claimer = queue.claimer()
    claims = {}
    while (claim := claimer.claim()) is not None:
        claims[claim.job_id] = claim
    queue.fail(claims[a], "exit 1")
    delayed = Queue(queue.dir, durable=False, backoff_base=60)
    delayed.release(claims[b], max_attempts=3, error="exit 1")
    queue.release(claims[c], max_attempts=3, error="exit 1")

    def listed(state: JobState | None) -> set[str]:
        return {r.job_id for r in queue.page(1, 0, state).items}

    assert listed(JobState.FAILED) == {a}
    assert listed(JobState.QUEUED) == {b, c}
    assert listed(JobState.RUNNING) == {d}
    assert listed(JobState.SUCCEEDED) == set(done_ids)
    assert listed(None) == {a, b, c, d, *done_ids}


def test_producer_job_without_record_is_listed(queue: Queue) -> None:
    """A job a producer dropped into queue/ has no record yet; it is listed from its file."""
    (queue.queue / "report-7.json").write_text("{}")
    os.utime(queue.queue / "report-7.json", (1_700_000_000, 1_700_000_000))
    (item,) = queue.page().items
    assert (item.job_id, item.state, item.attempts) == ("report-7", JobState.QUEUED, 0)
    assert item.queued_at == "2023-11-14T22:13:20.000Z"


def test_custom_ids_sort_by_file_time(queue: Queue) -> None:
    """Custom ids carry no time, so their file's mtime places them among generated ids."""
    old, new = finished(queue, 2)
    old_ns = int(old[:20])
    (queue.queue / "zzz-custom.json").write_text("{}")
    os.utime(queue.queue / "zzz-custom.json", ns=(old_ns + 1, old_ns + 1))
    assert [r.job_id for r in queue.page().items] == [new, "zzz-custom", old]


def test_an_id_with_files_in_several_places_is_one_job(queue: Queue) -> None:
    """A re-sent id with copies in queue/, failed/ and done/ (there under its claimed name too)
    is counted and shown once, custom ids as well; hidden and foreign files are not jobs."""
    ids = finished(queue, 3)
    twice = ids[1]
    day = queue.done / "2026-01-01"
    (day / f"{twice}.{own_owner()}.json").write_text("{}")
    for directory in (queue.queue, queue.failed):
        (directory / f"{twice}.json").write_text("{}")
        (directory / "custom.7.json").write_text("{}")
        os.utime(directory / "custom.7.json", ns=(int(ids[0][:20]) + 1, int(ids[0][:20]) + 1))
    (queue.failed / f"{twice}.error").write_text("exit 1\n")
    (queue.queue / ".hidden.json").write_text("{}")
    (queue.queue / "notes.txt").write_text("")
    page = queue.page(1, 10)
    assert page.meta.total == 4
    assert [r.job_id for r in page.items] == [ids[2], twice, "custom.7", ids[0]]


def test_custom_ids_among_generated_ones_in_one_directory(queue: Queue) -> None:
    """Custom ids in a directory of generated ones each sort by their file's time."""
    base = 1_750_000_000 * 10**9
    generated = [new_job_id(now_ns=base + n * 10**9) for n in range(5)]
    for job_id in generated:
        (queue.queue / f"{job_id}.json").write_text("{}")
    for name, ns in (("late", base + 4 * 10**9 + 1), ("early", base - 1)):
        (queue.queue / f"{name}.json").write_text("{}")
        os.utime(queue.queue / f"{name}.json", ns=(ns, ns))
    expected = ["late", *generated[::-1], "early"]
    assert [r.job_id for r in queue.page(1, 0).items] == expected
    assert [r.job_id for r in queue.page(1, 2).items] == expected[:2]


def test_a_custom_id_shaped_like_a_generated_one_sorts_by_file_time(queue: Queue) -> None:
    """A custom id as long as a generated one (so every name in the directory has one length)
    is still told apart by its characters and placed by its file's time."""
    base = 1_750_000_000 * 10**9
    generated = [new_job_id(now_ns=base + n * 10**9) for n in range(4)]
    lookalike = "x" * 20 + generated[0][20:]
    assert len(lookalike) == len(generated[0])
    for job_id in [*generated, lookalike]:
        (queue.queue / f"{job_id}.json").write_text("{}")
    os.utime(queue.queue / f"{lookalike}.json", ns=(base + 10**9 + 1, base + 10**9 + 1))
    expected = [generated[3], generated[2], lookalike, generated[1], generated[0]]
    assert [r.job_id for r in queue.page(1, 0).items] == expected


def test_find_job(queue: Queue) -> None:
    """find_job reports where a job is, its record, and a failed job's .error text."""
    job_id = queue.enqueue({})
    view = queue.job(job_id)
    assert view is not None and view.state is JobState.QUEUED and view.error is None
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "exit 9")
    view = queue.job(job_id)
    assert view is not None
    assert (view.state, view.path, view.error) == (
        JobState.FAILED,
        queue.failed / f"{job_id}.json",
        "exit 9\n",
    )
    assert view.record is not None and view.record.error == "exit 9"
    assert queue.job("unknown") is None
    with pytest.raises(UsageError):
        queue.job("../etc/passwd")


def test_find_job_reads_why_from_the_record_before_the_error_file_exists(queue: Queue) -> None:
    """A failure's record is written before the move into failed/, its .error after it: a
    reader between the two (or a crash there) still gets the reason, in the .error's form."""
    job_id = queue.enqueue({})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "exit 9\nthe job's stderr tail\n\n")
    error_file = queue.failed / f"{job_id}.error"
    from_file = queue.job(job_id)
    error_file.unlink()
    view = queue.job(job_id)
    assert view is not None and from_file is not None
    assert view.state is JobState.FAILED
    assert view.error == from_file.error == "exit 9\nthe job's stderr tail\n"
    # A record that does not say failed (a retry by hand rewrote it) is no reason of this file.
    queue.store.write(Record(job_id, JobState.QUEUED, 0, "q", "u", error="exit 9"))
    view = queue.job(job_id)
    assert view is not None and view.error is None


def test_find_job_with_only_a_record(queue: Queue) -> None:
    """A job whose file was cleaned away is still known from its record."""
    queue.store.write(Record("gone", JobState.SUCCEEDED, 1, "q", time.strftime("%Y")))
    view = queue.job("gone")
    assert view is not None and (view.state, view.path) == (JobState.SUCCEEDED, None)


# --- on the in-memory backend -------------------------------------------------------------


@pytest.fixture
def memory(memory_queue: str) -> JobQueue:
    """The test's in-memory queue, as every caller opens it."""
    return open_queue(memory_queue)


def test_memory_pages_are_newest_first_and_clamped(memory: JobQueue) -> None:
    """The page rules hold whatever backend fills the page: newest first, out-of-range pages
    clamp to the last, per_page 0 is everything."""
    ids = [memory.enqueue({"n": n}) for n in range(25)]
    page = memory.page(1, 10)
    assert [r.job_id for r in page.items] == ids[::-1][:10]
    assert (page.meta.total, page.meta.total_pages, page.meta.next_page) == (25, 3, 2)
    last = memory.page(99, 10)
    assert last.meta.page == 3 and [r.job_id for r in last.items] == ids[:5][::-1]
    assert [r.job_id for r in memory.page(2, 0).items] == ids[::-1]


@given(count=st.integers(min_value=0, max_value=30), per_page=st.integers(min_value=1, max_value=7))
@settings(max_examples=25, deadline=None)
def test_memory_pages_cover_every_job_once(count: int, per_page: int) -> None:
    """Walking every page of a memory queue lists each job exactly once, newest first."""
    from lanekit.queue.memory import MemoryQueue

    queue = MemoryQueue()
    queue.ensure()
    try:
        ids = [queue.enqueue({"n": n}) for n in range(count)]
        seen: list[str] = []
        page = queue.page(1, per_page)
        for number in range(1, page.meta.total_pages + 1):
            seen.extend(r.job_id for r in queue.page(number, per_page).items)
    finally:
        queue.close()
    assert seen == ids[::-1]


def test_memory_state_filter_follows_the_jobs(memory: JobQueue) -> None:
    """--state lists the jobs in that state (a retry waiting out its backoff is queued); an
    empty state says how many jobs are elsewhere."""
    a, b, c = (memory.enqueue({"n": n}) for n in range(3))
    first = memory.claimer().claim()
    assert first is not None and first.job_id == a
    memory.settle(first, Verdict.gave_up("exit 1"))
    second = memory.claimer().claim()
    assert second is not None
    memory.settle(second, Verdict.failed("exit 1", max_attempts=3))

    def listed(state: JobState | None) -> set[str]:
        return {r.job_id for r in memory.page(1, 0, state).items}

    assert listed(JobState.FAILED) == {a}
    assert listed(JobState.QUEUED) == {b, c}
    assert listed(None) == {a, b, c}
    empty = memory.page(1, 10, JobState.SUCCEEDED)
    assert (empty.items, empty.elsewhere) == ([], 3)


def test_memory_find_job(memory: JobQueue) -> None:
    """find_job tells where a job is, its record, a failed job's reason and a retry's due
    time; an unknown id is None and an unsafe one a UsageError."""
    job_id = memory.enqueue({})
    view = memory.job(job_id)
    assert view is not None and view.state is JobState.QUEUED and view.error is None
    claim = memory.claimer().claim()
    assert claim is not None
    running = memory.job(job_id)
    assert running is not None and running.state is JobState.RUNNING
    assert running.path == claim.path
    memory.settle(claim, Verdict.failed("exit 9", max_attempts=3))
    waiting = memory.job(job_id)
    assert waiting is not None and waiting.state is JobState.QUEUED
    assert waiting.retry_at is not None
    assert waiting.record is not None and waiting.record.error == "exit 9"
    memory.cancel(job_id)
    failed = memory.job(job_id)
    assert failed is not None and (failed.state, failed.error) == (JobState.FAILED, "cancelled\n")
    assert memory.job("unknown") is None
    with pytest.raises(UsageError):
        memory.job("../etc/passwd")
