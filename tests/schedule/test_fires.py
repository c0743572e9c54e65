"""Fire times as launchd computes them, DST included (lanekit.schedule.fires)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime

import pytest
from schedule_cases import (
    AFTER,
    at,
)

from lanekit.schedule import (
    Schedule,
    next_fires,
    parse_cron,
    parse_table,
    previous_fire,
    schedule_next_fires,
)


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is America/New_York for the test (DST: 2026-03-08 and 2026-11-01)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    assert "EST" in time.tzname, "tzdata for America/New_York is missing"
    yield
    monkeypatch.undo()
    time.tzset()


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


def test_previous_fire_in_the_repeated_autumn_hour(new_york: None) -> None:
    """2026-11-01 in New York: 01:00 EDT, 01:30 EDT, then 01:00-01:59 again as EST, where
    nothing fires (each wall minute fires once, at its first occurrence; launchd 10.9's
    cronemu, ported in test_launchd_calendar, agrees). At the second 01:15 (EST, fold=1) the
    last fire was 01:30 EDT; at the first 01:15 (EDT) it was 01:00 EDT."""
    from zoneinfo import ZoneInfo

    half_hourly = parse_cron("*/30 * * * *")
    second = datetime(2026, 11, 1, 1, 15, fold=1)
    assert second.timestamp() - datetime(2026, 11, 1, 1, 15).timestamp() == 3600
    assert previous_fire(half_hourly, second) == at(2026, 11, 1, 1, 30)
    assert previous_fire(half_hourly, at(2026, 11, 1, 1, 15)) == at(2026, 11, 1, 1, 0)
    est = datetime(2026, 11, 1, 6, 15, tzinfo=UTC).astimezone(ZoneInfo("America/New_York"))
    assert (est.hour, est.minute, est.tzname()) == (1, 15, "EST")
    assert previous_fire(half_hourly, est) == at(2026, 11, 1, 1, 30)
    # after the repeated hour, the wall clock's own order holds again
    assert previous_fire(half_hourly, at(2026, 11, 1, 2, 10)) == at(2026, 11, 1, 2, 0)
    assert previous_fire(parse_cron("0 9 * * *"), second) == at(2026, 10, 31, 9, 0)
