"""`lanekit adopt` then `lanekit apply` on the emulated domain with real processes: the seed's
hand-written plist, loaded, is booted out, moved aside (never deleted) and replaced by a plain
lane that fires on the same schedule; a running hand-written job is never booted out."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import load_config
from lanekit.run.lanelog import EventName, read_events
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths

SEED = (
    Path(__file__).resolve().parents[1]
    / "reconcile"
    / "plists"
    / "com.lily.codex-note-funnel.plist"
)
LABEL = "com.lily.codex-note-funnel"
GUARD = """#!/bin/sh
# Stands in for claude-quota-guard.py: says what it was asked to run.
echo "guard $*"
sleep "${NAP:-0}"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a commented lanes.toml; HOME holds the seed's scripts and log dir; the
    seed's plist is installed in LaunchAgents and loaded, as on the seed's Mac."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    scripts = home / ".claude" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "claude-quota-guard.py").write_text(GUARD, encoding="utf-8")
    (scripts / "claude-quota-guard.py").chmod(0o755)
    (home / "dev" / "note-autolike" / "logs").mkdir(parents=True)
    config = tmp_path / "lanes.toml"
    config.write_text(
        "# the seed's project: this comment stays\n"
        '[defaults]\nlabel_prefix = "com.example.seed"  # so does this one\n',
        encoding="utf-8",
    )
    return config


def _install(plist_text: str) -> Path:
    paths = Paths.from_env()
    paths.launch_agents.mkdir(parents=True, exist_ok=True)
    plist = paths.launch_agents / f"{LABEL}.plist"
    plist.write_text(plist_text, encoding="utf-8")
    plist.chmod(0o600)
    EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents).bootstrap(plist)
    return plist


def _ok(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def _loaded() -> dict[str, int | None]:
    from lanekit.service import open_manager

    return open_manager(Paths.from_env()).loaded()


def _settled(log: Path, label: str) -> bool:
    """At least one run, every run finished, and none going."""
    events = [e.get("event") for e in read_events(log)]
    starts = events.count(EventName.START)
    return starts > 0 and starts == events.count(EventName.FINISH) and _loaded()[label] is None


def test_the_seed_plist_adopted_runs_as_a_lane_with_the_same_schedule(project: Path) -> None:
    """adopt writes [lanes.codex-note-funnel] (comments kept) and says what apply will do;
    apply boots the hand-written job out, moves its plist to .adopted, installs the lane at
    10:40 and 16:40; the emulated clock reaching 10:40 runs the seed's command once."""
    plist = _install(SEED.read_text(encoding="utf-8"))
    c = str(project)
    out = _ok("adopt", str(plist), "-c", c).stdout
    assert "added [lanes.codex-note-funnel]" in out
    assert f"boot out {LABEL} (only when it is not running)" in out
    text = project.read_text(encoding="utf-8")
    assert "# the seed's project: this comment stays" in text
    assert "# so does this one" in text
    applied = _ok("apply", "-c", c).stdout
    assert f"replaced {LABEL} (booted out, moved its plist to {LABEL}.plist.adopted)" in applied
    loaded = _loaded()
    assert LABEL not in loaded
    assert "com.example.seed.codex-note-funnel" in loaded
    assert not plist.exists()
    assert plist.with_name(f"{LABEL}.plist.adopted").read_bytes() == SEED.read_bytes()
    status = json.loads(_ok("status", "--json", "-c", c).stdout)["lanes"][0]
    assert status["schedule"] == "every day at 10:40 and 16:40"
    assert _ok("apply", "-c", c).stdout.strip() == "nothing to do: 1 lane unchanged"
    _ok("emulator", "tick", "--until", "10:41")
    lane = load_config(project, Paths.from_env()).lanes["codex-note-funnel"]
    deadline = time.monotonic() + 20
    while not _settled(lane.log_path, lane.label):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    home = Path.home()
    # Up to 10:41 from now passes 16:40 (today) and 10:40 (tomorrow) or 10:40 alone: one
    # run of the seed's command per fire, each with its arguments as the plist gave them.
    lines = lane.stdout_path.read_text(encoding="utf-8").splitlines()
    expected = f"guard --job {LABEL} --priority -- {home}/dev/note-autolike/run-codex-funnel.sh"
    assert lines and set(lines) == {expected}
    starts = [e for e in read_events(lane.log_path) if e.get("event") == EventName.START]
    assert len(starts) == len(lines)
    assert lane.stdout_path == home / "dev" / "note-autolike" / "logs" / "codex-funnel.log"


def test_a_running_hand_written_job_is_not_booted_out(project: Path) -> None:
    """While the hand-written job runs, apply installs nothing for its lane (exit 3) and
    leaves its plist in place; once it is idle, apply replaces it."""
    text = SEED.read_text(encoding="utf-8").replace(
        "<dict/>", "<dict><key>NAP</key><string>30</string></dict>"
    )
    plist = _install(text.replace("~", str(Path.home())))
    paths = Paths.from_env()
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    pid = domain.kickstart(LABEL)
    assert pid is not None
    c = str(project)
    _ok("adopt", str(plist), "-c", c)
    skipped = _ok("apply", "-c", c, code=3).stdout
    assert f"the job it replaces, {LABEL}, is running (pid {pid})" in skipped
    assert plist.exists()
    assert _loaded()[LABEL] == pid
    assert "com.example.seed.codex-note-funnel" not in _loaded()
    _ok("apply", "-c", c, "--force")
    assert LABEL not in _loaded()
    assert not plist.exists()
