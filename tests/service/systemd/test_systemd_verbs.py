"""Issue 35's verbs and plain lanes on a real systemd user manager (tests/usermanager.py),
through the CLI as a user runs them: a plain lane fires on systemd's clock and records each run;
`stop` puts the job back (exit 75) and leaves the timer armed, `restart` starts it again;
`uninstall --project` removes every unit file and *.target.wants link and keeps the queues;
`adopt` is refused where systemd runs the lanes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import Config, load_config
from lanekit.queue import open_queue
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.names import all_unit_names
from lanekit.service.systemd.systemctl import Systemctl
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow

PREFIX = "com.example.verbs"


@pytest.fixture
def cli(systemd: UserManager, paths: Paths, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`lanekit ARGS` in the project directory, reaching the test's user manager (chosen as
    on any Linux machine with one: no LANEKIT_LAUNCHD)."""
    for name in ("LANEKIT_LAUNCHD", "LANEKIT_LAUNCH_AGENTS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.setenv(name, systemd.env[name])
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(paths.state))
    paths.cwd.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(paths.cwd)

    def invoke(*args: str) -> Any:
        return CliRunner().invoke(app, list(args))

    return invoke


def _config(paths: Paths, lanes: str) -> Config:
    text = f'[defaults]\nlabel_prefix = "{PREFIX}"\n[queues.q]\ndir = "{paths.home / "q"}"\n'
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + lanes, encoding="utf-8")
    return load_config(path, paths)


def _manager(user: UserManager, paths: Paths) -> SystemdManager:
    return SystemdManager(Systemctl(user.env), user.unit_dir, paths.state, "the test's manager")


def _until(what: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return what()


def _ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def test_a_plain_lane_fires_and_records_its_runs(
    systemd: UserManager, paths: Paths, cli: Callable[..., Any]
) -> None:
    """A lane without a queue, every 2 s: systemd's timer runs its command (no {job}) by
    itself, each run is a succeeded record in `lanekit jobs`, and status says systemd ran it."""
    out = paths.home / "ran.txt"
    config = _config(
        paths, f'[lanes.plain]\ncommand = ["/bin/sh", "-c", "echo ran >> {out}"]\nevery = "2s"\n'
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    _ok(cli("apply"))
    assert _until(lambda: out.exists() and len(out.read_text().splitlines()) >= 2, 15)

    def records() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(_ok(cli("jobs", "plain", "--json")).stdout)[
            "items"
        ]
        return items

    assert _until(lambda: len(records()) >= 2, 10), records()
    assert {item["state"] for item in records()} <= {"succeeded", "running"}
    lanes = json.loads(_ok(cli("status", "--json")).stdout)["lanes"]
    [lane] = [row for row in lanes if row["lane"] == "plain"]
    assert lane["state"] in {"scheduled", "running"}, lane
    assert lane["next_fire"] is not None
    label = config.lanes["plain"].label
    assert _manager(systemd, paths).observe([label])[label].loaded


def test_stop_puts_the_job_back_and_restart_runs_it_again(
    systemd: UserManager, paths: Paths, cli: Callable[..., Any]
) -> None:
    """`lanekit stop` mid-job: the runner gets SIGTERM alone, puts the job back (no attempt
    spent) and exits 75, as systemd records; the lane stays loaded and its timer armed.
    `lanekit restart` then starts a run that claims the job again."""
    config = _config(
        paths, '[lanes.busy]\nqueue = "q"\ncommand = ["/bin/sleep", "60"]\nschedule = "0 3 * * *"\n'
    )
    _ok(cli("apply"))
    queue = open_queue(config.lanes["busy"].queue.dir, durable=False)
    queue.enqueue({"long": True})
    _ok(cli("kick", "busy"))
    assert _until(lambda: queue.counts().claimed == 1, 10)
    stopped = cli("stop", "busy")
    assert stopped.exit_code == 0, (stopped.stdout, stopped.stderr)
    counts = queue.counts()
    assert (counts.queued + counts.delayed, counts.claimed, counts.done) == (1, 0, 0)
    label = config.lanes["busy"].label
    manager = _manager(systemd, paths)
    seen = manager.observe([label])[label]
    assert (seen.loaded, seen.pid, seen.exit_code) == (True, None, 75)
    assert seen.next_fire is not None  # the timer is still armed
    restarted = cli("restart", "busy")
    assert restarted.exit_code == 0, (restarted.stdout, restarted.stderr)
    assert _until(lambda: manager.observe([label])[label].pid is not None, 10)
    assert _until(lambda: queue.counts().claimed == 1, 10), queue.counts()
    assert manager.observe([label])[label].next_fire is not None
    _ok(cli("stop", "busy"))


def test_uninstall_project_removes_every_unit_and_keeps_the_queue(
    systemd: UserManager, paths: Paths, cli: Callable[..., Any]
) -> None:
    """A lane with a timer and a path unit (start on enqueue, paused so the job stays queued),
    one without a schedule and one with: `uninstall --project --dry-run` lists them and
    changes nothing; for real, no unit file of any is left, nor a link in timers.target.wants
    / paths.target.wants, systemd knows none of them, and the queue keeps its job."""
    config = _config(
        paths,
        '[lanes.a]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "0 3 * * *"\n'
        'start = ["schedule", "enqueue"]\n'
        '[lanes.b]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\n'
        '[lanes.c]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "0 4 * * *"\n',
    )
    _ok(cli("apply"))
    labels = [config.lanes[name].label for name in ("a", "b", "c")]
    units = sorted(p.name for p in systemd.unit_dir.rglob("*") if PREFIX in p.name)
    assert len(units) == 9  # a: service, timer, path, two links; b: service; c: 3 (1 link)
    _ok(cli("pause", "a"))  # the queued job below must stay queued (pause unlinks a's units)
    units = sorted(p.name for p in systemd.unit_dir.rglob("*") if PREFIX in p.name)
    assert len(units) == 7
    queue = open_queue(config.lanes["a"].queue.dir, durable=False)
    queue.enqueue({"keep": "me"})
    dry = _ok(cli("uninstall", "--project", "--dry-run"))
    assert all(label in dry.stdout for label in labels), dry.stdout
    assert sorted(p.name for p in systemd.unit_dir.rglob("*") if PREFIX in p.name) == units
    _ok(cli("uninstall", "--project"))
    assert [p.name for p in systemd.unit_dir.rglob("*") if PREFIX in p.name] == []
    names = [name for label in labels for name in all_unit_names(label)]
    shown = systemd.systemctl("show", "-p", "LoadState", *names).stdout.split()
    assert shown == ["LoadState=not-found"] * len(names)
    assert queue.counts().queued == 1


def test_adopt_is_refused_where_systemd_runs_the_lanes(
    systemd: UserManager, paths: Paths, cli: Callable[..., Any]
) -> None:
    """adopt takes over a loaded launchd job: on systemd there is none, so it is refused with
    one line saying why and what to do instead (exit 2), and lanes.toml is unchanged."""
    _config(paths, "")
    plist = paths.home / "com.example.hand.plist"
    plist.parent.mkdir(parents=True, exist_ok=True)
    plist.write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict>'
        b"<key>Label</key><string>com.example.hand</string>"
        b"<key>ProgramArguments</key><array><string>/bin/true</string></array>"
        b"<key>StartInterval</key><integer>300</integer></dict></plist>\n"
    )
    before = (paths.cwd / "lanes.toml").read_bytes()
    refused = cli("adopt", str(plist))
    assert refused.exit_code == 2, (refused.stdout, refused.stderr)
    assert "systemd runs the lanes here" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert (paths.cwd / "lanes.toml").read_bytes() == before


def test_plan_and_pause_speak_systemds_words(
    systemd: UserManager, paths: Paths, cli: Callable[..., Any]
) -> None:
    """Where systemd runs the lanes, plan, apply, pause and resume never say plist, launchd,
    bootout or bootstrap: the units changed, systemd disabled them, a start arms them."""
    lanes = (
        '[lanes.w]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "0 3 * * *"\n'
        'start = ["schedule", "enqueue"]\n'
    )
    _config(paths, lanes)
    said = [_ok(cli("plan")).stdout, _ok(cli("apply")).stdout]
    _config(paths, lanes + 'env = { GEN = "2" }\n')
    planned = _ok(cli("plan")).stdout
    assert "units changed (" in planned, planned
    assert "stop, write units, write snapshot, start" in planned, planned
    said += [planned, _ok(cli("apply")).stdout]
    paused = _ok(cli("pause", "w")).stdout
    assert "disable in systemd" in paused, paused
    assert "systemd would start it again and again while jobs wait" in paused, paused
    resumed = _ok(cli("resume", "w")).stdout
    assert "enable in systemd" in resumed and "start" in resumed, resumed
    said += [paused, resumed, _ok(cli("plan")).stdout]
    for text in said:
        for word in ("plist", "launchd", "bootout", "bootstrap", "booted out"):
            assert word not in text, (word, text)
