"""A lane's schedule value built into a Schedule (lanekit.schedule.build)."""

from __future__ import annotations

import pytest
from schedule_cases import (
    plist,
)

from lanekit.schedule import (
    MAX_ENTRIES,
    WARN_ENTRIES,
    Schedule,
    ScheduleError,
    build_schedule,
)


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
    """The entry limit applies to the merged calendar, with the total in the message."""
    with pytest.raises(ScheduleError) as info:
        build_schedule(["0-58 0-11 * * *", "0-58 12-22 * * *"], None)
    assert info.value.message == (
        f"schedule expands to 1357 launchd entries; at most {MAX_ENTRIES} are allowed"
    )


def test_office_hours_fit_and_a_bigger_calendar_is_warned_about() -> None:
    """Office hours every 15 minutes (220 entries) build without a word; past WARN_ENTRIES the
    schedule builds with a warning that names the count."""
    office = build_schedule("*/15 8-18 * * mon-fri", None)
    assert (len(office.calendar), office.warnings) == (220, ())
    busy = build_schedule("*/10 7-20 * * mon-fri", None)
    assert len(busy.calendar) == 420 > WARN_ENTRIES
    assert busy.warnings == (
        f"the schedule expands to 420 launchd entries (more than {WARN_ENTRIES}): launchd "
        "keeps each and arms a timer for it; a coarser step or a narrower range is usually "
        "what was meant",
    )
