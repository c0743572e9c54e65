"""`lanekit kick`: start a lane now, and say what launchd did with the start."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from lanekit.config import Config, select_lanes
from lanekit.errors import ExitCode, LaunchdError, NotStartedError, Refusal, ServiceError
from lanekit.reconcile.observe import check_state
from lanekit.reconcile.starts import (
    StartOutcome,
    classify_start,
    last_start,
    postponed_for,
    throttle_of,
)
from lanekit.service import manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.system.owned import check_private
from lanekit.system.quoting import cmdline


@dataclass(frozen=True, slots=True)
class KickResult:
    """A kicked lane: what became of the start, and the pid of its run (`kickstart -p`)."""

    lane: str
    label: str
    pid: int | None
    already_running: bool
    outcome: StartOutcome = StartOutcome.STARTED
    throttle: int | None = None
    """For a postponed start: launchd's ThrottleInterval in seconds."""
    starts_in: int | None = None
    """For a postponed start: about how many seconds until launchd starts it."""

    @property
    def exit_code(self) -> ExitCode:
        """4 (POSTPONED) for a start launchd postponed, else 0."""
        return ExitCode.POSTPONED if self.outcome is StartOutcome.POSTPONED else ExitCode.OK


def kick(
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    name: str,
    *,
    clock: Callable[[], float] = time.time,
) -> KickResult:
    """Start lane `name` now and return at once; a running lane keeps its current run.
    Refuses (UnsafeStateError) when the lane's plist, snapshot or lanekit's directories could
    have been written by someone else: the run would execute what they say.

    A start launchd postpones (ThrottleInterval) is reported with about when it happens; a
    start launchd could not carry out (exit 78: the program never ran) is a NotStartedError."""
    (lane,) = select_lanes(config, [name])
    check_state(paths)
    manager = manager_of(launchd, paths.launch_agents)
    check_private(manager.artifact_path(lane.label), "plist")
    check_private(paths.snapshot_for(lane.label), "lane snapshot")
    from lanekit.state.paths import is_paused

    if is_paused(paths, lane.label):
        raise LaunchdError(
            f"lane {name!r} is paused (`lanekit pause`): not started",
            cmdline("lanekit", "resume", name),
        )
    not_loaded = LaunchdError(
        f"lane {name!r} is not loaded ({manager.domain}/{lane.label})",
        "run `lanekit apply` to install and load it",
    )
    seen = manager.observe([lane.label])[lane.label]
    if not seen.loaded:
        raise not_loaded
    if seen.pid is not None:
        return KickResult(
            name, lane.label, seen.pid, already_running=True, outcome=StartOutcome.ALREADY_RUNNING
        )
    before = seen.definition
    asked = clock()
    try:
        pid = manager.kick(lane.label)
    except ServiceError as exc:
        if exc.reason is Refusal.NOT_LOADED:
            raise not_loaded from None
        raise
    seen_after = manager.observe([lane.label])[lane.label]
    after = seen_after.definition
    outcome = classify_start(pid, before, after)
    if after is None and seen_after.pid is None and seen_after.not_started:
        # A manager without launchd's `print` (systemd) says it in the observation: the run
        # it just started could not be set up (203/EXEC, 200/CHDIR).
        outcome = StartOutcome.NOT_STARTED
    if outcome is StartOutcome.NOT_STARTED:
        code = after.last_exit_code if after is not None else seen_after.exit_code
        # "exit 78 (EX_CONFIG: ...)": the words of every other exit status lanekit shows.
        why = (
            manager.describe_exit(code, lanekit_runner=False).replace("exit code", "exit", 1)
            if code is not None
            else "it gave no reason"
        )
        raise NotStartedError(
            f"lane {name!r}: {_who(manager)} could not start it: {why}; the program never ran",
            f"`{cmdline('lanekit', 'doctor', name)}` names the cause (a missing log or working"
            " directory, a bad interpreter); "
            f"`{_inspect(manager, lane.label)}` shows {_who(manager)}'s view",
        )
    if outcome is StartOutcome.POSTPONED:
        throttle = throttle_of(after)
        started = last_start(lane.log_path, since=asked - throttle - 60)
        return KickResult(
            name,
            lane.label,
            None,
            already_running=False,
            outcome=outcome,
            throttle=throttle,
            starts_in=postponed_for(throttle, started, clock()),
        )
    return KickResult(name, lane.label, pid, already_running=False, outcome=outcome)


def _who(manager: ServiceManager) -> str:
    """The manager in words: systemd, or launchd (the emulated domain emulates launchd)."""
    return "systemd" if manager.kind == "systemd" else "launchd"


def _inspect(manager: ServiceManager, label: str) -> str:
    """The manager's own command that shows the lane."""
    if manager.kind == "systemd":
        return cmdline("systemctl", "--user", "status", f"{label}.service")
    return cmdline("launchctl", "print", f"{manager.domain}/{label}")
