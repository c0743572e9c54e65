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
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Protocol

from lanekit.errors import UsageError

PLIST_KEYS = ("Month", "Day", "Weekday", "Hour", "Minute")

MAX_ENTRIES = 100
"""launchd keeps every dict in memory and re-arms a timer per dict; a cron that expands past this
is almost always a mistake (`*/2 * * * *` is 30 dicts; `every = "2m"` is one key)."""

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
_MAX_DAY = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_CRON_SYNTAX = "use numbers, *, lists (1,15), ranges (1-5) and steps (*/15 or 10-40/5)"
_DURATION_HINT = "write a number with a unit: 90s, 15m, 1h, 2d, or combined like 1h30m"
_KEYS_TEXT = ", ".join(PLIST_KEYS)


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


@dataclass(frozen=True, slots=True)
class Explanation:
    """What `lanekit schedule` shows: the schedule, its description and its next fires."""

    schedule: Schedule
    description: str
    after: datetime
    next: tuple[datetime, ...]
    warnings: tuple[str, ...] = ()
    """The schedule's warnings (Schedule.warnings)."""


# --------------------------------------------------------------------------- durations

_DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", re.ASCII)
_UNIT_SECONDS = (86400, 3600, 60, 1)


def parse_duration(text: str | int) -> int:
    """Seconds from "90s", "15m", "1h", "2d", "1h30m" (units in that order), or a bare integer
    (int or digit string) meaning seconds. Zero, negative and anything else are errors.
    """
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise ScheduleError(f"duration {text!r} is not valid", _DURATION_HINT)
    if isinstance(text, int):
        if text <= 0:
            raise ScheduleError(f"duration {text} must be more than zero", _DURATION_HINT)
        return text
    cleaned = text.strip().lower()
    if cleaned.isascii() and cleaned.isdigit():
        seconds = int(cleaned)
    else:
        match = _DURATION_RE.fullmatch(cleaned)
        if not cleaned or match is None:
            raise ScheduleError(f'duration "{text}" is not valid', _DURATION_HINT)
        seconds = sum(
            int(group) * unit
            for group, unit in zip(match.groups(), _UNIT_SECONDS, strict=True)
            if group is not None
        )
    if seconds <= 0:
        raise ScheduleError(f'duration "{text}" must be more than zero', _DURATION_HINT)
    return seconds


def format_duration(seconds: float) -> str:
    """The inverse of parse_duration for whole seconds: 1800 -> "30m", 5400 -> "1h30m",
    90 -> "1m30s"; fractions are rounded (0.5 s and less reads "0s")."""
    left = round(seconds)
    parts = []
    for unit, name in zip(_UNIT_SECONDS, "dhms", strict=True):
        if left >= unit:
            parts.append(f"{left // unit}{name}")
            left %= unit
    return "".join(parts) or "0s"


# --------------------------------------------------------------------------- cron


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    low: int
    high: int
    hint: str
    names: Mapping[str, int]


def _names(words: Sequence[str], first: int) -> dict[str, int]:
    table: dict[str, int] = {}
    for number, word in enumerate(words, start=first):
        table[word.lower()] = number
        table[word[:3].lower()] = number
    return table


_MINUTE = _Field("Minute", 0, 59, "minutes are 0-59", {})
_HOUR = _Field("Hour", 0, 23, "hours are 0-23 (midnight is 0)", {})
_DAY = _Field("Day", 1, 31, "days of the month are 1-31", {})
_MONTH = _Field("Month", 1, 12, "months are 1-12 or jan-dec", _names(MONTH_NAMES, 1))
_WEEKDAY = _Field(
    "Weekday", 0, 7, "weekdays are 0-7 (0 and 7 are Sunday) or sun-sat", _names(WEEKDAY_NAMES, 0)
)
_CRON_FIELDS = (_MINUTE, _HOUR, _DAY, _MONTH, _WEEKDAY)
_TABLE_FIELDS = {f.key: f for f in (_MONTH, _DAY, _WEEKDAY, _HOUR, _MINUTE)}

_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}


def _check_range(field: _Field, value: int) -> int:
    if not field.low <= value <= field.high:
        raise ScheduleError(
            f"{field.key} {value} is out of range {field.low}-{field.high}", field.hint
        )
    return value


def _cron_value(field: _Field, token: str, part: str) -> int:
    if token.isascii() and token.isdigit():
        return _check_range(field, int(token))
    named = field.names.get(token.lower())
    if named is not None:
        return named
    raise ScheduleError(f'{field.key} "{part}" is not valid', f"{_CRON_SYNTAX}; {field.hint}")


def _cron_field(field: _Field, text: str) -> frozenset[int]:
    """The values one cron field selects (Weekday 7 folded into 0)."""
    values: set[int] = set()
    # `*` on Weekday spans 0-6 so that `*/2` does not pick Sunday twice (as 0 and as 7).
    top = 6 if field is _WEEKDAY else field.high
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not (step_text.isascii() and step_text.isdigit()):
                raise ScheduleError(f'{field.key} "{part}" has a bad step', _CRON_SYNTAX)
            step = int(step_text)
            if step < 1:
                raise ScheduleError(
                    f'{field.key} step in "{part}" must be at least 1', _CRON_SYNTAX
                )
        if base == "*":
            low, high = field.low, top
        elif "-" in base:
            first, _, last = base.partition("-")
            if not first or not last:
                raise ScheduleError(
                    f'{field.key} "{part}" is not valid', f"{_CRON_SYNTAX}; {field.hint}"
                )
            low, high = _cron_value(field, first, part), _cron_value(field, last, part)
            if field is _WEEKDAY and high == 0 and low > 0:
                high = 7  # "fri-sun" and "5-0" end on Sunday, the 7 end of the week
            if low > high:
                raise ScheduleError(
                    f"{field.key} range {first}-{last} is backwards",
                    "write the smaller value first, or split it into a list like 22-23,0-2",
                )
        else:
            low = _cron_value(field, base, part)
            # `5/15` is shorthand for `5-<max>/15` (as in Vixie cron); Weekday's max is 7.
            high = max(field.high, low) if slash else low
        values.update(range(low, high + 1, step))
    if field is _WEEKDAY and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


def _pad_zip(days: Sequence[int], weekdays: Sequence[int]) -> list[tuple[int | None, int | None]]:
    # One launchd dict with Day and Weekday already means "either matches", so pairing the two
    # lists (repeating the shorter one's last value) covers every day and weekday with
    # max(len) dicts instead of len*len.
    count = max(len(days), len(weekdays))
    return [
        (days[min(i, len(days) - 1)], weekdays[min(i, len(weekdays) - 1)]) for i in range(count)
    ]


def _possible(month: int | None, day: int | None, weekday: int | None) -> bool:
    return month is None or day is None or weekday is not None or day <= _MAX_DAY[month - 1]


def _too_many(count: int, what: str = "") -> ScheduleError:
    subject = f"{what} " if what else ""
    return ScheduleError(
        f"{subject}expands to {count} launchd entries; at most {MAX_ENTRIES} are allowed",
        'launchd needs one dict per combination: use fewer values, or every = "15m" '
        "for a fixed interval",
    )


def _cron_words(text: str) -> list[str]:
    """The five fields of cron text, an @macro expanded; ScheduleError for anything else."""
    if not isinstance(text, str):
        raise ScheduleError(
            f"cron must be text, not {type(text).__name__}", 'write e.g. "40 10 * * *"'
        )
    cron = text.strip()
    if not cron:
        raise ScheduleError("cron expression is empty", 'write e.g. "40 10 * * *"')
    if cron.startswith("@"):
        macro = cron.lower()
        if macro == "@reboot":
            raise ScheduleError(
                "@reboot cannot be expressed in launchd's StartCalendarInterval",
                "use run_at_load = true to run the lane when launchd loads it (at login)",
            )
        if macro not in _MACROS:
            raise ScheduleError(
                f'unknown cron macro "{cron}"', "use one of " + ", ".join(sorted(_MACROS))
            )
        cron = _MACROS[macro]
    fields = cron.split()
    if len(fields) == 6:
        raise ScheduleError(
            "cron with 6 fields (seconds) cannot be expressed in launchd",
            "drop the seconds field: launchd works in minutes (minute hour day month weekday)",
        )
    if len(fields) != 5:
        raise ScheduleError(
            f"cron needs 5 fields (minute hour day month weekday), got {len(fields)}",
            'quote the whole expression, e.g. "40 10 * * *"',
        )
    return fields


def _wildcarded(values: frozenset[int], field: _Field) -> list[int | None]:
    """The values of one field, sorted; [None] (launchd's wildcard) when they are all of them."""
    top = 6 if field is _WEEKDAY else field.high
    if values == frozenset(range(field.low, top + 1)):
        return [None]
    chosen: list[int | None] = [*sorted(values)]
    return chosen


def _day_pairs(
    day_star: bool,
    weekday_star: bool,
    day_list: list[int | None],
    weekday_list: list[int | None],
) -> list[tuple[int | None, int | None]]:
    """(Day, Weekday) pairs of the entries: cron matches either field when both are given."""
    if day_star and weekday_star:
        return [(None, None)]
    if weekday_star:
        return [(d, None) for d in day_list]
    if day_star:
        return [(None, w) for w in weekday_list]
    if day_list == [None] or weekday_list == [None]:
        # "either matches" with one side matching every day: every day.
        return [(None, None)]
    return _pad_zip(
        [d for d in day_list if d is not None], [w for w in weekday_list if w is not None]
    )


def parse_cron(text: str) -> tuple[CalendarEntry, ...]:
    """Five-field cron text (or an @macro) -> StartCalendarInterval entries.

    Full ranges become wildcards (None); the result is deduplicated and sorted. Raises
    ScheduleError for what launchd cannot express (@reboot, seconds), bad syntax, values out of
    range, schedules that never fire and expansions over MAX_ENTRIES.
    """
    fields = _cron_words(text)
    minutes, hours, days, months, weekdays = (
        _cron_field(field, value) for field, value in zip(_CRON_FIELDS, fields, strict=True)
    )
    pairs = _day_pairs(
        fields[2] == "*", fields[4] == "*", _wildcarded(days, _DAY), _wildcarded(weekdays, _WEEKDAY)
    )
    month_list = _wildcarded(months, _MONTH)
    dates = [(m, d, w) for m in month_list for d, w in pairs if _possible(m, d, w)]
    if not dates:
        month, day = month_list[0], pairs[0][0]
        raise ScheduleError(
            f"Day {day} never occurs in {MONTH_NAMES[(month or 1) - 1]}",
            "pick a day that exists in that month (February has at most 29 days)",
        )
    hour_list, minute_list = _wildcarded(hours, _HOUR), _wildcarded(minutes, _MINUTE)
    count = len(dates) * len(hour_list) * len(minute_list)
    if count > MAX_ENTRIES:
        raise _too_many(count)
    entries = {
        CalendarEntry(month=m, day=d, weekday=w, hour=h, minute=mi)
        for (m, d, w), h, mi in itertools.product(dates, hour_list, minute_list)
    }
    return tuple(sorted(entries, key=CalendarEntry.sort_key))


def day_and_warning(text: str) -> str | None:
    """Why a cron line means less to Vixie/Debian cron than to launchd, or None.

    When day-of-month and day-of-week are both restricted and one of them starts with `*`
    (`1 1 1-7 * */7`), Vixie cron (and Debian's, cronie, and cronsim and croniter, which follow
    it) runs only on days that match both: the first Sunday. POSIX and launchd run on days that
    match either (days 1-7 and every Sunday), and launchd has no way to require both, so a
    crontab line pasted into lanes.toml would run more often. The message states both meanings
    and how to get cron's. Assumes `text` parses (parse_cron).
    """
    fields = text.split()
    if len(fields) != 5:
        return None  # @macros never restrict both day fields
    minute, hour, dom, month, dow = fields
    if dom == "*" or dow == "*" or not (dom.startswith("*") or dow.startswith("*")):
        return None
    days, weekdays = _cron_field(_DAY, dom), _cron_field(_WEEKDAY, dow)
    by_day = f"{minute} {hour} {dom} {month} *"
    by_weekday = f"{minute} {hour} * {month} {dow}"
    cron_meaning = (
        f"Vixie/Debian cron runs it only on days matching both day-of-month {dom} and "
        f"day-of-week {dow} (a day field starting with * makes cron AND them)"
    )
    launchd_meaning = (
        f"launchd runs it when either matches: {describe(parse_cron(text))} (lanekit writes "
        "both into one StartCalendarInterval dict, and launchd ORs Day and Weekday)"
    )
    if not any(_possible(m, d, None) for m in _cron_field(_MONTH, month) for d in days):
        # Day-of-month alone never occurs in those months (Feb 30): cron's AND never runs.
        return (
            f'"{text}": Vixie/Debian cron never runs it (day-of-month {dom} never occurs in '
            f"month {month}, and a day field starting with * makes cron require both); "
            f"{launchd_meaning}. To run it as cron would, remove it."
        )
    if len(weekdays) == 7 or len(days) == 31:
        # One side matches every day, so cron's AND is the other side alone.
        alone = by_day if len(weekdays) == 7 else by_weekday
        fix = f'write "{alone}" ({describe(parse_cron(alone))})'
    else:
        # Schedule the side that fires on fewer days and let the job check the other.
        weekday_first = len(weekdays) * 31 <= len(days) * 7
        if weekday_first:
            keep, other = by_weekday, f"the day of the month is {dom}"
        else:
            keep, other = by_day, f"the day of the week is {dow}"
        fix = (
            f'schedule "{keep}" ({describe(parse_cron(keep))}) and have the job exit at '
            f"once unless {other} (a guard at the start of its command)"
        )
    return f'"{text}": {cron_meaning}; {launchd_meaning}. To run it as cron would, {fix}.'


# --------------------------------------------------------------------------- tables


def parse_table(mapping: Mapping[str, object], *, strict: bool = True) -> CalendarEntry:
    """A launchd-style table ({Hour=10, Minute=40}) -> one entry.

    Keys are launchd's, exactly (Minute, Hour, Day, Weekday, Month); values are integers in
    range (Weekday 7 becomes 0). `strict` (lanes.toml) also rejects the classic mistakes: a
    table without Minute that sets a coarser key (`{Hour=3}` runs 60 times, 03:00..03:59) and
    the empty table (every minute). strict=False reads what launchd itself accepts, e.g. an
    installed plist or the round trip of a cron `* 3 * * *`.
    """
    if not isinstance(mapping, Mapping):
        raise ScheduleError(
            f"a calendar table must be a table, not {type(mapping).__name__}",
            "write e.g. {Hour = 10, Minute = 40}",
        )
    values: dict[str, int] = {}
    for raw_key, raw in mapping.items():
        key = str(raw_key)
        field = _TABLE_FIELDS.get(key)
        if field is None:
            by_lower = {k.lower(): k for k in PLIST_KEYS}
            close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
            guess = f'did you mean "{by_lower[close[0]]}"? ' if close else ""
            raise ScheduleError(f'unknown calendar key "{key}"', f"{guess}keys are {_KEYS_TEXT}")
        if isinstance(raw, bool) or not isinstance(raw, int):
            shown = f'"{raw}"' if isinstance(raw, str) else repr(raw)
            raise ScheduleError(
                f"{key} must be an integer, not {shown}",
                f"write a whole number without quotes, e.g. {key} = {field.low}",
            )
        values[key] = _check_range(field, raw)
    weekday = values.get("Weekday")
    entry = CalendarEntry(
        month=values.get("Month"),
        day=values.get("Day"),
        weekday=0 if weekday == 7 else weekday,
        hour=values.get("Hour"),
        minute=values.get("Minute"),
    )
    if strict:
        if not values:
            raise ScheduleError(
                "{} has no keys, so launchd runs it every minute",
                'set a time, e.g. {Hour = 3, Minute = 0}; for every minute write cron "* * * * *"',
            )
        if entry.minute is None:
            raise ScheduleError(
                f"{entry.to_table_text()} has no Minute, so launchd runs it {describe((entry,))}",
                _missing_minute_hint(entry),
            )
    if not _possible(entry.month, entry.day, entry.weekday):
        assert entry.month is not None
        raise ScheduleError(
            f"Day {entry.day} never occurs in {MONTH_NAMES[entry.month - 1]}",
            "pick a day that exists in that month (February has at most 29 days)",
        )
    return entry


def _missing_minute_hint(entry: CalendarEntry) -> str:
    if entry.hour is not None:
        fix = f"add Minute=0 to run once at {entry.hour:02d}:00"
    else:
        fix = "add Hour=0, Minute=0 to run once at 00:00"
    return f"{fix}; to really run every minute, write it as cron with * for the minute"


def parse_table_text(text: str) -> dict[str, int]:
    """`Hour=10,Minute=40` or `{Hour=10, Minute=40}` (command-line form) -> a mapping.

    Keys are checked later by parse_table; only the KEY=INTEGER shape is checked here.
    """
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    table: dict[str, int] = {}
    for item in body.split(","):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key:
            raise ScheduleError(
                f'table item "{item.strip()}" is not KEY=VALUE', "write e.g. Hour=10,Minute=40"
            )
        if re.fullmatch(r"-?[0-9]+", value) is None:
            raise ScheduleError(
                f'{key} value "{value}" is not an integer', "write e.g. Hour=10,Minute=40"
            )
        if key in table:
            raise ScheduleError(f"{key} is given twice", "give each key once")
        table[key] = int(value)
    return table


# --------------------------------------------------------------------------- schedules


def build_schedule(value: object, every: str | int | None = None) -> Schedule:
    """A lane's `schedule` (None, cron text, a table, or a list of them) and `every` -> Schedule.

    Entries from all list elements are deduplicated, sorted and limited to MAX_ENTRIES in total;
    an element's error carries `.index`. `every` becomes StartInterval seconds.

    A lane with both a calendar and `every` is rejected: launchd would run it on both triggers
    independently (launchd.plist(5)), which is rarely meant, and lanekit's plists carry one or
    the other. Write the interval as a cron step instead, or drop one.
    """
    interval = None
    if every is not None:
        try:
            interval = parse_duration(every)
        except ScheduleError as exc:
            exc.field = "every"
            raise
    items: list[object]
    listed = isinstance(value, list | tuple)
    if value is None:
        items = []
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        items = [value]
    entries: set[CalendarEntry] = set()
    warnings: list[str] = []
    for index, item in enumerate(items):
        try:
            if isinstance(item, str):
                entries.update(parse_cron(item))
                note = day_and_warning(item.strip())
                if note is not None:
                    warnings.append(note)
            elif isinstance(item, Mapping):
                entries.add(parse_table(item))
            else:
                raise ScheduleError(
                    f"expected cron text or a table, got {type(item).__name__}",
                    'write "40 10 * * *" or {Hour = 10, Minute = 40}',
                )
        except ScheduleError as exc:
            exc.index = index if listed else None
            exc.field = "schedule"
            raise
    if len(entries) > MAX_ENTRIES:
        raise _too_many(len(entries), "schedule")
    if entries and interval is not None:
        raise ScheduleError(
            "schedule and every are both set; launchd would run the lane on both, independently",
            "keep one: a cron step like */15 in schedule, or only every",
        )
    return Schedule(
        calendar=tuple(sorted(entries, key=CalendarEntry.sort_key)),
        interval=interval,
        warnings=tuple(warnings),
    )


def schedule_entry_errors(value: object) -> list[ScheduleError]:
    """Every element of a lane's `schedule` that does not parse, each with its `.index` (or
    None for a single value): build_schedule stops at the first, `validate` lists them all."""
    listed = isinstance(value, list | tuple)
    items = list(value) if isinstance(value, list | tuple) else [] if value is None else [value]
    errors: list[ScheduleError] = []
    for index, item in enumerate(items):
        try:
            build_schedule(item)
        except ScheduleError as exc:
            exc.index = index if listed else None
            exc.field = "schedule"
            errors.append(exc)
    return errors


# --------------------------------------------------------------------------- fire times


@dataclass(frozen=True, slots=True)
class _Matcher:
    month: int | None
    day: int | None
    weekday: int | None
    times: tuple[int, ...]
    """Minutes of the day this entry fires at, ascending."""

    @classmethod
    def of(cls, entry: CalendarEntry) -> _Matcher:
        hours = range(24) if entry.hour is None else (entry.hour,)
        minutes = range(60) if entry.minute is None else (entry.minute,)
        times = tuple(h * 60 + m for h in hours for m in minutes)
        return cls(entry.month, entry.day, entry.weekday, times)

    def on(self, day: date) -> bool:
        if self.month is not None and day.month != self.month:
            return False
        if self.day is None and self.weekday is None:
            return True
        if self.day is not None and day.day == self.day:
            return True
        return self.weekday is not None and _weekday(day) == self.weekday


def _weekday(day: date) -> int:
    """launchd's weekday: 0 is Sunday."""
    return (day.weekday() + 1) % 7


def _matchers(entries: Iterable[CalendarEntry]) -> list[_Matcher]:
    return [
        _Matcher.of(e)
        for e in sorted(set(entries), key=CalendarEntry.sort_key)
        if _possible(e.month, e.day, e.weekday)
    ]


def _day_times(matchers: Sequence[_Matcher], day: date) -> list[int]:
    hits = [m.times for m in matchers if m.on(day)]
    if len(hits) <= 1:
        return list(hits[0]) if hits else []
    return sorted(set().union(*hits))


def _local_naive(moment: datetime) -> datetime:
    """Aware datetimes become naive local wall time; naive ones already are."""
    if moment.tzinfo is not None:
        return moment.astimezone().replace(tzinfo=None)
    return moment


def _exists(wall: datetime) -> bool:
    """False for a wall time skipped by a spring-forward DST change in the local zone."""
    try:
        return datetime.fromtimestamp(wall.timestamp()) == wall
    except (OverflowError, OSError, ValueError):
        return True


def _at(day: date, minute_of_day: int) -> datetime:
    return datetime(day.year, day.month, day.day, minute_of_day // 60, minute_of_day % 60)


def _forward(matchers: Sequence[_Matcher], start: datetime) -> Iterator[datetime]:
    """Fire times at or after the minute-aligned `start`; gives up after SEARCH_DAYS days
    without a fire (so a leap-day schedule still yields as many fires as asked for).
    """
    first_day, first_minute = start.date(), start.hour * 60 + start.minute
    offset = last_hit = 0
    while offset - last_hit < SEARCH_DAYS:
        try:
            day = first_day + timedelta(days=offset)
        except OverflowError:
            return
        times = _day_times(matchers, day)
        begin = bisect.bisect_left(times, first_minute) if offset == 0 else 0
        for minute_of_day in times[begin:]:
            wall = _at(day, minute_of_day)
            if _exists(wall):
                last_hit = offset
                yield wall
        offset += 1


def _backward(matchers: Sequence[_Matcher], end: datetime) -> Iterator[datetime]:
    """Fire times at or before the minute-aligned `end`, latest first; gives up after
    SEARCH_DAYS days without a fire (the same bound as _forward: a Feb-29 schedule's previous
    fire can be 8 years back, 2104 -> 2096)."""
    last_day, last_minute = end.date(), end.hour * 60 + end.minute
    for offset in range(SEARCH_DAYS + 1):
        try:
            day = last_day - timedelta(days=offset)
        except OverflowError:
            return
        times = _day_times(matchers, day)
        stop = bisect.bisect_right(times, last_minute) if offset == 0 else len(times)
        for minute_of_day in reversed(times[:stop]):
            wall = _at(day, minute_of_day)
            if _exists(wall):
                yield wall


def next_fires(entries: Iterable[CalendarEntry], after: datetime, n: int) -> list[datetime]:
    """The next `n` times launchd starts the job, strictly after `after`.

    Naive local wall time in and out (an aware `after` is converted to local wall time). Fires
    are whole minutes, found day by day (never minute by minute); the search stops after
    SEARCH_DAYS days without a fire.

    DST, decided here and relied on by doctor: an entry matches wall-clock fields, so
    - a wall time that does not exist (the spring-forward gap, e.g. 02:30 in New York on the
      second Sunday of March) does not fire;
    - a wall time that occurs twice (the fall-back hour) fires once, at its first occurrence.
    launchd 10.9 (cronemu) walked struct tm fields to the next matching wall time and converted
    it with mktime(tm_isdst = -1), so for the gap it asked libc for a time that does not exist
    (libc may shift it by an hour, or fail); modern launchd is closed. Skipping the gap is the
    conservative model: doctor's missed-run check never expects a run that launchd may not
    make.
    """
    if n <= 0:
        return []
    start = _local_naive(after).replace(second=0, microsecond=0) + timedelta(minutes=1)
    return list(itertools.islice(_forward(_matchers(entries), start), n))


def fires_at(entries: Iterable[CalendarEntry], minute: datetime) -> bool:
    """True when launchd starts the job in this minute (naive local wall time; seconds are
    ignored). Same DST rules as next_fires; costs one day's matching, whatever the schedule."""
    wall = _local_naive(minute).replace(second=0, microsecond=0)
    times = _day_times(_matchers(entries), wall.date())
    return wall.hour * 60 + wall.minute in times and _exists(wall)


def previous_fire(entries: Iterable[CalendarEntry], before: datetime) -> datetime | None:
    """The latest fire time at or before `before` (naive local wall time), looking back at most
    SEARCH_DAYS days, so every schedule lanekit accepts has one; None if there is none (a time
    before year 1 plus the bound). Same DST rules as next_fires.
    """
    end = _local_naive(before).replace(second=0, microsecond=0)
    return next(_backward(_matchers(entries), end), None)


def schedule_next_fires(
    schedule: Schedule, after: datetime, n: int, loaded_at: datetime | None = None
) -> list[datetime]:
    """The next `n` starts of a lane, strictly after `after` (naive local wall time).

    Calendar entries as in next_fires. A StartInterval timer is armed when launchd loads the
    job, so its fires are loaded_at + k*interval (k >= 1, in real elapsed seconds); when the
    load time is unknown it is taken to be `after` (fires at after + interval, + 2*interval...).
    """
    if n <= 0:
        return []
    after = _local_naive(after)
    fires = set(next_fires(schedule.calendar, after, n)) if schedule.calendar else set()
    if schedule.interval is not None:
        base = _local_naive(loaded_at) if loaded_at is not None else after
        elapsed = after.timestamp() - base.timestamp()
        k = max(1, int(elapsed // schedule.interval) + 1)
        origin = base.timestamp()
        for step in range(k, k + n):
            fire = datetime.fromtimestamp(origin + step * schedule.interval)
            if fire > after:
                fires.add(fire)
    return sorted(fires)[:n]


# --------------------------------------------------------------------------- descriptions


def _join(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _runs(values: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs in an ascending sequence: [1,2,3,5] -> [(1,3),(5,5)]."""
    runs: list[tuple[int, int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


def _ranged(values: Sequence[int], name: Mapping[int, str] | None = None) -> str:
    """`1, 2, 3 and 5` with runs of three or more written `1 to 3`."""
    label = (lambda v: name[v]) if name is not None else str
    parts: list[str] = []
    for low, high in _runs(values):
        if high - low >= 2:
            parts.append(f"{label(low)} to {label(high)}")
        else:
            parts.extend(label(v) for v in range(low, high + 1))
    return _join(parts)


def _weekday_list(weekdays: Iterable[int]) -> str:
    # Monday first, so a working week reads "Monday to Friday" and a weekend stays together.
    order = sorted((w - 1) % 7 for w in set(weekdays))
    return _ranged(order, {i: WEEKDAY_NAMES[(i + 1) % 7] for i in range(7)})


def _month_list(months: Iterable[int]) -> str:
    return _ranged(sorted(set(months)), {i + 1: n for i, n in enumerate(MONTH_NAMES)})


def _day_list(days: Iterable[int]) -> str:
    values = sorted(set(days))
    return ("day " if len(values) == 1 else "days ") + _ranged(values)


def _interval_phrase(seconds: int) -> str:
    for unit, name in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if seconds % unit == 0:
            count = seconds // unit
            return f"every {name}" if count == 1 else f"every {count} {name}s"
    raise AssertionError("unreachable: every integer is a multiple of 1")


def _hourly_phrase(minutes: Sequence[int]) -> str:
    if len(minutes) >= 2 and minutes[0] == 0:
        step = minutes[1]
        if 60 % step == 0 and list(minutes) == list(range(0, 60, step)):
            return f"every {step} minutes"
    return "every hour at " + _join([f":{m:02d}" for m in minutes])


def _time_phrase(pairs: frozenset[tuple[int | None, int | None]]) -> tuple[str, bool]:
    """(text, is_clock_times): "at 10:40 and 16:40" is clock times, "every 15 minutes" not."""
    if (None, None) in pairs:
        return "every minute", False
    whole_hours = sorted(h for h, m in pairs if h is not None and m is None)
    hourly = sorted(m for h, m in pairs if h is None and m is not None)
    clock = sorted(
        (h, m)
        for h, m in pairs
        if h is not None and m is not None and h not in whole_hours and m not in hourly
    )
    parts: list[str] = []
    if hourly:
        parts.append(_hourly_phrase(hourly))
    if whole_hours:
        spans = [f"from {a:02d}:00 to {b:02d}:59" for a, b in _runs(whole_hours)]
        parts.append("every minute " + " and ".join(spans))
    if clock:
        parts.append("at " + _join([f"{h:02d}:{m:02d}" for h, m in clock]))
    return " and ".join(parts), not hourly and not whole_hours


_DayKey = tuple[int | None, int | None, int | None]


def _day_phrase(keys: Sequence[_DayKey]) -> tuple[str | None, str] | None:
    """(prefix, suffix) forms for a set of (month, day, weekday) keys, or None if irregular.

    The prefix form reads before clock times ("every Monday at 09:00"); the suffix form reads
    after a time ("at 00:00 on day 1 of every month", "every 15 minutes on Monday").
    """
    by_month: dict[int | None, set[tuple[int | None, int | None]]] = {}
    for month, day, weekday in keys:
        by_month.setdefault(month, set()).add((day, weekday))
    rests = list(by_month.values())
    if any(rest != rests[0] for rest in rests) or (None in by_month and len(by_month) > 1):
        return None
    rest = rests[0]
    months = sorted(m for m in by_month if m is not None)
    in_months = f" in {_month_list(months)}" if months else ""
    days = {d for d, _ in rest if d is not None}
    weekdays = {w for _, w in rest if w is not None}
    if (None, None) in rest or (not days and len(weekdays) == 7):
        return "every day" + in_months, in_months.strip()
    if not days:
        names = _weekday_list(weekdays)
        return f"every {names}{in_months}", f"on {names}{in_months}"
    if months and len(months) == 1 and len(days) == 1:
        on_days = f"on {MONTH_NAMES[months[0] - 1]} {next(iter(days))}"
    else:
        on_days = f"on {_day_list(days)} of " + (_month_list(months) if months else "every month")
    if all(w is None for _, w in rest):
        return None, on_days
    if all(d is not None and w is not None for d, w in rest):
        return None, f"{on_days} and every {_weekday_list(weekdays)}{in_months}"
    return None


def _phrase(times: frozenset[tuple[int | None, int | None]], keys: Sequence[_DayKey]) -> str:
    day = _day_phrase(keys)
    if day is None:
        return "; ".join(_phrase(times, [key]) for key in keys)
    prefix, suffix = day
    time_text, is_clock = _time_phrase(times)
    if is_clock and prefix is not None:
        return f"{prefix} {time_text}"
    return f"{time_text} {suffix}".strip()


def describe(entries: Iterable[CalendarEntry]) -> str:
    """Plain English for calendar entries, deterministic: "every day at 10:40 and 16:40",
    "every Monday at 09:00", "every 15 minutes", "at 00:00 on day 1 of every month",
    "on demand only" when there are none. Irregular sets fall back to a "; "-joined listing.
    """
    ordered = sorted(set(entries), key=CalendarEntry.sort_key)
    if not ordered:
        return "on demand only"
    by_day: dict[_DayKey, set[tuple[int | None, int | None]]] = {}
    for e in ordered:
        by_day.setdefault((e.month, e.day, e.weekday), set()).add((e.hour, e.minute))
    by_times: dict[frozenset[tuple[int | None, int | None]], list[_DayKey]] = {}
    for key, times in by_day.items():
        by_times.setdefault(frozenset(times), []).append(key)
    return "; ".join(_phrase(times, keys) for times, keys in by_times.items())


def describe_schedule(schedule: Schedule) -> str:
    """describe() for a whole Schedule: calendar, StartInterval ("every 15 minutes"), or
    "on demand only".
    """
    parts: list[str] = []
    if schedule.calendar:
        parts.append(describe(schedule.calendar))
    if schedule.interval is not None:
        parts.append(_interval_phrase(schedule.interval))
    return "; and ".join(parts) if parts else "on demand only"


# --------------------------------------------------------------------------- collisions


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
            if _possible(month, day, None):
                return True
    return False


def _first_common(a: Sequence[_Matcher], b: Sequence[_Matcher], start: datetime) -> datetime | None:
    first_day, first_minute = start.date(), start.hour * 60 + start.minute
    for offset in range(SEARCH_DAYS):
        try:
            day = first_day + timedelta(days=offset)
        except OverflowError:
            return None
        times_a = _day_times(a, day)
        if not times_a:
            continue
        common = sorted(set(times_a).intersection(_day_times(b, day)))
        for minute_of_day in common:
            if offset == 0 and minute_of_day < first_minute:
                continue
            wall = _at(day, minute_of_day)
            if _exists(wall):
                return wall
    return None


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
    start = (_local_naive(after) if after is not None else datetime.now()).replace(
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
            example = _first_common(
                _matchers(first.schedule.calendar), _matchers(second.schedule.calendar), start
            )
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


# --------------------------------------------------------------------------- the CLI's core


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
    return _local_naive(moment).replace(microsecond=0)


_EVERY_RE = re.compile(r"\s*every\s*=\s*(.*?)\s*", re.IGNORECASE | re.DOTALL)


def explain(exprs: Sequence[str], *, n: int = 5, after: str | None = None) -> Explanation:
    """`lanekit schedule EXPR...`: each EXPR is cron text, a table (`Hour=10,Minute=40` or
    `{Hour=10, Minute=40}`) or `every=15m`. Errors name the expression they come from.
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
    )
