"""What lanekit owns on disk: its private directories, and refusing state someone else could
have written.

Another local user who can write a snapshot, a plist or a state directory can make the owner's
next run execute their command as the owner. So:

- every directory lanekit creates is 0700 whatever the umask (`make_private_dirs`), every file
  0600 (`PRIVATE_FILE`); a plist too: per-user agents are read as the user, and launchctl(1) only
  asks that they be owned by the loading user and not group/world-writable;
- a snapshot, plist or state directory that is not owned by the effective user, or that group or
  others may write, is refused with a message naming it and a quoted fix command
  (`check_private`), never trusted;
- files lanekit reads from places others may write into are opened without following a symlink,
  without blocking (a FIFO named `x.plist` must not hang `apply`), and type-checked on the
  descriptor before a byte is read (`read_regular`).

Builtin modules only (os, stat): the empty-run fast path (lanekit.snapshot_reader) uses
`unsafe_reason`.
The error classes are imported when an error is raised, not at import time, for the same reason.
"""

# ruff: noqa: PTH100, PTH102, PTH116, PTH120
# (os on str paths: the empty-run fast path imports this module and must not import pathlib)
from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.errors import LanekitError

    StrPath = str | os.PathLike[str]

PRIVATE_DIR = 0o700
"""Every directory lanekit creates: state, snapshots, emulated domain, queue and log dirs."""
PRIVATE_FILE = 0o600
"""Every file lanekit writes: snapshots, plists, records, logs, the emulator's state."""

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    """`a regular file`, `a FIFO`, `a directory`... for messages."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def make_private_dirs(path: StrPath, *, parents: bool = True) -> None:
    """Create the directory `path` (and, with `parents`, every missing ancestor) mode 0700,
    whatever the umask. Directories that already exist are left as they are (check_private
    judges them); an existing non-directory at `path` is left for the caller's checks too.

    The mode is set with fchmod on a descriptor opened without following symlinks, and only
    on a directory this process created and owns, so a name someone swapped in meanwhile is
    never chmod-ed. mkdir(0700) alone is never wider than 0700; the fchmod only restores bits a
    strict umask (0277) took away.
    """
    target = os.path.abspath(os.fspath(path))
    missing: list[str] = []
    current = target
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current or not parents:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR)
        except FileExistsError:
            continue  # made meanwhile (another lanekit process): it set the mode
        fd = os.open(directory, _DIR_FLAGS)
        try:
            if os.fstat(fd).st_uid == os.geteuid():
                os.fchmod(fd, PRIVATE_DIR)
        finally:
            os.close(fd)


def unsafe_reason(info: os.stat_result, *, directory: bool = False) -> str | None:
    """Why an object with this stat may have been written by someone else (or is not the kind
    of object expected), or None when it is safe to trust."""
    wanted = stat.S_ISDIR if directory else stat.S_ISREG
    if not wanted(info.st_mode):
        return f"is {kind_of(info.st_mode)}, not a {'directory' if directory else 'regular file'}"
    euid = os.geteuid()
    if info.st_uid != euid:
        return f"is owned by uid {info.st_uid}, not by you (uid {euid})"
    writable = [
        who
        for bit, who in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others"))
        if info.st_mode & bit
    ]
    if writable:
        return f"is writable by {' and '.join(writable)} (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def unsafe_error(
    path: StrPath, reason: str, what: str, info: os.stat_result | None
) -> LanekitError:
    """The refusal for `path` (a `what`: lane snapshot, plist, state directory) with the fix.

    One of ours that is merely too open gets a chmod; anything else (another owner, a FIFO) is
    moved aside, never deleted for the user: it may be evidence, and it is not ours to remove.
    """
    from lanekit.errors import UnsafeStateError
    from lanekit.quoting import shell_quote

    shown = os.fspath(path)
    ours = info is not None and info.st_uid == os.geteuid()
    if ours and info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        mode = "700" if stat.S_ISDIR(info.st_mode) else "600"
        fix = f"chmod {mode} {shell_quote(shown)}"
        if what != "state directory":
            fix += " (or rerun `lanekit apply`, which rewrites it)"
    else:
        fix = (
            f"inspect it, then move it aside: mv -- {shell_quote(shown)} "
            f"{shell_quote(shown + '.untrusted')}, and run `lanekit apply`"
        )
    return UnsafeStateError(f"{shown}: {what} {reason}; lanekit will not trust it", fix)


def check_private(path: StrPath, what: str, *, directory: bool = False) -> None:
    """Refuse (UnsafeStateError, exit 69) `path` unless it is ours and only we may write it.
    A missing path is fine: there is nothing to trust yet. Symlinks are followed for
    directories (a state dir may be reached through one) and refused for files."""
    try:
        info = os.stat(path) if directory else os.lstat(path)
    except FileNotFoundError:
        return
    reason = unsafe_reason(info, directory=directory)
    if reason is not None:
        raise unsafe_error(path, reason, what, info)


def read_regular(
    path: StrPath, what: str, *, follow: bool = False
) -> tuple[bytes, os.stat_result] | None:
    """The bytes of the regular file at `path` and its stat (from the open descriptor), or
    None when there is no such file. Never blocks: opened O_NONBLOCK, and anything but a
    regular file (a FIFO, a device, a directory; a symlink unless `follow`) is refused with an
    UnsafeStateError naming it before a byte is read."""
    flags = _READ_FLAGS if follow else _READ_FLAGS | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:
        info = _lstat(path)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise unsafe_error(
                path, f"is {kind_of(info.st_mode)}, not a regular file", what, info
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise unsafe_error(path, f"is {kind_of(info.st_mode)}, not a regular file", what, info)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks), info


def _lstat(path: StrPath) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
