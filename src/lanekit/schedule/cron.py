"""Cron text (POSIX crontab fields and the @ macros) to StartCalendarInterval entries."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lanekit.schedule.describe import describe
from lanekit.schedule.model import (
    MAX_ENTRIES,
    MONTH_NAMES,
    WEEKDAY_NAMES,
    CalendarEntry,
    ScheduleError,
    can_occur,
)
from lanekit.schedule.quirks import MONTHS_WITH

_CRON_SYNTAX = "use numbers, *, lists (1,15), ranges (1-5) and steps (*/15 or 10-40/5)"


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
TABLE_FIELDS = {f.key: f for f in (_MONTH, _DAY, _WEEKDAY, _HOUR, _MINUTE)}

_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}


def check_range(field: _Field, value: int) -> int:
    if not field.low <= value <= field.high:
        raise ScheduleError(
            f"{field.key} {value} is out of range {field.low}-{field.high}", field.hint
        )
    return value


def _cron_value(field: _Field, token: str, part: str) -> int:
    if token.isascii() and token.isdigit():
        return check_range(field, int(token))
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


def too_many_entries(count: int, what: str = "") -> ScheduleError:
    subject = f"{what} " if what else ""
    return ScheduleError(
        f"{subject}expands to {count} launchd entries; at most {MAX_ENTRIES} are allowed",
        "launchd needs one dict per combination: use fewer values or a coarser step (office "
        'hours, */15 8-18 * * mon-fri, are 220), or every = "15m" if the lane may also run '
        "outside those hours",
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


def _launchd_dates(
    month: int | None, day: int | None, weekday: int | None, *, split: bool = True
) -> list[tuple[int | None, int | None, int | None]]:
    """(Month, Day, Weekday) of the entries for one cron date, written so that launchd cannot
    normalise a day the month lacks (launchd 10.9 fires "April 31" on May 1; see
    lanekit.schedule.quirks): Day 29-31 without a Month becomes one Month+Day entry per month
    that has that day (February 29 included: it exists in leap years), and a Day the month
    never has is dropped beside a Weekday (cron ORs the two, so only the weekday can match).
    Nothing when the date never occurs. `split=False` keeps Day 29-31 without a Month as one
    entry (when one per month would be too many: calendar_warnings then says what launchd may
    do with it)."""
    if day is None:
        return [(month, None, weekday)]
    if month is not None:
        if can_occur(month, day, None):
            return [(month, day, weekday)]
        return [(month, None, weekday)] if weekday is not None else []
    if day not in MONTHS_WITH or not split:
        return [(None, day, weekday)]
    dates: list[tuple[int | None, int | None, int | None]] = [
        (m, day, None) for m in MONTHS_WITH[day]
    ]
    if weekday is not None:
        dates.append((None, None, weekday))
    return dates


def parse_cron(text: str) -> tuple[CalendarEntry, ...]:
    """Five-field cron text (or an @macro) -> StartCalendarInterval entries.

    Full ranges become wildcards (None); Day 29-31 without a Month becomes one Month+Day
    entry per month that has that day (_launchd_dates), unless that passes MAX_ENTRIES where
    the Day alone would not; the result is deduplicated and sorted. Raises
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

    def all_dates(split: bool) -> list[tuple[int | None, int | None, int | None]]:
        found = (
            date
            for m in month_list
            for d, w in pairs
            for date in _launchd_dates(m, d, w, split=split)
        )
        return list(dict.fromkeys(found))

    dates = all_dates(split=True)
    hour_list, minute_list = _wildcarded(hours, _HOUR), _wildcarded(minutes, _MINUTE)
    per_date = len(hour_list) * len(minute_list)
    if len(dates) * per_date > MAX_ENTRIES and len(all_dates(split=False)) * per_date <= (
        MAX_ENTRIES
    ):
        # One entry per month would pass the limit: Day 29-31 as written, warned about.
        dates = all_dates(split=False)
    if not dates:
        month, day = month_list[0], pairs[0][0]
        raise ScheduleError(
            f"Day {day} never occurs in {MONTH_NAMES[(month or 1) - 1]}",
            "pick a day that exists in that month (February has at most 29 days)",
        )
    count = len(dates) * per_date
    if count > MAX_ENTRIES:
        raise too_many_entries(count)
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
    if not any(can_occur(m, d, None) for m in _cron_field(_MONTH, month) for d in days):
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
