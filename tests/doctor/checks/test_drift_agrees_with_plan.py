"""Doctor's `plist.drift` and `lanekit plan` give one answer: drift is built both ways (lanes.toml
edited after apply, and the installed files or launchd's loaded job changed under it), then
`apply --dry-run`'s action for the lane and doctor's findings are compared."""

from __future__ import annotations

import json
import plistlib
from collections.abc import Callable
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World

from lanekit.doctor import Finding, Severity
from lanekit.reconcile import Action, ActionKind, apply
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.launchd.plist import render_lane

Change = Callable[[World], None]


def _edit_config(old: str, new: str) -> Change:
    def change(world: World) -> None:
        text = world.config_path.read_text()
        assert old in text
        world.config_path.write_text(text.replace(old, new))

    return change


def _append_config(extra: str) -> Change:
    def change(world: World) -> None:
        world.config_path.write_text(world.config_path.read_text() + extra)

    return change


def _reformat_plist(world: World) -> None:
    path = world.paths.plist_for(world.lane().label)
    path.write_bytes(plistlib.dumps(plistlib.loads(path.read_bytes()), fmt=plistlib.FMT_BINARY))


def _plist_of_nice_11(world: World) -> bytes:
    """The plist apply would write for the lane with `nice = 11` (lanes.toml left as found)."""
    text = world.config_path.read_text()
    world.config_path.write_text(text + "nice = 11\n")
    lane = world.lane()
    data = render_lane(
        lane, interpreter=_interpreter(world), snapshot=world.paths.snapshot_for(lane.label)
    )
    world.config_path.write_text(text)
    return data


def _edit_plist(world: World) -> None:
    """Someone wrote another plist (Nice 11) over the installed one; lanes.toml says nothing."""
    data = _plist_of_nice_11(world)
    world.paths.plist_for(world.lane().label).write_bytes(data)


def _replace_plist_unloaded(world: World) -> None:
    """lanes.toml gains `nice = 11` and its plist is written, but launchd is not told."""
    data = _plist_of_nice_11(world)
    world.paths.plist_for(world.lane().label).write_bytes(data)
    world.config_path.write_text(world.config_path.read_text() + "nice = 11\n")


def _edit_snapshot(world: World) -> None:
    path = world.paths.snapshot_for(world.lane().label)
    data = json.loads(path.read_bytes())
    data["max_jobs"] = 7
    path.write_text(json.dumps(data))


def _interpreter(world: World) -> str:
    args = plistlib.loads(world.paths.plist_for(world.lane().label).read_bytes())
    return str(args["ProgramArguments"][0])


# (change, the plan's action, doctor's findings' severities)
CASES: dict[str, tuple[Change, ActionKind, list[Severity]]] = {
    "nothing changed": (lambda world: None, ActionKind.UNCHANGED, []),
    # Both the file and launchd's loaded copy differ from lanes.toml: one warning each.
    "lanes.toml: schedule": (
        _edit_config("40 10 * * *", "45 10 * * *"),
        ActionKind.UPDATE,
        [Severity.WARNING, Severity.WARNING],
    ),
    "lanes.toml: a snapshot-only key": (
        _append_config("max_jobs = 3\n"),
        ActionKind.SNAPSHOT,
        [Severity.WARNING],
    ),
    "installed: plist reformatted": (_reformat_plist, ActionKind.REWRITE, [Severity.INFO]),
    "installed: plist edited": (_edit_plist, ActionKind.UPDATE, [Severity.WARNING]),
    "installed: plist replaced without a reload": (
        _replace_plist_unloaded,
        ActionKind.UPDATE,
        [Severity.WARNING],
    ),
    "installed: snapshot edited": (_edit_snapshot, ActionKind.SNAPSHOT, [Severity.WARNING]),
}


def _both(world: World, domain: EmulatedDomain) -> tuple[Action, list[Finding]]:
    """The plan's action for the lane (apply --dry-run) and doctor's plist.drift findings."""
    (outcome,) = apply(world.config(), world.paths, domain, dry_run=True).outcomes
    return outcome.action, world.run("plist.drift", world.target(), launchd=domain)


@pytest.mark.parametrize("case", list(CASES))
def test_doctor_reports_the_drift_plan_acts_on(tmp_path: Path, case: str) -> None:
    """Applied for real into an emulated domain, then changed: the plan's action is the one
    in the table, doctor warns exactly when the plan would write or reload for a change of
    meaning, notes (INFO) a formatting-only rewrite, and says nothing when the plan is
    unchanged; every change doctor names is in the plan's reason."""
    change, kind, severities = CASES[case]
    world = World.make(tmp_path, HEALTHY)
    domain = EmulatedDomain(world.paths.emulator, launch_agents=world.paths.launch_agents)
    (applied,) = apply(world.config(), world.paths, domain).outcomes
    assert applied.action.kind is ActionKind.CREATE
    change(world)
    action, findings = _both(world, domain)
    assert action.kind is kind
    assert [f.severity for f in findings] == severities
    meaning = action.kind in {ActionKind.UPDATE, ActionKind.SNAPSHOT}
    assert any(f.severity is Severity.WARNING for f in findings) == meaning
    assert any(f.severity is Severity.INFO for f in findings) == (kind is ActionKind.REWRITE)
    drift = action.drift
    for said in (drift.plist_change, drift.snapshot_change, drift.loaded_change):
        if said:
            assert said in action.reason
            assert any(said in f.message for f in findings)
    if findings:
        assert all(f.fix.startswith("lanekit apply funnel") for f in findings)
