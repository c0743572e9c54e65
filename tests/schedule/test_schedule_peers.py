"""Cases from other projects' test suites (croniter, cronsim, python-crontab,
`systemd-analyze calendar`): lanekit agrees with every peer except where a peer is wrong."""

from __future__ import annotations

from datetime import timedelta

import pytest
from schedule_cases import (
    AFTER,
    at,
)

from lanekit.schedule import (
    CalendarEntry,
    Schedule,
    build_schedule,
    day_and_warning,
    fires_at,
    next_fires,
    parse_cron,
    previous_fire,
    schedule_entry_errors,
)

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
