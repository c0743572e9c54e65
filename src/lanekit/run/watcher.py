"""The job watcher: a fork of the runner that starts each job of the run, sees it end, and
says how, one job at a time.

The runner forks one watcher per run, at its first job (lanekit.run.watcher_link), and hands it
each job
over a socket. The watcher, not the job, holds the claim's flock: the runner passes it the
claim's descriptor with the job (SCM_RIGHTS: one open file description, so both hold the one
lock), and the job never gets it, so nothing the job does with its descriptors can drop the
claim, and a daemon the job leaves behind cannot keep it. The watcher leads a session of its
own, apart from the runner's process group and the job's, so a SIGKILL of the runner (or
launchd's kill of the runner's group) leaves it running; it outlives every process of the job's
group.

It starts the job in a new process group with stderr through a pipe (copied on to the runner's
stderr as it comes, the last lines kept), enforces the lane's `timeout` (SIGTERM to the job's
group, SIGKILL `kill_grace` later), forwards a stop from the runner (SIGTERM / SIGINT / SIGHUP;
SIGUSR1 means SIGKILL now), stops the job the same way as a timeout when `lanekit cancel --stop`
leaves a cancel request next to the claim (claimed/.<claim name>.cancel, looked for every
CANCEL_POLL seconds: no pid has to be found or trusted, and a request made before the job
started is seen at its start), ends what the job left in its group once the leader exited, then
writes the job's outcome atomically next to the claim (claimed/.<claim name>.status) and only
then closes the claim's descriptor, dropping the lock, and then the job's report pipe. The same
outcome also goes to the runner through that pipe, so a live runner knows how its job ended even
when the status file cannot be written (a full disk).

So a claim whose lock is free either has a status (the job ended: recovery settles it by that
status and never runs it again) or has none (the job did not finish: it runs again, which is the
at-least-once half of design.md section 8). While the lock is held, the job or what it left may
still run, and nobody else starts the job. A watcher killed too (one `pkill -9 -f 'lanekit
run'` kills runner and watcher) leaves a job that holds nothing: its copies are then found by
the process group the watcher noted when it started the job (claimed/.<claim name>.started,
the file that becomes the status) and by the claim their environment names (job_copies), and
the claim stays until none is left. Between jobs the watcher holds no claim; it exits at
the end of the run, or, when the runner died, once the job it watches has ended.

What this shares with launchd's supervisor (lanekit.service.launchd.environ: the emulated domain
and `lanekit try`) is lanekit.system.processes, which says why the two loops differ.

Processes start here and in the three seams design.md names; tests/test_process_seams.py lists
this module deliberately.
"""

# ruff: noqa: PTH104, PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue)
from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import sys
import time

from lanekit.queue.outcome import (
    STARTED_NOTE,
    TAIL_BYTES,
    Outcome,
    cancel_beside,
    started_beside,
    tail,
)
from lanekit.run.stop import LEFTOVER_GRACE, STOP_SIGNALS
from lanekit.system.fdio import write_all
from lanekit.system.processes import (
    close_fds_except,
    find_program,
    group_alive,
    read_tail,
    signal_group,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping, Sequence
    from types import FrameType
    from typing import Any

CANCEL_POLL = 0.25
"""Seconds between the watcher's looks for a cancel request (one stat each)."""
KILL_NOW = signal.SIGUSR1
"""What the runner sends the watcher for "SIGKILL the job's group now" (a SIGKILL to the
watcher itself would orphan the job with its claim unlocked)."""


# --- the watcher's side -------------------------------------------------------------------


class _Watch:
    """The watcher's state while its job runs (signal handlers set flags; the loop acts)."""

    def __init__(self, job: int, stop_grace: float) -> None:
        self.job = job
        self.stop_grace = stop_grace
        self.leader_code: int | None = None
        self.stop_at: float | None = None
        self.stopped = False
        self.kill_now = False
        self.wake = -1
        """The read end of the signal wake-up pipe (set_wakeup_fd)."""

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        if self.leader_code is None:
            self.stopped = True
        if self.stop_at is None:
            self.stop_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.job, signum)

    def on_kill(self, signum: int, frame: FrameType | None) -> None:
        self.kill_now = True


class _Current:
    """The watcher's job of the moment, which the signal handlers act on (none between jobs:
    a stop that arrives then is a late one for the job before, and is dropped)."""

    def __init__(self) -> None:
        self.watch: _Watch | None = None
        self.wake = -1
        """The read end of the signal wake-up pipe (set_wakeup_fd)."""

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        if self.watch is not None:
            self.watch.on_stop(signum, frame)

    def on_kill(self, signum: int, frame: FrameType | None) -> None:
        if self.watch is not None:
            self.watch.on_kill(signum, frame)


def _become_watcher(keep: Sequence[int]) -> _Current:
    """What a watcher does once, before any job: its own session, every descriptor but
    stdin/stdout/stderr and `keep` closed, its signal handlers in place, stops unblocked."""
    os.setsid()  # out of the runner's process group and session: its death is not ours
    close_fds_except(keep)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    current = _Current()
    current.wake = wake_r
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, current.on_stop)
    signal.signal(KILL_NOW, current.on_kill)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)  # only to wake the select below
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, KILL_NOW))
    return current


def serve(sock: socket.socket) -> int:
    """The run watcher's life (lanekit.run.watcher_link forks it): each request the runner sends,
    watched to its end; 0 at the socket's EOF (the run is over, or the runner died)."""
    current = _become_watcher([sock.fileno()])
    while (got := _receive(sock)) is not None:
        request, fds = got
        if len(fds) != 2:  # not the runner's request: what came is closed, nothing runs
            for fd in fds:
                os.close(fd)
            return 70
        lock_fd, report = fds
        try:
            _watch(
                request["argv"],
                request["env"],
                lock_fd=lock_fd,
                report=report,
                status=request["status"],
                tmp_dir=request["tmp_dir"],
                timeout=request["timeout"],
                kill_grace=request["kill_grace"],
                stop_grace=request["stop_grace"],
                current=current,
            )
        finally:
            current.watch = None
            os.close(lock_fd)  # the lock drops once the status is written (in _follow)
            os.close(report)  # then the runner's wait() sees EOF
    return 0


def _receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next request and the descriptors sent with it; None at EOF or a request cut
    short (a runner that died sending it: the descriptors are closed, nothing runs)."""
    import json
    import socket

    head, fds, _flags, _addr = socket.recv_fds(sock, 4, 2)
    for fd in fds:
        os.set_inheritable(fd, False)  # never passed on to a job (recv_fds leaves them so)
    body = bytearray()
    while len(head) < 4 and (more := sock.recv(4 - len(head))):
        head += more
    need = int.from_bytes(head, "big") if len(head) == 4 else -1
    while 0 <= len(body) < need and (more := sock.recv(need - len(body))):
        body += more
    if need < 0 or len(body) != need:
        for fd in fds:
            os.close(fd)
        return None
    value = json.loads(body)  # ASCII: json.dumps escapes every other character
    return value, fds


def _watch(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    lock_fd: int,
    report: int,
    status: str,
    tmp_dir: str,
    timeout: float | None,
    kill_grace: float,
    stop_grace: float,
    current: _Current | None = None,
) -> int:
    """Watch one job to its end. `current`: the run watcher's state (serve); None for a
    process that watches this one job only, which becomes a watcher first."""
    if current is None:
        current = _become_watcher([lock_fd, report])
    watch = _Watch(0, stop_grace)
    watch.wake = current.wake
    with contextlib.suppress(BlockingIOError):
        while os.read(current.wake, 512):  # wake-ups left from between jobs
            pass
    err_r, err_w = os.pipe()
    began = time.monotonic()
    try:
        job = os.posix_spawn(
            find_program(argv[0], env.get("PATH", os.defpath)),
            list(argv),
            dict(env),
            setpgroup=0,
            setsigmask=(),  # the job starts with no signal blocked, whatever ours is now
            file_actions=[(os.POSIX_SPAWN_DUP2, err_w, 2), (os.POSIX_SPAWN_CLOSE, err_r)],
        )
    except OSError as exc:
        os.close(err_r)
        os.close(err_w)
        with contextlib.suppress(OSError):  # a runner that died meanwhile reads nothing
            os.write(report, b"E%d" % (exc.errno or errno.ENOEXEC))
        return 0
    watch.job = job
    current.watch = watch  # before the start report: the runner's stops come after it
    try:
        _follow(watch, err_r, err_w, report, status, tmp_dir, timeout, kill_grace, began)
    except BaseException:
        # Never leave the job running without the lock this process is about to drop.
        signal_group(job, signal.SIGKILL)
        raise
    finally:
        current.watch = None
        os.close(err_r)
    return 0


def _follow(  # noqa: PLR0917 - private, called once by _watch with its own values
    watch: _Watch,
    err_r: int,
    err_w: int,
    report: int,
    status: str,
    tmp_dir: str,
    timeout: float | None,
    kill_grace: float,
    began: float,
) -> None:
    """The watcher's loop from the job's start to its status (see the module docstring)."""
    job = watch.job
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, KILL_NOW))
    os.close(err_w)
    note = _note_started(started_beside(status), job)
    # The runner may have been SIGKILLed since the fork: a broken pipe here changes nothing
    # (Python ignores SIGPIPE, so it is an OSError), the job is ours to see to its end.
    with contextlib.suppress(OSError):
        os.write(report, b"S")
    os.set_blocking(err_r, False)
    kept = bytearray()
    timed_out = False
    look = _CancelLook(cancel_beside(status), began)
    term_sent_at: float | None = None
    """When SIGTERM went to the group for a timeout or for leftovers (kill deadline base)."""
    kill_after = kill_grace
    killed = False
    reading = True
    while True:
        _reap(watch)
        now = time.monotonic()
        alive = watch.leader_code is None or group_alive(job)
        if not alive:
            break
        if watch.kill_now and not killed:
            signal_group(job, signal.SIGKILL)
            killed = True
        if (
            not timed_out
            and timeout is not None
            and watch.leader_code is None
            and now - began >= timeout
        ):
            timed_out = True
            signal_group(job, signal.SIGTERM)
            term_sent_at, kill_after = now, kill_grace
        term_sent_at, kill_after = look.act(watch, now, (term_sent_at, kill_after), kill_grace)
        if watch.leader_code is not None and term_sent_at is None and watch.stop_at is None:
            # The leader exited; what it left in its group gets a short grace, then SIGKILL.
            signal_group(job, signal.SIGTERM)
            term_sent_at, kill_after = now, min(LEFTOVER_GRACE, kill_grace)
        kill_at = None if term_sent_at is None else term_sent_at + kill_after
        limit = None if timeout is None or timed_out else began + timeout
        due = _next_due(watch, kill_at, kill_grace, limit)
        if due is not None and now >= due and not killed:
            signal_group(job, signal.SIGKILL)
            killed = True
        if killed and watch.leader_code is not None:
            # SIGKILL cannot be refused; an orphan's zombie (which a group probe still sees
            # until its new parent reaps it) holds nothing.
            break
        wait = look.pause(watch, _pause(due, now, killed=killed), now)
        fds = [watch.wake, err_r] if reading else [watch.wake]
        try:
            ready, _, _ = select.select(fds, [], [], wait)
        except InterruptedError:  # pragma: no cover - PEP 475 retries select itself
            ready = []
        if watch.wake in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(watch.wake, 512)
        if reading and err_r in ready:
            reading = read_tail(err_r, kept, TAIL_BYTES, echo=2)
    if reading:
        read_tail(err_r, kept, TAIL_BYTES, echo=2)  # whatever is still buffered in the pipe
    outcome = Outcome(
        exit=-signal.SIGKILL if watch.leader_code is None else watch.leader_code,
        stopped=watch.stopped,
        timed_out=timed_out,
        duration=time.monotonic() - began,
        stderr=tail(bytes(kept)),
        limit=timeout,
        cancelled=look.seen,
    )
    from lanekit.system import fsops
    from lanekit.system.fsops import tmp_suffix

    data = outcome.to_bytes()
    # Written before the lock drops (at exit): whoever takes the lock next finds it. The note
    # becomes the status (no second file a job); a note that could not be written, or
    # rewritten, leaves the status to a temp file renamed in. A full disk only loses the
    # file: the runner, if alive, learns the outcome from the report.
    if not _note_to_status(note, started_beside(status), status, data):
        with contextlib.suppress(OSError):
            fsops.replace_file(status, data, tmp=f"{tmp_dir}/.status.{tmp_suffix()}", durable=False)
    with contextlib.suppress(OSError):  # a dead runner reads nothing (broken pipe)
        write_all(report, data)


def _note_started(path: str, job: int) -> int:
    """Write the .started note of the job whose leader is `job` (its process group), for
    whoever finds the claim once this watcher is gone (job_copies); its descriptor, kept to
    write the status into, or -1 when it could not be written (the job runs all the same)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return -1
    try:
        write_all(fd, STARTED_NOTE + b"%d\n" % job)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return -1
    return fd


def _note_to_status(note: int, started: str, status: str, data: bytes) -> bool:
    """Turn the .started note (open as `note`) into the status holding `data`: rewritten in
    place, then renamed (nobody reads it meanwhile: this watcher still holds the claim's
    lock). False when there is no note or this fails (the note is then removed)."""
    if note < 0:
        return False
    try:
        os.pwrite(note, data, 0)
        os.ftruncate(note, len(data))
        os.rename(started, status)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(started)
        return False
    finally:
        os.close(note)
    return True


class _CancelLook:
    """`lanekit cancel --stop`'s request next to the claim, looked for every CANCEL_POLL
    seconds (one stat) while the leader lives."""

    def __init__(self, path: str, began: float) -> None:
        self.path = path
        self.next = began
        self.seen = False

    def act(
        self,
        watch: _Watch,
        now: float,
        term: tuple[float | None, float],
        kill_grace: float,
    ) -> tuple[float | None, float]:
        """On the request: SIGTERM to the job's group, SIGKILL kill_grace later (as for a
        timeout); `term` is the loop's (SIGTERM sent at, SIGKILL after), returned updated."""
        if self.seen or watch.leader_code is not None or now < self.next:
            return term
        self.next = now + CANCEL_POLL
        self.seen = os.path.lexists(self.path)
        if not self.seen:
            return term
        signal_group(watch.job, signal.SIGTERM)
        return (now, kill_grace) if term[0] is None else term

    def pause(self, watch: _Watch, wait: float, now: float) -> float:
        """`wait`, cut short so that the next look is on time."""
        if self.seen or watch.leader_code is not None:
            return wait
        return max(0.0, min(wait, self.next - now))


def _reap(watch: _Watch) -> None:
    """Record the leader's exit code once it has exited (never blocks)."""
    if watch.leader_code is not None:
        return
    with contextlib.suppress(ChildProcessError):
        done, wait_status = os.waitpid(watch.job, os.WNOHANG)
        if done:
            watch.leader_code = os.waitstatus_to_exitcode(wait_status)


def _next_due(
    watch: _Watch, kill_at: float | None, kill_grace: float, limit: float | None
) -> float | None:
    """The next moment the loop must act: SIGKILL after a SIGTERM's grace (`kill_at`) or a
    stop's, or the job's timeout (`limit`); None when nothing is pending."""
    deadlines = [] if kill_at is None else [kill_at]
    if watch.stop_at is not None:
        deadlines.append(watch.stop_at + min(kill_grace, watch.stop_grace))
    if limit is not None:
        deadlines.append(limit)
    return min(deadlines) if deadlines else None


def _pause(due: float | None, now: float, *, killed: bool) -> float:
    """How long the loop may sleep in select before it looks again."""
    if killed:
        return 0.05
    if due is None:
        return 1.0  # woken by SIGCHLD, stderr or a stop long before this
    return max(0.0, min(due - now, 1.0))


if __name__ == "__main__":  # pragma: no cover - not an entry point
    sys.exit("lanekit.run.watcher is started by lanekit.run.runner")
