"""Where a path lives: inside a sync engine's folder (iCloud Drive, Dropbox...), on a network
filesystem (rename is not atomic there, or not local), or on a volume whose facts doctor reports
(removable, ownership ignored, no RENAME_EXCL on FAT/exFAT), and a file's quarantine attribute.

Linux reads /proc/self/mountinfo; macOS statfs(2)'s f_fstypename and f_flags (MNT_LOCAL, ...)
and getxattr(2), through ctypes, loaded only when asked (doctor and the queue's setup checks).
"""

from __future__ import annotations

import errno
import os
import sys

from lanekit.system.fdio import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    # Only for annotations: collections.abc imports collections (~2 ms), and a single
    # `lanekit enqueue` checks its queue's volume through this module (benchmark figure (l)).
    from collections.abc import Callable

    XattrCall = Callable[[str, str, int], tuple[bytes | int | None, int]]
    """getxattr(path, name, size) -> (value bytes, or its length for size 0, or None; errno)."""

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


def read_mountinfo() -> str | None:
    """/proc/self/mountinfo's text (Linux); None where it cannot be read."""
    try:
        fd = os.open("/proc/self/mountinfo", os.O_RDONLY)
    except OSError:
        return None
    try:
        return read_all(fd).decode("utf-8", "replace")
    finally:
        os.close(fd)


def linux_fstype(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the filesystem holding `path` (a real path), from /proc/self/mountinfo
    (read here unless given)."""
    if mountinfo is None:
        mountinfo = read_mountinfo()
        if mountinfo is None:
            return None
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


def linux_mounts_key(path: str, mountinfo: str) -> str | None:
    """The mounts that decide what renames inside the directory `path` (a real path) can do:
    the id of the mount holding it, then every mount point inside it with its id, one line
    (mountinfo's own fields); None when no mount holds it (nothing to go by).

    A bind mount of a directory onto itself keeps its (st_dev, st_ino) but makes renames into
    it fail (EXDEV): only the mount table tells. Mount ids are per boot and per mount
    namespace, so a reboot or another namespace gives another key."""
    best, holder = -1, None
    inside: list[str] = []
    base = path.rstrip("/") + "/"
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 7:
            continue
        mount_point = _unescape_mount(fields[4])
        if mount_point.startswith(base):
            inside.append(f"{fields[0]}:{fields[4]}")
        prefix = mount_point.rstrip("/") + "/"
        if (path == mount_point or path.startswith(prefix)) and len(mount_point) >= best:
            best, holder = len(mount_point), f"{fields[0]}:{fields[4]}"
    if holder is None:
        return None
    return " ".join([holder, *sorted(inside)])


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


def mount_problem(
    path: str, *, platform: str | None = None, mountinfo: str | None = None
) -> str | None:
    """Why the filesystem holding `path` cannot hold a queue, or None when it can (Linux:
    from `mountinfo`, /proc/self/mountinfo's text, read here unless given)."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        fstype = linux_fstype(path, mountinfo)
        return None if fstype is None else classify_mount(fstype)
    if platform == "darwin":  # pragma: no cover - macOS only
        try:
            fstype, local = darwin_fstype(path)
        except OSError:
            return None  # statfs failed on a directory we could stat: nothing to judge by
        return classify_mount(fstype, local)
    return None


MNT_REMOVABLE = 0x00000200
"""xnu bsd/sys/mount.h: storage the user can remove (USB, SD card)."""
MNT_QUARANTINE = 0x00000400
"""xnu bsd/sys/mount.h: the file system is quarantined (a downloaded disk image mounted with
its quarantine): every file on it is treated as downloaded, xattr or not."""
MNT_LOCAL = _MNT_LOCAL
MNT_ROOTFS = 0x00004000
MNT_IGNORE_OWNERSHIP = 0x00200000
"""xnu bsd/sys/mount.h: the volume is mounted `noowners`; file owners are not enforced."""
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


XATTR_FIRST_READ = 1024
"""Bytes read first; a longer attribute is read again at the size getxattr(2) reports."""
XATTR_TRIES = 3
"""Reads before giving up on an attribute that keeps growing between the size and the read."""


def read_xattr(getxattr: XattrCall, path: str, name: str) -> bytes | None:
    """An attribute's value through `getxattr(path, name, size)`, which returns (the value's
    bytes or, when `size` is 0, its length as an int, errno): None when absent or unreadable.
    An ERANGE answer (the value is longer than the buffer) is retried with the size getxattr
    reports for a zero-size read, so a long quarantine value is not taken for none at all."""
    size = XATTR_FIRST_READ
    for _ in range(XATTR_TRIES):
        value, error = getxattr(path, name, size)
        if isinstance(value, bytes):
            return value
        if error != errno.ERANGE:
            return None  # ENOATTR, or the file is gone: not quarantined as far as we can tell
        length, error = getxattr(path, name, 0)
        if not isinstance(length, int) or length <= 0:
            return None
        size = length
    return None


def _darwin_getxattr(path: str, name: str) -> str | None:  # pragma: no cover - macOS only
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    call = libc.getxattr
    call.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint32,
        ctypes.c_int,
    ]
    call.restype = ctypes.c_ssize_t

    def getxattr(target: str, attribute: str, size: int) -> tuple[bytes | int | None, int]:
        buffer = ctypes.create_string_buffer(size) if size else None
        got = call(os.fsencode(target), attribute.encode(), buffer, size, 0, XATTR_NOFOLLOW)
        if got < 0:
            return None, ctypes.get_errno()
        if buffer is None:
            return int(got), 0
        return buffer.raw[:got], 0

    value = read_xattr(getxattr, path, name)
    return None if value is None else value.decode("utf-8", "replace")
