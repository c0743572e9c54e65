"""How launchd starts a job: log files, cwd, nice, umask, process group, the watcher, the stop.

What it starts (argv, the bare environment, launchd's defaults) is lanekit.service.launchd.launch's.

Used by the emulated domain (`spawn`) and by `lanekit try` (`run_foreground`), so a lane behaves
the same way on Linux as under launchd on macOS. Facts: shared/launchd-semantics.md section 3.

`spawn` detaches the job from the caller the way launchd does (a job is never the child of
`lanekit kick`): the caller forks a short-lived helper that starts a new session and forks the
*watcher*; the watcher forks the job and stays its parent. Launchd's duties for the job are then
the watcher's: wait for it, record its raw wait status in a status file, kill its process group
after it exits (AbandonProcessGroup), and on a stop request send SIGTERM then SIGKILL after
ExitTimeOut. The watcher is a fork without exec, so it lives inside this module. Its loop is
the run's job watcher's too (lanekit.run.watcher), with launchd's policy: lanekit.system.processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import NoReturn

from lanekit.errors import EnvironmentUnusableError
from lanekit.service.launchd.launch import (
    DEFAULT_LOG_UMASK,
    JobLaunch,
    JobSetupError,
    resolve_command,
)
from lanekit.state.schemas import SPAWN_STATUS_SCHEMA
from lanekit.system.atomic import write_atomic
from lanekit.system.fdio import read_all
from lanekit.system.processes import Supervision, close_fds_except, signal_group, supervise
from lanekit.system.procinfo import start_token

STDERR_TAIL_BYTES = 8192


@dataclass(frozen=True, slots=True)
class SpawnedJob:
    """A job started by `spawn`; tokens guard against pid reuse."""

    pid: int
    start_token: str
    watcher_pid: int = 0
    watcher_token: str = ""


@dataclass(frozen=True, slots=True)
class JobExit:
    """What the watcher recorded when the job's main process ended."""

    pid: int
    wait_status: int
    """The raw wait(2) status, as launchd keeps it (`launchctl list <label>` LastExitStatus)."""
    ended_at: float
    exit_code: int | None = field(init=False)
    signal: int | None = field(init=False)

    def __post_init__(self) -> None:
        code: int | None = None
        sig: int | None = None
        if os.WIFSIGNALED(self.wait_status):
            sig = os.WTERMSIG(self.wait_status)
        elif os.WIFEXITED(self.wait_status):
            code = os.WEXITSTATUS(self.wait_status)
        object.__setattr__(self, "exit_code", code)
        object.__setattr__(self, "signal", sig)

    @property
    def list_status(self) -> int | None:
        """`launchctl list` convention: the exit code, or minus the signal."""
        return -self.signal if self.signal is not None else self.exit_code


@dataclass(frozen=True, slots=True)
class ForegroundResult:
    """One run of a job in the foreground (`lanekit try`)."""

    exit_code: int | None
    signal: int | None
    duration: float
    stderr_tail: str
    timed_out: bool = False


# --- process identity -------------------------------------------------------------------------


def process_token(pid: int, *, zombie_ok: bool = False) -> str | None:
    """A token that identifies this process instance (start time), or None if it is gone.

    The same token the queue uses for claim owners (lanekit.system.procinfo). Zombies count as gone
    unless `zombie_ok`: a parent may take its child's token before reaping it. A process the
    OS will not describe to us is not one of our jobs: None.
    """
    try:
        return start_token(pid, zombie_ok=zombie_ok)
    except PermissionError:
        return None


def is_alive(pid: int | None, token: str | None) -> bool:
    """True when `pid` still runs and is the same process instance as when `token` was taken."""
    return pid is not None and token is not None and process_token(pid) == token


def signal_process(pid: int | None, token: str | None, sig: int) -> bool:
    """Send `sig` to that process instance only (never to a reused pid); True when sent."""
    if pid is None or not is_alive(pid, token):
        return False
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def request_stop(job: SpawnedJob) -> bool:
    """Stop the job as launchd does: SIGTERM now, SIGKILL after its ExitTimeOut.

    The watcher does both, so the stop completes even if the caller exits. When the watcher is
    gone, the job gets SIGTERM directly and False is returned: the caller owns the SIGKILL.
    """
    if signal_process(job.watcher_pid, job.watcher_token, signal.SIGTERM):
        return True
    signal_process(job.pid, job.start_token, signal.SIGTERM)
    return False


def read_exit(status_file: Path) -> JobExit | None:
    """The exit the watcher recorded in `status_file`, or None when it has not (yet)."""
    try:
        data = json.loads(status_file.read_bytes())
        return JobExit(
            pid=int(data["pid"]), wait_status=int(data["wait_status"]), ended_at=data["ended_at"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- starting jobs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Prepared:
    """File descriptors and the executable, opened by the caller before any fork."""

    path: str
    cwd_fd: int
    stdin_fd: int
    stdout_fd: int
    stderr_fd: int

    def fds(self) -> tuple[int, ...]:
        return (self.cwd_fd, self.stdin_fd, self.stdout_fd, self.stderr_fd)

    def close(self) -> None:
        for fd in set(self.fds()):
            with contextlib.suppress(OSError):
                os.close(fd)


def _prepare(launch: JobLaunch) -> _Prepared:
    """Do in the caller what launchd does before exec, so a failure means "never started".

    A missing WorkingDirectory fails like an unopenable log (modern launchd: 78 EX_CONFIG;
    10.9 only logged it), and so does a program that cannot be found.
    """
    opened: list[int] = []
    try:
        try:
            cwd_fd = _high(os.open(launch.cwd, os.O_RDONLY | os.O_DIRECTORY))
        except OSError as exc:
            raise _setup_error(launch, f"WorkingDirectory {launch.cwd}", exc) from None
        opened.append(cwd_fd)
        stdin_fd = _high(os.open(os.devnull, os.O_RDONLY))
        opened.append(stdin_fd)
        stdout_fd = _open_log(launch, launch.stdout_path, "StandardOutPath", cwd_fd)
        opened.append(stdout_fd)
        stderr_fd = _open_log(launch, launch.stderr_path, "StandardErrorPath", cwd_fd)
        opened.append(stderr_fd)
        path = resolve_command(launch.executable, launch.env.get("PATH", ""), launch.cwd)
        if path is None:
            raise JobSetupError(
                f"{launch.label}: program {launch.executable!r} not found or not executable "
                f"(PATH={launch.env.get('PATH', '')}, cwd={launch.cwd})",
                "use an absolute path or put its directory in the lane's path; launchd "
                "reports this as last exit code 78 (EX_CONFIG)",
            )
        return _Prepared(path, cwd_fd, stdin_fd, stdout_fd, stderr_fd)
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise


def _open_log(launch: JobLaunch, path: str | None, key: str, cwd_fd: int) -> int:
    if path is None:
        return _high(os.open(os.devnull, os.O_WRONLY))
    umask = DEFAULT_LOG_UMASK if launch.umask is None else launch.umask
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666 & ~umask, dir_fd=cwd_fd)
    except OSError as exc:
        raise _setup_error(launch, f"{key} {path}", exc) from None
    return _high(fd)


def _setup_error(launch: JobLaunch, what: str, exc: OSError) -> JobSetupError:
    return JobSetupError(
        f"{launch.label}: cannot open {what}: {exc.strerror or exc}",
        "create the directory (launchd does not create it) and make it writable; launchd "
        "reports this as last exit code 78 (EX_CONFIG) and never runs the job",
    )


def _high(fd: int) -> int:
    """Move fd above stdio so the dup2 onto 0/1/2 in the child cannot clobber it."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _exec_job(launch: JobLaunch, prep: _Prepared) -> NoReturn:
    """In the forked job: become a process-group leader, set up stdio/cwd/umask/nice, exec.

    Never returns: a failed exec ends the process with EX_CONFIG, as launchd reports it.
    """
    try:
        signal.set_wakeup_fd(-1)
        os.setsid()
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for sig in signal.valid_signals():
            if sig not in {signal.SIGKILL, signal.SIGSTOP}:
                with contextlib.suppress(OSError, ValueError):
                    signal.signal(sig, signal.SIG_DFL)
        os.dup2(prep.stdin_fd, 0)
        os.dup2(prep.stdout_fd, 1)
        os.dup2(prep.stderr_fd, 2)
        os.fchdir(prep.cwd_fd)
        if launch.umask is not None:
            os.umask(launch.umask)
        if launch.nice is not None:
            # launchd only logs a Nice it may not apply (e.g. negative for a non-root agent).
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, launch.nice)
        argv = list(launch.argv) or [prep.path]
        os.execve(prep.path, argv, dict(launch.env))  # noqa: S606 - launchd's exec, by design
    finally:
        os._exit(os.EX_CONFIG)


def spawn(launch: JobLaunch, *, status_file: Path | None) -> SpawnedJob:
    """Start the job detached from the caller; returns once its pid is known.

    Raises JobSetupError (nothing started) when a log path, the working directory or the
    program cannot be used. The job's raw wait status is written to `status_file` when its main
    process ends (see `read_exit`).
    """
    prep = _prepare(launch)
    report_r, report_w = os.pipe()
    try:
        helper = os.fork()
        if helper == 0:
            try:
                _detach_and_watch(launch, prep, report_w, status_file)
            finally:
                # a helper process failed internally (never a job's status)
                os._exit(os.EX_SOFTWARE)
        os.close(report_w)
        report_w = -1
        report = read_all(report_r).decode(errors="replace")
        os.waitpid(helper, 0)
    finally:
        os.close(report_r)
        if report_w >= 0:
            os.close(report_w)
        prep.close()
    parts = report.split()
    if len(parts) != 4 or not (parts[0].isdigit() and parts[2].isdigit()):
        raise EnvironmentUnusableError(
            f"{launch.label}: could not start the job ({report.strip() or 'no report'})",
            "check the system's process limits (ulimit -u) and free memory",
        )
    pid, token, watcher, watcher_token = parts
    return SpawnedJob(int(pid), token, int(watcher), watcher_token)


def _detach_and_watch(
    launch: JobLaunch, prep: _Prepared, report_w: int, status_file: Path | None
) -> None:
    """The helper: new session (no terminal, no caller's signals), then fork the watcher.

    The helper exits at once, so the watcher is re-parented away from the caller: the caller
    never has to reap it and the job survives the caller.
    """
    # The watcher may live for hours as a fork of the CLI: keep the collector from touching
    # (and so copying) every page of the inherited heap.
    gc.disable()
    close_fds_except({report_w, *prep.fds()})
    # Hold neither the caller's terminal nor its pipes: `lanekit kick | cat` must not wait.
    devnull_w = os.open(os.devnull, os.O_WRONLY)
    os.dup2(prep.stdin_fd, 0)
    os.dup2(devnull_w, 1)
    os.dup2(devnull_w, 2)
    os.close(devnull_w)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    _watch(launch, prep, report_w, status_file)


def detach(loop: Callable[[], None]) -> int:
    """Run `loop` in a process of its own that outlives the caller (new session, no terminal,
    stdio on /dev/null, no inherited descriptors): launchd's own watches in the emulated
    domain (lanekit.service.emulated.queuewatch). Returns its pid."""
    report_r, report_w = os.pipe()
    try:
        helper = os.fork()
        if helper == 0:
            try:
                gc.disable()  # a long-lived fork of the CLI: leave the inherited heap alone
                close_fds_except({report_w})
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.close(devnull)
                os.setsid()
                child = os.fork()
                if child != 0:
                    os.write(report_w, str(child).encode())
                    os._exit(0)
                os.close(report_w)
                loop()
            finally:
                os._exit(0)
        os.close(report_w)
        report_w = -1
        pid = read_all(report_r).decode(errors="replace")
        os.waitpid(helper, 0)
    finally:
        os.close(report_r)
        if report_w >= 0:
            os.close(report_w)
    return int(pid) if pid.isdigit() else 0


def _noop(signum: int, frame: FrameType | None) -> None:
    """Signals are read from the wakeup pipe; the handler only has to exist."""


def _watch(launch: JobLaunch, prep: _Prepared, report_w: int, status_file: Path | None) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, _noop)
    signal.signal(signal.SIGTERM, _noop)
    for ignored in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(ignored, signal.SIG_IGN)
    # The job holds the write end of this close-on-exec pipe until its exec (or its death), so
    # the pid is reported only once the job is set up: session leader, stdio, cwd, nice.
    exec_r, exec_w = os.pipe()
    try:
        job = os.fork()
    except OSError as exc:
        os.write(report_w, f"fork failed: {exc}".encode())
        raise
    if job == 0:
        os.close(report_w)
        os.close(exec_r)
        _exec_job(launch, prep)
    os.close(exec_w)
    token = process_token(job, zombie_ok=True) or "0"
    read_all(exec_r)  # EOF: the job exec()ed (close-on-exec) or died trying
    os.close(exec_r)
    os.write(report_w, f"{job} {token} {os.getpid()} {process_token(os.getpid()) or 0}".encode())
    os.close(report_w)
    prep.close()
    status = supervise(job, _launchd_stop(launch), wake=wake_r).status
    if not launch.abandon_process_group:
        signal_group(job, signal.SIGTERM)
    if status_file is not None:
        record = {
            "schema": SPAWN_STATUS_SCHEMA,
            "pid": job,
            "start_token": token,
            "wait_status": status,
            "ended_at": time.time(),
        }
        write_atomic(status_file, json.dumps(record, sort_keys=True).encode())
    os._exit(0)


def _launchd_stop(launch: JobLaunch, *, poll: float | None = None) -> Supervision:
    """launchd's stop, whoever waits (the emulated domain's watcher, `lanekit try`): SIGTERM to
    the job's process, SIGKILL after its ExitTimeOut (never for 0); its return at the exit."""
    grace = launch.exit_timeout if launch.exit_timeout > 0 else None
    return Supervision(
        group=False, kill_grace=grace, stop_grace=grace, poll=poll, tail=STDERR_TAIL_BYTES
    )


def run_foreground(launch: JobLaunch, timeout: float | None = None) -> ForegroundResult:
    """Run the job once and wait for it, in launchd's environment (`lanekit try`).

    Output goes where the plist says; the tail of stderr is read back (captured through a pipe
    when there is no StandardErrorPath). On timeout or interruption the job is stopped with
    SIGTERM, then SIGKILL after its ExitTimeOut.
    """
    prep = _prepare(launch)
    capture: int | None = None
    tail_from = 0
    try:
        if launch.stderr_path is None:
            capture, capture_w = os.pipe()
            os.set_blocking(capture, False)
            os.close(prep.stderr_fd)
            prep = _Prepared(prep.path, prep.cwd_fd, prep.stdin_fd, prep.stdout_fd, capture_w)
        else:
            tail_from = os.fstat(prep.stderr_fd).st_size
        started = time.monotonic()
        job = os.fork()
        if job == 0:
            _exec_job(launch, prep)
    except BaseException:
        if capture is not None:
            os.close(capture)
        raise
    finally:
        prep.close()
    captured = bytearray()
    try:
        ended = supervise(
            job,
            _launchd_stop(launch, poll=0.05),  # no wake-up pipe: it polls
            deadline=None if timeout is None else started + timeout,
            capture=capture,
            kept=captured,
        )
    except BaseException:
        with contextlib.suppress(ChildProcessError):  # reaped already
            supervise(job, _launchd_stop(launch, poll=0.05), deadline=time.monotonic())
        raise
    finally:
        if capture is not None:
            os.close(capture)
    duration = time.monotonic() - started
    if not launch.abandon_process_group:
        signal_group(job, signal.SIGTERM)
    tail = bytes(captured) if launch.stderr_path is None else _read_tail(launch, tail_from)
    result = JobExit(pid=job, wait_status=ended.status, ended_at=time.time())
    return ForegroundResult(
        exit_code=result.exit_code,
        signal=result.signal,
        duration=duration,
        stderr_tail=tail[-STDERR_TAIL_BYTES:].decode(errors="replace"),
        timed_out=ended.timed_out,
    )


def _read_tail(launch: JobLaunch, offset: int) -> bytes:
    """What the job appended to its stderr file (the last STDERR_TAIL_BYTES of it)."""
    assert launch.stderr_path is not None
    try:
        with Path(launch.cwd, launch.stderr_path).open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(offset, size - STDERR_TAIL_BYTES))
            return fh.read()
    except OSError:
        return b""
