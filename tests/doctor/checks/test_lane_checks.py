"""lane.missed-run (under a frozen clock, classified from what launchd says) and
priority.background-burst."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World

from lanekit.doctor import Severity
from lanekit.doctor.checks.lane import MissedRunCause, MissedRunFacts, classify_missed_run
from lanekit.queue.directory.backend import Queue
from lanekit.service.emulated.emulator import EmulatedDomain
from places import MACOS_TOOLS


@pytest.mark.parametrize(
    ("facts", "cause"),
    [
        (MissedRunFacts(loaded=False), MissedRunCause.NOT_LOADED),
        (MissedRunFacts(loaded=False, disabled=True), MissedRunCause.DISABLED),
        (MissedRunFacts(loaded=True, disabled=True), MissedRunCause.DISABLED),
        (MissedRunFacts(loaded=True, last_exit=78), MissedRunCause.EXIT_78),
        (MissedRunFacts(loaded=True, last_exit=78, output_since_fire=True), MissedRunCause.EXIT_78),
        (
            MissedRunFacts(loaded=True, last_exit=1, output_since_fire=True),
            MissedRunCause.RAN_SILENT,
        ),
        (MissedRunFacts(loaded=True, last_exit=1), MissedRunCause.THROTTLED),
        (MissedRunFacts(loaded=True, last_exit=-9), MissedRunCause.THROTTLED),
        (MissedRunFacts(loaded=True, state="spawn scheduled"), MissedRunCause.THROTTLED),
        (MissedRunFacts(loaded=True, last_exit=0), MissedRunCause.UNKNOWN),
        (MissedRunFacts(loaded=True), MissedRunCause.UNKNOWN),
        (MissedRunFacts(loaded=None), MissedRunCause.UNKNOWN),
        (MissedRunFacts(loaded=None, output_since_fire=True), MissedRunCause.RAN_SILENT),
        (MissedRunFacts(loaded=True, asleep=True), MissedRunCause.ASLEEP),
        (MissedRunFacts(loaded=None, asleep=True), MissedRunCause.ASLEEP),
        (MissedRunFacts(loaded=True, last_exit=1, asleep=True), MissedRunCause.THROTTLED),
        (MissedRunFacts(loaded=False, asleep=True), MissedRunCause.NOT_LOADED),
    ],
)
def test_missed_run_classification(facts: MissedRunFacts, cause: MissedRunCause) -> None:
    """The precedence of explanations for a silent fire, as a table."""
    assert classify_missed_run(facts) == cause


def two_hours_after_a_fire() -> datetime:
    """A frozen "now" two hours after the lane's 10:40 fire, two days ahead of the real clock
    (so everything the test writes now is from before that fire)."""
    return (datetime.now() + timedelta(days=2)).replace(hour=12, minute=40, second=0)


@pytest.fixture
def domain(tmp_path: Path) -> EmulatedDomain:
    """An emulated launchd domain under the test's Paths."""
    world = World.make(tmp_path)
    return EmulatedDomain(world.paths.emulator, launch_agents=world.paths.launch_agents)


def installed(tmp_path: Path, text: str = HEALTHY) -> World:
    """A world with the lane installed and a lane log last touched (now) before the fire."""
    world = World.make(tmp_path, text)
    world.install()
    from lanekit.run.lanelog import LaneLog

    LaneLog(world.lane().log_path, "funnel").event("finish", claimed=0)
    return world


def test_missed_run_without_launchd_is_unknown(tmp_path: Path) -> None:
    """Nothing in the log since 10:40 and no launchd to ask: a warning, asleep or off."""
    world = installed(tmp_path)
    now = two_hours_after_a_fire()
    [finding] = world.run("lane.missed-run", world.target(), now=now)
    assert finding.severity is Severity.WARNING
    assert f"should have run at {now:%Y-%m-%d} 10:40" in finding.message
    assert "asleep or powered off (unknown)" in finding.message
    assert finding.fix == "lanekit kick funnel  (runs it now)"


def test_missed_run_of_a_lane_not_loaded(tmp_path: Path, domain: EmulatedDomain) -> None:
    """Installed but never bootstrapped: classified "not loaded"; fix `lanekit apply`."""
    world = installed(tmp_path)
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert finding.severity is Severity.ERROR
    assert ": not loaded: " in finding.message
    assert finding.fix == "lanekit apply funnel"


def test_missed_run_of_a_disabled_lane(tmp_path: Path, domain: EmulatedDomain) -> None:
    """Loaded, then disabled in launchd: classified "disabled"."""
    world = installed(tmp_path)
    label = world.lane().label
    domain.bootstrap(world.paths.plist_for(label))
    domain.disable(label)
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert ": disabled: " in finding.message
    assert finding.fix == f"launchctl enable gui/{os.getuid()}/{label} && lanekit apply funnel"


def test_missed_run_because_of_exit_78(tmp_path: Path, domain: EmulatedDomain) -> None:
    """The log directory is gone, so the run launchd attempted ended 78 before the program:
    classified "exit 78", with the exit-78 finding's fix."""
    world = installed(tmp_path)
    lane = world.lane()
    domain.bootstrap(world.paths.plist_for(lane.label))
    shutil.rmtree(lane.stdout_path.parent)
    domain.kickstart(lane.label)
    assert domain.wait_idle(lane.label, 20)
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert ": exit 78: " in finding.message
    assert finding.fix == f"mkdir -p {lane.stdout_path.parent}"


def test_missed_run_of_a_failing_lane_is_throttled(tmp_path: Path, domain: EmulatedDomain) -> None:
    """Every run fails at once (its snapshot is gone, `lanekit run` exits 2): classified
    "throttled", fix: read its stderr."""
    world = installed(tmp_path)
    lane = world.lane()
    domain.bootstrap(world.paths.plist_for(lane.label))
    world.paths.snapshot_for(lane.label).unlink()
    domain.kickstart(lane.label)
    assert domain.wait_idle(lane.label, 20)
    assert {e.label: e.last_exit for e in domain.list()}[lane.label] not in (0, None)
    # its stderr was written now, before the frozen fire: it says nothing about that fire
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert ": throttled: " in finding.message
    assert finding.fix == "lanekit logs funnel --err"


def test_missed_run_that_ran_but_logged_nothing(tmp_path: Path, domain: EmulatedDomain) -> None:
    """launchd's stderr file changed after the fire, the lane log did not: the runner never
    got to log; classified "ran but logged nothing"."""
    world = installed(tmp_path)
    lane = world.lane()
    domain.bootstrap(world.paths.plist_for(lane.label))
    now = two_hours_after_a_fire()
    lane.stderr_path.write_text("Traceback ...\n")
    after_fire = (now - timedelta(minutes=100)).timestamp()
    os.utime(lane.stderr_path, (after_fire, after_fire))
    [finding] = world.run("lane.missed-run", world.target(), launchd=domain, now=now)
    assert ": ran but logged nothing: " in finding.message
    assert finding.fix.startswith("lanekit logs funnel --err")


def test_loaded_lane_that_missed_a_fire_is_unknown(tmp_path: Path, domain: EmulatedDomain) -> None:
    """Loaded, enabled, never failed, nothing ran: the Mac was asleep or off (a warning)."""
    world = installed(tmp_path)
    domain.bootstrap(world.paths.plist_for(world.lane().label))
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert finding.severity is Severity.WARNING
    assert "asleep or powered off (unknown)" in finding.message


def test_missed_interval_fire_is_not_promised_on_wake(
    tmp_path: Path, domain: EmulatedDomain
) -> None:
    """An interval lane's fires during sleep are missed (launchd.plist(5)), so the text says
    missed, never "runs on wake"; a calendar lane's text says it runs once on wake."""
    world = installed(tmp_path, HEALTHY.replace('schedule = ["40 10 * * *"]', 'every = "1h"'))
    domain.bootstrap(world.paths.plist_for(world.lane().label))
    [finding] = world.run(
        "lane.missed-run", world.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert "fires during sleep are missed" in finding.message
    assert "on wake" not in finding.message
    calendar = installed(tmp_path / "calendar")
    domain.bootout(world.lane().label)  # same label: the calendar lane replaces it
    domain.bootstrap(calendar.paths.plist_for(calendar.lane().label))
    [finding] = calendar.run(
        "lane.missed-run", calendar.target(), launchd=domain, now=two_hours_after_a_fire()
    )
    assert "runs a calendar fire once on wake" in finding.message


def test_a_run_after_the_fire_is_evidence(tmp_path: Path) -> None:
    """A `start` event after the fire means it ran: nothing to report."""
    from lanekit.run.lanelog import LaneLog

    world = installed(tmp_path)
    now = two_hours_after_a_fire()
    fired = (now - timedelta(minutes=119)).timestamp()
    LaneLog(world.lane().log_path, "funnel", clock=lambda: fired).event("start", pid=1)
    assert world.run("lane.missed-run", world.target(), now=now) == []


def test_apply_lines_after_the_fire_are_not_a_run(tmp_path: Path) -> None:
    """`apply` logs `applied` and `skipped by=apply` lines; they are not a run, so the fire is
    still missed (before, any line after the fire hid the finding)."""
    from lanekit.run.lanelog import LaneLog

    world = installed(tmp_path)
    now = two_hours_after_a_fire()
    later = (now - timedelta(minutes=100)).timestamp()
    log = LaneLog(world.lane().log_path, "funnel", clock=lambda: later)
    log.event("applied", action="load", by="apply")
    log.event("skipped", reason="running", pid=1, by="apply")
    assert len(world.run("lane.missed-run", world.target(), now=now)) == 1


def test_within_the_grace_nothing_is_missed_yet(tmp_path: Path) -> None:
    """Yesterday's fire left its `start`; five minutes after today's fire the run may still be
    on its way (not reported), fifteen minutes after it is missed."""
    from lanekit.run.lanelog import LaneLog

    world = installed(tmp_path)
    today = two_hours_after_a_fire()
    yesterday_run = (today - timedelta(days=1)).replace(hour=10, minute=41).timestamp()
    LaneLog(world.lane().log_path, "funnel", clock=lambda: yesterday_run).event("start", pid=1)
    assert world.run("lane.missed-run", world.target(), now=today.replace(hour=10, minute=45)) == []
    late = world.run("lane.missed-run", world.target(), now=today.replace(hour=10, minute=55))
    assert [f.id for f in late] == ["lane.missed-run"]


def test_lane_installed_after_the_fire_missed_nothing(tmp_path: Path) -> None:
    """launchd never replays a fire from before the load: a lane installed after it is fine."""
    real = datetime.now()
    text = HEALTHY.replace("40 10 * * *", f"{(real - timedelta(minutes=30)):%M %H} * * *")
    world = World.make(tmp_path, text)
    world.install()
    assert not world.lane().log_path.exists()  # no run at all: only the install time speaks
    assert world.run("lane.missed-run", world.target(), now=real + timedelta(minutes=1)) == []
    plist = world.paths.plist_for(world.lane().label)
    before = (real - timedelta(hours=1)).timestamp()
    os.utime(plist, (before, before))  # installed before that fire: now it was missed
    assert len(world.run("lane.missed-run", world.target(), now=real + timedelta(minutes=1))) == 1


def test_missed_interval_run(tmp_path: Path) -> None:
    """An every-15-minutes lane with nothing in its log for 40 minutes missed a run."""
    text = HEALTHY.replace('schedule = ["40 10 * * *"]', 'every = "15m"')
    world = installed(tmp_path, text)
    now = datetime.now() + timedelta(minutes=40)
    [finding] = world.run("lane.missed-run", world.target(), now=now)
    assert "should have run at" in finding.message
    assert world.run("lane.missed-run", world.target(), now=datetime.now()) == []


BURSTY = HEALTHY.replace(
    'schedule = ["40 10 * * *"]', 'schedule = ["40 10 * * *"]\nnice = 10\nlow_priority_io = true'
)


def test_background_lane_with_a_burst_waiting(tmp_path: Path) -> None:
    """Seed 001: Nice 10 + LowPriorityIO while 25 jobs wait: a warning with the edit."""
    world = World.make(tmp_path, BURSTY)
    world.install()
    queue = Queue(world.lane().queue.dir)
    for n in range(25):
        queue.enqueue({"n": n})
    [finding] = world.run("priority.background-burst", world.target())
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("Nice 10 and LowPriorityIO make the lane yield")
    assert "25 jobs wait" in finding.message
    assert finding.fix.startswith(
        "remove nice / low_priority_io / process_type from [lanes.funnel]"
    )


def test_one_setting_makes_the_lane_yield(tmp_path: Path) -> None:
    """One setting is one subject: "Nice 10 makes the lane yield", not "make"."""
    world = World.make(tmp_path, BURSTY.replace("low_priority_io = true\n", ""))
    world.install()
    queue = Queue(world.lane().queue.dir)
    for n in range(25):
        queue.enqueue({"n": n})
    [finding] = world.run("priority.background-burst", world.target())
    assert finding.message.startswith("Nice 10 makes the lane yield to everything else")


def test_background_lane_with_a_trickle_is_fine(tmp_path: Path) -> None:
    """A handful of jobs is what a background lane is for."""
    world = World.make(tmp_path, BURSTY)
    world.install()
    Queue(world.lane().queue.dir).enqueue({"n": 1})
    assert world.run("priority.background-burst", world.target()) == []


def test_missed_leap_day_run_is_not_skipped(tmp_path: Path) -> None:
    """A Feb-29 lane whose last fire (2028-02-29) is more than 400 days back is still checked:
    the previous-fire look-back spans the 8-year leap gap (issue 12 item 18; before, there was
    no previous fire and the check said nothing)."""
    text = HEALTHY.replace('schedule = ["40 10 * * *"]', 'schedule = ["0 0 29 2 *"]')
    world = installed(tmp_path, text)
    [finding] = world.run("lane.missed-run", world.target(), now=datetime(2029, 6, 1, 12, 0))
    assert "should have run at 2028-02-29 00:00" in finding.message


def _capture(name: str) -> str:
    samples = MACOS_TOOLS
    return (samples / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


@pytest.mark.parametrize("every", [False, True])
def test_missed_run_during_a_sleep_says_when_the_mac_slept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: bool
) -> None:
    """A fire that fell in a sleep of the real `pmset -g log` capture (about 15 h, 2020-08-29):
    the missed run is explained as "the Mac was asleep from A to B" (local times), a calendar
    lane's fire runs on wake, an interval lane's is missed; pmset is read once per doctor run,
    through the probes seam."""
    from lanekit.service.launchd import power, probes

    text = _capture("pmset-log-02")
    [span] = power.sleep_spans(power.parse_pmset_log(text))
    start = span.start.astimezone().replace(tzinfo=None)
    end = span.end.astimezone().replace(tzinfo=None)
    fire = (start + timedelta(hours=2)).replace(second=0, microsecond=0)
    schedule = "every = 3600" if every else f'schedule = ["{fire.minute} {fire.hour} * * *"]'
    world = World.make(tmp_path, HEALTHY.replace('schedule = ["40 10 * * *"]', schedule))
    plist = world.install()
    os.utime(plist, (start.timestamp() - 86400, start.timestamp() - 86400))
    calls: list[int] = []

    def pmset_log() -> str:
        calls.append(1)
        return text

    monkeypatch.setattr(probes, "pmset_log", pmset_log)
    now = end + timedelta(hours=1) if not every else fire + timedelta(hours=1, minutes=10)
    ctx = world.context(now=now)
    [finding] = ctx.findings("lane.missed-run", world.target())
    assert finding.severity is Severity.WARNING
    assert f"{MissedRunCause.ASLEEP}:" in finding.message
    assert f"the Mac was asleep from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M}" in (
        finding.message
    )
    assert "Clamshell Sleep" in finding.message
    if every:
        assert "missed, not run on wake" in finding.message
    else:
        assert "once on wake" in finding.message
    assert finding.fix == "lanekit kick funnel  (runs it now)"
    ctx.findings("lane.missed-run", world.target())
    assert calls == [1]


def test_missed_run_outside_any_sleep_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fire the power log shows the Mac awake for (the capture's sleeps are of 2020) is not
    blamed on sleep: asleep or powered off (unknown), as without pmset."""
    from lanekit.service.launchd import probes

    monkeypatch.setattr(probes, "pmset_log", lambda: _capture("pmset-log-02"))
    world = installed(tmp_path)
    [finding] = world.run("lane.missed-run", world.target(), now=two_hours_after_a_fire())
    assert "asleep or powered off (unknown)" in finding.message
    assert "the Mac was asleep from" not in finding.message
