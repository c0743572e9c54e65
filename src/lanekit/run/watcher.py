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
stderr as it comes, the last lines kept) and, when the queue keeps the job's output, stdout
through another (copied on to the runner's stdout), both also written to the job's own output
file (lanekit.run.joboutput: bounded, one header per attempt), enforces the lane's `timeout`
(SIGTERM to the job's group, SIGKILL `kill_grace` later), forwards a stop from the runner
(SIGTERM / SIGINT / SIGHUP; SIGUSR1 means SIGKILL now), stops the job the same way as a timeout
when `lanekit cancel --stop` leaves a cancel request next to the claim (claimed/.<claim
name>.cancel, looked for every CANCEL_POLL seconds: no pid has to be found or trusted, and a
request made before the job started is seen at its start), ends what the job left in its group
once the leader exited, then writes the job's outcome atomically next to the claim
(claimed/.<claim name>.status) and only then closes the claim's descriptor, dropping the lock,
and then the job's report pipe. The same outcome also goes to the runner through that pipe, so a
live runner knows how its job ended even when the status file cannot be written (a full disk).

So a claim whose lock is free either has a status (the job ended: recovery settles it by that
status and never runs it again) or has none (the job did not finish: it runs again, which is the
at-least-once half of design.md section 8). While the lock is held, the job or what it left may
still run, and nobody else starts the job. A watcher killed too (one `pkill -9 -f 'lanekit
run'` kills runner and watcher) leaves a job that holds nothing: its copies are then found by
the process group the watcher noted when it started the job (claimed/.<claim name>.started,
the file that becomes the status) and by the claim their environment names (job_copies), and
the claim stays until none is left. That search works on this machine only: a leased job (a
server queue's, whose lease another host takes over once it lapses) is instead tied to its
watcher's life (JobTie): its process group is killed when the watcher dies, however it dies.
Between jobs the watcher holds no claim; it exits at
the end of the run, or, when the runner died, once the job it watches has ended.

Its loop is launchd's supervisor's too (lanekit.service.launchd.environ: the emulated domain and
`lanekit try`), with this policy: lanekit.system.processes.supervise.

Processes start here and in the three seams design.md names; tests/test_process_seams.py lists
this module deliberately.
"""

# ruff: noqa: PTH104, PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue)
from __future__ import annotations

import contextlib
import errno
import os
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
    Supervision,
    close_fds_except,
    find_program,
    signal_group,
    supervise,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping, Sequence
    from typing import Any

    from lanekit.run.joboutput import OutputFile

CANCEL_POLL = 0.25
"""Seconds between the watcher's looks for a cancel request (one stat each)."""
KILL_NOW = signal.SIGUSR1
"""What the runner sends the watcher for "SIGKILL the job's group now" (a SIGKILL to the
watcher itself would orphan the job with its claim unlocked)."""


TIE = True
"""Whether a leased job is tied to its watcher's life (JobTie). The chaos run's control
switches it off to show the overlaps it prevents; nothing else changes it."""


# --- the watcher's side -------------------------------------------------------------------


def _become_watcher(keep: Sequence[int]) -> int:
    """What a watcher does once, before any job: its own session, every descriptor but
    stdin/stdout/stderr and `keep` closed, its signals unblocked and written to a wake-up pipe
    (whose read end is returned) for the loop to act on: a stop that comes between jobs is a
    late one for the job before, and is dropped at the next job's start."""
    os.setsid()  # out of the runner's process group and session: its death is not ours
    close_fds_except(keep)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in (*STOP_SIGNALS, KILL_NOW, signal.SIGCHLD):
        signal.signal(sig, lambda _s, _f: None)  # only to be written to the wake-up pipe
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, KILL_NOW))
    return wake_r


def serve(sock: socket.socket) -> int:
    """The run watcher's life (lanekit.run.watcher_link forks it): each request the runner sends,
    watched to its end; 0 at the socket's EOF (the run is over, or the runner died)."""
    wake = _become_watcher([sock.fileno()])
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
                wake=wake,
                lease=request.get("lease"),
                output=request.get("output"),
                header=request.get("header", ""),
            )
        finally:
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
    wake: int = -1,
    lease: Mapping[str, Any] | None = None,
    output: str | None = None,
    header: str = "",
) -> int:
    """Watch one job to its end. `wake`: the run watcher's wake-up pipe (serve); -1 for a
    process that watches this one job only, which becomes a watcher first. `lease`: a leased
    claim's LeaseTerms (as a dict): renewed while the job runs, the job killed at once when
    it is lost or about to lapse (lanekit.run.leasekeeper). `output`: the job's output file
    (lanekit.run.joboutput), which gets `header` and then the job's stdout and stderr;
    without it the job's stdout is this process's."""
    if wake < 0:
        wake = _become_watcher([lock_fd, report])
    err_r, err_w = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, err_w, 2), (os.POSIX_SPAWN_CLOSE, err_r)]
    out_r = out_w = -1
    kept_output = None
    if output is not None:
        from lanekit.run.joboutput import OutputFile

        kept_output = OutputFile.open(output, header)
    if kept_output is not None:
        out_r, out_w = os.pipe()
        actions += [(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_CLOSE, out_r)]
    began = time.monotonic()
    tie = _tie() if lease is not None and TIE else None
    try:
        program = find_program(argv[0], env.get("PATH", os.defpath))
        if tie is not None:
            job = tie.spawn(program, argv, env, actions)
        else:
            job = os.posix_spawn(
                program,
                list(argv),
                dict(env),
                setpgroup=0,
                setsigmask=(),  # the job starts with no signal blocked, whatever ours is now
                file_actions=actions,
            )
    except OSError as exc:
        for fd in (err_r, err_w, out_r, out_w):
            if fd >= 0:
                os.close(fd)
        if kept_output is not None:
            kept_output.close()
        with contextlib.suppress(OSError):  # a runner that died meanwhile reads nothing
            os.write(report, b"E%d" % (exc.errno or errno.ENOEXEC))
        return 0
    with contextlib.suppress(BlockingIOError):
        while os.read(wake, 512):  # signals from before this job's start: not for it
            pass
    policy = Supervision(
        group=True,
        kill_grace=kill_grace,
        stop_grace=min(kill_grace, stop_grace),
        stop_signals=frozenset(STOP_SIGNALS),
        kill_signal=KILL_NOW,
        leftover_grace=min(LEFTOVER_GRACE, kill_grace),
        poll=1.0,  # woken by SIGCHLD, stderr or a stop long before this
        look_every=CANCEL_POLL,
        echo=2,
        echo_out=1,
        tail=TAIL_BYTES,
    )
    if out_w >= 0:
        os.close(out_w)
    try:
        _follow(
            job,
            policy,
            wake,
            (err_r, err_w),
            report,
            status,
            tmp_dir,
            timeout,
            began,
            (out_r, kept_output),
            lease,
        )
    except BaseException:
        # Never leave the job running without the lock this process is about to drop.
        signal_group(job, signal.SIGKILL)
        raise
    finally:
        os.close(err_r)
        if out_r >= 0:
            os.close(out_r)
        if kept_output is not None:
            kept_output.close()
    if tie is not None:
        tie.untie()  # the job's group is gone (supervise waited for it): nothing to kill
    return 0


def _follow(  # noqa: PLR0917 - private, called once by _watch with its own values
    job: int,
    policy: Supervision,
    wake: int,
    err: tuple[int, int],
    report: int,
    status: str,
    tmp_dir: str,
    timeout: float | None,
    began: float,
    out: tuple[int, OutputFile | None],
    lease: Mapping[str, Any] | None = None,
) -> None:
    """The watcher's part from the job's start to its status (see the module docstring).
    `err`: the job's stderr pipe (read end, write end); `out`: its stdout pipe's read end and
    the output file it goes to (-1, None: the job writes to this process's stdout)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, KILL_NOW))
    err_r, err_w = err
    out_r, kept_output = out
    os.close(err_w)
    note = _note_started(started_beside(status), job)
    # The runner may have been SIGKILLed since the fork: a broken pipe here changes nothing
    # (Python ignores SIGPIPE, so it is an OSError), the job is ours to see to its end.
    with contextlib.suppress(OSError):
        os.write(report, b"S")
    os.set_blocking(err_r, False)
    if out_r >= 0:
        os.set_blocking(out_r, False)
    kept = bytearray()
    cancel = cancel_beside(status)
    keeper = None
    if lease is not None:
        from lanekit.queue.model import LeaseTerms
        from lanekit.run.leasekeeper import LeaseKeeper

        keeper = LeaseKeeper(LeaseTerms(**lease)).start()
    fenced = False

    def requested() -> bool:
        nonlocal fenced
        if keeper is not None and keeper.must_stop():
            # Lost, or about to lapse: gone at once, before anyone else may take the job.
            fenced = True
            signal_group(job, signal.SIGKILL)
            return False
        return os.path.lexists(cancel) or (keeper is not None and keeper.cancel)

    try:
        ended = supervise(
            job,
            policy,
            wake=wake,
            deadline=None if timeout is None else began + timeout,
            requested=requested,
            capture=err_r,
            kept=kept,
            output=out_r if out_r >= 0 else None,
            copy=None if kept_output is None else kept_output.write,
        )
    except BaseException:
        if keeper is not None:
            keeper.close()
        raise
    outcome = Outcome(
        exit=os.waitstatus_to_exitcode(ended.status),
        stopped=ended.stopped,
        timed_out=ended.timed_out,
        duration=time.monotonic() - began,
        stderr=tail(bytes(kept)),
        limit=timeout,
        cancelled=ended.requested,
        lease_lost=fenced,
    )
    if keeper is not None:
        keeper.close(outcome)  # the claim keeps it too: a run on any machine settles by it
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


GUARD_SCRIPT = (
    'trap "" HUP; p=0; while read -r g; do p=$g; done; '
    '[ "$p" = 0 ] || kill -s KILL -- "-$p" 2>/dev/null'
)
"""The guard: the last process group it was told of is SIGKILLed at its stdin's EOF, which
comes when the watcher, holding the pipe's only write end, dies however it dies. A shell, so
that `pkill -f 'lanekit run'` (which kills runner and watcher) does not match it too."""


class JobTie:
    """Ties each leased job to its watcher's life, so that a job never outlives its fence
    (the watcher renews the lease and self-fences: once it is gone nothing stops a job, whose
    lease then lapses and another host runs it again, two copies at once).

    Two layers. The guard (GUARD_SCRIPT), one `/bin/sh` per watcher in a process group of its
    own, reads the job's process group from a pipe and SIGKILLs that whole group at the pipe's
    EOF: the watcher's death, SIGKILL included, on every platform; the job's own children die
    with it, as long as they stay in its group. And on Linux, the job's leader gets
    PR_SET_PDEATHSIG(SIGKILL) between fork and exec: the kernel kills it when the watcher's
    main thread exits (the job is forked from the main thread only; the lease is renewed from
    another, which must not fork), even if the guard was killed too.

    Why a live process: nothing the kernel offers kills a whole group when a process dies.
    The parent-death signal is cleared in a fork's child, so only the job's leader has it;
    a subreaper (PR_SET_CHILD_SUBREAPER) adopts orphans only while it lives, and the watcher
    is the one that died (the leader as subreaper is killed first); a PID namespace, whose
    processes all die with its init, needs an unprivileged user namespace (refused on some
    distributions) and makes the job PID 1, which ignores a SIGTERM it has no handler for
    (the lane's stops and timeouts). macOS has no parent-death signal at all; a pipe's EOF
    is how a process learns of another's death there too, and the guard is that process.
    What escapes the guard: a process that left the job's group (setsid), and a guard
    killed on purpose as well (README, "Several machines, one queue").

    The job is forked (not posix_spawn'd: the child has work to do before exec): it joins its
    own process group, sets its parent-death signal, checks that its parent is still the
    watcher (a watcher that died before the prctl would never signal), writes its pid to the
    guard (so the guard knows the group before the job's first instruction), then execs. The
    watcher has no other thread when it forks (LeaseKeeper.close joins its renewer), so the
    child's Python before exec cannot meet a lock held by a thread that does not exist in it."""

    def __init__(self) -> None:
        from lanekit.system.processes import parent_death_setter

        self._death = parent_death_setter()
        self._guard = 0
        self._feed = -1

    def _ensure_guard(self) -> None:
        """A live guard with its pipe: started on first use, again if it died (killed alone)."""
        if self._guard:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(self._guard, os.WNOHANG)[0] == 0:
                    return
            os.close(self._feed)
            self._guard, self._feed = 0, -1
        read, feed = os.pipe()  # both ends close-on-exec: no job or later guard inherits them
        devnull = (os.O_WRONLY, 0)
        try:
            self._guard = os.posix_spawn(
                "/bin/sh",
                ["sh", "-c", GUARD_SCRIPT],
                {},
                setpgroup=0,  # apart from the job's group, which it kills, and the watcher's
                setsigmask=(),
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, *devnull),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, *devnull),
                ],
            )
        except OSError:
            os.close(feed)  # no shell: the parent-death signal (Linux) is all that is left
            feed = -1
        finally:
            os.close(read)
        self._feed = feed

    def spawn(
        self,
        program: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        actions: Sequence[tuple[int, ...]],
    ) -> int:
        """Start the job (leader of a new process group), tied; its pid. `actions`: the
        posix_spawn file actions (DUP2 and CLOSE) to apply in the child. OSError with the
        child's errno when the exec failed."""
        self._ensure_guard()
        parent = os.getpid()
        errors_r, errors_w = os.pipe()  # close-on-exec: EOF tells the exec succeeded
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, which execs or _exits
            self._child(program, argv, env, actions, parent, errors_w)
        os.close(errors_w)
        try:
            failed = os.read(errors_r, 16)
        finally:
            os.close(errors_r)
        if failed:
            os.waitpid(pid, 0)
            self.untie()  # its pid, told to the guard, may be anyone's later
            number = int(failed) if failed.isdigit() else errno.ENOEXEC
            raise OSError(number, os.strerror(number), program)
        return pid

    def _child(  # noqa: PLR0917 - private, called once by spawn with its own values
        self,
        program: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        actions: Sequence[tuple[int, ...]],
        parent: int,
        errors: int,
    ) -> None:  # pragma: no cover - runs between fork and exec
        try:
            signal.set_wakeup_fd(-1)  # a signal now must not wake the watcher's loop
            os.setpgid(0, 0)
            if self._death is not None and self._death(signal.SIGKILL) != 0:
                raise OSError(errno.EPERM, "prctl(PR_SET_PDEATHSIG)")
            if os.getppid() != parent:  # the watcher died before the prctl: nothing fences us
                os._exit(0)
            if self._feed >= 0:
                with contextlib.suppress(OSError):  # a guard gone: the prctl stays
                    write_all(self._feed, b"%d\n" % os.getpid())
            for action in actions:
                if action[0] == os.POSIX_SPAWN_DUP2:
                    os.dup2(action[1], action[2])
                else:
                    os.close(action[1])
            signal.pthread_sigmask(signal.SIG_SETMASK, ())
            os.execve(program, list(argv), dict(env))  # noqa: S606 - argv, as posix_spawn
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.write(errors, b"%d" % (exc.errno or errno.ENOEXEC))
        finally:
            os._exit(127)

    def untie(self) -> None:
        """The job's group is gone: the guard is told so (a later EOF kills nothing)."""
        if self._feed >= 0:
            with contextlib.suppress(OSError):
                write_all(self._feed, b"0\n")


_TIES: list[JobTie] = []
"""The watcher's one JobTie, made at its first leased job."""


def _tie() -> JobTie:
    if not _TIES:
        _TIES.append(JobTie())
    return _TIES[0]


if __name__ == "__main__":  # pragma: no cover - not an entry point
    sys.exit("lanekit.run.watcher is started by lanekit.run.runner")
