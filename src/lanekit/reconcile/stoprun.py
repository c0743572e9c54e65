"""`lanekit stop` / `lanekit restart`: end a lane's current run the way a bootout would
(SIGTERM, SIGKILL after its exit timeout: the run gives its job back to the queue and exits 75),
leaving the lane loaded; restart is that stop, then a kick."""

from __future__ import annotations

from dataclasses import dataclass

from lanekit.config import Config, select_lanes
from lanekit.errors import ExitCode, LaunchdError, Refusal, ServiceError
from lanekit.reconcile.kick import KickResult, kick
from lanekit.reconcile.observe import check_state
from lanekit.service import manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from lanekit.system.owned import check_private

STOP_MARGIN = 5.0
"""Seconds past the lane's exit timeout that `stop` waits for the run to be gone (SIGKILL is
sent at the exit timeout, and the kernel then needs a moment), as apply waits for a bootout."""
NEVER_KILLED_WAIT = 30.0
"""How long `stop` waits for a lane whose exit timeout is 0 (launchd never sends SIGKILL)."""


@dataclass(frozen=True, slots=True)
class StopResult:
    """A lane's run stopped (or found idle) by `lanekit stop`."""

    lane: str
    label: str
    pid: int | None
    """The run's process (None: the lane was not running; nothing was sent)."""
    ended: bool
    """The run ended within the wait."""
    killed: bool
    """It outlived its exit timeout and got SIGKILL (its job was still given back, by the
    next run's recovery)."""
    waited: float
    """The longest `stop` waited for it (the lane's exit timeout plus a margin, or --wait)."""

    @property
    def exit_code(self) -> ExitCode:
        """3 (PENDING) when the run has not ended yet, else 0."""
        return ExitCode.OK if self.ended else ExitCode.PENDING


@dataclass(frozen=True, slots=True)
class RestartResult:
    """`lanekit restart`: the stop, then the start."""

    stop: StopResult
    start: KickResult | None
    """None when the stop did not end the run in time (nothing was started)."""

    @property
    def exit_code(self) -> ExitCode:
        """The stop's when it did not end the run, else the start's (4: postponed)."""
        if self.start is None:
            return self.stop.exit_code
        return self.start.exit_code


def stop(
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    name: str,
    *,
    wait: float | None = None,
) -> StopResult:
    """Stop lane `name`'s current run as a bootout would, without unloading the lane: SIGTERM
    (the run forwards it to its job, puts the job back in its queue unspent and exits 75),
    SIGKILL after the lane's exit timeout; wait for it to end (up to `wait` seconds, default
    the exit timeout plus a margin). A lane that is not running is left alone."""
    (lane,) = select_lanes(config, [name])
    check_state(paths)
    manager = manager_of(launchd, paths.launch_agents)
    check_private(manager.artifact_path(lane.label), "plist")
    timeout = DEFAULT_EXIT_TIMEOUT if lane.exit_timeout is None else lane.exit_timeout
    kill_after = float(timeout) if timeout > 0 else None
    if wait is None:
        wait = NEVER_KILLED_WAIT if kill_after is None else kill_after + STOP_MARGIN
    try:
        stopped = manager.stop(lane.label, kill_after=kill_after, grace=wait)
    except ServiceError as exc:
        if exc.reason is Refusal.NOT_LOADED:
            raise LaunchdError(
                f"lane {name!r} is not loaded ({manager.domain}/{lane.label}): no run to stop",
                "run `lanekit apply` to install and load it",
            ) from None
        raise
    return StopResult(
        lane=name,
        label=lane.label,
        pid=stopped.pid,
        ended=stopped.ended,
        killed=stopped.killed,
        waited=wait,
    )


def restart(
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    name: str,
    *,
    wait: float | None = None,
) -> RestartResult:
    """`stop`, then `kick` once the run has ended (a paused lane is stopped, then refused as
    kick refuses it). launchd applies ThrottleInterval to the new start as to any: it may be
    postponed (exit 4, with about when it runs)."""
    stopped = stop(config, paths, launchd, name, wait=wait)
    if not stopped.ended:
        return RestartResult(stopped, None)
    return RestartResult(stopped, kick(config, paths, launchd, name))
