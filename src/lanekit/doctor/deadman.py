"""The watchdog's dead man's switch, as facts: how long since its last completed pass.

Every completed pass ends with a `finish` line in the watchdog lane's own log (the lane log,
lanekit.run.lanelog, like every lane's run); none within OVERDUE_PASSES periods (or none since
it was installed) is a silence. doctor's `watch.not-running` (lanekit.doctor.checks.watch)
explains it with launchd's facts; `lanekit status` shows it on the watchdog's row. Read from
the log, not the watchdog's memory: the switch must not need the code it watches, and the
healthy case reads only the log's last periods (a seek, lanekit.run.lanelog.read_between).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from lanekit.config import LaneSpec
from lanekit.schedule import format_duration

OVERDUE_PASSES = 3
"""Passes in a row that may be missed before the watchdog itself is reported."""


def last_completed_pass(lane: LaneSpec, since: float | None = None) -> float | None:
    """Epoch seconds of the watchdog's last completed pass (its last `finish` in its lane
    log, rotated files included), looking no further back than `since` when given; None when
    there is none."""
    from lanekit.run.lanelog import EventName, read_between, read_events
    from lanekit.timeline.events import parse_ts

    events: Iterable[dict[str, str]] = (
        read_events(lane.log_path, rotated=True)
        if since is None
        else read_between(lane.log_path, since)
    )
    last = None
    for event in events:
        if event.get("event") == EventName.FINISH:
            last = event.get("ts", last)
    when = None if last is None else parse_ts(last)
    return None if when is None else when.timestamp()


@dataclass(frozen=True, slots=True)
class Silence:
    """How long the watchdog has been quiet, and since what."""

    last_pass: float | None
    """Epoch seconds of the last completed pass; None: never completed one."""
    quiet_for: float
    """Seconds since the last pass (or since it was installed)."""
    limit: int
    """OVERDUE_PASSES × every, in seconds."""

    def sentence(self) -> str:
        """`the watchdog has not completed a pass for 2h (since 2026-12-01 10:40; 3 × every
        = 15m)`."""
        since = (
            f"since {datetime.fromtimestamp(self.last_pass):%Y-%m-%d %H:%M}"
            if self.last_pass is not None
            else "ever since it was installed"
        )
        return (
            f"the watchdog has not completed a pass for {format_duration(self.quiet_for)} "
            f"({since}; {OVERDUE_PASSES} × every = {format_duration(self.limit)})"
        )


def watchdog_silence(lane: LaneSpec, now: datetime, installed_at: float | None) -> Silence | None:
    """The watchdog's silence when it is overdue, None while it keeps up (or is not
    installed: then nothing should be running yet)."""
    every = lane.schedule.interval
    if every is None:
        return None
    limit = OVERDUE_PASSES * every
    if last_completed_pass(lane, since=now.timestamp() - limit) is not None:
        return None  # the common case: a pass within the limit, found reading only its tail
    last = last_completed_pass(lane)
    reference = max((t for t in (last, installed_at) if t is not None), default=None)
    if reference is None:
        return None
    quiet = now.timestamp() - reference
    if quiet <= limit:
        return None
    return Silence(last, quiet, limit)
