"""The watchdog is a lane of lanekit's own: its plist (a golden file), and `apply`, `plan`,
`status` and `doctor` treating it as they treat every lane."""

from __future__ import annotations

import os
import plistlib
from pathlib import Path

from watch_world import WATCHED, WatchWorld

from lanekit.config import watchdog_lane
from lanekit.config.watch import WatchSpec
from lanekit.doctor import DoctorRequest, diagnose
from lanekit.reconcile import ActionKind, Result
from lanekit.service.launchd.plist import render_lane
from lanekit.state.paths import Paths
from lanekit.status.lanes import LaneState, status
from places import GOLDEN

GOLDEN = GOLDEN / "com.example.watch.plist"
HOME = Path("/Users/me")
PATHS = Paths(
    home=HOME,
    launch_agents=HOME / "Library" / "LaunchAgents",
    state=HOME / "Library" / "Application Support" / "lanekit",
    cwd=HOME / "project",
)
INTERPRETER = "/Users/me/.local/pipx/venvs/lanekit/bin/python"
UPDATE_GOLDEN = os.environ.get("LANEKIT_UPDATE_GOLDEN") == "1"


def test_watchdog_plist_is_the_golden_file() -> None:
    """The watchdog lane renders to exactly tests/golden/com.example.watch.plist: StartInterval
    from `every`, the explicit PATH, its own logs, and `lanekit watch --config <lanes.toml>`
    with the lanes' interpreter (LANEKIT_UPDATE_GOLDEN=1 rewrites it after a deliberate
    change)."""
    lane = watchdog_lane(
        WatchSpec(every=120),
        config_path=HOME / "project" / "lanes.toml",
        prefix="com.example",
        paths=PATHS,
    )
    data = render_lane(lane, interpreter=INTERPRETER, snapshot=PATHS.snapshot_for(lane.label))
    if UPDATE_GOLDEN:
        GOLDEN.write_bytes(data)
    assert data == GOLDEN.read_bytes()
    job = plistlib.loads(data)
    assert job["StartInterval"] == 120
    assert job["ProgramArguments"][-3:] == ["watch", "--config", "/Users/me/project/lanes.toml"]
    assert job["EnvironmentVariables"]["LANEKIT_LANE"] == "watch"
    assert job["StandardOutPath"].startswith(str(PATHS.state / "watch" / "com.example.watch"))


def test_apply_installs_the_watchdog_and_a_second_apply_changes_nothing(tmp_path: Path) -> None:
    """`apply` creates and loads `<prefix>.watch` like any lane; applying again is a no-op."""
    world = WatchWorld.make(tmp_path)
    first = world.apply()
    kinds = {o.action.lane: o.action.kind for o in first.outcomes}
    assert kinds == {"funnel": ActionKind.CREATE, "watch": ActionKind.CREATE}
    assert all(o.result is Result.DONE for o in first.outcomes)
    assert world.paths.plist_for("test.watch.watch").is_file()
    assert "test.watch.watch" in {e.label for e in world.domain.list()}
    assert world.apply().nothing_to_do


def test_status_and_doctor_show_the_watchdog_as_a_lane(tmp_path: Path) -> None:
    """`status` has a row for it (scheduled, every 5 minutes); `doctor` examines it and finds
    nothing wrong with a freshly applied watchdog."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    rows = {row.lane: row for row in status(world.config(), world.paths, world.domain)}
    assert rows["watch"].state is LaneState.SCHEDULED
    assert rows["watch"].interval == 300
    report = diagnose(
        DoctorRequest(lanes=("watch",), config_path=world.config_path),
        world.paths,
        env={},
        launchd=world.domain,
    )
    assert "watch" in report.subjects
    assert [f.id for f in report.findings] == []


def test_changing_every_reloads_the_watchdog(tmp_path: Path) -> None:
    """A new `every` is a new plist: plan says update and apply reloads it."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    world.write(world.config_path.read_text().replace('every = "5m"', 'every = "10m"'))
    outcome = {o.action.lane: o for o in world.apply().outcomes}["watch"]
    assert outcome.action.kind is ActionKind.UPDATE
    assert (
        plistlib.loads(world.paths.plist_for("test.watch.watch").read_bytes())["StartInterval"]
        == 600
    )


def test_removing_watch_removes_the_watchdog(tmp_path: Path) -> None:
    """Without [watch] any more, `plan` says the watchdog goes and `apply` boots it out and
    deletes its plist and snapshot (other lanes gone from lanes.toml are only offered)."""
    from lanekit.watch.lane import RETIRED, apply_with_watchdog

    world = WatchWorld.make(tmp_path)
    world.apply()
    label = world.lane("watch").label
    text = world.config_path.read_text()
    world.write(text[: text.index("[watch]")])
    planned = apply_with_watchdog(world.config(), world.paths, world.domain, dry_run=True)
    [watch] = [o for o in planned.outcomes if o.action.lane == "watch"]
    assert (watch.action.kind, watch.result, watch.detail) == (
        ActionKind.REMOVE,
        Result.PLANNED,
        RETIRED,
    )
    assert world.paths.plist_for(label).exists()
    done = apply_with_watchdog(world.config(), world.paths, world.domain)
    [watch] = [o for o in done.outcomes if o.action.lane == "watch"]
    assert watch.result is Result.DONE
    assert watch.detail == "removed: booted out, plist and snapshot deleted"
    assert not world.paths.plist_for(label).exists()
    assert not world.paths.snapshot_for(label).exists()
    assert label not in {e.label for e in world.domain.list()}
    assert apply_with_watchdog(world.config(), world.paths, world.domain).nothing_to_do


def test_a_users_own_lane_named_watch_is_only_offered(tmp_path: Path) -> None:
    """A lane the user named `watch` (no [watch] table) that leaves lanes.toml is offered for
    removal like any lane, never removed: it is not the watchdog."""
    from lanekit.watch.lane import apply_with_watchdog

    text = WATCHED[: WATCHED.index("[watch]")]
    world = WatchWorld.make(
        tmp_path, text + '[lanes.watch]\nqueue = "notes"\ncommand = ["/bin/cat"]\n'
    )
    world.apply()
    world.write(text)
    result = apply_with_watchdog(world.config(), world.paths, world.domain)
    [watch] = [o for o in result.outcomes if o.action.lane == "watch"]
    assert watch.result is Result.OFFERED
    assert world.paths.plist_for("test.watch.watch").exists()
