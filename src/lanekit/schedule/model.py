"""The schedule vocabulary: launchd's calendar keys, the limits, the error type, and the
frozen records the rest of lanekit.schedule returns (but `lanekit schedule`'s Explanation and
Collision, which lanekit.schedule.explain and lanekit.schedule.collisions own)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lanekit.errors import UsageError

PLIST_KEYS = ("Month", "Day", "Weekday", "Hour", "Minute")

MAX_ENTRIES = 1000
"""The most StartCalendarInterval dicts lanekit writes into one plist. launchd's source sets no
limit, but it keeps every dict in memory and arms a calendar timer per dict; a 1,000-entry plist
is 154 KB, which Python's plistlib reads in 12 ms here (docs/benchmarks.md, "Calendar entries";
launchd's CoreFoundation parser is faster), so past it lanekit refuses: such a schedule is almost
always a mistake (`every = "2m"` is one key)."""
WARN_ENTRIES = 250
"""Past this many dicts lanekit warns (validate, schedule, apply) but writes the plist: an
office-hours schedule (`*/15 8-18 * * mon-fri`) is 220, a plist of 34 KB (2.6 ms in plistlib);
250 entries is 39 KB. More is legal and works, at the cost of a bigger plist launchd keeps
and re-arms timers for; a coarser step or a narrower range is usually what was meant."""

SEARCH_DAYS = 366 * 9
"""How far next_fires looks ahead: Day=29 Month=2 can be 8 years apart (2096 -> 2104)."""

DEFAULT_THROTTLE = 10
"""launchd's ThrottleInterval when the plist sets none (seconds, launchd.plist(5)): it never
starts a job again sooner than this after its last start."""

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")

# Longest month lengths, February with its leap day: a Month+Day pair outside these never fires.


class ScheduleError(UsageError):
    """A schedule that launchd cannot run as written. The message has no location prefix:
    config adds `lanes.toml: lanes.NAME.schedule[i]: `, the CLI adds the expression.
    """

    def __init__(
        self, message: str, hint: str = "", *, index: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message, hint)
        self.index = index
        """Which element of a schedule list failed (0-based), None for a single value."""
        self.field = field
        """Which lane key failed: "schedule" or "every" (None when both are to blame)."""


@dataclass(frozen=True, slots=True, order=True)
class CalendarEntry:
    """One StartCalendarInterval dict; None is launchd's wildcard (the key is omitted)."""

    month: int | None = None
    day: int | None = None
    weekday: int | None = None
    hour: int | None = None
    minute: int | None = None

    def to_plist(self) -> dict[str, int]:
        """The plist dict with wildcard keys omitted, e.g. {"Hour": 10, "Minute": 40}."""
        values = (self.month, self.day, self.weekday, self.hour, self.minute)
        return {k: v for k, v in zip(PLIST_KEYS, values, strict=True) if v is not None}

    def sort_key(self) -> tuple[int, ...]:
        """Total order with wildcards first (None does not compare with int)."""
        values = (self.month, self.day, self.weekday, self.hour, self.minute)
        return tuple(-1 if v is None else v for v in values)

    def to_table_text(self) -> str:
        """The entry as a lanes.toml inline table, e.g. `{Hour=3}`."""
        return "{" + ", ".join(f"{k}={v}" for k, v in self.to_plist().items()) + "}"


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a lane fires: calendar entries (StartCalendarInterval), an interval, or neither.

    A lane with neither runs only when kicked (or at load with run_at_load).
    """

    calendar: tuple[CalendarEntry, ...] = ()
    interval: int | None = None
    """StartInterval in seconds."""
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """What the text said that launchd will do differently (day_and_warning), each message
    starting with the expression it is about; no part of what launchd runs."""

    @property
    def is_empty(self) -> bool:
        """True when the lane only runs on demand."""
        return not self.calendar and self.interval is None


_MAX_DAY = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def can_occur(month: int | None, day: int | None, weekday: int | None) -> bool:
    """Whether an entry's month and day meet in some year (Feb 29 does, Apr 31 never). With a
    weekday the entry also matches on that weekday, so it always can."""
    return month is None or day is None or weekday is not None or day <= _MAX_DAY[month - 1]
