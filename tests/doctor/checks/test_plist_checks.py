"""plist.* checks: each problem is made for real on disk, then found with its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World, is_root, job_plist

from lanekit.doctor import Severity, plist_target


def test_invalid_plist_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """A plist that does not parse is reported with the file and a way to find the broken line."""
    world = World.make(tmp_path)
    path = world.paths.launch_agents / "com.example.broken.plist"
    path.parent.mkdir(parents=True)
    path.write_text("<?xml version='1.0'?><plist><dict><key>Label</key>")
    target = plist_target(path, None)
    [finding] = world.run("plist.invalid", target)
    assert finding.severity is Severity.ERROR
    assert str(path) in finding.message
    assert finding.fix == f"fix {path} (on macOS `plutil -lint {path}` names the broken line)"


def test_invalid_installed_lane_plist_is_fixed_by_apply(tmp_path: Path) -> None:
    """A lane whose installed plist was damaged is told to let `lanekit apply` rewrite it."""
    world = World.make(tmp_path)
    path = world.install()
    path.write_text("not a plist")
    [finding] = world.run("plist.invalid", world.target())
    assert finding.subject == "funnel"
    assert finding.fix == "run `lanekit apply funnel` to write it again"


def test_plist_without_program_is_invalid(tmp_path: Path) -> None:
    """A dict with a Label but neither Program nor ProgramArguments is not a job launchd runs."""
    world = World.make(tmp_path)
    target = world.foreign({"Label": "com.example.noprog"})
    [finding] = world.run("plist.invalid", target)
    assert "neither Program nor ProgramArguments" in finding.message


def test_label_mismatch_suggests_the_rename(tmp_path: Path) -> None:
    """A file not named <Label>.plist gets the exact `mv` that fixes it."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist("com.example.real"), name="other-name.plist")
    [finding] = world.run("plist.label-mismatch", target)
    assert finding.severity is Severity.WARNING
    agents = world.paths.launch_agents
    assert finding.fix == f"mv {agents / 'other-name.plist'} {agents / 'com.example.real.plist'}"


def test_matching_label_is_not_reported(tmp_path: Path) -> None:
    """<Label>.plist is fine."""
    world = World.make(tmp_path)
    assert world.run("plist.label-mismatch", world.foreign(job_plist())) == []


def test_world_writable_plist_is_refused(tmp_path: Path) -> None:
    """A 0666 plist (umask 000) is refused by launchd: error, fix `chmod 644`."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(), mode=0o666)
    assert target.plist_path is not None
    assert target.plist_path.stat().st_mode & 0o777 == 0o666
    [finding] = world.run("plist.permissions", target)
    assert finding.severity is Severity.ERROR
    assert "0666" in finding.message
    assert finding.fix == f"chmod 644 {target.plist_path}"


@pytest.mark.skipif(not is_root(), reason="giving a file to another owner needs root")
def test_plist_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    """A plist owned by another user is refused; the fix gives it back to the caller."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist())
    assert target.plist_path is not None
    os.chown(target.plist_path, 12345, 12345)
    [finding] = world.run("plist.permissions", target)
    assert "owned by 12345" in finding.message
    assert finding.fix == f"chown root {target.plist_path}"


def test_root_owned_plist_is_accepted_for_any_user(tmp_path: Path) -> None:
    """launchd accepts a plist owned by the caller or by root: judged for uid 501, a file owned
    by root is fine and one owned by the caller (when that is not root) is fine too."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist())
    assert world.run("plist.permissions", target) == []
    expected = [] if is_root() else ["plist.permissions"]
    assert [f.id for f in world.run("plist.permissions", target, uid=501)] == expected


def test_drift_when_lanes_toml_changed_after_apply(tmp_path: Path) -> None:
    """Editing the schedule after apply leaves launchd on the old plist: `lanekit apply`."""
    world = World.make(tmp_path)
    world.install()
    assert world.run("plist.drift", world.target()) == []
    world.config_path.write_text(
        world.config_path.read_text().replace("40 10 * * *", "45 10 * * *")
    )
    [finding] = world.run("plist.drift", world.target())
    assert "StartCalendarInterval" in finding.message
    assert finding.fix == "lanekit apply funnel"


def test_drift_of_the_snapshot_alone(tmp_path: Path) -> None:
    """A change only the runner sees (max_jobs) is in the snapshot, and is drift too."""
    world = World.make(tmp_path)
    world.install()
    world.config_path.write_text(world.config_path.read_text() + "max_jobs = 3\n")
    [finding] = world.run("plist.drift", world.target())
    assert "run snapshot" in finding.message
    assert "plist (" not in finding.message


def test_drift_skips_foreign_plists(tmp_path: Path) -> None:
    """plist.drift needs lanekit knowledge: a hand-written plist is skipped, not reported."""
    world = World.make(tmp_path)
    assert world.run("plist.drift", world.foreign(job_plist())) == []


def test_drift_of_the_loaded_definition(tmp_path: Path) -> None:
    """The Nice 11 plist put in place while launchd has the Nice 10 job loaded: doctor says
    launchd has an older definition loaded (as plan does), with `lanekit apply` to reload."""
    from lanekit.service.emulated.emulator import EmulatedDomain

    world = World.make(tmp_path, HEALTHY + "nice = 10\n")
    path = world.install()
    domain = EmulatedDomain(world.paths.emulator, launch_agents=world.paths.launch_agents)
    domain.bootstrap(path)
    assert world.run("plist.drift", world.target(), launchd=domain) == []
    world.config_path.write_text(world.config_path.read_text().replace("nice = 10", "nice = 11"))
    world.install()
    [finding] = world.run("plist.drift", world.target(), launchd=domain)
    assert finding.message.startswith("launchd has an older definition loaded (Nice 10 -> 11)")
    assert finding.fix.startswith("lanekit apply funnel")


def test_formatting_only_drift_is_info(tmp_path: Path) -> None:
    """A reformatted plist (same keys and values) is no warning: apply rewrites it, no reload."""
    import plistlib

    world = World.make(tmp_path)
    path = world.install()
    path.write_bytes(plistlib.dumps(plistlib.loads(path.read_bytes()), fmt=plistlib.FMT_BINARY))
    [finding] = world.run("plist.drift", world.target())
    assert finding.severity is Severity.INFO
    assert "formatting only" in finding.message
