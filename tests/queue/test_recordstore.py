"""The records/ directory: records read and written atomically, a settle's line appended within
one block, the re-execution guard's ids, temp names that survive a killed writer."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from lanekit.queue.directory import recordstore
from lanekit.queue.directory.recordstore import RecordStore
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.system import fsops

GOOD = Record("j1", JobState.RUNNING, 2, "2026-07-26T12:00:00.000Z", "2026-07-26T12:00:31.000Z")
QUEUED = Record("j1", JobState.QUEUED, 1, "2026-07-26T12:00:00.000Z", "2026-07-26T12:01:00.000Z")
DONE = Record("j1", JobState.SUCCEEDED, 2, "2026-07-26T12:00:00.000Z", "2026-07-26T12:02:00.000Z")


class Killed(BaseException):
    """Stands for a SIGKILL in the middle of a write."""


def test_store_reads_none_for_a_job_without_record(tmp_path: Path) -> None:
    """No record is a normal state (a producer's job before its first claim), not an error."""
    assert RecordStore(tmp_path).read("nope") is None


def test_store_write_then_read(tmp_path: Path) -> None:
    """A written record reads back equal; the temp file is gone and the file is private."""
    store = RecordStore(tmp_path / "records", tmp_dir=tmp_path)
    (tmp_path / "records").mkdir()
    store.write(GOOD)
    assert store.read("j1") == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records"]
    assert (store.path("j1").stat().st_mode & 0o777) == 0o600


def test_store_replaces_the_previous_record(tmp_path: Path) -> None:
    """Writing again replaces the record (one current generation only)."""
    store = RecordStore(tmp_path, durable=False)
    store.write(GOOD)
    newer = Record("j1", JobState.SUCCEEDED, 2, GOOD.queued_at, "later")
    store.write(newer)
    assert store.read("j1") == newer
    assert store.ids() == ["j1"]


def test_store_names_the_unreadable_file(tmp_path: Path) -> None:
    """A damaged record raises RecordError whose message names its path (two records on one
    line: a torn write followed by a newer one)."""
    store = RecordStore(tmp_path)
    store.path("j1").write_bytes(GOOD.to_bytes()[:-1] + GOOD.to_bytes())
    with pytest.raises(RecordError, match=str(store.path("j1"))):
        store.read("j1")


def test_store_refuses_a_record_of_another_job(tmp_path: Path) -> None:
    """records/a.json holding job b's record is not a's record."""
    store = RecordStore(tmp_path)
    store.path("a").write_bytes(GOOD.to_bytes())
    with pytest.raises(RecordError, match="belongs to job 'j1', not 'a'"):
        store.read("a")


def test_succeeded_ids(tmp_path: Path) -> None:
    """Only records saying succeeded count; temp files are not records."""
    store = RecordStore(tmp_path)
    store.write(Record("ok", JobState.SUCCEEDED, 1, "q", "u"))
    store.write(Record("bad", JobState.FAILED, 3, "q", "u"))
    (tmp_path / ".ok.123.1.rec").write_bytes(b"partial")
    assert store.succeeded_ids() == {"ok"}
    assert sorted(store.ids()) == ["bad", "ok"]


def test_store_write_after_a_killed_process_with_the_same_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temp file that a SIGKILLed writer left behind never collides with the name a later
    process with the same pid picks (its counter starts again at 0): the write succeeds."""
    store = RecordStore(tmp_path / "records", durable=False, tmp_dir=tmp_path)
    (tmp_path / "records").mkdir()
    monkeypatch.setattr(fsops, "_tmp_serial", itertools.count())
    real = fsops.write_new

    def killed_after_create(path: str, data: bytes, **kwargs: Any) -> None:
        real(path, data, **kwargs)
        raise Killed  # SIGKILL: no cleanup runs, the temp file stays

    monkeypatch.setattr(fsops, "write_new", killed_after_create)
    with pytest.raises(Killed):
        store.write(GOOD)
    monkeypatch.setattr(fsops, "write_new", real)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".rec.")]
    assert len(leftovers) == 1
    monkeypatch.setattr(fsops, "_tmp_serial", itertools.count())
    store.write(GOOD)
    assert store.read("j1") == GOOD
    assert store.create(store.stage(GOOD), "j1") is False


def test_create_never_replaces_a_record(tmp_path: Path) -> None:
    """create() puts a staged record in place only when the job has none: an existing record
    (a claim's, a success) is left byte for byte, and the staged file is removed either way."""
    store = RecordStore(tmp_path / "records", durable=False, tmp_dir=tmp_path / "tmp")
    (tmp_path / "records").mkdir()
    (tmp_path / "tmp").mkdir()
    queued = Record("j1", JobState.QUEUED, 0, "q", "q")
    assert store.create(store.stage(queued), "j1") is True
    assert store.read("j1") == queued
    succeeded = Record("j1", JobState.SUCCEEDED, 1, "q", "u")
    store.write(succeeded)
    before = store.path("j1").read_bytes()
    assert store.create(store.stage(queued), "j1") is False
    assert store.path("j1").read_bytes() == before
    assert os.listdir(tmp_path / "tmp") == []


def test_durable_create(tmp_path: Path) -> None:
    """With fsyncs on, staging and creating work the same."""
    store = RecordStore(tmp_path)
    assert store.create(store.stage(GOOD), "j1") is True
    assert store.read("j1") == GOOD
    assert [p.name for p in tmp_path.iterdir()] == ["j1.json"]


def _store(tmp_path: Path) -> RecordStore:
    (tmp_path / "records").mkdir()
    (tmp_path / "tmp").mkdir()
    return RecordStore(tmp_path / "records", durable=False, tmp_dir=tmp_path / "tmp")


def test_a_settle_appends_to_the_record_file(tmp_path: Path) -> None:
    """A settle writes into the record file it finds (same inode: no file created) and is
    read back; every other write replaces the file by one line."""
    store = _store(tmp_path)
    store.write(GOOD)
    before = os.lstat(store.path("j1"))
    store.settle(QUEUED)
    store.settle(DONE)
    after = os.lstat(store.path("j1"))
    assert after.st_ino == before.st_ino
    assert store.path("j1").read_bytes() == GOOD.to_bytes() + QUEUED.to_bytes() + DONE.to_bytes()
    assert store.read("j1") == DONE
    store.write(QUEUED)
    assert store.path("j1").read_bytes() == QUEUED.to_bytes()
    assert os.listdir(tmp_path / "tmp") == []


def test_a_settle_appends_only_within_one_block(tmp_path: Path) -> None:
    """A file the next line would take past FILE_LIMIT is replaced by that line alone."""
    store = _store(tmp_path)
    store.write(GOOD)
    lines = 1
    while (lines + 1) * len(QUEUED.to_bytes()) <= recordstore.FILE_LIMIT:
        store.settle(QUEUED)
        lines += 1
    inode = os.lstat(store.path("j1")).st_ino
    store.settle(DONE)
    assert store.path("j1").read_bytes() == DONE.to_bytes()
    assert os.lstat(store.path("j1")).st_ino != inode
    assert lines > 10  # a file holds many attempts before it is replaced


@pytest.mark.parametrize("tail", [QUEUED.to_bytes()[:40], b"\x00" * 16])
def test_a_settle_never_appends_after_a_line_cut_short(tmp_path: Path, tail: bytes) -> None:
    """After an append cut short (a crash mid-write) the next settle replaces the file: its
    line is never glued to the broken one."""
    store = _store(tmp_path)
    store.path("j1").write_bytes(GOOD.to_bytes() + tail)
    assert store.read("j1") == GOOD
    store.settle(DONE)
    assert store.path("j1").read_bytes() == DONE.to_bytes()
    assert store.read("j1") == DONE


def test_a_settle_where_no_record_is_creates_one(tmp_path: Path) -> None:
    """A job enqueued by a producer outside lanekit has no record: the settle makes one."""
    store = _store(tmp_path)
    store.settle(DONE)
    assert store.path("j1").read_bytes() == DONE.to_bytes()


def test_a_settle_never_writes_through_a_symlink(tmp_path: Path) -> None:
    """A record that is a symlink is replaced, never appended through to its target."""
    store = _store(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_bytes(GOOD.to_bytes())
    store.path("j1").symlink_to(target)
    store.settle(DONE)
    assert target.read_bytes() == GOOD.to_bytes()
    assert not store.path("j1").is_symlink()
    assert store.read("j1") == DONE


def test_identity_tells_an_append_apart_within_one_clock_tick(tmp_path: Path) -> None:
    """An append changes the record's identity even when the file's times do not move (ext4
    takes them from a clock that ticks every few milliseconds)."""
    store = _store(tmp_path)
    store.write(GOOD)
    seen = store.identity("j1")
    assert seen is not None
    stat = os.lstat(store.path("j1"))
    store.settle(QUEUED)
    os.utime(store.path("j1"), ns=(stat.st_atime_ns, stat.st_mtime_ns))
    now = store.identity("j1")
    assert now is not None and now[0] == seen[0] and now[2] == seen[2]
    assert now != seen
    assert store.read_identified("j1") == (QUEUED, now)
