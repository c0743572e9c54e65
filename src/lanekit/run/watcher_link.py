"""The runner's side of the job watcher (lanekit.run.watcher): the run's one watcher process,
forked at the run's first job and handed each job over a socket, and the handle on a job it
watches.

Processes start here and in the seams design.md names; tests/test_process_seams.py lists this
module deliberately (the watcher's fork).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal

from lanekit.queue.outcome import Outcome, read_outcome
from lanekit.run.stop import STOP_SIGNALS
from lanekit.run.watcher import KILL_NOW, serve
from lanekit.system.fdio import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping, Sequence
    from typing import Any

    from lanekit.queue.model import LeaseTerms


class WatcherGoneError(OSError):
    """The watcher ended with a job's request in hand, before saying whether it started the
    job: the job may be running without it (lanekit.run.runner then waits for its copies)."""


class WatchedJob:
    """The runner's handle on a job through its watcher (lanekit.run.runner's Job protocol)."""

    def __init__(self, pid: int, status: str, report: int = -1, head: bytes = b"") -> None:
        self.pid = pid
        """The run watcher's (RunWatcher reaps it; it lives on to the next job)."""
        self.status = status
        self._report = report
        self._head = head
        self._reaped = False
        self._outcome: Outcome | None = None

    def wait(self) -> int:
        """Wait until the watcher is done with the job, then the job's exit code: as the
        watcher reported it through the report pipe (which needs no disk space: a success is
        known even on a full disk), else from its status file; -9 when it left neither: the
        watcher was killed, the job perhaps not, and outcome() is None (the runner then
        waits for the job's copies itself)."""
        data = [self._head]
        if self._report >= 0:
            try:
                data.append(read_all(self._report))  # EOF: the watcher let go of it
            except OSError:
                pass
            finally:
                os.close(self._report)
                self._report = -1
        self._reaped = True
        reported = b"".join(data)
        self._outcome = (Outcome.from_bytes(reported) if reported else None) or read_outcome(
            self.status
        )
        return -signal.SIGKILL if self._outcome is None else self._outcome.exit

    def outcome(self) -> Outcome | None:
        """What the watcher recorded (after wait())."""
        return self._outcome

    def leader_alive(self) -> bool:
        """Until the watcher is done with it, the job may still run."""
        return not self._reaped

    def signal_group(self, sig: int) -> None:
        """Pass a stop to the watcher, which forwards it to the job's group (SIGKILL becomes
        KILL_NOW: the watcher must live to record the end and drop the lock)."""
        if self._reaped:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, KILL_NOW if sig == signal.SIGKILL else sig)

    def group_alive(self) -> bool:
        """The watcher ends the job's group itself before it exits."""
        return not self._reaped


class RunWatcher:
    """The run's watcher, as the runner sees it: one process, forked at the run's first job,
    that watches each job the run hands it over a socket (the claim's descriptor and the
    report pipe passed with the request, SCM_RIGHTS), one at a time, and exits when the run
    closes the socket, or, if the runner died, once the job it watches has ended.

    One fork per run instead of one per job: a fork costs the runner about 0.9 ms and then a
    copy-on-write fault for every page either process writes (~420 each way a job, measured:
    docs/benchmarks.md), which a watcher that lives across jobs pays once. Nothing else
    changes for a job: its watcher holds the claim's lock until its status is written, leads
    a session of its own, forwards the runner's stops, and outlives the runner."""

    def __init__(self) -> None:
        self._pid = 0
        self._sock: socket.socket | None = None

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        lock_fd: int,
        status: str,
        tmp_dir: str,
        timeout: float | None,
        kill_grace: float,
        stop_grace: float,
        lease: LeaseTerms | None = None,
        output: str | None = None,
        header: str = "",
    ) -> WatchedJob:
        """Hand a job to the watcher (forked on first use, again if it died); the runner's
        handle on it. OSError when the command cannot be started (missing, not executable):
        the watcher reports the spawn's errno and no status is written. `lease`: the claim's
        lease, which the watcher renews (lanekit.run.leasekeeper). `output`: the job's output
        file, which gets `header` and then the job's stdout and stderr (lanekit.run.joboutput)."""
        import json

        request = json.dumps(
            {
                "argv": list(argv),
                "env": dict(env),
                "status": status,
                "tmp_dir": tmp_dir,
                "timeout": timeout,
                "kill_grace": kill_grace,
                "stop_grace": stop_grace,
                "lease": None if lease is None else _terms(lease),
                "output": output,
                "header": header,
            }
        ).encode()  # ASCII: json.dumps escapes every other character (lone surrogates too)
        report_r, report_w = os.pipe()
        try:
            self._send(len(request).to_bytes(4, "big") + request, [lock_fd, report_w])
        except BaseException:
            os.close(report_r)
            raise
        finally:
            os.close(report_w)
        try:
            report = os.read(report_r, 64)
        except BaseException:
            os.close(report_r)
            raise
        if not report or report.startswith(b"E"):
            os.close(report_r)
            if not report:
                self._forget()  # it died with the job in hand: the next job forks anew
                raise WatcherGoneError(errno.EIO, "the job's watcher ended", argv[0])
            number = int(report[1:] or errno.ENOEXEC)
            raise OSError(number, os.strerror(number), argv[0])
        # "S", then (at the end, perhaps already) the outcome: wait() reads the rest.
        return WatchedJob(self._pid, status, report_r, report[1:])

    def close(self) -> None:
        """End the watcher: idle between jobs, it exits on the socket's EOF and is reaped. One
        still watching a job (the run ended on an error while its job ran) is not waited for:
        it sees that job to its end, as it would for a runner that died."""
        if self._sock is None:
            return
        self._sock.close()
        self._sock = None
        self._reap(_CLOSE_WAIT)

    def after_fork_in_child(self) -> None:
        """A child of the runner (the watcher itself, or any fork) must not send jobs to the
        runner's watcher: it forgets it, closing only its own copy of the socket."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._pid = 0

    def _reap(self, seconds: float) -> None:
        """Reap the watcher if it exits within `seconds` (polled; never blocks longer)."""
        import time

        deadline = time.monotonic() + seconds
        while self._pid:
            try:
                done, _ = os.waitpid(self._pid, os.WNOHANG)
            except ChildProcessError:
                done = self._pid
            if done:
                self._pid = 0
            elif time.monotonic() >= deadline:
                return
            else:
                time.sleep(0.005)

    def _send(self, message: bytes, fds: list[int]) -> None:
        import socket  # here, not at import: a run with no job never needs it (figure c)

        for attempt in (1, 2):
            if self._sock is None:
                self._fork()
            assert self._sock is not None
            try:
                sent = socket.send_fds(self._sock, [message], fds)
                if sent < len(message):  # a signal cut the send short: the rest, fds sent
                    self._sock.sendall(memoryview(message)[sent:])
                return
            except (BrokenPipeError, ConnectionResetError):
                self._forget()  # it was killed between two jobs
                if attempt == 2:
                    raise

    def _forget(self) -> None:
        """The watcher is gone (its socket broke, or it ended before starting a job)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._reap(_CLOSE_WAIT)

    def _fork(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # Stops stay blocked across the fork until the watcher's own handlers are in place: a
        # SIGTERM in between would otherwise run the runner's handler in the watcher, or kill it.
        masked = signal.pthread_sigmask(signal.SIG_BLOCK, (*STOP_SIGNALS, KILL_NOW))
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, masked)
            ours.close()
            theirs.close()
            raise
        if pid == 0:  # the watcher
            code = os.EX_SOFTWARE
            try:
                ours.close()
                code = serve(theirs)
            except BaseException:  # nothing may unwind into the runner's code in the watcher
                code = os.EX_SOFTWARE
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, masked)
        theirs.close()
        self._pid, self._sock = pid, ours


def _terms(lease: LeaseTerms) -> dict[str, Any]:
    """The lease as the request's JSON object (LeaseTerms' fields)."""
    return {
        "location": lease.location,
        "job_id": lease.job_id,
        "token": lease.token,
        "lease": lease.lease,
        "deadline": lease.deadline,
    }


_CLOSE_WAIT = 2.0
"""Seconds close() gives an idle watcher to exit before leaving it to exit on its own."""

_run_watcher = RunWatcher()
os.register_at_fork(after_in_child=_run_watcher.after_fork_in_child)


start = _run_watcher.start
"""Start a job under this process's run watcher (RunWatcher.start)."""
stop_watching = _run_watcher.close
"""End this process's run watcher, if it has one (the runner, once its run is over)."""
