"""The dead man's switch: when the watchdog has not completed a pass for 3 × every, doctor
reports `watch.not-running` with the reason it can find, and `lanekit status` says so."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from watch_world import WatchWorld

from lanekit.config.watch import WATCH_LANE
from lanekit.doctor import DoctorRequest, Finding, Severity, diagnose
from lanekit.status.lanes import status


def _frozen(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def _not_running(world: WatchWorld, now: datetime) -> list[Finding]:
    report = diagnose(
        DoctorRequest(checks=("watch.not-running",), config_path=world.config_path),
        world.paths,
        env={},
        launchd=world.domain,
        now=_frozen(now),
    )
    return list(report.findings)


def _installed_at(world: WatchWorld) -> datetime:
    plist = world.paths.plist_for(world.lane(WATCH_LANE).label)
    return datetime.fromtimestamp(plist.stat().st_mtime)


def test_a_watchdog_that_keeps_up_is_fine(tmp_path: Path) -> None:
    """A pass 14 minutes ago (every 5m: limit 15m) is not overdue; at 16 minutes it is."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    passed = datetime.now()
    world.watch(now=_frozen(passed))
    assert _not_running(world, passed + timedelta(minutes=14)) == []
    [finding] = _not_running(world, passed + timedelta(minutes=16))
    assert finding.subject == WATCH_LANE
    assert f"since {passed:%Y-%m-%d %H:%M}" in finding.message
    assert "3 × every = 5m" not in finding.message
    assert "3 × every = 15m" in finding.message


def test_never_ran_and_loaded_says_asleep_or_off(tmp_path: Path) -> None:
    """Installed, loaded, never a pass, nothing failed: the Mac was asleep (a warning)."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    [finding] = _not_running(world, _installed_at(world) + timedelta(minutes=20))
    assert finding.severity is Severity.WARNING
    assert "ever since it was installed" in finding.message
    assert "asleep or powered off" in finding.message


def test_booted_out_watchdog_says_not_loaded(tmp_path: Path) -> None:
    """`launchctl bootout` of the watchdog by hand: not loaded, fixed by `lanekit apply`."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    world.domain.bootout(world.lane(WATCH_LANE).label)
    [finding] = _not_running(world, _installed_at(world) + timedelta(hours=1))
    assert finding.severity is Severity.ERROR
    assert "not loaded" in finding.message
    assert finding.fix == "lanekit apply watch"


def test_exit_78_watchdog_names_the_cause(tmp_path: Path) -> None:
    """The watchdog's log directory is gone, so launchd cannot start it (exit 78): the
    finding says so and its fix is exit 78's."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    lane = world.lane(WATCH_LANE)
    shutil.rmtree(lane.stdout_path.parent)
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 20)
    [finding] = _not_running(world, _installed_at(world) + timedelta(hours=1))
    assert "exit 78" in finding.message
    assert finding.severity is Severity.ERROR


def test_status_shows_the_silent_watchdog(tmp_path: Path) -> None:
    """`lanekit status` carries the same sentence on the watchdog's row; other rows none."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    world.domain.bootout(world.lane(WATCH_LANE).label)
    later = _installed_at(world) + timedelta(hours=1)
    rows = {r.lane: r for r in status(world.config(), world.paths, world.domain, now=later)}
    assert rows["funnel"].watchdog is None
    text = rows[WATCH_LANE].watchdog
    assert text is not None
    assert text.startswith("the watchdog has not completed a pass for 1h")
    assert "not loaded" in text
