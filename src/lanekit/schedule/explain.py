"""The core of `lanekit schedule EXPR...`: parse each expression, describe it, list its next
fires. Only that command imports it (lanekit.schedule loads it on first use), so reading
lanes.toml creates neither Explanation nor the `every=` pattern (benchmark (i))."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lanekit.errors import UsageError
from lanekit.schedule.build import build_schedule
from lanekit.schedule.collisions import Collision, ScheduledLane, collisions_with
from lanekit.schedule.describe import describe_schedule
from lanekit.schedule.fires import local_naive, schedule_next_fires
from lanekit.schedule.model import Schedule, ScheduleError
from lanekit.schedule.tables import parse_table_text


@dataclass(frozen=True, slots=True)
class Explanation:
    """What `lanekit schedule` shows: the schedule, its description and its next fires."""

    schedule: Schedule
    description: str
    after: datetime
    next: tuple[datetime, ...]
    warnings: tuple[str, ...] = ()
    """The schedule's warnings (Schedule.warnings)."""
    collisions: tuple[Collision, ...] | None = None
    """With lanes to compare with (`--config`, `--lane`): where the schedule can start in the
    same minute as one of them (collisions_with); None when none were given."""


def parse_after(text: str | None) -> datetime:
    """`--after`: ISO 8601; without an offset it is local wall time, with one it is converted to
    local wall time. None is now. Seconds are kept, microseconds dropped.
    """
    if text is None:
        return datetime.now().replace(microsecond=0)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f'--after "{text}" is not an ISO 8601 time',
            "write e.g. 2026-12-01T10:40 or 2026-12-01T10:40:00+01:00",
        ) from None
    return local_naive(moment).replace(microsecond=0)


_EVERY_RE = re.compile(r"\s*every\s*=\s*(.*?)\s*", re.IGNORECASE | re.DOTALL)


def explain(
    exprs: Sequence[str],
    *,
    n: int = 5,
    after: str | None = None,
    lanes: Sequence[ScheduledLane] | None = None,
    lane: str | None = None,
) -> Explanation:
    """`lanekit schedule EXPR...`: each EXPR is cron text, a table (`Hour=10,Minute=40` or
    `{Hour=10, Minute=40}`) or `every=15m`. Errors name the expression they come from. With
    `lanes` (a lanes.toml's), its collisions with them (as lane `lane`'s schedule, when given).
    """
    start = parse_after(after)
    values: list[object] = []
    sources: list[str] = []
    every: str | None = None
    for expr in exprs:
        interval = _EVERY_RE.fullmatch(expr)
        if interval is not None:
            if every is not None:
                raise ScheduleError("every= is given twice", "give one interval")
            every = interval.group(1)
            continue
        try:
            values.append(parse_table_text(expr) if "=" in expr else expr)
        except ScheduleError as exc:
            raise ScheduleError(f'"{expr}": {exc.message}', exc.hint) from None
        sources.append(expr)
    try:
        schedule = build_schedule(values or None, every)
    except ScheduleError as exc:
        if exc.field == "every":
            raise ScheduleError(f'"every={every}": {exc.message}', exc.hint) from None
        if exc.index is not None:
            raise ScheduleError(f'"{sources[exc.index]}": {exc.message}', exc.hint) from None
        raise
    return Explanation(
        schedule=schedule,
        description=describe_schedule(schedule),
        after=start,
        next=tuple(schedule_next_fires(schedule, start, n)),
        warnings=schedule.warnings,
        collisions=None
        if lanes is None
        else tuple(collisions_with(schedule, lanes, lane=lane, after=start)),
    )
