"""`lanekit status`: what each lane is doing, computed from launchd's facts and the queue.

The state is a closed vocabulary computed by a pure function (`lane_state`) so it can be tested
as a table; everything that asks the service manager or the disk lives in `status()`, which
makes ONE observation of the manager for all lanes (lanekit.service.manager).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.config import Config, LaneSpec, is_watchdog, select_lanes
from lanekit.errors import ExitCode, LanekitError
from lanekit.service import manager_of
from lanekit.state.paths import Paths, paused_labels

if TYPE_CHECKING:
    from lanekit.queue.counts import HostLeases
    from lanekit.service.launchd import Launchd
    from lanekit.service.manager import LaneObservation, ServiceManager


class LaneState(StrEnum):
    """What a lane is doing right now."""

    RUNNING = "running"
    """Loaded and a process is alive."""
    SCHEDULED = "scheduled"
    """Loaded, idle, last run fine, and a calendar or interval will start it."""
    IDLE = "idle"
    """Loaded, idle, last run fine, no schedule: runs only when kicked."""
    ERROR = "error"
    """Loaded and idle, but the last run ended with a non-zero status or a signal."""
    STOPPED = "stopped"
    """Loaded and idle; the last run was stopped before it ended and put its jobs back (exit
    75: `lanekit stop`, a reload, a logout): nothing failed, the next fire runs them."""
    NOT_LOADED = "not-loaded"
    """launchd does not know the lane (run `lanekit apply`)."""
    DISABLED = "disabled"
    """launchd's disabled override is set: the lane cannot be bootstrapped or is paused."""


@dataclass(frozen=True, slots=True)
class LaneFacts:
    """The observations `lane_state` needs, and nothing else."""

    loaded: bool
    disabled: bool = False
    pid: int | None = None
    last_exit: int | None = None
    """launchctl list convention: exit code, or minus the signal number; None = never exited."""
    has_schedule: bool = False


def lane_state(facts: LaneFacts) -> LaneState:
    """The lane's state; the order of the checks is the precedence (a table test pins it)."""
    if not facts.loaded:
        return LaneState.DISABLED if facts.disabled else LaneState.NOT_LOADED
    if facts.pid is not None:
        return LaneState.RUNNING
    if facts.disabled:
        return LaneState.DISABLED
    if facts.last_exit == ExitCode.INTERRUPTED:
        return LaneState.STOPPED
    if facts.last_exit not in (None, 0):
        return LaneState.ERROR
    return LaneState.SCHEDULED if facts.has_schedule else LaneState.IDLE


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """Queue counts for `status`; all None when the queue could not be read (see `error`)."""

    queued: int | None = None
    delayed: int | None = None
    claimed: int | None = None
    done: int | None = None
    failed: int | None = None
    oldest_claim_age: float | None = None
    """Seconds since the oldest current claim was taken; None when nothing is claimed."""
    error: str | None = None
    leases: tuple[HostLeases, ...] | None = None
    """A server queue's leases by host (QueueCounts.leases); None for a directory queue."""


@dataclass(frozen=True, slots=True)
class LaneStatus:
    """One row of `lanekit status`."""

    lane: str
    label: str
    state: LaneState
    pid: int | None
    last_exit: int | None
    last_exit_text: str
    runs: int | None
    schedule: str
    next_fire: datetime | None
    """The next calendar fire (naive local time). None when nothing will start the lane (not
    loaded, no schedule) or when the time is not knowable: a StartInterval timer runs from
    the moment launchd loaded the job, which launchd does not report (see `interval`)."""
    queue: QueueSummary
    interval: int | None = None
    """StartInterval seconds when the lane is loaded with one: it fires within this long."""
    paused: bool = False
    """`lanekit pause` holds the lane: no run claims a job until `lanekit resume`."""
    project: Path | None = None
    """The lanes.toml the lane comes from."""
    watchdog: str | None = None
    """For the watchdog lane (`[watch]`) when no pass completed for 3 × every: that, and why
    as far as launchd says (lanekit.doctor.deadman); None otherwise."""


def status(
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    lanes: Sequence[str] | None = None,
    *,
    now: datetime | None = None,
) -> list[LaneStatus]:
    """Status of every lane in lanes.toml (or the named ones), in lanes.toml order."""
    return status_of(select_lanes(config, lanes or ()), paths, launchd, now=now)


def status_of(
    selected: Sequence[LaneSpec],
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    now: datetime | None = None,
) -> list[LaneStatus]:
    """Status of these lanes (of one project or several: lanekit.config.projects), in order."""
    now = datetime.now() if now is None else now
    manager = manager_of(launchd, paths.launch_agents)
    seen = manager.observe(lane.label for lane in selected)
    paused = paused_labels(paths, [lane.label for lane in selected])
    queues: dict[Path, QueueSummary] = {}
    for lane in selected:  # lanes sharing a queue share one count of it
        if lane.queue.dir not in queues:
            queues[lane.queue.dir] = _queue_summary(lane)
    rows = [
        _paused(
            replace(
                _lane_status(lane, seen[lane.label], manager, now, queue=queues[lane.queue.dir]),
                project=lane.project,
            ),
            lane.label in paused,
        )
        for lane in selected
    ]
    return [
        _watchdog_overdue(row, lane, manager, now) for row, lane in zip(rows, selected, strict=True)
    ]


def _paused(row: LaneStatus, paused: bool) -> LaneStatus:
    """The row of a lane `lanekit pause` holds: it is disabled in launchd, so nothing fires
    it (no next fire, no interval), whatever its schedule says."""
    if not paused:
        return row
    return replace(row, paused=True, next_fire=None, interval=None)


def _watchdog_overdue(
    row: LaneStatus, lane: LaneSpec, manager: ServiceManager, now: datetime
) -> LaneStatus:
    """The row with its dead man's switch line, when `lane` is an overdue watchdog."""
    if not is_watchdog(lane):
        return row
    from lanekit.doctor.deadman import watchdog_silence

    try:
        installed_at = manager.artifact_path(lane.label).stat().st_mtime
    except OSError:
        return row
    silence = watchdog_silence(lane, now, installed_at)
    if silence is None:
        return row
    why = {
        LaneState.NOT_LOADED: "it is not loaded in launchd (`lanekit apply` loads it)",
        LaneState.DISABLED: "it is disabled in launchd",
        LaneState.ERROR: f"its last run ended with {row.last_exit_text}",
        LaneState.RUNNING: f"a pass is running (pid {row.pid}) and has not finished",
    }.get(row.state, "launchd has it loaded and nothing says it failed (the Mac asleep or off?)")
    return replace(row, watchdog=f"{silence.sentence()}: {why}; `lanekit doctor watch` explains")


def _lane_status(
    lane: LaneSpec,
    seen: LaneObservation,
    manager: ServiceManager,
    now: datetime,
    *,
    queue: QueueSummary,
) -> LaneStatus:
    from lanekit.schedule import describe_schedule, schedule_next_fires

    facts = LaneFacts(
        loaded=seen.loaded,
        disabled=seen.disabled,
        pid=seen.pid,
        last_exit=seen.last_exit,
        has_schedule=not lane.schedule.is_empty,
    )
    knowable = seen.loaded and lane.schedule.interval is None
    fires = schedule_next_fires(lane.schedule, now, 1) if knowable else []
    if seen.loaded and seen.next_fire is not None:
        # The manager's own answer (systemd's timer) is what will happen, interval or not.
        fires = [seen.next_fire.astimezone().replace(tzinfo=None)]
    return LaneStatus(
        lane=lane.name,
        label=lane.label,
        state=lane_state(facts),
        pid=seen.pid,
        last_exit=seen.last_exit,
        last_exit_text=manager.describe_exit(seen.last_exit),
        runs=seen.runs,
        schedule=describe_schedule(lane.schedule),
        next_fire=fires[0] if fires else None,
        queue=queue,
        interval=lane.schedule.interval if seen.loaded else None,
    )


def _queue_summary(lane: LaneSpec) -> QueueSummary:
    from lanekit.queue import open_queue

    queue = open_queue(lane.queue.dir, durable=lane.queue.durable)
    missing = queue.missing()
    if missing is not None:
        return QueueSummary(error=missing)
    try:
        counts = queue.counts()
    except (LanekitError, OSError) as exc:
        message = exc.message if isinstance(exc, LanekitError) else f"{queue.where}: {exc}"
        return QueueSummary(error=message)
    return QueueSummary(
        queued=counts.queued,
        delayed=counts.delayed,
        claimed=counts.claimed,
        done=counts.done,
        failed=counts.failed,
        oldest_claim_age=counts.oldest_claim_age,
        leases=counts.leases,
    )
