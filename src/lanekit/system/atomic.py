"""The one atomic writer: temp file in the same directory, fsync, rename, commit the directory.

- The temp file is `.<name>.<random>.tmp`, created O_CREAT|O_EXCL|O_NOFOLLOW: a name someone
  planted (a symlink to a file of the user's, a FIFO) makes the open fail instead of writing
  through it, and a fresh random name is tried. The mode is set with fchmod on the descriptor,
  never by path, so nothing but the file just created is ever chmod-ed.
- The rename replaces the destination (`replace=True`, snapshots and plists) or never does
  (`replace=False`, through fsops.rename_noreplace: FileExistsError when the name is taken).
- Durability (`durable=True`): a plain fsync of the file, then the rename, then ONE full flush
  of the directory (fsops.fsync_dir: F_FULLFSYNC on macOS). fcntl(2): F_FULLFSYNC flushes the
  drive's whole cache, so it also persists the file data fsync'd before it; one full flush at
  the commit point is what the write costs (Apple SSDs manage ~50 a second).
- Missing parent directories are created 0700 (owned.make_private_dirs).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lanekit.system import fsops
from lanekit.system.owned import PRIVATE_FILE, make_private_dirs

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_ATTEMPTS = 8
"""Fresh random names tried when one is taken (only ever by something planted)."""


def temp_name(path: Path) -> Path:
    """A fresh, unpredictable temp name next to `path` (same directory, so the rename is atomic)."""
    return path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")


def write_atomic(
    path: Path,
    data: bytes,
    mode: int = PRIVATE_FILE,
    *,
    durable: bool = True,
    replace: bool = True,
    mtime: float | None = None,
) -> None:
    """Put `data` at `path` so readers see the old or the new file, never a torn one.

    `durable=False` skips the flushes (a crash may then lose the write, never tear it).
    `replace=False` refuses (FileExistsError) when `path` exists, and never replaces it.
    `mtime` (epoch seconds) dates the file, on its descriptor before it is put in place.
    """
    make_private_dirs(path.parent)
    tmp, fd = _create_temp(path)
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, mode)
            if mtime is not None:
                os.utime(fd, (mtime, mtime))
            if durable:
                fsops.fsync_fd(fd)
        finally:
            os.close(fd)
        if replace:
            tmp.replace(path)
        else:
            fsops.rename_noreplace(str(tmp), str(path))
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsops.fsync_dir(str(path.parent))


def _create_temp(path: Path) -> tuple[Path, int]:
    for _ in range(_ATTEMPTS - 1):
        tmp = temp_name(path)
        try:
            return tmp, os.open(tmp, _CREATE, PRIVATE_FILE)
        except FileExistsError:
            continue
    tmp = temp_name(path)
    return tmp, os.open(tmp, _CREATE, PRIVATE_FILE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
