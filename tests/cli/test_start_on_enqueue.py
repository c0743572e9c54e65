"""`start = ["schedule", "enqueue"]` on the emulated domain with real processes: the plist
watches the queue's queue/ (QueueDirectories), the lane drains a job within seconds of its
arrival with no kick (lanekit's enqueue or a producer's rename), a paused lane is unloaded so it
cannot spin, doctor names a respawn loop, and `enqueue --kick` starts a schedule-only lane."""

from __future__ import annotations

import json
import plistlib
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import load_config, validate_config
from lanekit.queue.directory.backend import Queue
from lanekit.state.paths import Paths

LABEL = "com.example.enq.fast"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A lane `fast` started on enqueue (and `slow`, schedule only) on one queue; everything
    is uninstalled after, so no watch process outlives the test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "lanes.toml"
    _write(config, tmp_path, command='["/bin/cat", "{job}"]')
    yield config
    CliRunner().invoke(app, ["uninstall", "--all", "--force"])


def _write(config: Path, root: Path, *, command: str, throttle: int = 0) -> None:
    config.write_text(
        '[defaults]\nlabel_prefix = "com.example.enq"\n'
        f'[queues.q]\ndir = "{root / "q"}"\n'
        f'[lanes.fast]\nqueue = "q"\ncommand = {command}\nstart = ["schedule", "enqueue"]\n'
        f"throttle_interval = {throttle}\n"
        '[lanes.slow]\nqueue = "q2"\ncommand = ["/bin/cat", "{job}"]\nthrottle_interval = 0\n'
        f'[queues.q2]\ndir = "{root / "q2"}"\n',
        encoding="utf-8",
    )


def _ok(*args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def _queue(config: Path, name: str = "q") -> Queue:
    return Queue(load_config(config, Paths.from_env()).queues[name].dir)


def _until(predicate: Any, seconds: float = 5.0) -> float:
    """Seconds until `predicate()` held; fails past `seconds`."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < seconds, "not within the time allowed"
        time.sleep(0.05)
    return time.monotonic() - started


def _runs(config: Path) -> int:
    lanes = json.loads(_ok("status", "--json", "-c", str(config)).stdout)["lanes"]
    runs: int = next(lane for lane in lanes if lane["lane"] == "fast")["runs"]
    return runs


def test_the_plist_watches_the_queue_and_config_refusals(project: Path, paths: Paths) -> None:
    """QueueDirectories is the queue's queue/; a plain lane cannot start on enqueue, and a
    schedule on a lane not started by it is an error."""
    plist = plistlib.loads(_ok("render", "fast", "-c", str(project)).stdout.encode())
    assert plist["QueueDirectories"] == [str(project.parent / "q" / "queue")]
    assert "QueueDirectories" not in plistlib.loads(
        _ok("render", "slow", "-c", str(project)).stdout.encode()
    )
    bad = project.parent / "bad.toml"
    bad.write_text(
        '[lanes.p]\ncommand = ["/bin/true"]\nstart = ["enqueue"]\n'
        '[queues.q]\ndir = "/tmp/x"\n'
        '[lanes.s]\nqueue = "q"\ncommand = ["/bin/true"]\nstart = ["enqueue"]\n'
        'schedule = "@daily"\n',
        encoding="utf-8",
    )
    messages = [error.message for error in validate_config(bad, Paths.from_env())[1]]
    assert any('lanes.p.start: "enqueue" needs a queue' in m for m in messages), messages
    assert any('lanes.s.schedule: is never used: start has no "schedule"' in m for m in messages)


def test_an_enqueued_job_is_drained_within_seconds_without_a_kick(project: Path) -> None:
    """apply, then a job from `lanekit enqueue` and one renamed in by a producer: each is done
    within a few seconds, no kick, no lanekit command in between."""
    c = str(project)
    _ok("apply", "-c", c)
    queue = _queue(project)
    _ok("enqueue", "fast", "-c", c, "-", stdin='{"n": 1}')
    assert _until(lambda: queue.counts().done == 1) < 5
    tmp = project.parent / "q" / "tmp" / "producer"
    tmp.write_text('{"n": 2}', encoding="utf-8")
    tmp.rename(project.parent / "q" / "queue" / "00000000000000000001-1-abcd.json")
    assert _until(lambda: queue.counts().done == 2) < 5
    assert queue.counts().queued == 0


def test_a_paused_lane_is_unloaded_and_does_not_spin(project: Path) -> None:
    """pause unloads a lane started on enqueue: a job enqueued then starts nothing (runs stay
    as they were, the job waits); resume loads it and the job is drained."""
    c = str(project)
    _ok("apply", "-c", c)
    paused = _ok("pause", "fast", "-c", c).stdout
    assert "unload" in paused
    _ok("enqueue", "fast", "-c", c, "-", stdin="{}")
    time.sleep(1.5)
    queue = _queue(project)
    assert queue.counts().queued == 1
    lanes = json.loads(_ok("status", "--json", "-c", c).stdout)["lanes"]
    assert next(lane for lane in lanes if lane["lane"] == "fast")["state"] != "running"
    _ok("resume", "fast", "-c", c)
    _until(lambda: queue.counts().done == 1)


def test_a_missing_command_does_not_spin(project: Path) -> None:
    """The command gone: the run that finds it missing defers every waiting job to delayed/
    (no attempt spent) and leaves queue/ empty, so launchd does not start the lane again;
    doctor says why (lane.cannot-start)."""
    c = str(project)
    _write(project, project.parent, command='["/nonexistent/tool", "{job}"]', throttle=1)
    _ok("apply", "-c", c, "--force")
    for n in range(3):
        _ok("enqueue", "fast", "-c", c, "-", stdin=f'{{"n": {n}}}')
    queue = _queue(project)
    _until(lambda: queue.counts().delayed == 3)
    runs = _runs(project)
    time.sleep(3)
    assert _runs(project) == runs <= 3
    assert (queue.counts().queued, queue.counts().failed) == (0, 0)
    ids = {f["id"] for f in json.loads(_invoke_doctor(c))["findings"]}
    assert "lane.cannot-start" in ids
    assert "lane.respawn-loop" not in ids


def test_doctor_names_a_respawn_loop(project: Path) -> None:
    """A queue the run refuses (its claimed/ directory gone: exit 69 before it takes anything)
    leaves the job in queue/, so launchd starts the lane again at each ThrottleInterval (1 s
    here); doctor names the loop and the way out, and pause stops it."""
    c = str(project)
    _write(project, project.parent, command='["/bin/cat", "{job}"]', throttle=1)
    _ok("apply", "-c", c)
    (project.parent / "q" / "claimed").rmdir()
    _ok("enqueue", "fast", "-c", c, "-", stdin="{}")
    _until(lambda: _runs(project) >= 6, seconds=20)
    report = json.loads(_invoke_doctor(c))
    loops = [f for f in report["findings"] if f["id"] == "lane.respawn-loop"]
    assert len(loops) == 1
    assert "respawn loop" in loops[0]["message"]
    assert "lanekit pause fast" in loops[0]["fix"]
    _ok("pause", "fast", "-c", c)
    runs = _runs(project)
    time.sleep(2.5)
    assert _runs(project) == runs  # paused: unloaded, no more starts


def _invoke_doctor(config: str) -> str:
    result = CliRunner().invoke(app, ["doctor", "fast", "-c", config, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return str(result.stdout)


def test_enqueue_kick_starts_a_schedule_only_lane(project: Path) -> None:
    """`enqueue --kick` on a lane that starts only on its schedule: the job, then its run."""
    c = str(project)
    _ok("apply", "-c", c)
    out = _ok("enqueue", "slow", "-c", c, "--kick", "-", stdin="{}").stdout.split()
    assert len(out) == 2 and out[1].isdigit()  # the job's id, then the run's pid
    queue = _queue(project, "q2")
    _until(lambda: queue.counts().done == 1)
    refused = CliRunner().invoke(app, ["enqueue", "--queue", "q2", "-c", c, "--kick", "-"])
    assert refused.exit_code == 2
    assert "--kick starts a lane" in refused.stderr
