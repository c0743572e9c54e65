"""When two lanes that drain one queue can be started by launchd in the same minute: an exact,
field-by-field test of their calendar entries, and the first such minute as an example
(lanekit.schedule.fires). Only checking a whole lanes.toml asks (validate, apply, doctor),
so lanekit.schedule imports this on first use and `lanekit status` creates neither Collision
nor these Protocols (benchmark (i))."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from lanekit.schedule.fires import first_common_fire, local_naive
from lanekit.schedule.model import CalendarEntry, Schedule, can_occur


@dataclass(frozen=True, slots=True)
class Collision:
    """Two lanes that drain one queue and can be started by launchd in the same minute."""

    queue: str
    lanes: tuple[str, str]
    example: datetime | None
    """The first minute both fire (naive local wall time), None if none within SEARCH_DAYS."""
    description: str

    def __str__(self) -> str:
        return self.description


def _alternatives(entry: CalendarEntry) -> list[tuple[int | None, int | None]]:
    """The day condition as (day, weekday) atoms ORed together; (None, None) is any day."""
    if entry.day is not None and entry.weekday is not None:
        return [(entry.day, None), (None, entry.weekday)]
    return [(entry.day, entry.weekday)]


def _same_minute(a: CalendarEntry, b: CalendarEntry) -> bool:
    """True when some real minute matches both entries (exact, field by field)."""
    for x, y in ((a.hour, b.hour), (a.minute, b.minute), (a.month, b.month)):
        if x is not None and y is not None and x != y:
            return False
    month = a.month if a.month is not None else b.month
    for day_a, weekday_a in _alternatives(a):
        for day_b, weekday_b in _alternatives(b):
            if day_a is not None and day_b is not None and day_a != day_b:
                continue
            if weekday_a is not None and weekday_b is not None and weekday_a != weekday_b:
                continue
            day = day_a if day_a is not None else day_b
            # Any month/day pair that exists falls on every weekday in some year.
            if can_occur(month, day, None):
                return True
    return False


class _NamedQueue(Protocol):
    @property
    def name(self) -> str:
        """The queue's name in lanes.toml."""
        ...


class ScheduledLane(Protocol):
    """What find_collisions reads of a lane (lanekit.config.LaneSpec is one): this module is
    a model below config and never imports it."""

    @property
    def name(self) -> str:
        """The lane's name in lanes.toml."""
        ...

    @property
    def queue(self) -> _NamedQueue:
        """The queue the lane drains."""
        ...

    @property
    def schedule(self) -> Schedule:
        """When launchd starts the lane."""
        ...


def find_collisions(
    lanes: Sequence[ScheduledLane], *, after: datetime | None = None
) -> list[Collision]:
    """Pairs of lanes that drain the same queue and whose calendars fire in a common minute.

    The overlap test is exact and analytic (entry pairs compared field by field, with the
    Day/Weekday "either matches" rule); the example is the first common minute after `after`
    (default: now). StartInterval lanes are not compared: their phase depends on when launchd
    loaded them, which lanes.toml does not say.
    """
    start = (local_naive(after) if after is not None else datetime.now()).replace(
        second=0, microsecond=0
    ) + timedelta(minutes=1)
    by_queue: dict[str, list[ScheduledLane]] = {}
    for lane in lanes:
        if lane.schedule.calendar:
            by_queue.setdefault(lane.queue.name, []).append(lane)
    found: list[Collision] = []
    for queue in sorted(by_queue):
        group = sorted(by_queue[queue], key=lambda lane: lane.name)
        for first, second in itertools.combinations(group, 2):
            if not any(
                _same_minute(x, y)
                for x in first.schedule.calendar
                for y in second.schedule.calendar
            ):
                continue
            example = first_common_fire(first.schedule.calendar, second.schedule.calendar, start)
            when = f", next at {example:%Y-%m-%d %H:%M}" if example is not None else ""
            found.append(
                Collision(
                    queue=queue,
                    lanes=(first.name, second.name),
                    example=example,
                    description=(
                        f'lanes "{first.name}" and "{second.name}" both drain queue "{queue}" '
                        f"and can start in the same minute{when}"
                    ),
                )
            )
    return found


def collisions_with(
    schedule: Schedule,
    lanes: Sequence[ScheduledLane],
    *,
    lane: str | None = None,
    after: datetime | None = None,
) -> list[Collision]:
    """Where `schedule` (given to `lanekit schedule`) can start in the same minute as a lane of
    `lanes`, each with the first such minute after `after` (default: now): with `lane`, the
    schedule is taken as that lane's, so only the other lanes of its queue count (lane itself is
    replaced); without, every lane with a calendar counts, as if it shared the lane's queue.
    The test is find_collisions' (exact, field by field); StartInterval is never compared."""
    start = (local_naive(after) if after is not None else datetime.now()).replace(
        second=0, microsecond=0
    ) + timedelta(minutes=1)
    queue = next((other.queue.name for other in lanes if other.name == lane), None)
    found: list[Collision] = []
    for other in sorted(lanes, key=lambda item: item.name):
        if other.name == lane or not other.schedule.calendar:
            continue
        if queue is not None and other.queue.name != queue:
            continue
        if not any(_same_minute(x, y) for x in schedule.calendar for y in other.schedule.calendar):
            continue
        example = first_common_fire(schedule.calendar, other.schedule.calendar, start)
        when = f", next at {example:%Y-%m-%d %H:%M}" if example is not None else ""
        if lane is None:
            what = (
                f'this schedule and lane "{other.name}" (which drains queue '
                f'"{other.queue.name}") can start in the same minute{when}'
            )
        else:
            what = (
                f'lane "{lane}" with this schedule and lane "{other.name}" both drain queue '
                f'"{other.queue.name}" and can start in the same minute{when}'
            )
        found.append(Collision(other.queue.name, (lane or "", other.name), example, what))
    return found
