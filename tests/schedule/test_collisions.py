"""Lanes of one queue firing in the same minute (lanekit.schedule.collisions.find_collisions)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from schedule_cases import (
    AFTER,
    Cron,
    at,
    cron_matches_day,
    crons,
    parsed,
)

from lanekit.config import LaneSpec, QueueSpec
from lanekit.schedule import (
    CalendarEntry,
    build_schedule,
    collisions_with,
    find_collisions,
)


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


def test_a_schedule_given_to_lanekit_schedule_collides_with_the_lanes_of_its_queue() -> None:
    """collisions_with: as lane "a"'s schedule, only the other lanes of a's queue count (a
    itself is replaced); without a lane, every lane with a calendar counts, whatever its queue;
    StartInterval lanes and lanes that never share a minute never do."""
    lanes = [
        lane("a", "q", "0 3 * * *"),
        lane("b", "q", "0 3 * * mon"),
        lane("c", "other", "0 3 * * *"),
        lane("d", "q", None, every="15m"),
        lane("e", "q", "5 3 * * *"),
    ]
    proposed = build_schedule("0 3 * * *", None)
    after = datetime(2026, 12, 5, 12, 0)  # a Saturday
    as_a = collisions_with(proposed, lanes, lane="a", after=after)
    assert [(c.queue, c.lanes, c.example) for c in as_a] == [
        ("q", ("a", "b"), datetime(2026, 12, 7, 3, 0))
    ]
    assert str(as_a[0]) == (
        'lane "a" with this schedule and lane "b" both drain queue "q" and can start in the '
        "same minute, next at 2026-12-07 03:00"
    )
    anywhere = collisions_with(proposed, lanes, after=after)
    assert [c.lanes[1] for c in anywhere] == ["a", "b", "c"]
    assert str(anywhere[2]) == (
        'this schedule and lane "c" (which drains queue "other") can start in the same minute, '
        "next at 2026-12-06 03:00"
    )
