"""`lanekit watch` as printed: a notice no channel took is never reported as sent (issue 32
item 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner
from watch_world import WatchWorld

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue


def test_a_pass_where_every_channel_refused_does_not_say_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = WatchWorld.make(tmp_path)
    world.apply()
    lane = world.lane("funnel")
    Queue(lane.queue.dir).enqueue({"n": 1})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)
    world.flag.touch()
    monkeypatch.setenv("HOME", str(world.paths.home))
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(world.paths.state))
    monkeypatch.setenv("LANEKIT_LAUNCH_AGENTS", str(world.paths.launch_agents))
    result = CliRunner().invoke(app, ["watch", "-c", str(world.config_path)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert not any(line.startswith("sent ") for line in lines), lines
    assert any(line.startswith("NOT sent new") for line in lines), lines
    assert "0 notices sent, 1 not sent (every channel refused" in lines[-1]
    world.flag.unlink()
    again = CliRunner().invoke(app, ["watch", "-c", str(world.config_path)])
    assert again.exit_code == 0, again.output
    assert any(line.startswith("sent new") for line in again.stdout.splitlines())
