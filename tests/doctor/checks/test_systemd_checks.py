"""systemd.* checks against a real systemd user manager (tests/usermanager.py): each problem is
made for real, found, and its fix named; the healthy lane is silent."""

from __future__ import annotations

import getpass
import os
import shutil
import time
from pathlib import Path

import pytest

from lanekit.config import Config, load_config
from lanekit.doctor import DoctorRequest, Finding, Severity, diagnose
from lanekit.errors import NotStartedError
from lanekit.reconcile import apply, kick
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.names import unit_names
from lanekit.service.systemd.systemctl import BUS_HINT, Systemctl
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow

LANE = '[lanes.d]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "0 3 * * *"\n'


def _config(paths: Paths, lanes: str = LANE) -> Config:
    text = f'[defaults]\nlabel_prefix = "com.example.doc"\n[queues.q]\ndir = "{paths.home / "q"}"\n'
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + lanes, encoding="utf-8")
    return load_config(path, paths)


def _manager(user: UserManager, paths: Paths, linger: Path | None = None) -> SystemdManager:
    return SystemdManager(
        Systemctl(user.env),
        user.unit_dir,
        paths.state,
        "the test's manager",
        linger_dir=linger or paths.home / "no-logind",
    )


def _run(check: str, paths: Paths, manager: SystemdManager) -> list[Finding]:
    report = diagnose(
        DoctorRequest(lanes=("d",), checks=(check,), config_path=paths.cwd / "lanes.toml"),
        paths,
        launchd=manager,
    )
    return [f for f in report.findings if f.id == check]


def test_a_healthy_lane_is_silent(systemd: UserManager, paths: Paths) -> None:
    """Applied, run once, linger on: no systemd check has anything to say."""
    config = _config(paths)
    linger = paths.home / "linger"
    linger.mkdir(parents=True)
    (linger / getpass.getuser()).touch()
    manager = _manager(systemd, paths, linger)
    apply(config, paths, manager)
    kick(config, paths, manager, "d")
    for check in (
        "systemd.no-user-manager",
        "systemd.linger-off",
        "systemd.unit-drift",
        "systemd.exec-failed",
        "systemd.never-elapses",
        "systemd.unanchored-interval",
        "systemd.next-fire-disagrees",
        "systemd.enqueue-watch-failed",
    ):
        assert _run(check, paths, manager) == [], check


def test_linger_off_names_enable_linger(systemd: UserManager, paths: Paths) -> None:
    """logind keeps linger files; none for this user means timers stop at logout."""
    config = _config(paths)
    linger = paths.home / "linger"
    linger.mkdir(parents=True)
    manager = _manager(systemd, paths, linger)
    apply(config, paths, manager)
    [finding] = _run("systemd.linger-off", paths, manager)
    assert finding.severity is Severity.WARNING
    assert finding.fix == f"loginctl enable-linger {getpass.getuser()}"
    assert "stops when" in finding.message


def test_no_user_manager(paths: Paths) -> None:
    """A manager that does not answer (no session over sudo/ssh) is an error whose fix says how
    to reach one."""
    _config(paths)
    runtime = paths.home / "run"
    runtime.mkdir(parents=True, mode=0o700)
    dead = SystemdManager(
        Systemctl({"XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"}),
        paths.home / "units",
        paths.state,
    )
    if shutil.which("systemctl") is None:
        pytest.skip("systemctl is not installed")
    [finding] = _run("systemd.no-user-manager", paths, dead)
    assert finding.severity is Severity.ERROR
    assert finding.fix == BUS_HINT


def test_unit_drift_and_an_older_loaded_copy(systemd: UserManager, paths: Paths) -> None:
    """A timer edited by hand differs from lanes.toml's; a file touched since systemd read it
    is an older loaded copy; `lanekit apply LANE` fixes both."""
    config = _config(paths)
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    timer = systemd.unit_dir / unit_names(config.lanes["d"].label)[1]
    timer.write_text(timer.read_text().replace("AccuracySec=1s", "AccuracySec=1h"))
    later = time.time() + 5
    os.utime(timer, (later, later))
    [finding] = _run("systemd.unit-drift", paths, manager)
    assert ".timer changed" in finding.message
    assert "changed on disk since systemd read them" in finding.message
    assert finding.fix == "lanekit apply d"


def test_exec_failed_names_the_status_and_the_fix(systemd: UserManager, paths: Paths) -> None:
    """A run systemd could not set up (its queue directory, holding the logs, is gone:
    209/STDOUT) is an error saying the program never ran, fixed by `lanekit apply`."""
    config = _config(paths)
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    shutil.rmtree(config.lanes["d"].queue.dir)
    with pytest.raises(NotStartedError):
        kick(config, paths, manager, "d")
    [finding] = _run("systemd.exec-failed", paths, manager)
    assert finding.severity is Severity.ERROR
    assert "209/STDOUT" in finding.message
    assert "never ran" in finding.message
    assert finding.fix.startswith("lanekit apply d")


def test_a_timer_that_never_elapses(systemd: UserManager, paths: Paths) -> None:
    """An armed timer whose only calendar is in the past never elapses: an error."""
    config = _config(paths)
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    name = unit_names(config.lanes["d"].label)[1]
    timer = systemd.unit_dir / name
    lines = [
        "OnCalendar=2020-01-01 00:00:00" if line.startswith("OnCalendar=") else line
        for line in timer.read_text().splitlines()
    ]
    timer.write_text("\n".join(lines) + "\n")
    systemd.systemctl("daemon-reload")
    systemd.systemctl("restart", name)
    [finding] = _run("systemd.never-elapses", paths, manager)
    assert "will never elapse" in finding.message
    assert "lanekit apply --force d" in finding.fix


def test_an_unanchored_interval(systemd: UserManager, paths: Paths) -> None:
    """OnUnitActiveSec= alone (what Homebrew writes) never fires after a reboot: an error;
    lanekit's own rendering anchors it and is silent."""
    config = _config(paths, LANE.replace('schedule = "0 3 * * *"', 'every = "7m"'))
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    assert _run("systemd.unanchored-interval", paths, manager) == []
    timer = systemd.unit_dir / unit_names(config.lanes["d"].label)[1]
    timer.write_text(
        "\n".join(ln for ln in timer.read_text().splitlines() if not ln.startswith("OnActive"))
        + "\n"
    )
    [finding] = _run("systemd.unanchored-interval", paths, manager)
    assert "OnUnitActiveSec= alone" in finding.message
    assert finding.fix.startswith("lanekit apply d")


def test_a_timer_that_fires_when_lanekit_says_not(systemd: UserManager, paths: Paths) -> None:
    """The timer's NEXT (what status shows) is cross-checked against lanekit's own schedule
    maths at runtime: silent while they agree (03:00 both); a timer edited to 04:00 is a
    warning that says both times and the fix."""
    config = _config(paths)
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    assert _run("systemd.next-fire-disagrees", paths, manager) == []
    name = unit_names(config.lanes["d"].label)[1]
    timer = systemd.unit_dir / name
    timer.write_text(timer.read_text().replace("03:00:00", "04:00:00"))
    systemd.systemctl("daemon-reload")
    systemd.systemctl("restart", name)
    [finding] = _run("systemd.next-fire-disagrees", paths, manager)
    assert finding.severity is Severity.WARNING
    assert " 04:00:00, but its schedule" in finding.message
    assert " 03:00:00 (local time)" in finding.message
    assert "lanekit apply --force d" in finding.fix


def test_a_path_unit_that_gave_up(systemd: UserManager, paths: Paths) -> None:
    """A lane started on enqueue whose runs leave the job (paused by its marker alone, its
    path unit left armed) hits the path unit's limit: doctor names it and the fix."""
    config = _config(paths, LANE + 'start = ["schedule", "enqueue"]\n')
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    assert _run("systemd.enqueue-watch-failed", paths, manager) == []
    label = config.lanes["d"].label
    marker = paths.pause_marker_for(label)
    marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    marker.write_text("paused by the test, path unit left armed\n")
    from lanekit.queue import open_queue

    open_queue(config.lanes["d"].queue.dir, durable=False).enqueue({"n": 1})
    deadline = time.monotonic() + 15
    while not manager.observe([label])[label].watch_failed and time.monotonic() < deadline:
        time.sleep(0.1)
    [finding] = _run("systemd.enqueue-watch-failed", paths, manager)
    assert "no longer starts lane d when a job arrives" in finding.message
    assert "trigger-limit-hit" in finding.message or "start-limit-hit" in finding.message
    assert f"systemctl --user start {label}.path" in finding.fix
