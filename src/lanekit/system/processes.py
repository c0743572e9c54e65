"""How lanekit's fork-and-watch supervisors start, stop and wait for the processes they start.

There is one loop, `supervise`, for two callers whose promises differ only by its `Supervision`
policy: launchd's (lanekit.service.launchd.environ: the emulated domain's watcher and `lanekit
try`) stops a lane's process as launchd does (SIGTERM to the process, SIGKILL after ExitTimeOut,
never for 0) and returns when it exits; the run's job watcher (lanekit.run.watcher) sends every
stop, timeout and cancel request to the job's whole process group and returns only once nothing
of the group is left (leftovers get a short grace, then SIGKILL), so that the claim's lock it
holds meanwhile keeps two copies of one job from ever running at once. Also here, once: finding
the program on the job's PATH, signalling and probing a process group, closing every descriptor
a watcher must not hold, and keeping the tail of a job's stderr pipe.

Builtin modules and dataclasses only (which lanekit.queue.outcome, beside the run watcher,
imports already): the run watcher is a fork of the runner, whose start-up is measured.
"""

# ruff: noqa: PTH113, PTH118
# (os.path on str paths: pathlib is one of the imports the runner's start-up avoids)
from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time
from dataclasses import dataclass

from lanekit.system.fdio import write_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


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


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a process gets when the thread that forked it exits."""


def parent_death_setter() -> Callable[[int], int] | None:
    """On Linux, prctl(PR_SET_PDEATHSIG, sig) as a callable (returns prctl's result: 0, or -1
    with errno set), loaded before a fork so that the child only calls it; None elsewhere
    (macOS has no parent-death signal). ctypes is imported here only, on the path that
    starts a leased job."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int

    def set_parent_death_signal(sig: int) -> int:
        return int(prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0))

    return set_parent_death_signal


def close_fds_except(keep: Iterable[int]) -> None:
    """Close every descriptor above stdio but `keep`: a watcher outlives its caller and must
    hold nothing of it (the lane lock above all, which would keep the lane busy)."""
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 16)


def read_tail(
    fd: int,
    kept: bytearray,
    keep: int,
    *,
    echo: int | None = None,
    copy: Callable[[bytes], None] | None = None,
) -> bool:
    """Read what the non-blocking pipe `fd` holds into `kept`, of which the last `keep` bytes
    at least stay (more may, up to twice that: the trimming is amortised), copying it on to
    `echo` as it comes when given, and handing it to `copy` (a job's output file); False once
    the pipe reached end of file."""
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
        if copy is not None:
            copy(data)
        kept += data
        if len(kept) > 2 * keep:
            del kept[: len(kept) - keep]


@dataclass(frozen=True, slots=True)
class Supervision:
    """How `supervise` stops a job and how long it waits for it."""

    group: bool
    """Signals go to the job's whole process group (the run's watcher), else to its leader."""
    kill_grace: float | None
    """SIGKILL this long after the SIGTERM of a deadline or a request; None: never."""
    stop_grace: float | None
    """SIGKILL this long after a stop signal read from the wake-up pipe; None: never."""
    stop_signals: frozenset[int] = frozenset({signal.SIGTERM})
    """Read from the wake-up pipe, each is passed on to the job (a stop)."""
    kill_signal: int | None = None
    """Read from the wake-up pipe, it means SIGKILL now."""
    leftover_grace: float | None = None
    """None: return once the leader exited. Else wait until its group is gone too: SIGTERM to
    what it left (unless a stop was sent already), SIGKILL this long after."""
    poll: float | None = None
    """The longest sleep between looks; None: until a signal, stderr or a deadline wakes it."""
    look_every: float = 0.25
    """Seconds between two calls of the `requested` look."""
    echo: int | None = None
    """Where the job's stderr is copied on as it comes, if anywhere."""
    echo_out: int | None = None
    """Where the job's stdout (`supervise`'s `output` pipe) is copied on as it comes."""
    tail: int = 8192
    """How many bytes of the job's stderr are kept at least."""


@dataclass(frozen=True, slots=True)
class Supervised:
    """How a supervised job ended."""

    status: int
    """Its leader's raw wait(2) status."""
    stopped: bool
    """A stop signal came while its leader lived."""
    timed_out: bool
    requested: bool
    """The `requested` look asked for a stop."""


def supervise(  # noqa: C901 - one loop on purpose: the one both supervisors run
    job: int,
    policy: Supervision,
    *,
    wake: int | None = None,
    deadline: float | None = None,
    requested: Callable[[], bool] | None = None,
    capture: int | None = None,
    kept: bytearray | None = None,
    output: int | None = None,
    copy: Callable[[bytes], None] | None = None,
) -> Supervised:
    """Wait for the job (our child, leader of process group `job`) as `policy` says, stopping
    it with SIGTERM (SIGKILL after the policy's grace) when the monotonic `deadline` passes,
    when `requested()` says so or when a stop signal comes through the signal wake-up pipe
    `wake`. Meanwhile the job's stderr pipe `capture` (non-blocking) is read into `kept`, its
    stdout pipe `output` (when given) is copied on to the policy's `echo_out`, and what both
    bring is handed to `copy` as it comes (a job's output file)."""
    status: int | None = None
    kill_at: float | None = None
    stopped = timed_out = asked = killed = False
    next_look = 0.0
    reading = capture is not None
    reading_out = output is not None
    kept = bytearray() if kept is None else kept
    scratch = bytearray()  # stdout is copied on, not kept

    def send(sig: int, grace: float | None) -> None:
        nonlocal kill_at
        with contextlib.suppress(ProcessLookupError, PermissionError):
            (os.killpg if policy.group else os.kill)(job, sig)
        if grace is not None:  # the earliest SIGKILL promised stands
            kill_at = _sooner(kill_at, time.monotonic() + grace)

    while True:
        if status is None:
            pid, raw = os.waitpid(job, os.WNOHANG)
            status = raw if pid == job else None
        if status is not None and (policy.leftover_grace is None or killed or not group_alive(job)):
            break  # (after SIGKILL, an orphan's zombie a group probe still sees holds nothing)
        now = time.monotonic()
        if status is None and deadline is not None and not timed_out and now >= deadline:
            timed_out = True
            send(signal.SIGTERM, policy.kill_grace)
        if status is None and requested is not None and not asked and now >= next_look:
            next_look = now + policy.look_every
            if asked := requested():
                send(signal.SIGTERM, policy.kill_grace)
        if status is not None and kill_at is None:  # what the leader left in its group
            send(signal.SIGTERM, policy.leftover_grace)
        due = _sooner(None if killed else kill_at, None if timed_out else deadline)
        if due is not None and now >= due and not killed:
            send(signal.SIGKILL, None)
            killed = True
            continue
        wait = 0.05 if killed else _sooner(policy.poll, None if due is None else due - now)
        if status is None and requested is not None and not asked:
            wait = _sooner(wait, next_look - now)
        streams = (wake, capture if reading else None, output if reading_out else None)
        fds = [fd for fd in streams if fd is not None]
        ready = select.select(fds, [], [], None if wait is None else max(0.0, wait))[0]
        if wake is not None and wake in ready:
            with contextlib.suppress(BlockingIOError):
                for sig in os.read(wake, 512):
                    if sig == policy.kill_signal and not killed:
                        send(signal.SIGKILL, None)
                        killed = True
                    elif sig in policy.stop_signals:
                        stopped = stopped or status is None
                        send(sig, policy.stop_grace)
        if reading and capture is not None and capture in ready:
            reading = read_tail(capture, kept, policy.tail, echo=policy.echo, copy=copy)
        if reading_out and output is not None and output in ready:
            reading_out = read_tail(output, scratch, 0, echo=policy.echo_out, copy=copy)
            scratch.clear()
    if reading and capture is not None:  # whatever is still buffered in the pipe
        read_tail(capture, kept, policy.tail, echo=policy.echo, copy=copy)
    if reading_out and output is not None:
        read_tail(output, scratch, 0, echo=policy.echo_out, copy=copy)
    return Supervised(status, stopped, timed_out, asked)


def _sooner(a: float | None, b: float | None) -> float | None:
    """The earlier of two moments, either of which may be None (none)."""
    return b if a is None else a if b is None else min(a, b)
