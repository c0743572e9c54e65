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
- `sync_folder` / `mount_problem`: is a path inside a sync engine's folder (iCloud Drive,
  Dropbox...) or on a network filesystem, where rename is not atomic or not local. Linux reads
  /proc/self/mountinfo, macOS statfs(2)'s f_fstypename and MNT_LOCAL.

Paths are `str` on purpose: these run on the claim path, where pathlib's per-call overhead shows.
ctypes (about 5 ms to import) is loaded on the first no-replace rename, never at import time, so
`lanekit run` on an empty queue does not pay for it.
"""

# ruff: noqa: PTH105, PTH108, PTH120
# (str paths and os.* on purpose: this is the claim path, see the docstring)
from __future__ import annotations

import errno
import os
import sys

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


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written < len(data):  # a short write: only for large data, or on a signal
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]


def write_new(path: str, data: bytes, *, durable: bool, mode: int = 0o600) -> None:
    """Create `path` holding `data`; FileExistsError if it exists. Removed again on failure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        _write_all(fd, data)
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


_RENAME_OVER_FLUSHES = sys.platform.startswith("linux")
"""On Linux (ext4's auto_da_alloc, on by default) renaming a file over an existing one starts
the new file's writeback at once: 0.2-1.4 ms per rename on a loaded machine, the biggest single
cost of a job. APFS has no such rule: os.replace is one call there."""


def supersede_file(path: str, data: bytes, *, tmp: str, durable: bool, mode: int = 0o600) -> None:
    """Replace `path` with `data` for a writer that alone may write it (the holder of a job's
    running mark): readers see the old bytes, the new ones, or for an instant on Linux no file,
    never a torn one. On Linux the old file is unlinked and the new one renamed in where none
    is (no rename over a file: see _RENAME_OVER_FLUSHES); elsewhere it is replace_file."""
    if not _RENAME_OVER_FLUSHES:
        replace_file(path, data, tmp=tmp, durable=durable, mode=mode)
        return
    write_new(tmp, data, durable=durable, mode=mode)
    try:
        try:  # noqa: SIM105 - contextlib is not imported here, and this is every job's path
            os.unlink(path)
        except FileNotFoundError:
            pass
        try:
            rename_noreplace(tmp, path)
        except FileExistsError:
            os.replace(tmp, path)  # another writer's meanwhile: the later write wins, as ever
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(os.path.dirname(path) or ".")


# -- where a path lives: network and sync-engine folders -----------------------------------

_SYNC_PARENTS = {
    "/Library/Mobile Documents/": "iCloud Drive (~/Library/Mobile Documents)",
    "/Library/CloudStorage/": "a cloud storage folder (~/Library/CloudStorage)",
}
_SYNC_FOLDERS = {
    "iCloud Drive": "iCloud Drive",
    "Dropbox": "Dropbox",
    "Google Drive": "Google Drive",
    "OneDrive": "OneDrive",
}
"""Folder names the sync apps create, also with a suffix: `Dropbox (Team)`, `OneDrive - Acme`."""
_NETWORK_FSTYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "afpfs",
        "webdav",
        "davfs",
        "fuse.sshfs",
        "sshfs",
        "osxfuse",
        "macfuse",
        "fuse.rclone",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "afs",
        "9p",
    }
)
_MNT_LOCAL = 0x00001000  # macOS statfs f_flags: a local volume


def classify_mount(fstype: str, local: bool | None = None) -> str | None:
    """Why a filesystem of type `fstype` cannot hold a queue, or None when it can.

    `local` is macOS's MNT_LOCAL flag when known. Pure, so both platforms' branches are tested
    with injected values.
    """
    if fstype in _NETWORK_FSTYPES or fstype.startswith("nfs"):
        return f"on a network filesystem ({fstype})"
    if local is False:
        return f"on a non-local volume ({fstype})"
    return None


def sync_folder(path: str) -> str | None:
    """The sync engine whose folder holds `path` (a real path), or None."""
    slashed = path.rstrip("/") + "/"
    for parent, what in _SYNC_PARENTS.items():
        if parent in slashed:
            return what
    for component in slashed.split("/"):
        for folder, what in _SYNC_FOLDERS.items():
            if component == folder or component.startswith((folder + " (", folder + " - ")):
                return what
    return None


def _unescape_mount(text: str) -> str:
    r"""mountinfo writes space, tab, newline and backslash in paths as \ooo (octal)."""
    if "\\" not in text:
        return text
    parts = text.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        if len(part) >= 3 and all(c in "01234567" for c in part[:3]):
            out.append(chr(int(part[:3], 8)) + part[3:])
        else:
            out.append("\\" + part)
    return "".join(out)


def linux_fstype(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the filesystem holding `path` (a real path), from /proc/self/mountinfo."""
    if mountinfo is None:
        try:
            fd = os.open("/proc/self/mountinfo", os.O_RDONLY)
        except OSError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        finally:
            os.close(fd)
        mountinfo = b"".join(chunks).decode("utf-8", "replace")
    best, best_type = -1, None
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 7 or "-" not in fields[6:]:
            continue
        mount_point = _unescape_mount(fields[4])
        fstype = fields[fields.index("-", 6) + 1]
        prefix = mount_point.rstrip("/") + "/"
        if (path == mount_point or path.startswith(prefix)) and len(mount_point) >= best:
            best, best_type = len(mount_point), fstype
    return best_type


def darwin_fstype(path: str) -> tuple[str, bool]:  # pragma: no cover - macOS only
    """(f_fstypename, MNT_LOCAL set) from statfs(2) through ctypes."""
    fstype, flags = darwin_statfs(path)
    return fstype, bool(flags & _MNT_LOCAL)


def darwin_statfs(path: str) -> tuple[str, int]:  # pragma: no cover - macOS only
    """(f_fstypename, f_flags) from statfs(2) through ctypes."""
    import ctypes

    class StatFs(ctypes.Structure):
        _fields_ = (
            ("f_bsize", ctypes.c_uint32),
            ("f_iosize", ctypes.c_int32),
            ("f_blocks", ctypes.c_uint64),
            ("f_bfree", ctypes.c_uint64),
            ("f_bavail", ctypes.c_uint64),
            ("f_files", ctypes.c_uint64),
            ("f_ffree", ctypes.c_uint64),
            ("f_fsid", ctypes.c_int32 * 2),
            ("f_owner", ctypes.c_uint32),
            ("f_type", ctypes.c_uint32),
            ("f_flags", ctypes.c_uint32),
            ("f_fssubtype", ctypes.c_uint32),
            ("f_fstypename", ctypes.c_char * 16),
            ("f_mntonname", ctypes.c_char * 1024),
            ("f_mntfromname", ctypes.c_char * 1024),
            ("f_flags_ext", ctypes.c_uint32),
            ("f_reserved", ctypes.c_uint32 * 7),
        )

    libc = ctypes.CDLL(None, use_errno=True)
    statfs = getattr(libc, "statfs$INODE64", None) or libc.statfs  # x86_64 needs the 64-bit one
    statfs.argtypes = [ctypes.c_char_p, ctypes.POINTER(StatFs)]
    result = StatFs()
    if statfs(os.fsencode(path), ctypes.byref(result)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return result.f_fstypename.decode("utf-8", "replace"), int(result.f_flags)


def mount_problem(path: str, *, platform: str | None = None) -> str | None:
    """Why the filesystem holding `path` cannot hold a queue, or None when it can."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        fstype = linux_fstype(path)
        return None if fstype is None else classify_mount(fstype)
    if platform == "darwin":  # pragma: no cover - macOS only
        try:
            fstype, local = darwin_fstype(path)
        except OSError:
            return None  # statfs failed on a directory we could stat: nothing to judge by
        return classify_mount(fstype, local)
    return None


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


def open_regular_stat(path: str) -> tuple[int, os.stat_result]:
    """Open `path` for reading only if it is a regular file; its descriptor (close-on-exec)
    and the fstat that proved it (callers reuse its size and times: no second fstat).

    O_NOFOLLOW: a symlink is refused, never followed to someone else's file. O_NONBLOCK: a
    FIFO opens at once instead of waiting forever for a writer (it is then refused by type).
    The type is checked on the open descriptor, so nothing can be swapped in between; the
    flag is cleared again for the regular file (it has no effect on one anyway).
    NotRegularFileError for anything else; FileNotFoundError and other OSErrors as open(2)."""
    try:
        fd = os.open(path, _OPEN_REGULAR)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(path, "a symlink") from None
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
    except FileNotFoundError:
        return None
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


# -- what doctor asks about a path's volume and attributes (macOS facts) -------------------

MNT_REMOVABLE = 0x00000200
"""xnu bsd/sys/mount.h: storage the user can remove (USB, SD card)."""
MNT_LOCAL = _MNT_LOCAL
MNT_ROOTFS = 0x00004000
MNT_IGNORE_OWNERSHIP = 0x00200000
"""xnu bsd/sys/mount.h: the volume is mounted `noowners`; file owners are not enforced."""
NO_RENAME_EXCL_FSTYPES = frozenset({"exfat", "msdos", "vfat", "fat", "fat32"})
"""No RENAME_EXCL (ENOTSUP, xnu bsd/vfs/kpi_vfs.c) and no hard links: no exclusive rename."""
XATTR_NOFOLLOW = 0x0001
"""sys/xattr.h: getxattr(2) on the link itself, never what it points at."""
QUARANTINE = "com.apple.quarantine"


class VolumeFacts:
    """What statfs(2) says about the volume holding a path (f_fstypename and f_flags)."""

    __slots__ = ("flags", "fstype", "mount_point")

    def __init__(self, fstype: str, flags: int | None, mount_point: str | None = None) -> None:
        self.fstype = fstype
        self.flags = flags
        """None where the platform does not report macOS mount flags (Linux)."""
        self.mount_point = mount_point

    def has(self, flag: int) -> bool:
        """True when the flag is known to be set."""
        return self.flags is not None and bool(self.flags & flag)

    def __repr__(self) -> str:
        return f"VolumeFacts({self.fstype!r}, {self.flags!r}, {self.mount_point!r})"


def volume_facts(path: str, *, platform: str | None = None) -> VolumeFacts | None:
    """The volume holding `path` (an existing path); None when it cannot be told.

    The one seam tests replace to plant external, removable, no-owners or exFAT volumes."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        fstype = linux_fstype(path)
        return None if fstype is None else VolumeFacts(fstype, None)
    if platform == "darwin":  # pragma: no cover - macOS only
        try:
            fstype, flags = darwin_statfs(path)
        except OSError:
            return None
        return VolumeFacts(fstype, flags)
    return None


def quarantine_of(path: str, *, platform: str | None = None) -> str | None:
    """The com.apple.quarantine attribute of `path` itself (not a symlink's target), or None.

    macOS: getxattr(2) with XATTR_NOFOLLOW through ctypes (os.getxattr is Linux-only). The one
    seam tests replace to plant a quarantined file; elsewhere nothing is ever quarantined."""
    platform = sys.platform if platform is None else platform
    if platform != "darwin":
        return None
    return _darwin_getxattr(path, QUARANTINE)  # pragma: no cover - macOS only


def _darwin_getxattr(path: str, name: str) -> str | None:  # pragma: no cover - macOS only
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    getxattr = libc.getxattr
    getxattr.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint32,
        ctypes.c_int,
    ]
    getxattr.restype = ctypes.c_ssize_t
    buffer = ctypes.create_string_buffer(1024)
    size = getxattr(os.fsencode(path), name.encode(), buffer, len(buffer), 0, XATTR_NOFOLLOW)
    if size < 0:
        return None  # ENOATTR, or the file is gone: not quarantined as far as we can tell
    return buffer.raw[:size].decode("utf-8", "replace")
