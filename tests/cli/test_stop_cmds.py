"""`lanekit stop` and `lanekit restart` during a job, on the emulated domain with real processes:
the run ends as a bootout ends it (job back in its queue unspent, exit 75), the lane stays
loaded."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import load_config
from lanekit.queue.directory.backend import Queue
from lanekit.run.lanelog import EventName, read_events
from lanekit.state.paths import Paths


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One queue lane whose job sleeps 30 s; launchd may start it again at once."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "lanes.toml"
    config.write_text(
        '[defaults]\nlabel_prefix = "com.example.stop"\n\n'
        f'[queues.q]\ndir = "{tmp_path / "q"}"\n\n'
        '[lanes.slow]\nqueue = "q"\n'
        'command = ["/bin/sh", "-c", "sleep 30", "job", "{job}"]\n'
        "throttle_interval = 0\n",
        encoding="utf-8",
    )
    return config


def _ok(*args: str, code: int = 0, input_text: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=input_text)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def _lane_status(config: Path) -> dict[str, Any]:
    lanes: list[dict[str, Any]] = json.loads(_ok("status", "--json", "-c", str(config)).stdout)[
        "lanes"
    ]
    return lanes[0]


def _started_job(config: Path) -> tuple[Queue, str, int]:
    c = str(config)
    _ok("apply", "-c", c)
    job = _ok("enqueue", "slow", "-c", c, "-", input_text="{}").stdout.strip()
    pid = int(_ok("kick", "slow", "-c", c).stdout.strip())
    queue = Queue(load_config(config, Paths.from_env()).queues["q"].dir)
    deadline = time.monotonic() + 20
    while not queue.counts().claimed:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return queue, job, pid


def _finishes(config: Path) -> list[dict[str, str]]:
    lane = load_config(config, Paths.from_env()).lanes["slow"]
    return [e for e in read_events(lane.log_path) if e.get("event") == EventName.FINISH]


def _claims(log: Path) -> list[dict[str, str]]:
    return [e for e in read_events(log) if e.get("event") == EventName.CLAIMED]


def test_stop_puts_the_job_back_and_leaves_the_lane_loaded(project: Path) -> None:
    """stop during a job: the run exits 75 with the job requeued unspent, the lane is still
    loaded and idle (launchd's last exit 75), and a second stop finds nothing to stop."""
    c = str(project)
    queue, job, pid = _started_job(project)
    result = _ok("stop", "slow", "-c", c)
    assert f"stopped its run (pid {pid}); its job is back in the queue" in result.stderr
    counts = queue.counts()
    assert (counts.queued, counts.claimed) == (1, 0)
    record = queue.job(job)
    assert record is not None and record.record is not None
    assert record.record.state == "queued"
    assert [(e["reason"], e["exit"], e["requeued"]) for e in _finishes(project)] == [
        ("signal", "75", "1")
    ]
    status = _lane_status(project)
    # Loaded and idle; a last exit of 75 is `stopped` (its job went back), not `error`.
    assert (status["state"], status["pid"], status["last_exit"]) == ("stopped", None, 75)
    again = _ok("stop", "slow", "-c", c)
    assert "lane slow is not running: nothing to stop" in again.stderr


def test_restart_stops_then_starts_a_new_run_that_takes_the_job_again(project: Path) -> None:
    """restart = stop + kick: the old run exits 75, a new run (another pid) claims the same
    job again with the same attempt number (a stop spends none)."""
    c = str(project)
    queue, job, pid = _started_job(project)
    result = _ok("restart", "slow", "-c", c)
    new_pid = int(result.stdout.strip())
    assert new_pid != pid
    lane = load_config(project, Paths.from_env()).lanes["slow"]
    deadline = time.monotonic() + 20
    # The claim is a rename, logged just after: wait for the log line, not the file.
    while len(claims := _claims(lane.log_path)) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert queue.counts().claimed == 1
    assert [(e["job"], e["attempt"]) for e in claims] == [(job, "1"), (job, "1")]
    _ok("stop", "slow", "-c", c)


def test_stop_of_a_lane_that_is_not_loaded_says_apply(project: Path) -> None:
    """Before apply there is no run to stop: exit 1, one line, the hint names apply."""
    result = CliRunner().invoke(app, ["stop", "slow", "-c", str(project)])
    assert result.exit_code == 1
    assert "lane 'slow' is not loaded" in result.stderr
    assert "lanekit apply" in result.stderr
