"""Paths: one object owns every location; env overrides and platform defaults."""

from __future__ import annotations

from pathlib import Path

from lanekit.state.paths import Paths, backend_name


def test_under_keeps_everything_below_root(tmp_path: Path) -> None:
    """Tests and the demo get a self-contained tree."""
    p = Paths.under(tmp_path)
    for location in (p.home, p.launch_agents, p.state, p.snapshots, p.emulator):
        assert location.is_relative_to(tmp_path.resolve())
    assert p.plist_for("com.x.a") == p.launch_agents / "com.x.a.plist"
    assert p.snapshot_for("com.x.a") == p.state / "lanes" / "com.x.a.json"


def test_from_env_platform_defaults() -> None:
    """macOS keeps state in Application Support and plists in ~/Library/LaunchAgents."""
    mac = Paths.from_env({"HOME": "/Users/me"}, platform="darwin")
    assert mac.state == Path("/Users/me/Library/Application Support/lanekit")
    assert mac.launch_agents == Path("/Users/me/Library/LaunchAgents")
    linux = Paths.from_env({"HOME": "/home/me"}, platform="linux")
    assert linux.state == Path("/home/me/.local/state/lanekit")
    assert linux.launch_agents == Path("/home/me/.local/state/lanekit/emulator/LaunchAgents")


def test_from_env_overrides() -> None:
    """LANEKIT_STATE_DIR / LANEKIT_LAUNCH_AGENTS / LANEKIT_LAUNCHD win over defaults."""
    p = Paths.from_env(
        {"HOME": "/h", "LANEKIT_STATE_DIR": "/s", "LANEKIT_LAUNCH_AGENTS": "/a"}, platform="darwin"
    )
    assert (p.state, p.launch_agents) == (Path("/s"), Path("/a"))
    assert backend_name({"LANEKIT_LAUNCHD": "emulated"}, "darwin") == "emulated"
    assert backend_name({"LANEKIT_LAUNCHD": "launchctl"}, "linux") == "launchctl"
    assert backend_name({}, "darwin") == "launchctl"
    assert backend_name({"LANEKIT_LAUNCHD": "bogus"}, "linux") == "emulated"
