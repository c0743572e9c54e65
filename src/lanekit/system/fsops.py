"""The platform seam for the file operations the queue's promises rest on.

- `rename_noreplace(src, dst)`: move a file, failing with FileExistsError when `dst` exists.
  Plain rename(2) silently replaces the destination, which is how jobs vanish. Linux uses
  renameat2(RENAME_NOREPLACE), macOS renameatx_np(RENAME_EXCL), both through ctypes; where the
  kernel or the filesystem lacks them (ENOSYS, EINVAL, ENOTSUP) it falls back to link + unlink,
  which is equally exclusive because link(2) never replaces.
- `fsync_fd` / `sync_dir` / `fsync_dir` / `full_fsync`: a plain fsync (of a file, of a
  directory's entries) for what comes before a commit point,
  and one full flush at the commit point (the directory fsync after the rename): F_FULLFSYNC on
  macOS, where fsync stops at the drive's cache. fcntl(2): F_FULLFSYNC flushes the drive's whole
  cache, so it persists everything fsync'd before it as well; each further full flush would cost
  about 20 ms on an Apple SSD (~50 a second) and buy nothing.
- `write_new` / `replace_file`: create a file exclusively, or replace one atomically through a
  temporary file, durably when asked.
- `publish_new(src, dst)`: give a new temp file its final name without replacing, by link(2) +
  unlink(2), no ctypes (a new job or record).
- `tmp_suffix()`: the unique part of every temp file's name (no syscall per name).
- `probe_noreplace(directory)`: whether the no-replace rename works there (doctor, selftest).
- `append_line`: add a line to a small regular file that ends in one, in place: no inode is
  created (the settle's record, lanekit.queue.directory.recordstore).
- `open_regular` / `flock_held`: open only a regular file, never through a symlink or into a
  FIFO; whether someone holds a file's flock.

Where a path lives (a sync engine's folder, a network or FAT volume) is lanekit.system.volumes'.

Paths are `str` on purpose: these run on the claim path, where pathlib's per-call overhead shows.
ctypes (about 5 ms to import) is loaded on the first no-replace rename, never at import time, so
`lanekit run` on an empty queue does not pay for it.
"""

# ruff: noqa: PTH105, PTH108, PTH120
# (str paths and os.* on purpose: this is the claim path, see the docstring)
from __future__ import annotations

import errno
import itertools
import os
import sys

from lanekit.system import fdio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    NativeCall = Callable[[bytes, bytes], int]
    """Calls the OS's no-replace rename; returns 0 or the errno."""

_FALLBACK_ERRNOS = frozenset({errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP})
"""What the native call returns when the kernel or the filesystem cannot do it."""

_LINUX_AT_FDCWD = -100
_LINUX_RENAME_NOREPLACE = 1
_LINUX_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}
"""For C libraries older than glibc 2.28, which lack the renameat2 wrapper."""
_DARWIN_AT_FDCWD = -2
_DARWIN_RENAME_EXCL = 0x00000004


def link_unlink(src: str, dst: str) -> None:
    """No-replace rename from link(2) + unlink(2): link fails with EEXIST on a taken name.

    When two processes race for one source, both links may succeed (two names, one inode), but
    only one unlink of the source can: the loser removes its own link and sees ENOENT, exactly as
    it would have with an atomic rename.
    """
    os.link(src, dst, follow_symlinks=False)
    try:
        os.unlink(src)
    except FileNotFoundError:
        os.unlink(dst)
        raise


def publish_new(src: str, dst: str) -> None:
    """Give the new file `src`, which this process created under a unique temp name and nobody
    else knows, its final name `dst`, never replacing a file there: FileExistsError if `dst`
    exists. A new job and a new record are published this way (enqueue).

    link(2) + unlink(2) (`link_unlink`), not the no-replace rename: link(2) is as exclusive
    (it never replaces; EEXIST) and needs no ctypes, whose import alone costs a single
    `lanekit enqueue` about a fifth of an interpreter's start (benchmark figure (l)). Every
    queue proves before use that it can link across the directories a new file is published
    into (lanekit.queue.directory.safety). The file has two names for the instant between the
    calls: a claimer that takes the job then puts it back and passes it over (the claim of a
    job file with another name in tmp/), and a process killed there leaves its temp name to
    the sweep of tmp/ (an hour later: lanekit.queue.directory.recover.sweep_tmp), which is
    when that job can be claimed. A rename would leave no such window; the price is that
    rare delay, never a lost or replaced file."""
    link_unlink(src, dst)


class NoReplaceRename:
    """One strategy for `rename_noreplace`: a native call, or `link_unlink` (native is None)."""

    __slots__ = ("_native", "name")

    def __init__(self, name: str, native: NativeCall | None) -> None:
        self.name = name
        self._native = native

    def __call__(self, src: str, dst: str) -> None:
        """Move `src` to `dst`: FileExistsError if `dst` exists, FileNotFoundError if `src` is
        gone, another OSError for anything else (EXDEV, EACCES...)."""
        if self._native is None:
            link_unlink(src, dst)
            return
        code = self._native(os.fsencode(src), os.fsencode(dst))
        if code == 0:
            return
        if code in _FALLBACK_ERRNOS:
            if code == errno.ENOSYS:  # the kernel lacks it: no point asking again
                self._native = None
                self.name = "link"
            link_unlink(src, dst)
            return
        raise OSError(code, os.strerror(code), src, None, dst)


def _ctypes_call(fn: Any, dirfd: int, flags: int) -> NativeCall:
    import ctypes

    # No argtypes: ints and bytes pass as C int and char * by default (the flags fit in an
    # int), and argtypes would convert every argument again on each call of the claim path.
    fn.restype = ctypes.c_int
    get_errno = ctypes.get_errno

    def call(src: bytes, dst: bytes) -> int:
        if fn(dirfd, src, dirfd, dst, flags) == 0:
            return 0
        return get_errno()

    return call


def _linux_native() -> NativeCall | None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is not None:
        return _ctypes_call(function, _LINUX_AT_FDCWD, _LINUX_RENAME_NOREPLACE)
    number = _LINUX_SYS_RENAMEAT2.get(os.uname().machine)
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    def call(src: bytes, dst: bytes) -> int:
        result = syscall(
            ctypes.c_long(number),
            ctypes.c_int(_LINUX_AT_FDCWD),
            ctypes.c_char_p(src),
            ctypes.c_int(_LINUX_AT_FDCWD),
            ctypes.c_char_p(dst),
            ctypes.c_uint(_LINUX_RENAME_NOREPLACE),
        )
        return 0 if result == 0 else ctypes.get_errno()

    return call


def _darwin_native() -> NativeCall | None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameatx_np", None)
    if function is None:
        return None
    return _ctypes_call(function, _DARWIN_AT_FDCWD, _DARWIN_RENAME_EXCL)


def select_rename(platform: str) -> NoReplaceRename:
    """The strategy for `platform` (a `sys.platform` value): the one place the choice is made."""
    if platform.startswith("linux"):
        native = _linux_native()
        return NoReplaceRename("renameat2", native) if native else NoReplaceRename("link", None)
    if platform == "darwin":
        native = _darwin_native()
        return NoReplaceRename("renameatx_np", native) if native else NoReplaceRename("link", None)
    return NoReplaceRename("link", None)


_selected: NoReplaceRename | None = None


def rename_noreplace(src: str, dst: str) -> None:
    """Move `src` to `dst` without ever replacing `dst` (see the module docstring)."""
    global _selected  # noqa: PLW0603 - chosen once per process, on first use, to defer ctypes
    if _selected is None:
        _selected = select_rename(sys.platform)
    _selected(src, dst)


def rename_strategy() -> str:
    """The name of this process's strategy: renameat2, renameatx_np or link."""
    global _selected  # noqa: PLW0603 - see rename_noreplace
    if _selected is None:
        _selected = select_rename(sys.platform)
    return _selected.name


def fsync_fd(fd: int) -> None:
    """Move a file's data to the drive (plain fsync). Durable only once a full flush follows:
    every durable write here ends with fsync_dir, its commit point."""
    os.fsync(fd)


def full_fsync(fd: int) -> None:
    """fsync, then flush the drive's cache: F_FULLFSYNC on macOS (fcntl(2)). Elsewhere fsync
    already asks the drive to flush (Linux issues a cache flush on fsync)."""
    if sys.platform == "darwin":
        import fcntl

        try:
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            return
        except OSError:
            pass  # filesystems without F_FULLFSYNC (some network or FAT volumes): plain fsync
    os.fsync(fd)


def sync_dir(path: str) -> None:
    """Move a directory's new entries to the drive (plain fsync, no full flush): durable once
    the commit point's full flush (fsync_dir of another directory) follows."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """Commit a create or rename inside `path`: the one full flush of a durable write."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        full_fsync(fd)
    finally:
        os.close(fd)


_tmp_serial = itertools.count()
_pid = os.getpid()
_rng = int.from_bytes(os.urandom(8), "little") | 1


def _after_fork() -> None:
    """A forked child is another process: its own pid, and random names apart from its
    parent's (the serial may go on: the pid tells the two apart)."""
    global _pid, _rng  # noqa: PLW0603 - per-process constants, renewed in a fork's child
    _pid = os.getpid()
    _rng = int.from_bytes(os.urandom(8), "little") | 1


os.register_at_fork(after_in_child=_after_fork)


def tmp_suffix() -> str:
    """`<pid>.<serial>.<random>`: unique among this process's temp files, and unlike the names
    a SIGKILLed process with the same pid left behind (its serials also started at 0).

    No syscall per name (a claim and its settle make two): the pid is known since start (or
    the fork), the random part is a xorshift64 seeded from os.urandom once per process. The
    names need not be secret: tmp/ is 0700 and every temp file is created O_EXCL."""
    global _rng  # noqa: PLW0603 - see _after_fork
    x = _rng
    x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 7
    x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
    _rng = x
    return f"{_pid}.{next(_tmp_serial)}.{x & 0xFFFFFFFF:08x}"


def probe_noreplace(directory: str) -> str | None:
    """Whether a no-replace rename works in `directory`, asked of the filesystem itself: two
    files made there, one moved onto the other (must be refused), then onto a free name (must
    move); everything removed again. None when it works, else what went wrong. OSError when the
    probe files cannot be made (a missing or unwritable directory: nothing learnt).

    The filesystem's name is no answer: exFAT through FSKit (macOS 15+) is not the kernel's, and
    a volume may be mounted by a driver that supports more, or less, than its type suggests."""
    stem = f"{directory}/.rename-probe-{tmp_suffix()}"
    a, b, c = f"{stem}-a", f"{stem}-b", f"{stem}-c"
    write_new(a, b"a", durable=False)
    try:
        write_new(b, b"b", durable=False)
        return _probe_moves(a, b, c)
    finally:
        for path in (a, b, c):
            try:  # noqa: SIM105 - contextlib stays out of the empty run's imports (test_entry)
                os.unlink(path)
            except FileNotFoundError:
                pass


def _probe_moves(a: str, b: str, c: str) -> str | None:
    try:
        rename_noreplace(a, b)
    except FileExistsError:
        pass
    except OSError as exc:
        return _failed(exc)
    else:
        return "it replaced an existing file there"
    try:
        rename_noreplace(a, c)
    except OSError as exc:
        return _failed(exc)
    return None


def _failed(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return f"it fails there ({name}: {exc.strerror})"


def write_new(path: str, data: bytes, *, durable: bool, mode: int = 0o600) -> None:
    """Create `path` holding `data`; FileExistsError if it exists. Removed again on failure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        fdio.write_all(fd, data)
        if durable:
            fsync_fd(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


def replace_file(path: str, data: bytes, *, tmp: str, durable: bool, mode: int = 0o600) -> None:
    """Replace `path` atomically: readers see the old or the new bytes, never a torn file.

    `tmp` is a fresh name on the same filesystem (the queue keeps these in its tmp/ directory so
    that listings of the real directories never see half-written files).
    """
    write_new(tmp, data, durable=durable, mode=mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    if durable:
        fsync_dir(os.path.dirname(path) or ".")


_APPEND = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""Read as well as write: the last byte is read (pread) before anything is appended. The same
flags on darwin (xnu bsd/man/man2/open.2): O_APPEND "causes each write on the file to be
appended to the end", O_NOFOLLOW fails (ELOOP) on a symlink, and O_RDWR rather than O_WRONLY
opens a FIFO at once (ENXIO is for O_WRONLY without a reader), to be refused by its type."""


def append_line(path: str, line: bytes, *, limit: int, durable: bool) -> bool:
    """Append `line` (one line, ending in a newline) to the regular file `path` if that file
    ends in a newline and stays within `limit` bytes with it; False, with nothing written,
    when it does not exist, is no regular file (a symlink is never followed, a FIFO never
    waited on or written), is empty, would grow past `limit`, or ends in a line cut short.

    Why: a write into an existing file allocates no inode, where creating a file (a temp file
    to rename in) does (ext4 here: ~35 us, up to ~900 us in the minutes after many deletions,
    docs/benchmarks.md). A file kept within one block never allocates a block either. The
    append is not atomic under a power cut; readers take the last complete line
    (lanekit.queue.directory.recordstore), and a line cut short is never appended to: the caller
    then replaces the file.
    OSError from the write itself (ENOSPC, EIO) is raised: part of the line may be there."""
    try:
        fd = os.open(path, _APPEND)
    except OSError:
        return False  # missing, a symlink (ELOOP), a FIFO (ENXIO), ...: the caller replaces it
    try:
        st = os.fstat(fd)
        size = st.st_size
        if (
            (st.st_mode & 0o170000) != 0o100000  # not S_IFREG (see open_regular_stat)
            or size == 0
            or size + len(line) > limit
            or os.pread(fd, 1, size - 1) != b"\n"
        ):
            return False
        fdio.write_all(fd, line)
        if durable:
            full_fsync(fd)  # the append is its own commit point: no name changes
    finally:
        os.close(fd)
    return True


class NotRegularFileError(OSError):
    """`open_regular` found something other than a regular file (a symlink, directory, FIFO,
    socket or device): never a job file, a record or a claim, whatever its name says."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", path)
        self.kind = kind


def file_kind(mode: int) -> str:
    """`a directory`, `a FIFO`... for an st_mode (the words `NotRegularFileError` uses)."""
    import stat

    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


_OPEN_REGULAR = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_regular(path: str) -> int:
    """Open `path` for reading only if it is a regular file; its descriptor (close-on-exec).
    See open_regular_stat."""
    return open_regular_stat(path)[0]


def open_regular_stat(path: str, *, append: bool = False) -> tuple[int, os.stat_result]:
    """Open `path` for reading only if it is a regular file; its descriptor (close-on-exec)
    and the fstat that proved it (callers reuse its size and times: no second fstat).
    `append`: for appending as well (the flags of `append_line`), so that a reader can add a
    line on the descriptor it read through (a claim's `running` line,
    lanekit.queue.directory.recordstore).

    O_NOFOLLOW: a symlink is refused, never followed to someone else's file. O_NONBLOCK: a
    FIFO opens at once instead of waiting forever for a writer (it is then refused by type).
    The type is checked on the open descriptor, so nothing can be swapped in between; the
    flag is cleared again for the regular file (it has no effect on one anyway).
    Some kinds fail open(2) itself instead (a unix socket: ENXIO on Linux, EOPNOTSUPP on
    macOS; a device without a driver: ENXIO/ENODEV): after a failed open the name is
    lstat'ed, so that those too are NotRegularFileError, not an error of the directory.
    NotRegularFileError for anything else; FileNotFoundError and other OSErrors as open(2)."""
    try:
        fd = os.open(path, _APPEND if append else _OPEN_REGULAR)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(path, "a symlink") from None
        # Only on this failure path (never on a successful open): what is the name, really?
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            raise exc from None
        if (mode & 0o170000) != 0o100000:  # not S_IFREG
            raise NotRegularFileError(path, file_kind(mode)) from None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if (st.st_mode & 0o170000) != 0o100000:  # not S_IFREG (stat not imported on the claim path)
        os.close(fd)
        raise NotRegularFileError(path, file_kind(st.st_mode))
    return fd, st


def flock_held(path: str | os.PathLike[str]) -> bool | None:
    """Does some process hold a flock on `path`? None when the file does not exist.

    The probe is a shared lock taken and dropped at once, so it never keeps a process that
    wants the lock exclusively (a run, a claimer, a recoverer) waiting longer than this call.
    The lane lock and each claim's lock are probed this way."""
    import fcntl

    try:
        # O_NONBLOCK|O_NOFOLLOW: a FIFO planted under the name opens at once (and is probed,
        # not read), a symlink is not followed to another file.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None  # ENOTDIR: a directory above it is a file, so the file cannot exist
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # a symlink: nobody locks a link, and its target is not ours to probe
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False
