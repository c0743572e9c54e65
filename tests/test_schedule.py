"""Schedules: cron and launchd tables -> StartCalendarInterval entries, fire times (launchd
semantics, DST included), descriptions and collisions."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lanekit.config import LaneSpec, QueueSpec
from lanekit.schedule import (
    MAX_ENTRIES,
    CalendarEntry,
    Schedule,
    ScheduleError,
    build_schedule,
    day_and_warning,
    describe,
    describe_schedule,
    find_collisions,
    fires_at,
    next_fires,
    parse_cron,
    parse_duration,
    parse_table,
    previous_fire,
    schedule_entry_errors,
    schedule_next_fires,
)

AFTER = datetime(2026, 11, 30, 12, 0)  # a Monday


@contextmanager
def local_zone(name: str) -> Iterator[None]:
    """Run with TZ=name (time.tzset), restoring the previous zone afterwards."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is America/New_York for the test (DST: 2026-03-08 and 2026-11-01)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    assert "EST" in time.tzname, "tzdata for America/New_York is missing"
    yield
    monkeypatch.undo()
    time.tzset()


def plist(entries: tuple[CalendarEntry, ...]) -> list[dict[str, int]]:
    return [e.to_plist() for e in entries]


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second)


# --------------------------------------------------------------------------- cron table

HM = {"Hour": 0, "Minute": 0}

CRON_TABLE: list[tuple[str, list[dict[str, int]]]] = [
    ("40 10 * * *", [{"Hour": 10, "Minute": 40}]),
    ("40 10,16 * * *", [{"Hour": 10, "Minute": 40}, {"Hour": 16, "Minute": 40}]),
    ("  40   10  *  *  *  ", [{"Hour": 10, "Minute": 40}]),
    ("0 9 * * 1-5", [{"Weekday": w, "Hour": 9, "Minute": 0} for w in range(1, 6)]),
    ("*/15 * * * *", [{"Minute": m} for m in (0, 15, 30, 45)]),
    ("10-40/10 * * * *", [{"Minute": m} for m in (10, 20, 30, 40)]),
    ("5/20 * * * *", [{"Minute": m} for m in (5, 25, 45)]),
    ("0 */6 * * *", [{"Hour": h, "Minute": 0} for h in (0, 6, 12, 18)]),
    ("0 22-23,0-1 * * *", [{"Hour": h, "Minute": 0} for h in (0, 1, 22, 23)]),
    ("0 0-23 * * *", [{"Minute": 0}]),
    ("0 0 * * 7", [{"Weekday": 0, **HM}]),
    ("0 0 * * 0,7", [{"Weekday": 0, **HM}]),
    ("0 0 * * sun", [{"Weekday": 0, **HM}]),
    ("0 0 * * 6-7", [{"Weekday": 0, **HM}, {"Weekday": 6, **HM}]),
    ("0 0 * * fri-sun", [{"Weekday": w, **HM} for w in (0, 5, 6)]),
    (
        "0 12 * * MON,fri",
        [{"Weekday": 1, "Hour": 12, "Minute": 0}, {"Weekday": 5, **HM, "Hour": 12}],
    ),
    ("0 0 * * 1-7", [HM]),
    ("0 0 1 jan *", [{"Month": 1, "Day": 1, **HM}]),
    ("0 0 1 jan-mar *", [{"Month": m, "Day": 1, **HM} for m in (1, 2, 3)]),
    ("30 2 * December *", [{"Month": 12, "Hour": 2, "Minute": 30}]),
    ("0 0 29 2 *", [{"Month": 2, "Day": 29, **HM}]),
    ("0 0 30,31 1,2 *", [{"Month": 1, "Day": 30, **HM}, {"Month": 1, "Day": 31, **HM}]),
    ("@hourly", [{"Minute": 0}]),
    ("@daily", [HM]),
    ("@DAILY", [HM]),
    ("@midnight", [HM]),
    ("@weekly", [{"Weekday": 0, **HM}]),
    ("@monthly", [{"Day": 1, **HM}]),
    ("@yearly", [{"Month": 1, "Day": 1, **HM}]),
    ("@annually", [{"Month": 1, "Day": 1, **HM}]),
    ("* * * * *", [{}]),
    ("* 3 * * *", [{"Hour": 3}]),
    ("0 9 13 * 5", [{"Day": 13, "Weekday": 5, "Hour": 9, "Minute": 0}]),
    (
        "0 9 1,15 * 1",
        [
            {"Day": 1, "Weekday": 1, "Hour": 9, "Minute": 0},
            {"Day": 15, "Weekday": 1, **HM, "Hour": 9},
        ],
    ),
    (
        "0 9 1,2,3 * 1,2",
        [
            {"Day": 1, "Weekday": 1, "Hour": 9, "Minute": 0},
            {"Day": 2, "Weekday": 2, "Hour": 9, "Minute": 0},
            {"Day": 3, "Weekday": 2, "Hour": 9, "Minute": 0},
        ],
    ),
    ("0 9 1-31 * 1", [{"Hour": 9, "Minute": 0}]),
    ("0 9 1 * *", [{"Day": 1, "Hour": 9, "Minute": 0}]),
    ("0 9 * * mon/2", [{"Weekday": w, "Hour": 9, "Minute": 0} for w in (0, 1, 3, 5)]),
    ("0 9 * * 7/2", [{"Weekday": 0, "Hour": 9, "Minute": 0}]),
]


@pytest.mark.parametrize(("cron", "expected"), CRON_TABLE)
def test_cron_expands_to_entries(cron: str, expected: list[dict[str, int]]) -> None:
    """Lists, ranges, steps, names, macros, Weekday 7 and Day+Weekday expand to launchd dicts:
    wildcards omitted, full ranges collapsed, deduplicated, in a stable sorted order."""
    assert plist(parse_cron(cron)) == expected


BAD_CRON = [
    ("@reboot", "@reboot cannot be expressed in launchd's StartCalendarInterval"),
    ("@fortnightly", 'unknown cron macro "@fortnightly"'),
    ("0 0 0 * * *", "cron with 6 fields (seconds) cannot be expressed in launchd"),
    ("hello world", "cron needs 5 fields (minute hour day month weekday), got 2"),
    ("", "cron expression is empty"),
    ("0 24 * * *", "Hour 24 is out of range 0-23"),
    ("60 * * * *", "Minute 60 is out of range 0-59"),
    ("0 0 0 * *", "Day 0 is out of range 1-31"),
    ("0 0 32 * *", "Day 32 is out of range 1-31"),
    ("0 0 * 13 *", "Month 13 is out of range 1-12"),
    ("0 0 * * 8", "Weekday 8 is out of range 0-7"),
    ("0 20-24 * * *", "Hour 24 is out of range 0-23"),
    ("*/2 */2 * * *", "expands to 360 launchd entries; at most 100 are allowed"),
    ("x * * * *", 'Minute "x" is not valid'),
    ("-1 * * * *", 'Minute "-1" is not valid'),
    ("0 0 L * *", 'Day "L" is not valid'),
    ("0 0 * foo *", 'Month "foo" is not valid'),
    ("0 0 * * fri-mon", "Weekday range fri-mon is backwards"),
    ("0 0 * * 7-1", "Weekday range 7-1 is backwards"),
    ("5-1 * * * *", "Minute range 5-1 is backwards"),
    ("*/0 * * * *", 'Minute step in "*/0" must be at least 1'),
    ("*/x * * * *", 'Minute "*/x" has a bad step'),
    ("0 0 31 2 *", "Day 31 never occurs in February"),
]


@pytest.mark.parametrize(("cron", "message"), BAD_CRON)
def test_bad_cron_is_one_clear_line(cron: str, message: str) -> None:
    """What launchd cannot run (or that is not cron) is refused with one exact line and a hint."""
    with pytest.raises(ScheduleError) as info:
        parse_cron(cron)
    assert info.value.message == message
    assert info.value.hint
    assert "\n" not in info.value.message + info.value.hint
    assert info.value.exit_code == 2


def test_rejections_name_the_fix() -> None:
    """@reboot points at run_at_load, seconds at dropping the field, big expansions at every."""
    hints = {}
    for cron in ("@reboot", "0 0 0 * * *", "*/2 */2 * * *"):
        with pytest.raises(ScheduleError) as info:
            parse_cron(cron)
        hints[cron] = info.value.hint
    assert "run_at_load" in hints["@reboot"]
    assert "drop the seconds" in hints["0 0 0 * * *"]
    assert "every" in hints["*/2 */2 * * *"]


# --------------------------------------------------------------------------- tables

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


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("1h", 3600),
        ("2d", 172800),
        ("1h30m", 5400),
        ("1d2h3m4s", 93784),
        (" 15M ", 900),
        ("90", 90),
        (90, 90),
    ],
)
def test_parse_duration(text: str | int, seconds: int) -> None:
    """Units s/m/h/d, combined largest first; a bare number is seconds."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", 'duration "0" must be more than zero'),
        ("0m", 'duration "0m" must be more than zero'),
        (0, "duration 0 must be more than zero"),
        (-5, "duration -5 must be more than zero"),
        ("-5m", 'duration "-5m" is not valid'),
        ("abc", 'duration "abc" is not valid'),
        ("1.5h", 'duration "1.5h" is not valid'),
        ("30m1h", 'duration "30m1h" is not valid'),
        ("", 'duration "" is not valid'),
        (True, "duration True is not valid"),
    ],
)
def test_bad_duration(text: str | int, message: str) -> None:
    """Zero, negative, out-of-order units and garbage are refused with the accepted forms."""
    with pytest.raises(ScheduleError) as info:
        parse_duration(text)
    assert info.value.message == message
    assert "15m" in info.value.hint


# --------------------------------------------------------------------------- build_schedule


def test_build_schedule_merges_dedupes_and_sorts() -> None:
    """List elements (cron and tables) merge into one sorted, duplicate-free calendar."""
    schedule = build_schedule(["40 16 * * *", {"Hour": 10, "Minute": 40}, "40 10 * * *"], None)
    assert plist(schedule.calendar) == [{"Hour": 10, "Minute": 40}, {"Hour": 16, "Minute": 40}]
    assert schedule.interval is None


def test_build_schedule_interval_and_empty() -> None:
    """every becomes StartInterval seconds; nothing at all is an on-demand lane."""
    assert build_schedule(None, "15m") == Schedule(interval=900)
    assert build_schedule(None, 60) == Schedule(interval=60)
    assert build_schedule(None, None).is_empty
    assert build_schedule([], None).is_empty


def test_build_schedule_error_carries_index_and_field() -> None:
    """A bad list element says which one (0-based) and that `schedule` is the key."""
    with pytest.raises(ScheduleError) as info:
        build_schedule(["0 0 * * *", "0 24 * * *"], None)
    assert (info.value.message, info.value.index, info.value.field) == (
        "Hour 24 is out of range 0-23",
        1,
        "schedule",
    )
    with pytest.raises(ScheduleError) as single:
        build_schedule({"Hour": 3}, None)
    assert single.value.index is None
    with pytest.raises(ScheduleError) as typed:
        build_schedule([5], None)
    assert typed.value.message == "expected cron text or a table, got int"
    assert typed.value.index == 0


def test_build_schedule_every_errors_name_every() -> None:
    """A bad `every` is reported against `every`, not `schedule`."""
    with pytest.raises(ScheduleError) as info:
        build_schedule(None, "soon")
    assert info.value.field == "every"
    assert info.value.message == 'duration "soon" is not valid'


def test_schedule_and_every_together_are_refused() -> None:
    """launchd would run both triggers independently; lanekit asks for one of them."""
    with pytest.raises(ScheduleError) as info:
        build_schedule("40 10 * * *", "15m")
    assert info.value.message == (
        "schedule and every are both set; launchd would run the lane on both, independently"
    )
    assert info.value.field is None


def test_total_limit_counts_all_elements() -> None:
    """The 100-entry limit applies to the merged calendar, with the total in the message."""
    with pytest.raises(ScheduleError) as info:
        build_schedule(["*/2 0-1 * * *", "*/2 2-3 * * *"], None)
    assert info.value.message == (
        f"schedule expands to 120 launchd entries; at most {MAX_ENTRIES} are allowed"
    )


# --------------------------------------------------------------------------- fire times


def test_next_fires_two_times_a_day() -> None:
    """The README example: 10:40 and 16:40 local time, strictly after `after`."""
    entries = parse_cron("40 10,16 * * *")
    assert next_fires(entries, AFTER, 3) == [
        at(2026, 11, 30, 16, 40),
        at(2026, 12, 1, 10, 40),
        at(2026, 12, 1, 16, 40),
    ]
    assert next_fires(entries, at(2026, 11, 30, 16, 40), 1) == [at(2026, 12, 1, 10, 40)]
    assert next_fires(entries, at(2026, 11, 30, 16, 39, 59), 1) == [at(2026, 11, 30, 16, 40)]
    assert next_fires(entries, AFTER, 0) == []
    assert next_fires((), AFTER, 3) == []


def test_weekday_seven_is_sunday() -> None:
    """Weekday 7 and 0 are both Sunday, in cron and in tables, and fire on Sundays."""
    sunday = parse_cron("0 12 * * 7")
    assert sunday == parse_cron("0 12 * * 0") == parse_cron("0 12 * * SUN")
    assert sunday == (parse_table({"Weekday": 7, "Hour": 12, "Minute": 0}),)
    fires = next_fires(sunday, AFTER, 3)
    assert fires == [at(2026, 12, 6, 12, 0), at(2026, 12, 13, 12, 0), at(2026, 12, 20, 12, 0)]
    assert all(f.isoweekday() == 7 for f in fires)


def test_day_and_weekday_means_either() -> None:
    """{Day=13, Weekday=5} fires on every Friday and on every 13th (launchd and POSIX cron)."""
    entries = (parse_table({"Day": 13, "Weekday": 5, "Hour": 9, "Minute": 0}),)
    assert entries == parse_cron("0 9 13 * fri")
    got = next_fires(entries, at(2026, 11, 1), 7)
    assert [f.date() for f in got] == [
        date(2026, 11, 6),
        date(2026, 11, 13),
        date(2026, 11, 20),
        date(2026, 11, 27),
        date(2026, 12, 4),
        date(2026, 12, 11),
        date(2026, 12, 13),
    ]


def test_leap_day_and_aware_after(new_york: None) -> None:
    """Feb 29 fires only in leap years; an aware `after` is converted to local wall time."""
    leap = parse_cron("0 0 29 2 *")
    assert next_fires(leap, AFTER, 2) == [at(2028, 2, 29, 0, 0), at(2032, 2, 29, 0, 0)]
    # 2100 is not a leap year: 2096 -> 2104 is the longest gap, and it is still bridged.
    assert next_fires(leap, at(2095, 1, 1), 2) == [at(2096, 2, 29, 0, 0), at(2104, 2, 29, 0, 0)]
    assert len(next_fires(leap, AFTER, 30)) == 30
    morning = parse_cron("40 10 * * *")
    # 12:00 UTC is 07:00 in New York (EST), so 10:40 the same day is next.
    assert next_fires(morning, datetime(2026, 11, 30, 12, 0, tzinfo=UTC), 1) == [
        at(2026, 11, 30, 10, 40)
    ]


def test_previous_fire() -> None:
    """The latest fire at or before `before`; None for a schedule that never fires."""
    entries = parse_cron("40 10 * * *")
    assert previous_fire(entries, at(2026, 11, 30, 10, 40)) == at(2026, 11, 30, 10, 40)
    assert previous_fire(entries, at(2026, 11, 30, 10, 40, 30)) == at(2026, 11, 30, 10, 40)
    assert previous_fire(entries, at(2026, 11, 30, 10, 39)) == at(2026, 11, 29, 10, 40)
    assert previous_fire(parse_cron("0 0 1 1 *"), AFTER) == at(2026, 1, 1, 0, 0)
    assert previous_fire((), AFTER) is None


def test_interval_fires() -> None:
    """StartInterval counts from the load time when known, else from `after`."""
    every = Schedule(interval=900)
    assert schedule_next_fires(every, AFTER, 2) == [
        at(2026, 11, 30, 12, 15),
        at(2026, 11, 30, 12, 30),
    ]
    loaded = at(2026, 11, 30, 11, 52)
    assert schedule_next_fires(every, AFTER, 3, loaded_at=loaded) == [
        at(2026, 11, 30, 12, 7),
        at(2026, 11, 30, 12, 22),
        at(2026, 11, 30, 12, 37),
    ]
    assert schedule_next_fires(Schedule(), AFTER, 3) == []
    calendar = Schedule(calendar=parse_cron("40 10,16 * * *"))
    assert schedule_next_fires(calendar, AFTER, 1) == [at(2026, 11, 30, 16, 40)]


def test_spring_forward_skips_missing_wall_times(new_york: None) -> None:
    """2026-03-08 02:00-02:59 does not exist in New York: those fires are skipped, not moved."""
    assert next_fires(parse_cron("30 2 * * *"), at(2026, 3, 7, 12), 2) == [
        at(2026, 3, 9, 2, 30),
        at(2026, 3, 10, 2, 30),
    ]
    assert next_fires(parse_cron("*/30 * * * *"), at(2026, 3, 8, 1, 0), 3) == [
        at(2026, 3, 8, 1, 30),
        at(2026, 3, 8, 3, 0),
        at(2026, 3, 8, 3, 30),
    ]
    assert next_fires(parse_cron("* 2 * * *"), at(2026, 3, 7, 23), 1) == [at(2026, 3, 9, 2, 0)]
    assert previous_fire(parse_cron("30 2 * * *"), at(2026, 3, 8, 12)) == at(2026, 3, 7, 2, 30)
    # An interval is real elapsed time: one hour after 01:30 EST is 03:30 EDT.
    assert schedule_next_fires(Schedule(interval=3600), at(2026, 3, 8, 0, 30), 3) == [
        at(2026, 3, 8, 1, 30),
        at(2026, 3, 8, 3, 30),
        at(2026, 3, 8, 4, 30),
    ]


def test_fall_back_fires_repeated_wall_time_once(new_york: None) -> None:
    """2026-11-01 01:00-01:59 happens twice in New York; each wall-clock minute fires once."""
    assert next_fires(parse_cron("30 1 * * *"), at(2026, 10, 31, 12), 2) == [
        at(2026, 11, 1, 1, 30),
        at(2026, 11, 2, 1, 30),
    ]
    assert next_fires(parse_cron("*/30 * * * *"), at(2026, 11, 1, 0, 45), 3) == [
        at(2026, 11, 1, 1, 0),
        at(2026, 11, 1, 1, 30),
        at(2026, 11, 1, 2, 0),
    ]


# --------------------------------------------------------------------------- properties


@dataclass(frozen=True)
class Cron:
    """A generated cron expression with the sets its fields select (computed independently)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_star: bool
    weekday_star: bool


MONTH_ABBR = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_ABBR = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@st.composite
def cron_field(
    draw: st.DrawFn, low: int, high: int, max_items: int, min_step: int, names: tuple[str, ...] = ()
) -> tuple[str, frozenset[int]]:
    """One field as text plus the values it selects (before Weekday 7 folding)."""

    def token(value: int) -> str:
        named: bool = draw(st.booleans())
        if names and named:
            return names[value - low] if value - low < len(names) else str(value)
        return str(value)

    kind = draw(st.sampled_from(["star", "one", "list", "range", "step", "rangestep"]))
    if kind == "star":
        return "*", frozenset(range(low, high + 1))
    if kind == "one":
        value = draw(st.integers(low, high))
        return token(value), frozenset({value})
    if kind == "list":
        values = draw(st.lists(st.integers(low, high), min_size=1, max_size=max_items))
        return ",".join(token(v) for v in values), frozenset(values)
    if kind == "step":
        step = draw(st.integers(min_step, high - low + 1))
        return f"*/{step}", frozenset(range(low, high + 1, step))
    first = draw(st.integers(low, high))
    last = draw(st.integers(first, min(high, first + max_items)))
    if kind == "range":
        return f"{token(first)}-{token(last)}", frozenset(range(first, last + 1))
    step = draw(st.integers(1, 5))
    return f"{first}-{last}/{step}", frozenset(range(first, last + 1, step))


@st.composite
def crons(draw: st.DrawFn) -> Cron:
    """Random 5-field cron text over every syntax form, kept small enough for launchd."""
    minute = draw(cron_field(0, 59, 3, 15))
    hour = draw(cron_field(0, 23, 3, 4))
    day = draw(cron_field(1, 31, 3, 5))
    month = draw(cron_field(1, 12, 3, 2, MONTH_ABBR))
    weekday_text, weekday_values = draw(cron_field(0, 7, 3, 2, DAY_ABBR))
    if weekday_text == "*":
        weekday_values = frozenset(range(7))
    weekdays = frozenset(0 if w == 7 else w for w in weekday_values)
    return Cron(
        text=" ".join((minute[0], hour[0], day[0], month[0], weekday_text)),
        minutes=minute[1],
        hours=hour[1],
        days=day[1],
        months=month[1],
        weekdays=weekdays,
        day_star=day[0] == "*",
        weekday_star=weekday_text == "*",
    )


def cron_matches_day(cron: Cron, day: date) -> bool:
    """POSIX cron: day-of-month and day-of-week are ORed unless one of them is `*`."""
    if day.month not in cron.months:
        return False
    by_day = day.day in cron.days
    by_weekday = day.isoweekday() % 7 in cron.weekdays
    if cron.day_star or cron.weekday_star:
        return by_day and by_weekday
    return by_day or by_weekday


def brute_force(cron: Cron, after: datetime, n: int, horizon_days: int) -> list[datetime]:
    """Minute-by-minute scan of the matching days (non-matching days skipped whole)."""
    start = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    found: list[datetime] = []
    for offset in range(horizon_days):
        day = start.date() + timedelta(days=offset)
        if not cron_matches_day(cron, day):
            continue
        midnight = datetime(day.year, day.month, day.day)
        for minute_of_day in range(1440):
            moment = midnight + timedelta(minutes=minute_of_day)
            if moment < start or moment.hour not in cron.hours:
                continue
            if moment.minute in cron.minutes:
                found.append(moment)
                if len(found) == n:
                    return found
    return found


def parsed(cron: Cron) -> tuple[CalendarEntry, ...]:
    """parse_cron, or reject the example when launchd cannot take it (too big, never fires)."""
    try:
        return parse_cron(cron.text)
    except ScheduleError as exc:
        assume("at most 100" not in exc.message and "never occurs" not in exc.message)
        raise


@settings(max_examples=40, deadline=None)
@given(
    cron=crons(),
    after=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 12, 31)),
)
def test_next_fires_agree_with_brute_force(cron: Cron, after: datetime) -> None:
    """For random cron text, next_fires equals a minute scan of the following year."""
    entries = parsed(cron)
    with local_zone("UTC"):
        expected = brute_force(cron, after, 5, 366)
        horizon = after.replace(second=0, microsecond=0) + timedelta(days=366)
        got = [f for f in next_fires(entries, after, 5) if f < horizon]
    assert got == expected, cron.text


@settings(max_examples=50, deadline=None)
@given(cron=crons())
def test_cron_plist_round_trip(cron: Cron) -> None:
    """parse_cron -> to_plist -> parse_table gives back the same entries."""
    entries = parsed(cron)
    assert 1 <= len(entries) <= MAX_ENTRIES
    assert tuple(parse_table(e.to_plist(), strict=False) for e in entries) == entries


def optional(low: int, high: int) -> st.SearchStrategy[int | None]:
    return st.none() | st.integers(low, high)


@given(
    entry=st.builds(
        CalendarEntry,
        month=optional(1, 12),
        day=optional(1, 28),
        weekday=optional(0, 6),
        hour=optional(0, 23),
        minute=optional(0, 59),
    )
)
def test_entry_round_trip(entry: CalendarEntry) -> None:
    """Any valid entry survives to_plist -> parse_table, and describe() is deterministic."""
    assert parse_table(entry.to_plist(), strict=False) == entry
    assert describe([entry]) == describe([entry])
    assert describe([entry])


# --------------------------------------------------------------------------- describe

DESCRIBE_TABLE: list[tuple[list[str], str]] = [
    (["40 10,16 * * *"], "every day at 10:40 and 16:40"),
    (["0 9 * * 1"], "every Monday at 09:00"),
    (["0 9 * * 1,5"], "every Monday and Friday at 09:00"),
    (["0 9 * * 1-5"], "every Monday to Friday at 09:00"),
    (["0 10 * * 6,0"], "every Saturday and Sunday at 10:00"),
    (["*/15 * * * *"], "every 15 minutes"),
    (["5,35 * * * *"], "every hour at :05 and :35"),
    (["@hourly"], "every hour at :00"),
    (["* 3 * * *"], "every minute from 03:00 to 03:59"),
    (["* 3-4 * * *"], "every minute from 03:00 to 04:59"),
    (["* * * * *"], "every minute"),
    (["@monthly"], "at 00:00 on day 1 of every month"),
    (["0 0 1,15 * *"], "at 00:00 on days 1 and 15 of every month"),
    (["@yearly"], "at 00:00 on January 1"),
    (["0 0 1 1,7 *"], "at 00:00 on day 1 of January and July"),
    (["0 9 * jan *"], "every day in January at 09:00"),
    (["0 9 * 1 1"], "every Monday in January at 09:00"),
    (["0 9 1 * 1"], "at 09:00 on day 1 of every month and every Monday"),
    (["*/30 * * * 1"], "every 30 minutes on Monday"),
    (["0 9 * * 1", "30 17 * * *"], "every day at 17:30; every Monday at 09:00"),
    (["0 0 1 * *", "0 0 * * 1"], "every Monday at 00:00; at 00:00 on day 1 of every month"),
    ([], "on demand only"),
]


@pytest.mark.parametrize(("crons_", "text"), DESCRIBE_TABLE)
def test_describe(crons_: list[str], text: str) -> None:
    """Plain English, deterministic, irregular sets listed part by part."""
    entries = [e for cron in crons_ for e in parse_cron(cron)]
    assert describe(entries) == text
    assert describe(reversed(entries)) == text


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        (Schedule(interval=900), "every 15 minutes"),
        (Schedule(interval=3600), "every hour"),
        (Schedule(interval=90), "every 90 seconds"),
        (Schedule(interval=5400), "every 90 minutes"),
        (Schedule(interval=172800), "every 2 days"),
        (Schedule(), "on demand only"),
        (Schedule(calendar=parse_cron("@daily")), "every day at 00:00"),
    ],
)
def test_describe_schedule(schedule: Schedule, text: str) -> None:
    """Intervals read in their largest whole unit; an empty schedule is on demand."""
    assert describe_schedule(schedule) == text


# --------------------------------------------------------------------------- collisions


def lane(name: str, queue: str, schedule: object, every: str | None = None) -> LaneSpec:
    root = Path("/tmp/lanes") / queue
    return LaneSpec(
        name=name,
        label=f"test.{name}",
        queue=QueueSpec(queue, root),
        command=("/bin/true",),
        schedule=build_schedule(schedule, every),
        stdout_path=root / "out.log",
        stderr_path=root / "err.log",
        log_path=root / "lane.log",
    )


def test_same_queue_same_minute_is_reported() -> None:
    """Two lanes on one queue both firing at 10:40 collide; the example is the first such minute."""
    found = find_collisions(
        [lane("b", "inbox", "40 10,16 * * *"), lane("a", "inbox", "40 10 * * *")], after=AFTER
    )
    assert len(found) == 1
    collision = found[0]
    assert (collision.queue, collision.lanes, collision.example) == (
        "inbox",
        ("a", "b"),
        at(2026, 12, 1, 10, 40),
    )
    assert collision.description == (
        'lanes "a" and "b" both drain queue "inbox" and can start in the same minute, '
        "next at 2026-12-01 10:40"
    )
    assert str(collision) == collision.description


def test_different_queues_do_not_collide() -> None:
    """Same times on different queues are fine: nothing is contended."""
    lanes = [lane("a", "inbox", "40 10 * * *"), lane("b", "outbox", "40 10 * * *")]
    assert find_collisions(lanes, after=AFTER) == []


@pytest.mark.parametrize(
    ("first", "second", "example"),
    [
        ("*/5 * * * *", "*/10 * * * *", at(2026, 11, 30, 12, 10)),
        ("*/10 * * * *", "5-59/10 * * * *", None),
        ("0 9 * * 1", "0 9 * * 2", None),
        ("0 9 1 * 1", "0 9 * * 2", at(2026, 12, 1, 9, 0)),
        ("0 9 13 * 5", "0 9 15 * *", at(2027, 1, 15, 9, 0)),
        ("0 9 * 1 *", "0 9 * 2 *", None),
        ("0 9 31 * *", "0 9 * 2 *", None),
        ("0 9 29 * *", "0 9 * 2 *", at(2028, 2, 29, 9, 0)),
        ("* 3 * * *", "30 3 * * 0", at(2026, 12, 6, 3, 30)),
    ],
)
def test_collision_overlap_rules(first: str, second: str, example: datetime | None) -> None:
    """Steps, weekdays, months, impossible days and the Day/Weekday OR rule are exact."""
    found = find_collisions([lane("a", "q", first), lane("b", "q", second)], after=AFTER)
    if example is None:
        assert found == []
    else:
        assert [c.example for c in found] == [example]


def test_interval_lanes_are_not_compared() -> None:
    """StartInterval phase depends on load time, so interval lanes are never reported."""
    lanes = [lane("a", "q", None, "15m"), lane("b", "q", None, "15m"), lane("c", "q", "* * * * *")]
    assert find_collisions(lanes, after=AFTER) == []


@settings(max_examples=30, deadline=None)
@given(first=crons(), second=crons())
def test_collisions_agree_with_day_scan(first: Cron, second: Cron) -> None:
    """The analytic overlap test agrees with scanning 29 years of days (covers every
    month/day/weekday combination) for a common day and a common minute."""
    parsed(first)
    parsed(second)
    a, b = lane("a", "q", first.text), lane("b", "q", second.text)
    common_times = bool(first.hours & second.hours) and bool(first.minutes & second.minutes)
    day = date(2000, 1, 1)
    common_day = False
    while common_times and day < date(2029, 1, 1):
        if cron_matches_day(first, day) and cron_matches_day(second, day):
            common_day = True
            break
        day += timedelta(days=1)
    found = find_collisions([a, b], after=AFTER)
    assert bool(found) == (common_times and common_day), (first.text, second.text)


def test_large_calendars_are_compared_exactly() -> None:
    """Full 100-entry calendars one minute apart do not collide; a shared 18:45 does."""
    many = [f"{m} {h} * * *" for h in range(0, 20, 2) for m in range(0, 50, 5)]
    shifted = [f"{m + 1} {h} * * *" for h in range(0, 20, 2) for m in range(0, 50, 5)]
    lanes = [lane("a", "q", many), lane("b", "q", shifted), lane("c", "q", many[-1])]
    found = find_collisions(lanes, after=AFTER)
    assert [(c.lanes, c.example) for c in found] == [(("a", "c"), at(2026, 11, 30, 18, 45))]


def test_entries_are_mappings_of_launchd_keys() -> None:
    """to_plist keeps launchd's key names and omits wildcards (the plist contract)."""
    entry = CalendarEntry(month=1, day=2, weekday=3, hour=4, minute=5)
    assert entry.to_plist() == {"Month": 1, "Day": 2, "Weekday": 3, "Hour": 4, "Minute": 5}
    assert isinstance(CalendarEntry().to_plist(), Mapping)
    assert CalendarEntry().to_plist() == {}


# --- peers: cases from other projects' test suites (croniter, cronsim, systemd-analyze) -----

WEEKDAYS_OF = {"Sun": 0, "Mon": 1, "Tue": 2, "Wed": 3, "Thu": 4, "Fri": 5, "Sat": 6}


def weekdays(cron_weekday: str) -> set[int]:
    """The launchd Weekday values `0 0 * * FIELD` expands to (every weekday: all seven)."""
    entries = parse_cron(f"0 0 * * {cron_weekday}")
    return {e.weekday for e in entries if e.weekday is not None} or set(range(7))


@pytest.mark.parametrize(
    "field", ["sun", "0", "7", "sun-sun", "0-sun", "sun-0", "0-0", "7-7", "7-sun"]
)
def test_every_way_of_writing_sunday_is_sunday_alone(field: str) -> None:
    """0 and 7 are both Sunday, by number or name, alone or as both ends of a range (issue
    12 item 16: `sun-sun` and `0-sun` meant every day). Peers: cronsim
    tests/test_cronsim.py::test_it_handles_0_sunday and ::test_it_accepts_weekday_7; croniter
    tests/test_croniter.py::testISOWeekday (`0 0 * * 7` fires on Sunday 2010-02-28 then
    2010-03-07)."""
    assert parse_cron(f"0 0 * * {field}") == (CalendarEntry(weekday=0, hour=0, minute=0),)


def test_croniter_iso_weekday_case() -> None:
    """croniter testISOWeekday: from 2010-02-25, `0 0 * * 7` fires 2010-02-28, 2010-03-07."""
    fires = next_fires(parse_cron("0 0 * * 7"), at(2010, 2, 25), 2)
    assert fires == [at(2010, 2, 28, 0, 0), at(2010, 3, 7, 0, 0)]


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        # issue 12 item 17: N/S is N-7/S, 7 being Sunday.
        ("1/3", {1, 4, 0}),
        ("1-7/3", {1, 4, 0}),
        ("0/3", {0, 3, 6}),
        ("0-7/3", {0, 3, 6}),
        ("7/2", {0}),
        ("1-7/2", {1, 3, 5, 0}),
        # cronsim test_it_starts_weekday_step_from_zero: */2 is {0, 2, 4, 6}.
        ("*/2", {0, 2, 4, 6}),
        ("0-7/2", {0, 2, 4, 6}),
        ("*/7", {0}),
        # cronsim test_it_parses_sun_tue, test_it_parses_weekday_range_from_zero.
        ("sun-tue", {0, 1, 2}),
        ("0-2", {0, 1, 2}),
        # croniter testSundayToThursdayWithAlphaConversion: sun-thu.
        ("sun-thu", {0, 1, 2, 3, 4}),
        ("fri-sun", {5, 6, 0}),
        ("5-0", {5, 6, 0}),
        ("sat-7", {6, 0}),
        ("sun-7", set(range(7))),
        ("0-6", set(range(7))),
    ],
)
def test_weekday_field_is_consistent_with_7_as_sunday(field: str, expected: set[int]) -> None:
    """The weekday field, one table: ranges ending on Sunday (as 0, 7 or `sun`), steps from a
    start (`1/3` = `1-7/3` = Mon, Thu, Sun; before, `1/3` stopped at Saturday), and the peers'
    cases cited per row."""
    assert weekdays(field) == expected


@pytest.mark.parametrize("start", range(8))
@pytest.mark.parametrize("step", range(1, 8))
def test_weekday_n_slash_s_is_n_to_7_slash_s(start: int, step: int) -> None:
    """`N/S` means `N-7/S` for every start and step (the field's maximum is 7, Sunday)."""
    assert weekdays(f"{start}/{step}") == weekdays(f"{start}-7/{step}")


def test_one_slash_three_fires_as_systemd_analyze_says() -> None:
    """`systemd-analyze calendar --base-time="2026-11-30 12:00" "Mon,Thu,Sun 00:00"` gives
    Thu 2026-12-03, Sun 2026-12-06, Mon 2026-12-07: so does `0 0 * * 1/3`."""
    assert next_fires(parse_cron("0 0 * * 1/3"), AFTER, 3) == [
        at(2026, 12, 3, 0, 0),
        at(2026, 12, 6, 0, 0),
        at(2026, 12, 7, 0, 0),
    ]


def test_minute_start_with_step() -> None:
    """cronsim test_it_parses_start_with_step: `5/15` minutes are 5, 20, 35, 50."""
    assert {e.minute for e in parse_cron("5/15 * * * *")} == {5, 20, 35, 50}


def test_leap_day_has_a_previous_fire() -> None:
    """A Feb-29 schedule's previous fire can be years back (issue 12 item 18: the 400-day
    look-back said there was none, and doctor's missed-run check skipped the lane).
    `systemd-analyze calendar "*-02-29 00:00"` from 2095 gives 2096-02-29 then 2104-02-29:
    the 8-year gap is bridged backwards too."""
    leap = parse_cron("0 0 29 2 *")
    assert previous_fire(leap, at(2027, 6, 1)) == at(2024, 2, 29, 0, 0)
    assert previous_fire(leap, at(2104, 2, 28)) == at(2096, 2, 29, 0, 0)
    assert previous_fire(leap, at(2104, 2, 29, 0, 0)) == at(2104, 2, 29, 0, 0)
    # Weekday-only leap-day schedules: Feb 29 on a Friday is 2008, 2036, 2064.
    friday_29 = build_schedule({"Month": 2, "Day": 29, "Hour": 0, "Minute": 0}).calendar
    assert previous_fire(friday_29, at(2030, 1, 1)) == at(2028, 2, 29, 0, 0)


def test_fires_at_matches_the_fire_times() -> None:
    """fires_at (the emulator's per-minute test) says yes exactly at next_fires' minutes."""
    for cron in ("0 0 29 2 *", "*/20 9-10 * * 1-5", "1 1 1-7 * */7"):
        entries = parse_cron(cron)
        fires = next_fires(entries, at(2027, 12, 31), 4)
        for fire in fires:
            assert fires_at(entries, fire)
            assert fires_at(entries, fire.replace(second=30))
            assert not fires_at(entries, fire + timedelta(minutes=1)) or (
                fire + timedelta(minutes=1) in next_fires(entries, fire, 1)
            )


def test_cron_and_launchd_disagree_on_a_starred_day_field() -> None:
    """`1 1 1-7 * */7` (cronsim test_it_handles_dow_star, "first Sunday of the month": it
    expects 2020-01-05, 2020-02-02, 2020-03-01, 2020-04-05, as does `systemd-analyze calendar
    "Sun *-*-01..07 01:01"`) is cron's AND because a day field starts with `*`; launchd can
    only OR Day and Weekday, so it fires on Jan 1-7 and every Sunday. lanekit keeps launchd's
    meaning (it is what will run) and warns with both meanings and the way to get cron's.
    Neither peer is wrong: cronsim follows Vixie cron, launchd is not cron."""
    entries = parse_cron("1 1 1-7 * */7")
    assert next_fires(entries, at(2020, 1, 1), 3) == [
        at(2020, 1, 1, 1, 1),
        at(2020, 1, 2, 1, 1),
        at(2020, 1, 3, 1, 1),
    ]
    warning = day_and_warning("1 1 1-7 * */7")
    assert warning is not None
    assert warning.startswith(
        '"1 1 1-7 * */7": Vixie/Debian cron runs it only on days matching both'
    )
    assert "launchd runs it when either matches: at 01:01 on days 1 to 7" in warning
    assert 'schedule "1 1 * * */7" (every Sunday at 01:01)' in warning
    assert "exit at once unless the day of the month is 1-7" in warning


@pytest.mark.parametrize(
    ("cron", "fix"),
    [
        # cronsim test_it_handles_dom_star: "first Monday of the month".
        ("1 1 */100,1-7 * MON", 'schedule "1 1 * * MON" (every Monday at 01:01)'),
        # A star side that matches every day: cron's AND is the other side alone.
        ("0 0 1 * */1", 'write "0 0 1 * *" (at 00:00 on day 1 of every month)'),
        ("0 0 */1 * 1", 'write "0 0 * * 1" (every Monday at 00:00)'),
        ("0 0 1,15 * */2", 'schedule "0 0 1,15 * *"'),
        ("0 0 30 2 */2", "Vixie/Debian cron never runs it"),
    ],
)
def test_day_and_warning_says_how_to_get_crons_meaning(cron: str, fix: str) -> None:
    """Each starred Day+Weekday line gets the cron-equivalent fix that fits it."""
    warning = day_and_warning(cron)
    assert warning is not None
    assert fix in warning


@pytest.mark.parametrize(
    "cron", ["0 9 13 * 5", "0 0 * * */2", "0 0 */2 * *", "0 0 1 * *", "@weekly", "0 0 1-7 * 0"]
)
def test_no_day_and_warning_where_cron_and_launchd_agree(cron: str) -> None:
    """Both fields restricted without a `*` (POSIX and Vixie both OR), or one field exactly
    `*`: cron and launchd mean the same, nothing to warn about."""
    assert day_and_warning(cron) is None
    assert build_schedule(cron).warnings == ()


def test_schedule_carries_the_warning_but_compares_without_it() -> None:
    """build_schedule keeps the warning for validate and `schedule`; two schedules that run
    the same are equal whatever their text said."""
    schedule = build_schedule(["40 10 * * *", "1 1 1-7 * */7"])
    assert len(schedule.warnings) == 1
    assert schedule.warnings[0].startswith('"1 1 1-7 * */7"')
    assert schedule == Schedule(calendar=schedule.calendar)


def test_schedule_entry_errors_names_every_bad_element() -> None:
    """Each bad element of a schedule list is reported with its index, not just the first."""
    errors = schedule_entry_errors(["40 10 * * *", "99 1 * * *", {"Hour": 25}])
    assert [(e.index, e.message) for e in errors] == [
        (1, "Minute 99 is out of range 0-59"),
        (2, "Hour 25 is out of range 0-23"),
    ]
    assert schedule_entry_errors("40 10 * * *") == []
