"""The watchdog's memory: written atomically and privately, read back equal, and refused when
someone else could have written it."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from lanekit.doctor import Severity, SubjectKind
from lanekit.errors import EnvironmentUnusableError, UnsafeStateError
from lanekit.state import schemas
from lanekit.watch import memory
from lanekit.watch.alerts import Alert, Notice, NoticeKind, Remembered

T0 = datetime(2026, 12, 1, 9, 0, 0)
ALERT = Alert(
    "queue.stale-claim",
    Severity.ERROR,
    "notes",
    SubjectKind.QUEUE,
    ("funnel", "pm"),
    'a "quoted" message\\nwith a newline',
    "lanekit recover funnel",
)


def _full() -> memory.Memory:
    notice = Notice.of(NoticeKind.NEW, ALERT, first_seen=T0, at=T0)
    return memory.Memory(
        alerts={ALERT.key: Remembered(ALERT, T0, T0)},
        outbox=(memory.Pending(notice, ("webhook",)),),
        failed={"notes": 3},
        completed_at=T0.timestamp(),
        digest_day="2026-12-01",
        history=(memory.Happened(T0.timestamp(), "new", ALERT.key, ALERT.lanes),),
    )


def test_round_trip_is_exact(tmp_path: Path) -> None:
    """What one pass saves is what the next one loads."""
    path = tmp_path / "w" / "alerts.json"
    memory.save(path, _full())
    assert memory.load(path) == _full()


def test_missing_memory_is_empty(tmp_path: Path) -> None:
    """The first pass starts from nothing."""
    assert memory.load(tmp_path / "none.json") == memory.Memory()


def test_written_private_whatever_the_umask(tmp_path: Path) -> None:
    """0600 in a 0700 directory even under umask 000, with no temp file left behind."""
    old = os.umask(0)
    try:
        path = tmp_path / "w" / "alerts.json"
        memory.save(path, _full())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["alerts.json"]


def test_memory_others_may_write_is_refused(tmp_path: Path) -> None:
    """A world-writable memory file decides what is sent where: refused (exit 69)."""
    path = tmp_path / "alerts.json"
    memory.save(path, _full())
    path.chmod(0o666)
    with pytest.raises(UnsafeStateError, match="watch memory"):
        memory.load(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO planted at the memory's name is refused, never read (it would block)."""
    path = tmp_path / "alerts.json"
    os.mkfifo(path)
    with pytest.raises(UnsafeStateError, match="not a regular file"):
        memory.load(path)


@pytest.mark.parametrize("body", ["{", "[]", '{"schema": 99}', '{"schema": 1}'])
def test_unreadable_memory_names_the_fix(tmp_path: Path, body: str) -> None:
    """Damaged or future memory is one clear error naming the file and how to start afresh."""
    path = tmp_path / "alerts.json"
    path.write_text(body)
    path.chmod(0o600)
    with pytest.raises(EnvironmentUnusableError) as caught:
        memory.load(path)
    assert str(path) in caught.value.message
    assert "mv " in caught.value.hint


def test_history_keeps_only_what_the_digest_needs() -> None:
    """Opened/resolved events older than three days are dropped; repeats are not history."""
    old = memory.Happened(T0.timestamp() - 4 * 86400, "new", "k", ())
    recent = memory.Happened(T0.timestamp() - 3600, "resolved", "k", ())
    notices = [
        Notice.of(NoticeKind.REPEAT, ALERT, first_seen=T0, at=T0),
        Notice.of(NoticeKind.RESOLVED, ALERT, first_seen=T0, at=T0),
    ]
    kept = memory.record_history((old, recent), notices, T0)
    assert [(h.kind, h.key) for h in kept] == [("resolved", "k"), ("resolved", ALERT.key)]


def test_saved_file_is_json_with_a_schema(tmp_path: Path) -> None:
    """The file is plain JSON with its schema version (for a person inspecting it)."""
    path = tmp_path / "alerts.json"
    memory.save(path, _full())
    assert json.loads(path.read_text())["schema"] == schemas.MEMORY_SCHEMA
