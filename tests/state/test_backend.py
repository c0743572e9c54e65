"""Which service manager runs the lanes, and why (lanekit.state.backend.manager_choice), and
`[defaults] service_manager` read from lanes.toml."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from lanekit.config import load_config
from lanekit.errors import ConfigError
from lanekit.service import open_manager
from lanekit.service.manager import ManagerKind
from lanekit.state.backend import manager_choice
from lanekit.state.paths import Paths


def _runtime_with_manager(tmp_path: Path) -> tuple[Path, socket.socket]:
    """An XDG_RUNTIME_DIR whose systemd/private is a listening socket, as a running user
    manager's is."""
    runtime = tmp_path / "run"
    (runtime / "systemd").mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(runtime / "systemd" / "private"))
    return runtime, listener


def test_linux_with_a_user_manager_chooses_systemd(tmp_path: Path) -> None:
    """On Linux, systemd when the user manager's socket is there (one stat, no process), and
    the reason names the socket; without it, the emulated domain and how to get a manager."""
    runtime, listener = _runtime_with_manager(tmp_path)
    with listener:
        name, why = manager_choice({"XDG_RUNTIME_DIR": str(runtime)}, "linux")
        assert name == "systemd"
        assert str(runtime / "systemd" / "private") in why
    name, why = manager_choice({"XDG_RUNTIME_DIR": str(tmp_path / "none")}, "linux")
    assert name == "emulated"
    assert "enable-linger" in why
    assert manager_choice({}, "darwin")[0] == "launchd"


@pytest.mark.parametrize("configured", ["launchd", "systemd", "emulated"])
def test_lanes_toml_chooses_and_lanekit_launchd_overrides(configured: str) -> None:
    """`[defaults] service_manager` wins over the platform; LANEKIT_LAUNCHD (what tests set)
    wins over both, so existing tests keep the emulated domain."""
    assert manager_choice({}, "linux", configured) == (
        configured,
        f'[defaults] service_manager = "{configured}" in lanes.toml',
    )
    assert manager_choice({"LANEKIT_LAUNCHD": "emulated"}, "darwin", configured)[0] == "emulated"
    assert manager_choice({"LANEKIT_LAUNCHD": "launchctl"}, "linux", configured)[0] == "launchd"


def test_open_manager_gives_the_systemd_manager(tmp_path: Path) -> None:
    """open_manager builds the systemd manager over the user's unit directory
    ($XDG_CONFIG_HOME/systemd/user), and says why in its domain_reason."""
    runtime, listener = _runtime_with_manager(tmp_path)
    paths = Paths.under(tmp_path)
    env = {"XDG_RUNTIME_DIR": str(runtime), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with listener:
        manager = open_manager(paths, env)
    assert manager.kind is ManagerKind.SYSTEMD
    assert manager.install_dir == tmp_path / "cfg" / "systemd" / "user"
    assert "answers" in manager.domain_reason
    chosen = open_manager(paths, {}, configured="emulated")
    assert chosen.kind is ManagerKind.EMULATED


def test_service_manager_is_read_from_defaults(tmp_path: Path) -> None:
    """`service_manager` is a choice of three; anything else is a ConfigError naming the key
    and the allowed values."""
    path = tmp_path / "lanes.toml"
    path.write_text('[defaults]\nservice_manager = "systemd"\n', encoding="utf-8")
    assert load_config(path, Paths.under(tmp_path)).service_manager == "systemd"
    path.write_text('[defaults]\nservice_manager = "upstart"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="service_manager") as caught:
        load_config(path, Paths.under(tmp_path))
    assert "launchd, systemd, emulated" in caught.value.hint


def test_validate_reports_what_systemd_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With systemd chosen, `lanekit validate` reports a launchd-only key as apply would
    refuse it; with launchd chosen the same lanes.toml validates."""
    import sys

    from lanekit.reconcile.validate import check_config

    monkeypatch.delenv("LANEKIT_LAUNCHD", raising=False)
    path = tmp_path / "lanes.toml"
    body = (
        '[queues.q]\ndir = "~/q"\n[lanes.x]\nqueue = "q"\ncommand = ["/bin/true"]\n'
        'schedule = "0 3 * * *"\nthrottle_interval = 30\n'
    )
    path.write_text('[defaults]\nservice_manager = "systemd"\n' + body, encoding="utf-8")
    checked = check_config(path, Paths.under(tmp_path), interpreter=sys.executable)
    assert [e.message for e in checked.errors] == [
        "lane x: throttle_interval means nothing under systemd (a timer never starts a oneshot"
        " that is still running, and starts are not throttled)"
    ]
    path.write_text('[defaults]\nservice_manager = "launchd"\n' + body, encoding="utf-8")
    assert check_config(path, Paths.under(tmp_path), interpreter=sys.executable).ok


def test_render_prints_the_units_where_systemd_runs_the_lanes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit render` shows what apply installs: with systemd chosen, each lane's service and
    timer (`# name` before each, and `--out` writes them by name); with launchd, the plist."""
    from typer.testing import CliRunner

    from lanekit.cli import app

    monkeypatch.delenv("LANEKIT_LAUNCHD", raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "lanes.toml"
    body = (
        '[queues.q]\ndir = "~/q"\n[lanes.x]\nqueue = "q"\ncommand = ["/bin/true"]\n'
        'schedule = "0 3 * * *"\n[lanes.y]\nqueue = "q"\ncommand = ["/bin/true"]\n'
    )
    path.write_text('[defaults]\nservice_manager = "systemd"\n' + body, encoding="utf-8")
    shown = CliRunner().invoke(app, ["render", "-c", str(path)])
    assert shown.exit_code == 0, shown.output
    heads = [ln for ln in shown.output.splitlines() if ln.startswith("# local.lanekit.")]
    assert heads == [
        "# local.lanekit.x.service",
        "# local.lanekit.x.timer",
        "# local.lanekit.y.service",
    ]
    assert "OnCalendar=*-*-* 03:00:00" in shown.output
    wrote = CliRunner().invoke(app, ["render", "x", "-c", str(path), "--out", "out"])
    assert wrote.exit_code == 0, wrote.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "local.lanekit.x.service",
        "local.lanekit.x.timer",
    ]
    path.write_text('[defaults]\nservice_manager = "launchd"\n' + body, encoding="utf-8")
    plists = CliRunner().invoke(app, ["render", "-c", str(path)])
    assert "# local.lanekit.x.plist" in plists.output


def test_the_clock_is_real_where_systemd_runs_the_lanes(tmp_path: Path) -> None:
    """An emulated domain ticked ahead earlier on this machine does not move the clock of
    commands once systemd runs the lanes (status, doctor judge by the real time)."""
    import time

    from lanekit.service import clock_for
    from lanekit.service.emulated.emulator import EmulatedDomain

    paths = Paths.under(tmp_path)
    EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents).set_clock(time.time() + 7200)
    runtime, listener = _runtime_with_manager(tmp_path)
    with listener:
        systemd_clock = clock_for(paths, {"XDG_RUNTIME_DIR": str(runtime)}, "linux")
        assert abs(systemd_clock.time() - time.time()) < 60
    emulated_clock = clock_for(paths, {"XDG_RUNTIME_DIR": str(tmp_path / "none")}, "linux")
    assert emulated_clock.time() - time.time() > 3600
