"""launchd tables -> entries (lanekit.schedule.tables), strict and as launchd reads them."""

from __future__ import annotations

import pytest

from lanekit.schedule import (
    CalendarEntry,
    ScheduleError,
    parse_table,
)

GOOD_TABLES: list[tuple[dict[str, object], CalendarEntry]] = [
    ({"Hour": 10, "Minute": 40}, CalendarEntry(hour=10, minute=40)),
    ({"Minute": 5}, CalendarEntry(minute=5)),
    ({"Weekday": 7, "Hour": 9, "Minute": 0}, CalendarEntry(weekday=0, hour=9, minute=0)),
    (
        {"Month": 2, "Day": 29, "Hour": 0, "Minute": 0},
        CalendarEntry(month=2, day=29, hour=0, minute=0),
    ),
    (
        {"Day": 13, "Weekday": 5, "Hour": 9, "Minute": 0},
        CalendarEntry(day=13, weekday=5, hour=9, minute=0),
    ),
]


@pytest.mark.parametrize(("table", "entry"), GOOD_TABLES)
def test_table_parses(table: dict[str, object], entry: CalendarEntry) -> None:
    """launchd keys map onto the entry; Weekday 7 becomes 0."""
    assert parse_table(table) == entry


BAD_TABLES: list[tuple[dict[str, object], str, str]] = [
    (
        {"Hour": 3},
        "{Hour=3} has no Minute, so launchd runs it every minute from 03:00 to 03:59",
        "add Minute=0 to run once at 03:00",
    ),
    (
        {"Weekday": 1, "Hour": 9},
        "{Weekday=1, Hour=9} has no Minute, so launchd runs it every minute from 09:00 to 09:59 "
        "on Monday",
        "add Minute=0 to run once at 09:00",
    ),
    (
        {"Day": 1},
        "{Day=1} has no Minute, so launchd runs it every minute on day 1 of every month",
        "add Hour=0, Minute=0 to run once at 00:00",
    ),
    ({}, "{} has no keys, so launchd runs it every minute", "set a time"),
    ({"Minut": 5}, 'unknown calendar key "Minut"', 'did you mean "Minute"?'),
    ({"hour": 5, "Minute": 0}, 'unknown calendar key "hour"', 'did you mean "Hour"?'),
    ({"Second": 5}, 'unknown calendar key "Second"', "keys are Month, Day, Weekday, Hour, Minute"),
    ({"Hour": 24, "Minute": 0}, "Hour 24 is out of range 0-23", "hours are 0-23"),
    ({"Day": 0, "Minute": 0}, "Day 0 is out of range 1-31", "days of the month are 1-31"),
    (
        {"Weekday": 8, "Minute": 0},
        "Weekday 8 is out of range 0-7",
        "weekdays are 0-7 (0 and 7 are Sunday)",
    ),
    ({"Month": 0, "Minute": 0}, "Month 0 is out of range 1-12", "months are 1-12"),
    ({"Minute": -1}, "Minute -1 is out of range 0-59", "minutes are 0-59"),
    ({"Hour": True, "Minute": 0}, "Hour must be an integer, not True", "write a whole number"),
    (
        {"Hour": "10", "Minute": 0},
        'Hour must be an integer, not "10"',
        "write a whole number without quotes",
    ),
    ({"Minute": 1.5}, "Minute must be an integer, not 1.5", "write a whole number"),
    (
        {"Month": 2, "Day": 30, "Hour": 0, "Minute": 0},
        "Day 30 never occurs in February",
        "pick a day that exists in that month",
    ),
]


@pytest.mark.parametrize(("table", "message", "hint"), BAD_TABLES)
def test_bad_table_is_one_clear_line(table: dict[str, object], message: str, hint: str) -> None:
    """Typos, bad values and the classic missing-Minute mistake are refused with the fix."""
    with pytest.raises(ScheduleError) as info:
        parse_table(table)
    assert info.value.message == message
    assert info.value.hint.startswith(hint)


def test_lenient_table_reads_what_launchd_accepts() -> None:
    """strict=False (installed plists, cron round trips) allows a missing Minute and {}."""
    assert parse_table({"Hour": 3}, strict=False) == CalendarEntry(hour=3)
    assert parse_table({}, strict=False) == CalendarEntry()
    with pytest.raises(ScheduleError, match="Hour 24 is out of range"):
        parse_table({"Hour": 24}, strict=False)
