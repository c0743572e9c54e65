"""Booting lanes out safely: never a running lane unless forced, waiting within a deadline.

Shared by `apply` (a reload) and `remove`: the lane lock is taken before the bootout and held
until the label has left launchd (lanekit.reconcile's docstring explains why).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lanekit.errors import LaunchdError, Refusal, ServiceError
from lanekit.reconcile.observe import lock_path
from lanekit.run import lanelock
from lanekit.service.manager import ServiceManager
from lanekit.state.snapshot import RunSpec
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from lanekit.system.quoting import cmdline


@dataclass(frozen=True, slots=True)
class Timing:
    """Injectable time: tests pass a fake clock and sleep; apply polls at `poll` seconds."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll: float = 0.1
    start_grace: float = 5.0
    """How long a pid may linger while apply holds the lane lock: a run launched in that window
    cannot take the lock and exits at once; anything still alive after this is a real run."""


DRAIN_MARGIN = 5.0
"""Seconds beyond ExitTimeOut that apply waits for a booted-out label to leave launchd."""


def exit_timeout(specs: Sequence[RunSpec]) -> float:
    timeouts = [s.exit_timeout for s in specs if s.exit_timeout > 0]
    return float(max(timeouts, default=DEFAULT_EXIT_TIMEOUT))


@dataclass(frozen=True, slots=True)
class Waiting:
    """What `apply --wait` / `remove --wait|--force` is waiting for right now (a progress
    report; the CLI draws it as one line updating in place, on a terminal only)."""

    lane: str
    label: str
    pid: int | None
    """The run's pid, when launchd reports one (None: only the lane lock says it runs)."""
    elapsed: float
    """Seconds since this wait began."""
    what: str
    """`for its run to end`, or `for launchd to let it go` (after a bootout)."""


Progress = Callable[[Waiting], None]


@dataclass(frozen=True, slots=True)
class Stop:
    stopped: bool
    pid: int | None = None
    notes: tuple[str, ...] = ()


class Stopper:
    """Boots lanes out safely: never a running lane unless forced; waits within a deadline."""

    def __init__(
        self,
        manager: ServiceManager,
        timing: Timing,
        *,
        deadline: float | None,
        force: bool,
        progress: Progress | None = None,
    ) -> None:
        self.manager = manager
        self.timing = timing
        self.deadline = deadline
        self.force = force
        self.progress = progress
        self.lanes: dict[str, str] = {}
        """label -> lane name, for progress reports."""

    def _report(self, label: str, pid: int | None, started: float, what: str) -> None:
        if self.progress is not None:
            lane = self.lanes.get(label, label)
            elapsed = self.timing.clock() - started
            self.progress(Waiting(lane, label, pid, elapsed, what))

    def stop(
        self,
        label: str,
        specs: Sequence[RunSpec],
        *,
        running: bool,
        pid: int | None,
        lane: str | None = None,
    ) -> Stop:
        """Boot `label` out and wait until launchd has let go of it.

        Without force: only while holding the lane lock(s) and with no live pid, so a run
        launched meanwhile finds the lane busy and claims nothing. `running` (the plan saw the
        lane running, with `pid` when launchd reported one) skips at once unless there is a
        --wait budget.
        """
        timeout = exit_timeout(specs)
        if lane is not None:
            self.lanes[label] = lane
        if self.force:
            pid = self._pid(label)
            self._bootout(label, timeout)
            return Stop(True, pid, (f"--force stopped run pid {pid}",) if pid else ())
        if running and self.deadline is None:
            return Stop(False, pid)
        started = self.timing.clock()
        waited = running
        while True:
            locks = lanelock.LaneLocks(lock_path(spec) for spec in specs)
            try:
                if locks.acquire():
                    pid = self._settle(label, started)
                    if pid is None:
                        self._bootout(label, timeout)
                        took = self.timing.clock() - started
                        notes = (f"waited {took:.1f} s for the run to end",) if waited else ()
                        return Stop(True, notes=notes)
                else:
                    pid = self._pid(label)
            finally:
                locks.release()
            if self.deadline is None or self.timing.clock() >= self.deadline:
                return Stop(False, pid)
            waited = True
            self._report(label, pid, started, "for its run to end")
            self.timing.sleep(self.timing.poll)

    def bootstrap(self, label: str, plist: Path, exit_timeout: float) -> None:
        """Load the plist; while the previous instance still drains (BUSY), drain, retry once."""
        try:
            self.manager.load(plist)
        except ServiceError as exc:
            if exc.reason is not Refusal.BUSY:
                raise
            self._drain(label, exit_timeout)
            self.manager.load(plist)

    def _pid(self, label: str) -> int | None:
        return self.manager.loaded().get(label)

    def _settle(self, label: str, started: float) -> int | None:
        """With the lock held: wait (briefly) for a just-launched run to give up and exit."""
        limit = self.timing.clock() + self.timing.start_grace
        while True:
            pid = self._pid(label)
            if pid is None or self.timing.clock() >= limit:
                return pid
            self._report(label, pid, started, "for its run to end")
            self.timing.sleep(self.timing.poll)

    def _bootout(self, label: str, exit_timeout: float) -> None:
        if not self.manager.unload(label):  # on its way out: waited for by this loop's clock
            self._drain(label, exit_timeout)

    def _drain(self, label: str, exit_timeout: float) -> None:
        """Poll list() until `label` is gone, bounded by its ExitTimeOut plus a margin."""
        started = self.timing.clock()
        limit = started + exit_timeout + DRAIN_MARGIN
        while True:
            loaded = self.manager.loaded()
            if label not in loaded:
                return
            if self.timing.clock() >= limit:
                raise LaunchdError(
                    f"{label}: still loaded {exit_timeout + DRAIN_MARGIN:.0f} s after bootout",
                    f"check `{cmdline('launchctl', 'print', f'{self.manager.domain}/{label}')}`,"
                    " then rerun `lanekit apply`",
                )
            self._report(label, loaded[label], started, "for launchd to let it go (bootout)")
            self.timing.sleep(self.timing.poll)
