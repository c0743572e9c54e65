"""The watchdog's dead man's switch, as facts: how long since its last completed pass.

A pass records when it completed in the watchdog's memory (lanekit.watch.memory); more than
OVERDUE_PASSES periods ago (or never, since it was installed) is a silence. doctor's
`watch.not-running` (lanekit.doctor.checks.watch) explains it with launchd's facts; `lanekit status`
shows it on the watchdog's row. Kept free of the check registry so `status` stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lanekit.config import LaneSpec
from lanekit.config.watch import memory_path
from lanekit.errors import LanekitError
from lanekit.schedule import format_duration

OVERDUE_PASSES = 3
"""Passes in a row that may be missed before the watchdog itself is reported."""


def last_completed_pass(lane: LaneSpec) -> float | None:
    """Epoch seconds of the watchdog's last completed pass; None when it has none (or its
    memory cannot be read, which a pass would report by failing)."""
    from lanekit.watch.memory import load

    try:
        return load(memory_path(lane.queue.dir)).completed_at
    except (LanekitError, OSError):
        return None


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
    last = last_completed_pass(lane)
    reference = max((t for t in (last, installed_at) if t is not None), default=None)
    if reference is None:
        return None
    quiet = now.timestamp() - reference
    limit = OVERDUE_PASSES * every
    if quiet <= limit:
        return None
    return Silence(last, quiet, limit)
