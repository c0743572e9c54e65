"""Cron text -> StartCalendarInterval entries (lanekit.schedule.cron), and its refusals."""

from __future__ import annotations

import pytest
from schedule_cases import (
    plist,
)

from lanekit.schedule import (
    ScheduleError,
    parse_cron,
)

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
    ("*/2 0-22 * * 1-5", "expands to 3450 launchd entries; at most 1000 are allowed"),
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
    """@reboot points at run_at_load, seconds at dropping the field, big expansions at a
    coarser step or every."""
    hints = {}
    for cron in ("@reboot", "0 0 0 * * *", "*/2 0-22 * * 1-5"):
        with pytest.raises(ScheduleError) as info:
            parse_cron(cron)
        hints[cron] = info.value.hint
    assert "run_at_load" in hints["@reboot"]
    assert "drop the seconds" in hints["0 0 0 * * *"]
    assert "coarser step" in hints["*/2 0-22 * * 1-5"]
    assert "every" in hints["*/2 0-22 * * 1-5"]
