"""atomic: the one atomic writer (exclusive random temp names, fchmod, one full flush per write)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lanekit.system import atomic, fsops
from lanekit.system.atomic import write_atomic


def _fingerprint(path: Path) -> tuple[bytes, int, int]:
    info = path.stat()
    return path.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns


def test_planted_symlink_at_the_old_temp_name_leaves_its_target_untouched(tmp_path: Path) -> None:
    """A symlink planted at `.<name>.<pid>.tmp` (the old, predictable temp name) pointing at a
    file of the user's: the write goes to the destination, the target keeps bytes and mode."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    victim.chmod(0o640)
    before = _fingerprint(victim)
    dest = tmp_path / "state" / "x.json"
    dest.parent.mkdir()
    planted = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    planted.symlink_to(victim)
    write_atomic(dest, b"new")
    assert dest.read_bytes() == b"new"
    assert _fingerprint(victim) == before
    assert planted.is_symlink()


def test_a_taken_temp_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the random temp name is taken (a planted symlink), O_EXCL refuses it and the next
    fresh name is used: the symlink's target is untouched."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    dest = tmp_path / "x.plist"
    names = iter([dest.with_name(".x.plist.planted.tmp"), dest.with_name(".x.plist.fresh.tmp")])
    names_seen: list[Path] = []

    def next_name(path: Path) -> Path:
        name = next(names)
        names_seen.append(name)
        return name

    (tmp_path / ".x.plist.planted.tmp").symlink_to(victim)
    monkeypatch.setattr(atomic, "temp_name", next_name)
    write_atomic(dest, b"plist")
    assert victim.read_bytes() == b"keep"
    assert dest.read_bytes() == b"plist"
    assert [n.name for n in names_seen] == [".x.plist.planted.tmp", ".x.plist.fresh.tmp"]


def test_temp_names_are_random_and_in_the_same_directory(tmp_path: Path) -> None:
    """Two temp names for one file differ and sit next to it (so the rename is atomic)."""
    dest = tmp_path / "x.json"
    first, second = atomic.temp_name(dest), atomic.temp_name(dest)
    assert first != second
    assert first.parent == second.parent == tmp_path
    assert str(os.getpid()) not in first.name


def test_mode_is_set_whatever_the_umask_and_parents_are_0700(tmp_path: Path) -> None:
    """Under umask 000 the file gets exactly the asked mode (0600 by default) and a missing
    parent directory is created 0700."""
    old = os.umask(0)
    try:
        write_atomic(tmp_path / "new" / "a", b"1")
        write_atomic(tmp_path / "new" / "b", b"2", 0o644)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "a").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new" / "b").stat().st_mode) == 0o644
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["a", "b"]


def test_replace_false_never_replaces(tmp_path: Path) -> None:
    """replace=False: an existing destination is refused and kept; no temp file is left."""
    dest = tmp_path / "x"
    dest.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        write_atomic(dest, b"new", replace=False)
    assert dest.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]
    write_atomic(tmp_path / "y", b"fresh", replace=False)
    assert (tmp_path / "y").read_bytes() == b"fresh"


def test_one_full_flush_per_durable_write_after_the_plain_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fcntl(2): a full flush persists everything fsync'd before it, so a durable write is a
    plain fsync of the file, the rename, then exactly one full flush (of the directory);
    durable=False issues neither."""
    events: list[str] = []
    plain, full = fsops.fsync_fd, fsops.full_fsync

    def count_plain(fd: int) -> None:
        events.append("fsync")
        plain(fd)

    def count_full(fd: int) -> None:
        events.append("full" if Path(tmp_path / "x").exists() else "full-before-rename")
        full(fd)

    monkeypatch.setattr(fsops, "fsync_fd", count_plain)
    monkeypatch.setattr(fsops, "full_fsync", count_full)
    write_atomic(tmp_path / "x", b"data")
    assert events == ["fsync", "full"]
    events.clear()
    write_atomic(tmp_path / "y", b"data", durable=False)
    assert events == []


def test_mtime_dates_the_file_before_it_is_in_place(tmp_path: Path) -> None:
    """`mtime` sets the new file's modification time (apply dates a plist by the launchd
    backend's clock); without it the file keeps the time it was written."""
    dated = tmp_path / "dated"
    write_atomic(dated, b"x", mtime=2_000_000_000.5)
    assert dated.stat().st_mtime == 2_000_000_000.5
    plain = tmp_path / "plain"
    write_atomic(plain, b"x")
    assert plain.stat().st_mtime < 2_000_000_000
