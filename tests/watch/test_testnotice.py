"""`lanekit watch --test` (issue 32 item 1): one test notice through every channel, the user's
answer remembered per channel, and doctor's `watch.channel-unconfirmed` while the only channel
is macos and nobody ever said a notice arrived."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner
from watch_world import WatchWorld

from lanekit.cli import app
from lanekit.doctor import DoctorRequest, Severity, diagnose
from lanekit.state.confirmations import (
    confirmations_path,
    confirmed,
    load_confirmations,
)
from lanekit.state.schemas import CONFIRMATIONS_SCHEMA
from lanekit.watch.testnotice import record_answer, send_test

MACOS_ONLY = """\
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.watch"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
every = "1h"

[watch]
every = "5m"
notify = ["macos"]
"""


def _cli_env(world: WatchWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(world.paths.home))
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(world.paths.state))
    monkeypatch.setenv("LANEKIT_LAUNCH_AGENTS", str(world.paths.launch_agents))


def test_a_test_notice_goes_through_every_channel(tmp_path: Path) -> None:
    """The command channel gets one notice of kind `test`; nothing is confirmed by sending."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    result = send_test(world.config(), world.paths, env={})
    assert [(t.channel, t.sent, t.confirmed) for t in result.channels] == [("command", True, None)]
    assert int(result.exit_code) == 0
    [sent] = world.sent()
    assert sent["kind"] == "test"
    assert sent["title"] == "lanekit: test notice"
    assert load_confirmations(world.paths.state) == {}


def test_a_refused_test_notice_fails(tmp_path: Path) -> None:
    """A channel that refuses the notice is reported with why, and the test exits 1."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    world.flag.touch()
    result = send_test(world.config(), world.paths, env={})
    [test] = result.channels
    assert not test.sent and test.error is not None and "exited 3" in test.error
    assert int(result.exit_code) == 1


def test_the_answer_is_remembered_per_channel_atomically(tmp_path: Path) -> None:
    """A private, versioned file; the last answer per channel wins."""
    world = WatchWorld.make(tmp_path)
    from datetime import datetime

    record_answer(world.paths, "macos", False, datetime(2026, 12, 5, 10, 0))
    record_answer(world.paths, "command", True, datetime(2026, 12, 5, 10, 1))
    assert not confirmed(world.paths.state, "macos")
    record_answer(world.paths, "macos", True, datetime(2026, 12, 5, 10, 2))
    assert confirmed(world.paths.state, "macos") and confirmed(world.paths.state, "command")
    path = confirmations_path(world.paths.state)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = json.loads(path.read_text())
    assert document["schema"] == CONFIRMATIONS_SCHEMA
    assert set(document["channels"]) == {"macos", "command"}
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def _unconfirmed(world: WatchWorld) -> list[tuple[Severity, str, str]]:
    report = diagnose(
        DoctorRequest(checks=("watch.channel-unconfirmed",), config_path=world.config_path),
        world.paths,
        env={},
        launchd=world.domain,
    )
    return [(f.severity, f.message, f.fix) for f in report.findings]


def test_doctor_warns_while_the_only_channel_is_an_unconfirmed_macos(tmp_path: Path) -> None:
    """Warn with the Script Editor fix until the user says the macos notice arrived; a "no"
    keeps the warning."""
    from datetime import datetime

    world = WatchWorld.make(tmp_path, MACOS_ONLY)
    world.apply()
    [(severity, message, fix)] = _unconfirmed(world)
    assert severity is Severity.WARNING
    assert "macos" in message
    assert "System Settings → Notifications → Script Editor" in fix
    assert "lanekit watch --test" in fix
    record_answer(world.paths, "macos", False, datetime.now())
    assert len(_unconfirmed(world)) == 1
    record_answer(world.paths, "macos", True, datetime.now())
    assert _unconfirmed(world) == []


def test_doctor_is_quiet_when_another_channel_exists(tmp_path: Path) -> None:
    """With a command channel besides macos, an unconfirmed macos is not the only way out."""
    text = MACOS_ONLY.replace('notify = ["macos"]', 'notify = ["macos"]\ncommand = ["/bin/true"]')
    world = WatchWorld.make(tmp_path, text)
    world.apply()
    assert _unconfirmed(world) == []


def test_cli_asks_on_a_terminal_and_records_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit watch --test` on a terminal asks per channel and remembers a yes."""
    from lanekit.cli.render import watch as show

    world = WatchWorld.make(tmp_path)
    world.apply()
    _cli_env(world, monkeypatch)
    monkeypatch.setattr(show, "can_ask", lambda: True)
    result = CliRunner().invoke(app, ["watch", "--test", "-c", str(world.config_path)], input="y\n")
    assert result.exit_code == 0, result.output
    assert "Did the test notice arrive through command?" in result.stdout
    assert confirmed(world.paths.state, "command")


def test_cli_off_a_terminal_says_how_to_confirm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a terminal nothing is recorded, and stderr says how to confirm."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _cli_env(world, monkeypatch)
    result = CliRunner().invoke(app, ["watch", "--test", "-c", str(world.config_path)])
    assert result.exit_code == 0, result.output
    assert "not asked" in result.stderr
    assert "lanekit watch --test" in result.stderr
    assert not os.path.exists(confirmations_path(world.paths.state))


def test_the_macos_test_notice_goes_through_osascript(tmp_path: Path) -> None:
    """The macos channel sends the test notice with osascript, text and title as arguments."""
    got = tmp_path / "osascript-args"
    fake = tmp_path / "osascript"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{got}"\n')
    fake.chmod(0o755)
    world = WatchWorld.make(tmp_path, MACOS_ONLY)
    world.apply()
    result = send_test(world.config(), world.paths, env={}, osascript=str(fake))
    assert [(t.channel, t.sent) for t in result.channels] == [("macos", True)]
    args = got.read_text().splitlines()
    assert args[-1] == "lanekit: test notice"
    assert "lanekit test notice from test.watch.watch" in args[-2]
