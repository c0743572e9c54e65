"""The lane lock (lanekit.run.lanelock): one flock per lane, held by a process for its run; several
taken together all or none; dropped by the kernel when its holder dies."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lanekit.run.lanelock import LaneLock, LaneLocks, lane_busy, lane_lock_path, lock_file, try_lock

HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the flock on `path` until the block ends (then it exits)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def test_the_lock_lives_next_to_the_lane_log(tmp_path: Path) -> None:
    """`logs/<lane>.lock` in the queue directory, as text and as a Path."""
    assert lock_file("/q", "funnel") == "/q/logs/funnel.lock"
    assert lane_lock_path(tmp_path, "funnel") == tmp_path / "logs" / "funnel.lock"


def test_a_lock_another_process_holds_is_refused_until_it_exits(tmp_path: Path) -> None:
    """try_lock says None (and LaneLock False) while another process holds the lock, and the
    lock is free again once that process is gone, however it ended."""
    path = tmp_path / "lane.lock"
    with held_elsewhere(path):
        assert try_lock(str(path)) is None
        lock = LaneLock(path)
        assert not lock.acquire()
        assert not lock.held
        assert lane_busy(path)
    assert not lane_busy(path)
    lock = LaneLock(path)
    assert lock.acquire()
    assert lock.held
    lock.release()
    assert not lock.held


def test_several_locks_are_taken_all_or_none(tmp_path: Path) -> None:
    """LaneLocks over two paths, one held elsewhere: acquire is False and leaves the other
    free; with both free it takes both (a duplicate path counts once)."""
    first, second = tmp_path / "old.lock", tmp_path / "new.lock"
    locks = LaneLocks([first, second, first])
    with held_elsewhere(second):
        assert not locks.acquire()
        assert not lane_busy(first)
    assert locks.acquire()
    assert lane_busy(first)
    assert lane_busy(second)
    locks.release()
    assert not lane_busy(first)
    assert not lane_busy(second)


def test_a_lock_file_that_cannot_be_opened_counts_as_free(tmp_path: Path) -> None:
    """A lock whose directory is gone cannot be held by any run either: LaneLocks says yes
    (the probe finds no holder) instead of failing."""
    assert LaneLocks([tmp_path / "gone" / "lane.lock"]).acquire()
