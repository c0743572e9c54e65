"""How a lane run stops: launchd's SIGTERM (bootout), Ctrl-C or a closed terminal forwarded to
the running job's process group, and SIGKILL after a grace that ends before launchd's own
ExitTimeOut kills the runner, so the job is put back in the queue first (lanekit.run.runner uses
StopHandler; lanekit.run.watcher gives what a job left behind the same LEFTOVER_GRACE)."""

from __future__ import annotations

import signal
import time

from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, Protocol

    class Job(Protocol):
        """A started job command: the leader of its own process group."""

        pid: int

        def wait(self) -> int:
            """Block until the leader exits; its exit code, or -N when killed by signal N."""

        def signal_group(self, sig: int) -> None:
            """Send `sig` to the job's whole process group (no error if it is already gone)."""

        def group_alive(self) -> bool:
            """Whether any process of the job's group is still alive."""

        def leader_alive(self) -> bool:
            """Whether the leader has not been reaped yet (a stop forwarded now may be why it
            exits)."""


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
MIN_GRACE = 0.5
GRACE_MARGIN = 1.5
"""Seconds kept in hand before launchd's SIGKILL: time to reap the job and release its claim."""
LEFTOVER_GRACE = 1.0
"""Seconds the processes a job left in its group get between SIGTERM and SIGKILL once its
leader exited (less when a stop's grace ends sooner)."""


def grace_seconds(exit_timeout: int) -> float:
    """How long a stopped job may take to exit before its group gets SIGKILL. launchd kills
    the runner itself ExitTimeOut seconds after SIGTERM (0 means never; the modern default
    is 5), so the job's grace ends early enough to put the job back in the queue first."""
    timeout = exit_timeout if exit_timeout > 0 else DEFAULT_EXIT_TIMEOUT
    return max(MIN_GRACE, timeout - GRACE_MARGIN)


class StopHandler:
    """Installs the stop-signal handlers for one run and restores the previous ones after.

    A stop signal is remembered and forwarded to the running job's process group; SIGALRM,
    armed for the grace period, escalates to SIGKILL. The main loop blocks in waitpid (which
    Python resumes after a handler runs), so nothing polls while a job runs."""

    def __init__(self, grace: float, clock: Callable[[], float]) -> None:
        self.grace = grace
        self.clock = clock
        self.signum: int | None = None
        self.deadline = 0.0
        self.job: Job | None = None
        self.signalled: Job | None = None
        """The job a stop was forwarded to while its leader was alive."""
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopHandler:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_stop)
        self._previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._on_alarm)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in self._previous.items():
            # None: the old handler was not installed from Python; the default is the best guess
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)

    def stopping(self) -> bool:
        """A stop signal arrived: claim nothing more. (A method, not a property: the answer
        changes under the caller's feet, whenever a signal arrives.)"""
        return self.signum is not None

    def started(self, job: Job) -> None:
        """Track the job; a stop that arrived while it was being spawned reaches it now."""
        self.job = job
        if self.signum is not None:
            self._forward(self.signum)

    def finished(self) -> None:
        """The job's leader was reaped: signals no longer go to its group."""
        self.job = None

    def stopped(self, job: Job, code: int) -> bool:
        """Whether `job`, which exited with `code`, was ended by a stop: it failed (exit 0
        is a success whenever the stop came) and the stop reached it before it exited. A job
        that failed on its own just before a stop is an ordinary failure."""
        return code != 0 and self.signalled is job

    def end_group(self, job: Job) -> None:
        """After the job's leader exited: SIGTERM to what it left in its process group, up to
        LEFTOVER_GRACE seconds (or what is left of a stop's grace) to exit, then SIGKILL.
        Called before the claim is settled: a leftover holds the claim's lock and would
        otherwise work beside a retry of the same job."""
        if not job.group_alive():
            return
        job.signal_group(signal.SIGTERM)
        deadline = self.clock() + min(LEFTOVER_GRACE, self.grace)
        while job.group_alive():
            limit = min(deadline, self.deadline) if self.stopping() else deadline
            if self.clock() >= limit:
                # Not waited for: SIGKILL cannot be refused, and an orphan's zombie (which a
                # group probe still sees until its new parent reaps it) holds no lock.
                job.signal_group(signal.SIGKILL)
                return
            time.sleep(0.02)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        self.signum = signum
        if first:
            self.deadline = self.clock() + self.grace
        if self.job is not None:
            self._forward(signum)

    def _forward(self, signum: int) -> None:
        assert self.job is not None
        if self.job.leader_alive():
            self.signalled = self.job
        self.job.signal_group(signum)
        remaining = self.deadline - self.clock()
        if remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, remaining)
        else:
            self.job.signal_group(signal.SIGKILL)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self.job is not None:
            self.job.signal_group(signal.SIGKILL)
