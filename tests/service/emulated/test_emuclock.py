"""`lanekit emulator tick`: the emulated clock fires what launchd would, with real processes."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import Config, load_config
from lanekit.errors import UsageError
from lanekit.reconcile import apply
from lanekit.service.emulated.clock import advance, parse_until
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths


def _config(paths: Paths, schedule: str) -> Config:
    text = (
        '[defaults]\nlabel_prefix = "test.tick"\n[queues.q]\ndir = "~/q"\n'
        f'[lanes.l]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n{schedule}\n'
    )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def _installed(tmp_path: Path, schedule: str) -> tuple[Paths, EmulatedDomain, str]:
    paths = Paths.under(tmp_path)
    paths.home.mkdir(parents=True, exist_ok=True)
    config = _config(paths, schedule)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    return paths, domain, config.lanes["l"].label


def test_every_minute_lane_runs_once_per_minute(tmp_path: Path) -> None:
    """A `* * * * *` lane over 3 emulated minutes: 3 fires, 3 real runs, one per minute."""
    paths, domain, label = _installed(tmp_path, 'schedule = "* * * * *"')
    now = datetime.now()
    report = advance(paths.emulator, paths.launch_agents, now + timedelta(minutes=3), now=now)
    assert [f.labels for f in report.fires] == [(label,)] * 3
    assert [f.at.second for f in report.fires] == [0, 0, 0]
    assert domain.wait_idle(label, 30)
    info = domain.print(label)
    assert (info.runs, info.last_exit_code) == (3, 0)


def test_asleep_coalesces_calendar_fires_into_one_run(tmp_path: Path) -> None:
    """Asleep through 11 minutes of a `* * * * *` lane: one run on wake, as launchd does."""
    paths, domain, label = _installed(tmp_path, 'schedule = "* * * * *"')
    now = datetime.now()
    until = now + timedelta(minutes=11)
    report = advance(paths.emulator, paths.launch_agents, until, asleep=True, now=now)
    assert [(f.at, f.labels) for f in report.fires] == [(until, (label,))]
    assert domain.wait_idle(label, 30)
    assert domain.print(label).runs == 1


def test_interval_fires_awake_and_is_missed_asleep(tmp_path: Path) -> None:
    """StartInterval 5 min over 11 emulated minutes: 2 fires awake; none after a sleep
    (launchd misses StartInterval fires during sleep)."""
    paths, domain, label = _installed(tmp_path, 'every = "5m"')
    now = datetime.now()
    awake = advance(paths.emulator, paths.launch_agents, now + timedelta(minutes=11), now=now)
    assert awake.runs == 2
    assert domain.wait_idle(label, 30)
    later = now + timedelta(minutes=40)
    slept = advance(paths.emulator, paths.launch_agents, later, asleep=True, now=now)
    assert slept.runs == 0
    assert domain.print(label).runs == 2


def test_the_emulated_clock_never_replays_a_span(tmp_path: Path) -> None:
    """A second tick to a time already reached is refused: fires are never replayed."""
    paths, _, _ = _installed(tmp_path, 'schedule = "* * * * *"')
    now = datetime.now()
    until = now + timedelta(minutes=1)
    advance(paths.emulator, paths.launch_agents, until, now=now)
    with pytest.raises(UsageError, match="not after the emulated time"):
        advance(paths.emulator, paths.launch_agents, until, now=now)


def test_parse_until() -> None:
    """HH:MM is the next such time; ISO date-times as given."""
    now = datetime(2026, 12, 1, 11, 0)
    assert parse_until("10:40", now) == datetime(2026, 12, 2, 10, 40)
    assert parse_until("11:30", now) == datetime(2026, 12, 1, 11, 30)
    assert parse_until("2026-12-03T08:00", now) == datetime(2026, 12, 3, 8, 0)
    with pytest.raises(UsageError):
        parse_until("soon", now)


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in tmp_path, emulated launchd, working directory with lanes.toml."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LANEKIT_LAUNCHD", "emulated")
    monkeypatch.chdir(tmp_path)
    _config(Paths.from_env(), 'schedule = "* * * * *"')
    return tmp_path


def test_status_is_honest_about_the_emulated_clock(cli_home: Path) -> None:
    """status says nothing fires on a clock in the emulated domain (table and JSON), and its
    next fire counts from the emulated time once `emulator tick` moved it on."""
    runner = CliRunner()
    assert runner.invoke(app, ["apply"]).exit_code == 0
    table = runner.invoke(app, ["status"])
    assert "nothing fires on a clock" in table.stdout
    assert "lanekit emulator tick" in table.stdout
    before = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert before["emulated"] is True
    ticked = runner.invoke(app, ["emulator", "tick", "--for", "2m"])
    assert ticked.exit_code == 0, (ticked.stdout, ticked.stderr)
    assert "emulated clock at" in ticked.stdout
    assert "fired 2 starts" in ticked.stdout
    after = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    first = datetime.fromisoformat(before["lanes"][0]["next_fire"])
    assert datetime.fromisoformat(after["lanes"][0]["next_fire"]) == first + timedelta(minutes=2)


def test_tick_needs_one_span_and_the_emulated_domain(
    cli_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither or both of --until/--for: exit 2. On the real launchd: exit 2, with the fix."""
    runner = CliRunner()
    assert runner.invoke(app, ["emulator", "tick"]).exit_code == 2
    both = runner.invoke(app, ["emulator", "tick", "--for", "1m", "--until", "10:00"])
    assert both.exit_code == 2
    monkeypatch.setenv("LANEKIT_LAUNCHD", "launchctl")
    real = runner.invoke(app, ["emulator", "tick", "--for", "1m"])
    assert real.exit_code == 2
    assert "LANEKIT_LAUNCHD=emulated" in real.stderr


def test_a_lane_added_after_the_clock_moved_on_missed_no_fire_before_its_load(
    cli_home: Path,
) -> None:
    """After `emulator tick --for 1d`, a lane applied now whose daily time passed two hours ago
    by the domain's clock was not loaded then, so doctor reports no missed run (apply dates the
    plist it writes by the domain's clock, a day ahead of the real one the file system keeps)."""
    runner = CliRunner()
    assert runner.invoke(app, ["apply"]).exit_code == 0
    ticked = runner.invoke(app, ["emulator", "tick", "--for", "1d", "--asleep"])
    assert ticked.exit_code == 0, (ticked.stdout, ticked.stderr)
    passed = datetime.now() - timedelta(hours=2)
    config = cli_home / "lanes.toml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + f'[lanes.added]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n'
        f'schedule = "{passed:%M %H} * * *"\n',
        encoding="utf-8",
    )
    assert runner.invoke(app, ["apply"]).exit_code == 0
    doctor = runner.invoke(app, ["doctor", "--check", "lane.missed-run", "--json"])
    findings = json.loads(doctor.stdout)["findings"]
    assert [f for f in findings if f["subject"] == "added"] == [], findings


def test_a_watchdog_added_after_the_clock_moved_on_is_not_overdue(cli_home: Path) -> None:
    """After `emulator tick --for 1d`, a watchdog installed now has missed no pass yet: neither
    status nor doctor says it has been silent for a day (apply dates the plist it writes by the
    domain's clock, which the dead man's switch compares with)."""
    runner = CliRunner()
    assert runner.invoke(app, ["apply"]).exit_code == 0
    ticked = runner.invoke(app, ["emulator", "tick", "--for", "1d", "--asleep"])
    assert ticked.exit_code == 0, (ticked.stdout, ticked.stderr)
    config = cli_home / "lanes.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + '[watch]\nevery = "5m"\ncommand = ["/bin/true"]\n',
        encoding="utf-8",
    )
    applied = runner.invoke(app, ["apply"])
    assert applied.exit_code == 0, (applied.stdout, applied.stderr)
    rows = json.loads(runner.invoke(app, ["status", "--json"]).stdout)["lanes"]
    assert [row.get("watchdog") for row in rows if row["lane"] == "watch"] == [None], rows
    doctor = runner.invoke(app, ["doctor", "--check", "watch.not-running", "--json"])
    assert json.loads(doctor.stdout)["findings"] == []
