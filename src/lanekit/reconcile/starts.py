"""What became of a start request (`lanekit kick`): started, postponed by launchd's
ThrottleInterval, or not started at all (launchd could not set the job up: exit 78).

`launchctl kickstart -p` prints no pid both when launchd postpones the start (a job is not
spawned more than once per ThrottleInterval, default 10 s: the start happens by itself when the
interval is over, state `spawn scheduled`) and when the spawn failed (`last exit code = 78:
EX_CONFIG`, the program never ran). The two are told apart from `print` before and after the
request (launchd-semantics.md sections 3 and 5).
"""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from lanekit.service.launchd import ServiceInfo

POSTPONED_STATES = frozenset({"spawn scheduled"})
"""The launchd state of a job whose start waits for its ThrottleInterval to pass."""
RUNNING_STATES = frozenset({"running", "spawning", "xpcproxy"})
DEFAULT_THROTTLE = 10


class StartOutcome(StrEnum):
    """How a start request ended."""

    STARTED = "started"
    ALREADY_RUNNING = "already-running"
    POSTPONED = "postponed"
    NOT_STARTED = "not-started"


def classify_start(
    pid: int | None, before: ServiceInfo | None, after: ServiceInfo | None
) -> StartOutcome:
    """The outcome from kickstart's pid and `print` before and after it (pure; a table test).

    A spawn that failed counts as a run (launchd counts the attempt) and leaves exit 78, which
    lanekit's runner never exits with; a run that already ended leaves another status.
    """
    if after is None:
        return StartOutcome.STARTED if pid is not None else StartOutcome.NOT_STARTED
    state = after.state or ""
    if state in POSTPONED_STATES:
        return StartOutcome.POSTPONED
    if state in RUNNING_STATES or after.pid is not None:
        return StartOutcome.STARTED
    runs_before = before.runs if before is not None and before.runs is not None else None
    spawned = runs_before is not None and after.runs is not None and after.runs > runs_before
    if spawned and after.last_exit_code == os.EX_CONFIG:
        return StartOutcome.NOT_STARTED
    if pid is not None or spawned:
        return StartOutcome.STARTED  # it ran, and was quick
    return StartOutcome.NOT_STARTED


def throttle_of(info: ServiceInfo | None) -> int:
    """The ThrottleInterval launchd applies (`minimum runtime`), default 10 s."""
    if info is not None and info.minimum_runtime is not None:
        return info.minimum_runtime
    return DEFAULT_THROTTLE


def postponed_for(throttle: int, last_start: float | None, now: float) -> int:
    """Seconds until a postponed start happens: the interval counts from the last spawn (the
    run's `start` in the lane log); the whole interval when that is unknown. At least 1."""
    if last_start is None:
        return max(throttle, 1)
    return max(1, math.ceil(throttle - max(now - last_start, 0.0)))


def last_start(log_path: Path, *, since: float) -> float | None:
    """Epoch time of the lane log's last `start` event at or after `since`, if any."""
    from lanekit.run.lanelog import EventName, read_events

    found: float | None = None
    for event in read_events(log_path, since=datetime.fromtimestamp(since, UTC)):
        if event.get("event") != EventName.START:
            continue
        try:
            when = datetime.strptime(event.get("ts", ""), "%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            continue
        found = when.replace(tzinfo=UTC).timestamp()
    return found
