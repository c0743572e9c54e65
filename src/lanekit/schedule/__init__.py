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
`lanekit schedule` command's core), `collisions` (two lanes of one queue in the same
minute); the last two are loaded on first use (see _LAZY). Import from
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
    WARN_ENTRIES,
    WEEKDAY_NAMES,
    CalendarEntry,
    Schedule,
    ScheduleError,
)
from lanekit.schedule.tables import (
    parse_table,
    parse_table_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.schedule.collisions import (
        Collision,
        ScheduledLane,
        collisions_with,
        find_collisions,
    )
    from lanekit.schedule.explain import Explanation, explain, parse_after

_LAZY = {
    "lanekit.schedule.collisions": (
        "Collision",
        "ScheduledLane",
        "collisions_with",
        "find_collisions",
    ),
    "lanekit.schedule.explain": ("Explanation", "explain", "parse_after"),
}
"""Where each name re-exported on first use lives: only checking a whole lanes.toml asks for
collisions, only `lanekit schedule` explains, so neither is imported (PEP 562) by everything
that reads a schedule (config, `lanekit status`: benchmark (i))."""

_HOME = {name: module for module, names in _LAZY.items() for name in names}


if not TYPE_CHECKING:  # hidden from mypy, which sees the imports above: a typo stays an error

    def __getattr__(name: str) -> object:
        """A name re-exported from its module on first use; cached here."""
        home = _HOME.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        module = import_module(home)
        # All of the module's names at once: importing lanekit.schedule.explain binds
        # `explain` here to the submodule, and the function of that name is the export.
        globals().update({lazy: getattr(module, lazy) for lazy in _LAZY[home]})
        return globals()[name]


__all__ = [
    "DEFAULT_THROTTLE",
    "MAX_ENTRIES",
    "MONTH_NAMES",
    "PLIST_KEYS",
    "SEARCH_DAYS",
    "WARN_ENTRIES",
    "WEEKDAY_NAMES",
    "CalendarEntry",
    "Collision",
    "Explanation",
    "Schedule",
    "ScheduleError",
    "ScheduledLane",
    "build_schedule",
    "collisions_with",
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
