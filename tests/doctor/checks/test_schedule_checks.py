"""schedule.* checks on hand-written plists (lanes.toml refuses most of these mistakes) and on
lanes that collide on one queue."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from doctor_world import HEALTHY, World, job_plist

from lanekit.doctor import Severity


def test_hour_without_minute_runs_every_minute(tmp_path: Path) -> None:
    """`{Hour=3}` in a hand-written plist is sixty runs from 03:00 to 03:59."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StartCalendarInterval={"Hour": 3}))
    [finding] = world.run("schedule.every-minute", target)
    assert finding.severity is Severity.WARNING
    assert "every minute from 03:00 to 03:59" in finding.message
    assert finding.fix == (
        "add <key>Minute</key><integer>0</integer> to that entry in StartCalendarInterval in "
        f"{target.plist_path}"
    )


def test_entries_with_minutes_are_fine(tmp_path: Path) -> None:
    """The seed's two entries (10:40 and 16:40) fire once each."""
    world = World.make(tmp_path)
    entries = [{"Hour": 10, "Minute": 40}, {"Hour": 16, "Minute": 40}]
    target = world.foreign(job_plist(StartCalendarInterval=entries))
    assert world.run("schedule.every-minute", target) == []
    assert world.run("schedule.out-of-range", target) == []


def test_explicit_every_minute_cron_in_a_lane(tmp_path: Path) -> None:
    """`* 3 * * *` is accepted in lanes.toml when written explicitly; doctor still points at it."""
    world = World.make(tmp_path, HEALTHY.replace("40 10 * * *", "* 3 * * *"))
    world.install()
    [finding] = world.run("schedule.every-minute", world.target())
    assert finding.fix.startswith("write a cron line with a minute")


def test_hour_24_drops_the_whole_entry(tmp_path: Path) -> None:
    """Hour 24 is out of range: launchd drops that entry and the job never fires then."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StartCalendarInterval=[{"Hour": 24, "Minute": 0}]))
    [finding] = world.run("schedule.out-of-range", target)
    assert finding.severity is Severity.ERROR
    assert "Hour 24 is outside 0-23" in finding.message
    assert (
        finding.fix
        == f"write Hour between 0 and 23 in StartCalendarInterval in {target.plist_path}"
    )


def test_month_zero_is_a_wildcard_not_a_value(tmp_path: Path) -> None:
    """Month 0 and negative values only warn in launchd and act as wildcards."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StartCalendarInterval={"Month": 0, "Day": 1, "Minute": 0}))
    [finding] = world.run("schedule.out-of-range", target)
    assert finding.severity is Severity.WARNING
    assert "treated as a wildcard" in finding.message


def test_non_positive_start_interval_is_ignored(tmp_path: Path) -> None:
    """StartInterval 0 is ignored by launchd: the timer never fires."""
    world = World.make(tmp_path)
    [finding] = world.run("schedule.out-of-range", world.foreign(job_plist(StartInterval=0)))
    assert "StartInterval 0" in finding.message


COLLIDING = (
    HEALTHY
    + """
[lanes.pm]
queue = "notes"
command = ["true", "{job}"]
schedule = ["40 10 * * *", "0 18 * * *"]
"""
)


def test_two_lanes_of_one_queue_in_the_same_minute(tmp_path: Path) -> None:
    """Seed 001's burst: funnel and pm both start at 10:40 on queue notes; each is told."""
    world = World.make(tmp_path, COLLIDING)
    now = datetime(2026, 9, 17, 9, 0)
    [funnel] = world.run("schedule.collision", world.target("funnel"), now=now)
    [pm] = world.run("schedule.collision", world.target("pm"), now=now)
    assert funnel.severity is Severity.WARNING
    assert "same minute as lane pm on queue notes (next at 2026-09-17 10:40)" in funnel.message
    assert "same minute as lane funnel" in pm.message
    assert funnel.fix == (
        "shift the minute of one of them in `schedule` of [lanes.pm] or [lanes.funnel] in "
        "lanes.toml, then run `lanekit apply`"
    )


def test_lanes_a_minute_apart_do_not_collide(tmp_path: Path) -> None:
    """Moving pm to 10:41 clears it."""
    world = World.make(tmp_path, COLLIDING.replace('"40 10 * * *", "0 18', '"41 10 * * *", "0 18'))
    assert world.run("schedule.collision", world.target("funnel")) == []


def test_interval_below_throttle(tmp_path: Path) -> None:
    """StartInterval 5 with the default ThrottleInterval 10 runs every 10 s at best."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StartInterval=5))
    [finding] = world.run("schedule.interval-below-throttle", target)
    assert "at most every 10 s" in finding.message
    assert finding.fix == (
        "set StartInterval to 10 or more, or add <key>ThrottleInterval</key><integer>5</integer>"
        f", in {target.plist_path}"
    )


def test_interval_with_lowered_throttle_is_fine(tmp_path: Path) -> None:
    """Lowering ThrottleInterval to the interval is the documented way to run that often."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StartInterval=5, ThrottleInterval=5))
    assert world.run("schedule.interval-below-throttle", target) == []
