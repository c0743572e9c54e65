"""The lane lock: the one flock that says a run of a lane is in progress.

Every run of a lane holds it for its whole life (lanekit.run.entry's empty run and
lanekit.run.runner's full run alike), and `apply` holds it across a reload so it never boots
out a lane mid-run. It is a non-blocking exclusive flock on `logs/<lane>.lock` in the lane's
queue directory, next to the lane log (beside the lane log for a queue with no directory
here). The kernel drops it when the holder dies, however it dies, so a stale lock file never
blocks a lane; "is it held?" is a shared probe taken and dropped at once.

Builtin modules only at import time (os, fcntl, and lanekit.queue, which imports nothing): the
empty-run fast path imports this module, and its start-up is a benchmark figure.
"""

from __future__ import annotations

import fcntl
import os

from lanekit.queue import directory_of

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path


def lock_file(queue_dir: str, lane: str, log_path: str | None = None) -> str:
    """The lane lock's path: in the queue's logs/ directory, next to the lane log (by default
    there too); beside the lane log `log_path` for a queue with no directory on this machine
    (lanekit.queue.directory_of)."""
    if log_path is not None and directory_of(queue_dir) is None:
        return f"{os.path.dirname(log_path)}/{lane}.lock"  # noqa: PTH120 - a str path
    return f"{queue_dir}/logs/{lane}.lock"


def lane_lock_path(queue_dir: Path, lane: str, log_path: Path | None = None) -> Path:
    """`lock_file` as a Path, for callers that hold the queue directory as one."""
    from pathlib import Path

    return Path(lock_file(str(queue_dir), lane, None if log_path is None else str(log_path)))


def try_lock(path: str) -> int | None:
    """Open `path` (created if missing) and take a non-blocking exclusive flock on it: the
    descriptor (close it to release), or None when another process holds the lock. Raises
    OSError when the file cannot be opened."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


class LaneLock:
    """A non-blocking flock on one lane lock file, held by this object until released."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False when another process holds it. Raises OSError when the lock
        file cannot be opened (its directory is missing or unwritable)."""
        self._fd = try_lock(str(self.path))
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock (closing the descriptor releases the flock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None


def lane_busy(path: Path) -> bool:
    """True when some process holds the lane lock at `path` (a run is in progress)."""
    from lanekit.system.fsops import flock_held

    return flock_held(path) is True


class LaneLocks:
    """Several lane locks taken together, all or none. `apply` holds both of a lane whose
    queue directory changed: a run still going uses the old path."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self._locks = [LaneLock(path) for path in dict.fromkeys(paths)]

    def acquire(self) -> bool:
        """All locks, or none (False: a run holds one)."""
        for lock in self._locks:
            try:
                got = lock.acquire()
            except OSError:
                # The lock file cannot be opened (its dir is gone or read-only): no run can
                # hold it either, which is exactly what a shared probe tells us.
                got = not lane_busy(lock.path)
            if not got:
                self.release()
                return False
        return True

    def release(self) -> None:
        """Drop every lock this object holds."""
        for lock in self._locks:
            lock.release()
