"""Schedules: cron text and launchd tables -> StartCalendarInterval entries (launchd semantics).

Pure functions only: parsing, next fire times, plain-English descriptions, collisions.

Semantics are launchd's (shared/launchd-semantics.md section 3): local wall time, a missing key
is a wildcard, Weekday 0 and 7 are Sunday, and Day plus Weekday in one dict means "either
matches". Cron follows POSIX crontab: day-of-month and day-of-week restrict with "either
matches" when neither is written exactly `*`, which is exactly what one launchd dict with Day
and Weekday means. Vixie/Debian cron differ when one of the two starts with `*` (`*/7`): they
then require both to match, which launchd cannot express; day_and_warning() says so.

Weekday is one field of 0-7 where both 0 and 7 are Sunday: a range may end on Sunday as 0 or
`sun` (`fri-sun`, `5-0`), `sun-sun`, `0-0`, `7-7` and `sun-0` are Sunday alone, and `N/S` is
`N-7/S` (so `1/3` is Monday, Thursday and Sunday, as `1-7/3` is). `*` and `*/S` span 0-6,
which selects the same days without counting Sunday twice.

The package: `model` (the vocabulary and records), `durations`, `cron` and `tables` (the two
ways to write a calendar entry), `build` (a lane's schedule from lanes.toml values), `fires`
(when entries fire, and when two lanes collide), `describe` (plain English) and `explain` (the
`lanekit schedule` command's core, loaded on first use: see _LAZY). Import from
`lanekit.schedule`.
"""

from __future__ import annotations

from lanekit.schedule.build import (
    build_schedule,
    schedule_entry_errors,
)
from lanekit.schedule.cron import (
    day_and_warning,
    parse_cron,
)
from lanekit.schedule.describe import (
    describe,
    describe_schedule,
)
from lanekit.schedule.durations import (
    format_duration,
    parse_duration,
)
from lanekit.schedule.fires import (
    ScheduledLane,
    find_collisions,
    fires_at,
    next_fires,
    previous_fire,
    schedule_next_fires,
)
from lanekit.schedule.model import (
    DEFAULT_THROTTLE,
    MAX_ENTRIES,
    MONTH_NAMES,
    PLIST_KEYS,
    SEARCH_DAYS,
    WEEKDAY_NAMES,
    CalendarEntry,
    Collision,
    Schedule,
    ScheduleError,
)
from lanekit.schedule.tables import (
    parse_table,
    parse_table_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.schedule.explain import Explanation, explain, parse_after

_LAZY = ("Explanation", "explain", "parse_after")
"""What lanekit.schedule.explain re-exports: only `lanekit schedule` uses it, so it is imported
when one of these is asked for (PEP 562), not by everything that reads a schedule (config,
`lanekit status`: benchmark (i))."""


if not TYPE_CHECKING:  # hidden from mypy, which sees the imports above: a typo stays an error

    def __getattr__(name: str) -> object:
        """A re-exported name of lanekit.schedule.explain, on first use; cached here."""
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        module = import_module("lanekit.schedule.explain")
        # All of them at once: importing the submodule binds `explain` here to the module,
        # and the function of that name is what lanekit.schedule exports.
        globals().update({lazy: getattr(module, lazy) for lazy in _LAZY})
        return globals()[name]


__all__ = [
    "DEFAULT_THROTTLE",
    "MAX_ENTRIES",
    "MONTH_NAMES",
    "PLIST_KEYS",
    "SEARCH_DAYS",
    "WEEKDAY_NAMES",
    "CalendarEntry",
    "Collision",
    "Explanation",
    "Schedule",
    "ScheduleError",
    "ScheduledLane",
    "build_schedule",
    "day_and_warning",
    "describe",
    "describe_schedule",
    "explain",
    "find_collisions",
    "fires_at",
    "format_duration",
    "next_fires",
    "parse_after",
    "parse_cron",
    "parse_duration",
    "parse_table",
    "parse_table_text",
    "previous_fire",
    "schedule_entry_errors",
    "schedule_next_fires",
]
