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
  descriptor before a byte is read (`read_regular`);
- what decides what lanekit runs (lanes.toml, a user template, a lane snapshot) and where it
  creates a queue is judged along its whole path (`untrusted_part`, `check_trusted`): the file
  or directory itself and every directory a name of its path is looked up in, symlinks
  followed, from your home directory down (from `/` for a path outside your home). Each must
  be owned by you or root and writable by nobody else; a sticky directory of yours or root's
  (`/tmp`) is the one exception, since others may add names there but not replace yours. So
  `apply` refuses, before it creates anything, a queue inside another user's directory
  (directly or through a symlink), and no command reads a lanes.toml another local user could
  have rewritten.

Builtin modules only (os, stat; pwd, imported when a message names a user or a home): the
empty-run fast path reads its snapshot through lanekit.state.snapshot_schema, which uses them.
The error classes are imported when an error is raised, not at import time, for the same reason.
"""

# ruff: noqa: PTH100, PTH102, PTH115, PTH116, PTH117, PTH118, PTH120
# (os on str paths: the empty-run fast path imports this module and must not import pathlib)
from __future__ import annotations

import os
import stat

from lanekit.system.fdio import read_all

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
    return writers(info)


def _who(uid: int) -> str:
    import pwd

    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def writers(info: os.stat_result, *, root: bool = False, sticky: bool = False) -> str | None:
    """Why someone other than you may write the object `info` describes, or None: it is owned
    by another user (root counts as such unless `root`), or group or others may write it (a
    sticky directory aside, with `sticky`: others may add names there, not replace yours).
    The one judgement behind unsafe_reason (lanekit's own state) and untrusted_part (the
    files and directories on a path lanekit reads or creates)."""
    euid = os.geteuid()
    if info.st_uid != euid and not (root and info.st_uid == 0):
        owners = f"you ({_who(euid)})" + (" or root" if root and euid != 0 else "")
        return f"is owned by {_who(info.st_uid)}, not by {owners}"
    writable = [
        who
        for bit, who in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others"))
        if info.st_mode & bit
    ]
    if not writable or (sticky and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        return None
    return f"is writable by {' and '.join(writable)} (mode {stat.S_IMODE(info.st_mode):04o})"


def unsafe_error(
    path: StrPath, reason: str, what: str, info: os.stat_result | None
) -> LanekitError:
    """The refusal for `path` (a `what`: lane snapshot, plist, state directory) with the fix.

    One of ours that is merely too open gets a chmod; anything else (another owner, a FIFO) is
    moved aside, never deleted for the user: it may be evidence, and it is not ours to remove.
    """
    from lanekit.errors import UnsafeStateError
    from lanekit.system.quoting import shell_quote

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
        data = read_all(fd, info.st_size)
    finally:
        os.close(fd)
    return data, info


def _lstat(path: StrPath) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


_MAX_SYMLINKS = 40
"""As many symlinks as the kernel follows in one path (MAXSYMLINKS) before ELOOP."""


class Untrusted:
    """A part of a path someone other than you or root could have written: the path itself,
    a directory one of its names is looked up in, or a symlink on the way."""

    __slots__ = ("info", "part", "reason")

    def __init__(self, part: str, info: os.stat_result, reason: str) -> None:
        self.part = part
        """The part, as an absolute path with the symlinks before it resolved."""
        self.info = info
        self.reason = reason
        """`is owned by uid 65534 (nobody), not by you (uid 501 (ann)) or root`, `is writable
        by group and others (mode 0777)`."""

    @property
    def theirs(self) -> bool:
        """Owned by another user (not you, not root): never suggest taking it over."""
        return self.info.st_uid not in (os.geteuid(), 0)


def home_directory() -> str:
    """Your home directory, with its symlinks resolved: $HOME, which `~` in lanes.toml means
    too (lanekit.state.paths), else the effective user's entry in the user database."""
    home = os.environ.get("HOME", "")
    if not os.path.isabs(home):
        import pwd

        try:
            home = pwd.getpwuid(os.geteuid()).pw_dir
        except KeyError:
            home = "/"
    return os.path.realpath(home or "/")


def _judge(part: str, info: os.stat_result, *, container: bool) -> Untrusted | None:
    """`part` as Untrusted when someone other than you or root may write it, else None.
    `container`: a directory a name is looked up in (or one the path ends at), which may be
    sticky."""
    reason = writers(info, root=True, sticky=container)
    return None if reason is None else Untrusted(part, info, reason)


def _names(path: str) -> list[str]:
    return [name for name in path.split("/") if name not in ("", ".")]


def untrusted_part(path: StrPath, *, home: StrPath | None = None) -> Untrusted | None:
    """The first part of `path` that someone other than you or root could have written, or
    None when nobody else could have (or the part that would be judged next does not exist
    yet: what is missing is the caller's to create, inside parts already judged).

    The path is walked as the kernel resolves it, one name at a time from `/`, following
    symlinks. Judged are every directory a name is looked up in, every symlink on the way and
    what the path finally names: each must be owned by you or root and writable by nobody
    else, but for a sticky directory (`/tmp`, whose other users may add names but not replace
    yours). For a path that resolves inside your home (`home`, default home_directory()),
    the directories above your home are not judged (they are the system's): the walk judges
    from your home down; for any other path, from `/` down. An unreadable part (EACCES, a
    file where a directory should be) ends the walk too: whatever then opens the path fails
    on its own.
    """
    top = os.path.realpath(home) if home is not None else home_directory()
    absolute = os.path.abspath(os.fspath(path))
    real = os.path.realpath(absolute)
    if real != top and not real.startswith(top.rstrip("/") + "/"):
        top = "/"  # not under your home: every directory from / down is judged
    pending = list(reversed(_names(absolute)))
    current = "/"
    links = 0

    def above_home(directory: str) -> bool:
        return directory != top and (top + "/").startswith(directory.rstrip("/") + "/")

    try:
        while pending:
            name = pending.pop()
            if name == "..":
                current = os.path.dirname(current)
                continue
            judged = not above_home(current)
            if judged:
                found = _judge(current, os.stat(current), container=True)
                if found is not None:
                    return found
            candidate = os.path.join(current, name)
            info = os.lstat(candidate)
            if not stat.S_ISLNK(info.st_mode):
                current = candidate
                continue
            if judged and info.st_uid not in (os.geteuid(), 0):
                return _judge(candidate, info, container=False)
            links += 1
            if links > _MAX_SYMLINKS:
                return None  # ELOOP for whoever opens it
            target = os.readlink(candidate)
            if target.startswith("/"):
                current = "/"
            pending.extend(reversed(_names(target)))
        if above_home(current):
            return None
        info = os.stat(current)
    except OSError:
        return None
    return _judge(current, info, container=stat.S_ISDIR(info.st_mode))


def trust_error(
    path: StrPath,
    what: str,
    found: Untrusted,
    *,
    elsewhere: str,
    risk: str = "change what lanekit runs as you",
    shown: str | None = None,
) -> LanekitError:
    """The refusal (UnsafeStateError, exit 69) of `path`, a `what` (configuration, template,
    queue directory...), because of `found`, with the fix: a chmod for a part of yours (sudo
    for root's) that is too open; for another user's file, a copy of your own in its place;
    for another user's directory or symlink never a chown, which would take it over from
    them, but `elsewhere`: a place of your own. `risk`: what that other user could do;
    `shown`: how to name `path` (default: as given)."""
    from lanekit.errors import UnsafeStateError
    from lanekit.system.quoting import cmdline

    shown = os.fspath(path) if shown is None else shown
    part = found.part
    if part == os.path.abspath(os.fspath(path)):
        where = f"{shown}: {what} {found.reason}"
    else:
        where = f"{shown}: {what} is reached through {part}, which {found.reason}"
    if found.theirs:
        if stat.S_ISREG(found.info.st_mode):
            mine = f"{part}.mine"
            fix = (
                "check what it says, then replace it with a copy of your own: "
                f"{cmdline('cp', '--', part, mine)} && {cmdline('mv', '--', mine, part)}"
            )
        else:
            fix = elsewhere
    else:
        chmod = cmdline("chmod", "go-w", part)
        fix = chmod if found.info.st_uid == os.geteuid() else f"sudo {chmod}, or {elsewhere}"
    return UnsafeStateError(
        f"{where}; someone other than you or root could {risk}, so lanekit will not trust it",
        fix,
    )


def check_trusted(
    path: StrPath,
    what: str,
    *,
    elsewhere: str,
    risk: str = "change what lanekit runs as you",
    shown: str | None = None,
    home: StrPath | None = None,
) -> None:
    """Refuse (UnsafeStateError, exit 69) `path` when a part of it someone other than you or
    root could have written (untrusted_part, trust_error); a missing path is fine."""
    found = untrusted_part(path, home=home)
    if found is not None:
        raise trust_error(path, what, found, elsewhere=elsewhere, risk=risk, shown=shown)
