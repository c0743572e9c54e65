"""Is the process that owns a claim still alive? Pids are reused, so a pid alone cannot say.

A claim names its owner by pid *and* start token: the process's start time, which a reused pid
cannot repeat. On Linux the token is the exact `starttime` field of /proc/<pid>/stat (clock ticks
since boot, an integer, so no float rounding can make one process look like two). Elsewhere
(macOS) it comes from psutil's create_time in microseconds; psutil is imported only there and
only when asked, because `lanekit run` must start fast.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum


class Liveness(StrEnum):
    """What we know about the process a claim names."""

    ALIVE = "alive"
    """Running, and it is the same process (same start token)."""
    DEAD = "dead"
    """No such process (or only a zombie waiting to be reaped)."""
    REUSED = "reused"
    """The pid runs a different process now: the owner is dead."""
    UNKNOWN = "unknown"
    """The OS would not tell (permissions): treat as alive, never steal on a guess."""


def parse_stat(data: bytes) -> tuple[str, str] | None:
    """(state, starttime) from the text of /proc/<pid>/stat, or None if it is malformed.

    The command name (field 2) is in parentheses and may itself hold spaces and parentheses,
    so fields are counted from the last `)`.
    """
    _, paren, rest = data.rpartition(b")")
    if not paren:
        return None
    fields = rest.split()
    # After the name: state is field 3 of the man page, starttime field 22.
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return fields[0].decode("ascii", "replace"), fields[19].decode("ascii")


def linux_token(pid: int, *, zombie_ok: bool = False) -> str | None:
    """The start token of `pid` read from /proc, or None when no live process has that pid.

    A zombie counts as gone unless `zombie_ok` (a parent may read its child's token before
    reaping it)."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, 4096)
    except ProcessLookupError:  # exited between open and read
        return None
    finally:
        os.close(fd)
    parsed = parse_stat(data)
    if parsed is None:
        return None
    state, starttime = parsed
    if state in {"Z", "X"} and not zombie_ok:  # exited, waiting for its parent: never settles
        return None
    return starttime


def psutil_token(pid: int, *, zombie_ok: bool = False) -> str | None:
    """The start token of `pid` from psutil (macOS and other systems without /proc)."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE and not zombie_ok:
            return None
        created = process.create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    return str(round(created * 1_000_000))


def start_token(pid: int, *, platform: str | None = None, zombie_ok: bool = False) -> str | None:
    """`pid`'s start token, or None when it is not running. PermissionError when the OS hides it.

    `platform` (a `sys.platform` value) picks the branch; tests use it to run both on Linux.
    """
    platform = sys.platform if platform is None else platform
    if pid <= 0:
        return None
    if platform.startswith("linux"):
        return linux_token(pid, zombie_ok=zombie_ok)
    try:
        return psutil_token(pid, zombie_ok=zombie_ok)
    except Exception as exc:
        import psutil

        if isinstance(exc, psutil.AccessDenied):
            raise PermissionError(f"process {pid}: {exc}") from None
        raise


_self_token: tuple[int, str] | None = None


def self_token() -> str:
    """This process's start token (computed once per process; a forked child gets its own)."""
    global _self_token  # noqa: PLW0603 - a per-process constant, computed lazily
    pid = os.getpid()
    if _self_token is None or _self_token[0] != pid:
        token = start_token(pid)
        if token is None:  # pragma: no cover - we are running, so the OS knows us
            raise RuntimeError(f"cannot read the start time of this process ({pid})")
        _self_token = (pid, token)
    return _self_token[1]


MACHINE_ID = "/etc/machine-id"
_host_identity: str | None = None


def host_identity(*, platform: str | None = None, machine_id: str = MACHINE_ID) -> str:
    """What names this host and does not change with the network.

    `uname().nodename` does: without a set HostName, macOS takes the name from DHCP or reverse
    DNS. So macOS asks gethostuuid(2) (the hardware UUID), Linux reads /etc/machine-id; only
    where neither answers does the short node name stand in."""
    platform = sys.platform if platform is None else platform
    if platform == "darwin":  # pragma: no cover - macOS only
        found = _darwin_hostuuid()
        if found:
            return found
    elif platform.startswith("linux"):
        try:
            with open(machine_id, encoding="ascii") as handle:  # noqa: PTH123 - one small read
                found = handle.read().strip()
        except (OSError, ValueError):
            found = ""
        if found:
            return found
    return os.uname().nodename.split(".", 1)[0].lower()


def _darwin_hostuuid() -> str | None:  # pragma: no cover - macOS only
    """gethostuuid(2) through ctypes: the 16-byte host UUID as hex, None when it fails."""
    import ctypes

    class Timespec(ctypes.Structure):
        _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = (ctypes.c_ubyte * 16)()
    wait = Timespec(1, 0)
    if libc.gethostuuid(buffer, ctypes.byref(wait)) != 0:
        return None
    return bytes(buffer).hex()


def hosttag(nodename: str | None = None) -> str:
    """A short stable tag of this host: 8 hex digits (FNV-1a of `host_identity()`, computed
    once per process), or of the short form of `nodename` when one is given.

    Only the part before the first dot of a node name counts: macOS flips between `name` and
    `name.local`.
    """
    global _host_identity  # noqa: PLW0603 - a per-process constant, computed lazily
    if nodename is not None:
        name = nodename.split(".", 1)[0].lower()
    else:
        if _host_identity is None:
            _host_identity = host_identity()
        name = _host_identity
    digest = 0x811C9DC5
    for byte in name.encode("utf-8"):
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{digest:08x}"


def liveness(pid: int, token: str, *, platform: str | None = None) -> Liveness:
    """Is the process `pid` that started with `token` still running?"""
    try:
        current = start_token(pid, platform=platform)
    except PermissionError:
        return Liveness.UNKNOWN
    if current is None:
        return Liveness.DEAD
    return Liveness.ALIVE if current == token else Liveness.REUSED


def is_alive(pid: int, token: str) -> bool:
    """True unless the process is known to be gone or replaced (UNKNOWN counts as alive)."""
    return liveness(pid, token) in {Liveness.ALIVE, Liveness.UNKNOWN}


def job_processes(name: str, value: str, group: int | None) -> tuple[list[int], list[int]]:
    """This user's live processes (this one and zombies aside) that run a job: (the pids in
    process group `group`, the pids whose environment holds `name`=`value`). How a copy of
    a job is found whatever it did: its group holds what stayed in it (a zombie, which a
    probe of the group still sees until some init reaps it, runs nothing), its environment
    marks what left it (setsid, a daemon it forked).

    Rare paths only (a claim whose runner and watcher are gone): it reads every process's
    environment (psutil: /proc/<pid>/environ on Linux, sysctl KERN_PROCARGS2 on macOS), a few
    ms. What it cannot see: a process that replaced its environment by exec'ing with another
    one, and one whose environment the OS will not show us (another user's; on macOS, Apple's
    restricted binaries such as /bin/sh and /bin/sleep: xnu's sysctl_procargsx omits it)."""
    import psutil

    me, uid = os.getpid(), os.getuid()
    members: list[int] = []
    carriers: list[int] = []
    for process in psutil.process_iter():
        if process.pid == me:
            continue
        try:
            if process.uids().real != uid or process.status() == psutil.STATUS_ZOMBIE:
                continue
            if group is not None and os.getpgid(process.pid) == group:
                members.append(process.pid)
            elif process.environ().get(name) == value:
                carriers.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return members, carriers
