"""launchd tables (`{Hour=10, Minute=40}`, a plist's dicts) to calendar entries."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from lanekit.schedule.cron import TABLE_FIELDS, check_range
from lanekit.schedule.describe import describe
from lanekit.schedule.model import MONTH_NAMES, PLIST_KEYS, CalendarEntry, ScheduleError, can_occur

_KEYS_TEXT = ", ".join(PLIST_KEYS)


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
        field = TABLE_FIELDS.get(key)
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
        values[key] = check_range(field, raw)
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
    if not can_occur(entry.month, entry.day, entry.weekday):
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
