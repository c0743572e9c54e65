"""lanekit's StartCalendarInterval entries run through launchd 10.9's own calendar code, ported.

The reference below is a line-by-line Python port of `cronemu`, `cronemu_wday`, `cronemu_mon`,
`cronemu_mday`, `cronemu_hour`, `cronemu_min` and `calendarinterval_setalarm` from launchd
10.9's `src/core.c` (apple-oss-distributions/launchd, tag launchd-842.1.4, the last open-source
launchd; https://github.com/apple-oss-distributions/launchd/blob/launchd-842.1.4/src/core.c),
over a port of mktime(3)'s normalisation: fields out of range carry into the next field (April
31 is May 1), and tm_isdst chooses the UTC offset (-1: the zone decides, taking the first
occurrence of a repeated time and the offset before the change for a skipped one, as tzcode's
mktime does; 0 or 1: standard or daylight time, whatever the date). The plist's Month is
`tm_mon = Month - 1` there, Weekday 7 is 0, and a missing key is -1.

The table pins, for each cron text: what lanekit writes, the days launchd 10.9 would run it,
the days cron runs it (lanekit's own fires), and whether lanekit warns. A warning is due
exactly when 10.9 would run it on a day cron would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from lanekit.schedule import CalendarEntry, build_schedule, describe, next_fires, parse_cron


@dataclass
class Tm:
    """struct tm: the fields cronemu reads and writes (tm_mon 0-11, tm_wday 0 = Sunday)."""

    year: int
    mon: int
    mday: int
    hour: int
    min: int
    wday: int = 0
    isdst: int = -1


def mktime(tm: Tm, zone: ZoneInfo) -> int:
    """mktime(3): normalise the fields, resolve them to a UTC time with tm_isdst, write the
    local fields of that time back (tm_wday and tm_isdst too) and return it."""
    year, mon = tm.year + tm.mon // 12, tm.mon % 12
    wall = datetime(year, mon + 1, 1) + timedelta(days=tm.mday - 1, hours=tm.hour, minutes=tm.min)
    if tm.isdst == -1:
        moment = wall.replace(tzinfo=zone, fold=0)
    else:
        probe = wall.replace(tzinfo=zone)
        standard = (probe.utcoffset() or timedelta()) - (probe.dst() or timedelta())
        offset = standard + (timedelta(hours=1) if tm.isdst else timedelta())
        moment = (wall - offset).replace(tzinfo=UTC)
    local = moment.astimezone(zone)
    tm.year, tm.mon, tm.mday = local.year, local.month - 1, local.day
    tm.hour, tm.min = local.hour, local.minute
    tm.wday = (local.weekday() + 1) % 7
    tm.isdst = 1 if local.dst() else 0
    return int(moment.timestamp())


def localtime(stamp: int, zone: ZoneInfo) -> Tm:
    """localtime(3)."""
    local = datetime.fromtimestamp(stamp, zone)
    return Tm(
        local.year,
        local.month - 1,
        local.day,
        local.hour,
        local.minute,
        (local.weekday() + 1) % 7,
        1 if local.dst() else 0,
    )


def cronemu(mon: int, mday: int, hour: int, minute: int, now: int, zone: ZoneInfo) -> int:
    tm = localtime(now, zone)
    tm.isdst = -1
    tm.min += 1
    while not cronemu_mon(tm, mon, mday, hour, minute, zone):
        tm.year += 1
        tm.mon, tm.mday, tm.hour, tm.min = 0, 1, 0, 0
        mktime(tm, zone)
    return mktime(tm, zone)


def cronemu_wday(wday: int, hour: int, minute: int, now: int, zone: ZoneInfo) -> int:
    tm = localtime(now, zone)
    tm.isdst = -1
    tm.min += 1
    if wday == 7:
        wday = 0
    while not (tm.wday == wday and cronemu_hour(tm, hour, minute, zone)):
        tm.mday += 1
        tm.hour, tm.min = 0, 0
        mktime(tm, zone)
    return mktime(tm, zone)


def _copy(tm: Tm) -> Tm:
    return Tm(tm.year, tm.mon, tm.mday, tm.hour, tm.min, tm.wday, tm.isdst)


def _assign(tm: Tm, other: Tm) -> None:
    tm.year, tm.mon, tm.mday, tm.hour, tm.min = (
        other.year,
        other.mon,
        other.mday,
        other.hour,
        other.min,
    )
    tm.wday, tm.isdst = other.wday, other.isdst


def cronemu_mon(tm: Tm, mon: int, mday: int, hour: int, minute: int, zone: ZoneInfo) -> bool:
    if mon == -1:
        work = _copy(tm)
        while not cronemu_mday(work, mday, hour, minute, zone):
            work.mon += 1
            work.mday, work.hour, work.min = 1, 0, 0
            carry = work.mon
            mktime(work, zone)
            if carry != work.mon:
                return False
        _assign(tm, work)
        return True
    if mon < tm.mon:
        return False
    if mon > tm.mon:
        tm.mon, tm.mday, tm.hour, tm.min = mon, 1, 0, 0
    return cronemu_mday(tm, mday, hour, minute, zone)


def cronemu_mday(tm: Tm, mday: int, hour: int, minute: int, zone: ZoneInfo) -> bool:
    if mday == -1:
        work = _copy(tm)
        while not cronemu_hour(work, hour, minute, zone):
            work.mday += 1
            work.hour, work.min = 0, 0
            carry = work.mday
            mktime(work, zone)
            if carry != work.mday:
                return False
        _assign(tm, work)
        return True
    if mday < tm.mday:
        return False
    if mday > tm.mday:
        tm.mday, tm.hour, tm.min = mday, 0, 0
    return cronemu_hour(tm, hour, minute, zone)


def cronemu_hour(tm: Tm, hour: int, minute: int, zone: ZoneInfo) -> bool:
    if hour == -1:
        work = _copy(tm)
        while not cronemu_min(work, minute):
            work.hour += 1
            work.min = 0
            carry = work.hour
            mktime(work, zone)
            if carry != work.hour:
                return False
        _assign(tm, work)
        return True
    if hour < tm.hour:
        return False
    if hour > tm.hour:
        tm.hour, tm.min = hour, 0
    return cronemu_min(tm, minute)


def cronemu_min(tm: Tm, minute: int) -> bool:
    if minute == -1:
        return True
    if minute < tm.min:
        return False
    if minute > tm.min:
        tm.min = minute
    return True


def setalarm(entry: CalendarEntry, now: int, zone: ZoneInfo) -> int:
    """calendarinterval_setalarm: the next start of one StartCalendarInterval dict."""

    def key(value: int | None) -> int:
        return -1 if value is None else value

    mon = -1 if entry.month is None else entry.month - 1
    later = cronemu(mon, key(entry.day), key(entry.hour), key(entry.minute), now, zone)
    if entry.weekday is not None:
        other = cronemu_wday(entry.weekday, key(entry.hour), key(entry.minute), now, zone)
        later = other if entry.day is None else min(later, other)
    return later


def launchd_10_9_starts(
    entries: tuple[CalendarEntry, ...], start: datetime, end: datetime, zone: ZoneInfo
) -> list[datetime]:
    """Every start of the job from `start` to `end` (aware): each dict re-armed after it
    fires, from the time it fired, as launchd does."""
    fires: set[int] = set()
    for entry in entries:
        now = int(start.timestamp())
        while (now := setalarm(entry, now, zone)) <= end.timestamp():
            fires.add(now)
    return [datetime.fromtimestamp(stamp, zone) for stamp in sorted(fires)]


UTC_ZONE = ZoneInfo("UTC")
START = datetime(2026, 12, 31, 23, 0, tzinfo=UTC_ZONE)
END = datetime(2029, 1, 1, tzinfo=UTC_ZONE)
"""2027 (not a leap year) and 2028 (a leap year), in a zone without DST."""


def cron_days(text: str) -> list[datetime]:
    """The days cron runs it in [START, END] (lanekit's fires, which follow cron)."""
    entries, fires = parse_cron(text), []
    after = START.replace(tzinfo=None)
    while (found := next_fires(entries, after, 1)) and found[0] <= END.replace(tzinfo=None):
        after = found[0]
        fires.append(after.replace(tzinfo=UTC_ZONE))
    return fires


def raw_entry(**keys: int) -> tuple[CalendarEntry, ...]:
    """One dict as a plist would have it (lowercase keys), unrewritten."""
    return (CalendarEntry(**keys),)


@pytest.mark.parametrize(
    ("cron", "warned"),
    [
        ("0 0 31 * *", False),  # explicit Month+Day entries: nothing to normalise
        ("0 0 30 * *", False),
        ("0 0 29 * *", True),  # Feb 29 entry: March 1 in 2027
        ("0 0 29 2 *", True),
        ("0 0 */2 * *", False),  # Feb 29 -> March 1, which runs anyway
        ("0 9 * 6 1", True),  # Month ignored beside Weekday: every Monday
        ("0 0 30 2 */3", True),  # Day 30 dropped; Month beside Weekday remains
        ("0 0 31 * 1", False),  # day 31 split from the Mondays
        ("0 0 15 * *", False),
        ("30 6 * * 1-5", False),
        ("0 12 1 1,7 *", False),
    ],
)
def test_rendering_against_launchd_10_9(cron: str, warned: bool) -> None:
    """launchd 10.9 runs what lanekit writes on exactly the days cron does, except where
    lanekit warns; and where it warns, 10.9 really does differ."""
    entries = parse_cron(cron)
    launchd = launchd_10_9_starts(entries, START, END, UTC_ZONE)
    cron_fires = cron_days(cron)
    assert cron_fires and launchd
    assert bool(build_schedule(cron).warnings and _launchd_warning(cron)) is warned
    assert (launchd != cron_fires) is warned, (cron, set(launchd) ^ set(cron_fires))
    assert set(cron_fires) <= set(launchd)  # lanekit never loses a run cron makes


def _launchd_warning(cron: str) -> bool:
    return any("launchd may" in w for w in build_schedule(cron).warnings)


@pytest.mark.parametrize(
    ("entries", "extra"),
    [
        # the findings, reproduced by the port: one plist dict as written
        (raw_entry(day=31, hour=0, minute=0), {(2027, 3, 3), (2027, 5, 1), (2027, 7, 1)}),
        (raw_entry(month=2, day=29, hour=0, minute=0), {(2027, 3, 1)}),
        (raw_entry(month=6, weekday=1, hour=9, minute=0), {(2027, 1, 4), (2027, 12, 27)}),
    ],
)
def test_the_port_reproduces_launchd_10_9(
    entries: tuple[CalendarEntry, ...], extra: set[tuple[int, int, int]]
) -> None:
    """{Day=31} fires on March 3, May 1 and July 1; {Month=2, Day=29} on March 1 of a
    non-leap year; {Month=6, Weekday=1} on Mondays outside June."""
    days = {(f.year, f.month, f.day) for f in launchd_10_9_starts(entries, START, END, UTC_ZONE)}
    assert extra <= days


def test_what_lanekit_writes_for_day_31_and_february_30() -> None:
    """Day 29-31 without a Month: one Month+Day entry per month that has it; a Day the month
    never has beside a Weekday is dropped, and `0 0 30 2 */3` is not "February 30"."""
    assert {(e.month, e.day) for e in parse_cron("0 0 31 * *")} == {
        (m, 31) for m in (1, 3, 5, 7, 8, 10, 12)
    }
    assert {e.month for e in parse_cron("0 0 29 * *")} == set(range(1, 13))
    february = parse_cron("0 0 30 2 */3")
    assert {(e.month, e.day, e.weekday) for e in february} == {
        (2, None, 0),
        (2, None, 3),
        (2, None, 6),
    }
    assert "February 30" not in describe(february)
    assert describe(february) == "every Wednesday, Saturday and Sunday in February at 00:00"


def test_warnings_say_what_launchd_may_do_and_the_fix() -> None:
    """Feb 29 and Month+Weekday warnings, for cron text and tables, each starting with the
    expression and naming the fix; a table's Day 31 without a Month too."""
    [leap] = build_schedule("0 0 29 2 *").warnings
    assert leap.startswith('"0 0 29 2 *": launchd may also run it on March 1')
    assert "date +%d" in leap
    [june] = build_schedule("0 9 * 6 1").warnings
    assert june.startswith('"0 9 * 6 1": launchd may run it on those weekdays in every month')
    assert "June" in june and "6) ;; *) exit 0" in june
    [table] = build_schedule({"Month": 6, "Weekday": 1, "Hour": 9, "Minute": 0}).warnings
    assert table.startswith('"{Month=6, Weekday=1, Hour=9, Minute=0}"')
    [day31] = build_schedule({"Day": 31, "Hour": 3, "Minute": 0}).warnings
    assert "May 1" in day31 and "{Month=1, Day=31}" in day31
    assert build_schedule("0 0 31 * *").warnings == ()


NEW_YORK = ZoneInfo("America/New_York")


def test_the_port_on_dst_days() -> None:
    """What the docs say about DST under launchd 10.9, from the port: a daily 09:00 runs at
    10:00 EDT on the spring-forward day and twice on the fall-back day (08:00 and 09:00 EST);
    lanekit's own model (each wall time once) is what it uses for next/previous fires."""
    daily = parse_cron("0 9 * * *")
    spring = launchd_10_9_starts(
        daily,
        datetime(2026, 3, 7, 0, tzinfo=NEW_YORK),
        datetime(2026, 3, 9, 12, tzinfo=NEW_YORK),
        NEW_YORK,
    )
    assert [(f.day, f.hour, f.tzname()) for f in spring] == [
        (7, 9, "EST"),
        (8, 10, "EDT"),
        (9, 9, "EDT"),
    ]
    autumn = launchd_10_9_starts(
        daily,
        datetime(2026, 10, 31, 0, tzinfo=NEW_YORK),
        datetime(2026, 11, 2, 12, tzinfo=NEW_YORK),
        NEW_YORK,
    )
    assert [(f.day, f.hour, f.tzname()) for f in autumn] == [
        (31, 9, "EDT"),
        (1, 8, "EST"),
        (1, 9, "EST"),
        (2, 9, "EST"),
    ]
    # the repeated hour itself: 01:00 and 01:30 EDT, then nothing until 02:00 EST
    half_hourly = launchd_10_9_starts(
        parse_cron("*/30 * * * *"),
        datetime(2026, 11, 1, 0, 45, tzinfo=NEW_YORK),
        datetime(2026, 11, 1, 2, 0, tzinfo=NEW_YORK),
        NEW_YORK,
    )
    assert [(f.hour, f.minute, f.tzname()) for f in half_hourly] == [
        (1, 0, "EDT"),
        (1, 30, "EDT"),
        (2, 0, "EST"),
    ]


def test_too_many_per_month_entries_keep_the_day_and_warn() -> None:
    """Day 31 every two minutes from 00:00 to 04:58 is 150 entries as {Day=31} but 1,050 as
    one per month (over MAX_ENTRIES): the Day is kept as written (within launchd's limit) and
    the warning says what launchd 10.9 does with it and the guard that makes it safe;
    duplicates do not count towards the limit."""
    schedule = build_schedule("*/2 0-4 31 * *")
    assert len(schedule.calendar) == 150 and {e.day for e in schedule.calendar} == {31}
    assert all(e.month is None for e in schedule.calendar)
    [warning] = schedule.warnings
    assert "May 1" in warning and '[ "$(date +%d)" = 31 ] || exit 0' in warning
    assert len(build_schedule("0 0 31 * 1,2").calendar) == 9  # 7 months + Monday + Tuesday
