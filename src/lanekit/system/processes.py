"""What lanekit's two fork-and-watch supervisors do alike with the processes they start.

The two supervise at two levels and promise different things, so each keeps its own loop:
launchd's (lanekit.service.launchd.environ: the emulated domain's watcher and `lanekit try`)
starts a lane's process as its plist says (cwd, log files, umask, nice, a session of its own)
and stops it as launchd does (SIGTERM to the process, SIGKILL after ExitTimeOut, one SIGTERM for
what it left in its group); the run's job watcher (lanekit.run.watcher) starts each claimed job
in a group of its own and holds the claim's lock until nothing of the group is left (stops,
timeouts and cancel requests sent to the whole group, leftovers SIGKILLed, the outcome
recorded), which is how two copies of one job never run at once. What they share is here, once:
finding the program on the job's PATH, signalling and probing a process group, closing every
descriptor a watcher must not hold, and keeping the tail of a job's stderr pipe.

Builtin modules only: the run watcher is a fork of the runner, whose start-up is measured.
"""

# ruff: noqa: PTH113, PTH118
# (os.path on str paths: pathlib is one of the imports the runner's start-up avoids)
from __future__ import annotations

import contextlib
import errno
import os

from lanekit.system.fdio import write_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def find_program(name: str, path: str, cwd: str = "") -> str:
    """The file a job's argv[0] names, looked up as execvp(3) does but on the PATH the job is
    given (`path`: its lane's or its plist's), never on this process's own, from `cwd` (an
    empty PATH entry is `cwd` itself; "" is this process's). The first executable match wins;
    a name with a slash is returned as it is. OSError ENOENT when nothing matches (an empty
    name included), EACCES when only files we may not execute were found."""
    if "/" in name:
        return name
    denied = False
    for directory in path.split(os.pathsep) if name else ():
        candidate = (
            os.path.join(cwd, directory, name) if directory else os.path.join(cwd or ".", name)
        )
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            denied = True
    code = errno.EACCES if denied else errno.ENOENT
    raise OSError(code, os.strerror(code), name)


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to process group `pgid`; a group that is gone (or not ours) is passed over."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether a member of process group `pgid` still exists (zombies too): signal 0 probes."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def close_fds_except(keep: Iterable[int]) -> None:
    """Close every descriptor above stdio but `keep`: a watcher outlives its caller and must
    hold nothing of it (the lane lock above all, which would keep the lane busy)."""
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 16)


def read_tail(fd: int, kept: bytearray, keep: int, *, echo: int | None = None) -> bool:
    """Read what the non-blocking pipe `fd` holds into `kept`, of which the last `keep` bytes
    at least stay (more may, up to twice that: the trimming is amortised), copying it on to
    `echo` as it comes when given; False once the pipe reached end of file."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        if echo is not None:
            with contextlib.suppress(OSError):
                write_all(echo, data)
        kept += data
        if len(kept) > 2 * keep:
            del kept[: len(kept) - keep]
