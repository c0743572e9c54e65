"""Plain lanes (a lane without `queue`) through the CLI, end to end on the emulated domain with
real processes: once per fire under the runner (lane lock, timeout, records, exit codes), and
seen by jobs, status, doctor, timeline, pause and kick like any lane."""

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
from lanekit.run.lanelog import EventName, Reason, read_events
from lanekit.state.paths import Paths

PREFIX = "com.example.plain"
SCRIPT = """#!/bin/sh
# A backup stand-in: says it ran, sleeps $NAP seconds, exits $CODE.
echo "backup ran with $*"
sleep "${NAP:-0}"
exit "${CODE:-0}"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lanes.toml with one plain lane `backup` whose command is a script on its PATH."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "backup").write_text(SCRIPT, encoding="utf-8")
    (bin_dir / "backup").chmod(0o755)
    return _write(tmp_path, bin_dir)


def _write(tmp_path: Path, bin_dir: Path, **lane: str) -> Path:
    config = tmp_path / "lanes.toml"
    extra = "".join(f"{key} = {value}\n" for key, value in lane.items())
    config.write_text(
        "[defaults]\n"
        f'path = ["{bin_dir}", "/usr/bin", "/bin"]\n'
        f'label_prefix = "{PREFIX}"\n'
        "max_jobs = 5  # a queue lane's option: a plain lane ignores it\n\n"
        "[lanes.backup]\n"
        'command = ["backup", "--all"]\n'
        'schedule = "@daily"\n'
        "throttle_interval = 0  # kicked in quick succession: launchd must not postpone\n" + extra,
        encoding="utf-8",
    )
    return config


def _invoke(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=stdin)


def _ok(*args: str) -> Any:
    result = _invoke(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def _queue(config: Path) -> Queue:
    lane = load_config(config, Paths.from_env()).lanes["backup"]
    return Queue(lane.queue.dir)


def _log(config: Path) -> list[dict[str, str]]:
    lane = load_config(config, Paths.from_env()).lanes["backup"]
    return list(read_events(lane.log_path))


def _finished_runs(config: Path) -> int:
    """Runs that ended: `finish`, or `error` for a run that stopped on one (exit 69)."""
    ends = (EventName.FINISH, EventName.ERROR)
    return sum(1 for event in _log(config) if event.get("event") in ends)


def _wait_runs(config: Path, count: int, seconds: float = 30.0) -> None:
    """Until `count` runs ended and launchd has reaped the last (no pid in status)."""
    deadline = time.monotonic() + seconds
    while _finished_runs(config) < count or _pid(config) is not None:
        assert time.monotonic() < deadline, _log(config)
        time.sleep(0.05)


def _pid(config: Path) -> int | None:
    lanes = json.loads(_ok("status", "--json", "-c", str(config)).stdout)["lanes"]
    pid: int | None = lanes[0]["pid"]
    return pid


def _wait_claimed(queue: Queue) -> None:
    deadline = time.monotonic() + 20
    while not queue.counts().claimed:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _jobs(config: Path) -> list[dict[str, Any]]:
    document = json.loads(_ok("jobs", "backup", "--json", "-c", str(config)).stdout)
    items: list[dict[str, Any]] = document["items"]
    return items


def test_a_plain_lane_runs_once_per_fire_with_a_record_per_run(project: Path) -> None:
    """apply installs a lane without a queue; each kick runs its command once (no {job}), each
    run leaves a succeeded record (`lanekit jobs`), status counts it, and enqueue is refused."""
    c = str(project)
    assert "plain" in _ok("validate", "-c", c).stdout
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 1)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 2)
    records = _jobs(project)
    assert [record["state"] for record in records] == ["succeeded", "succeeded"]
    lane = load_config(project, Paths.from_env()).lanes["backup"]
    assert lane.stdout_path.read_text(encoding="utf-8").count("backup ran with --all") == 2
    finishes = [e for e in _log(project) if e.get("event") == EventName.FINISH]
    assert [(e["reason"], e["exit"], e["done"]) for e in finishes] == [("empty", "0", "1")] * 2
    status = json.loads(_ok("status", "--json", "-c", c).stdout)["lanes"][0]
    assert status["queue"]["done"] == 2
    assert status["last_exit"] == 0
    refused = _invoke("enqueue", "backup", "-c", c, stdin="{}")
    assert refused.exit_code == 2
    assert "lane backup in lanes.toml has no queue" in refused.stderr


def test_a_fire_while_running_is_skipped_and_logged(project: Path) -> None:
    """A second start while a run is going (`lanekit run` by hand: launchd itself never starts
    a running job twice) takes no second job: `skipped reason=lane-busy`, one record."""
    c = str(project)
    _write(project.parent, project.parent / "bin", env='{ NAP = "2" }')
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_claimed(_queue(project))
    second = _ok("run", "backup", "-c", c)
    assert second.exit_code == 0
    _wait_runs(project, 1)
    skipped = [e for e in _log(project) if e.get("event") == EventName.SKIPPED]
    assert [e["reason"] for e in skipped] == [Reason.LANE_BUSY]
    assert [record["state"] for record in _jobs(project)] == ["succeeded"]


def test_timeout_fails_the_run_with_its_exit_decoded_and_doctor_says_so(project: Path) -> None:
    """A run past `timeout` is stopped and recorded failed (`timed out after 1s`), not retried;
    doctor names the failed last run with its fix, and the timeline shows the run."""
    c = str(project)
    _write(project.parent, project.parent / "bin", env='{ NAP = "30" }', timeout='"1s"')
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 1)
    [record] = _jobs(project)
    assert record["state"] == "failed"
    assert record["attempts"] == 1
    assert "timed out after 1s" in record["error"]
    failed = [e for e in _log(project) if e.get("event") == EventName.FAILED]
    assert failed[0]["reason"] == Reason.TIMEOUT
    doctor = _invoke("doctor", "backup", "-c", c, "--json")
    findings = json.loads(doctor.stdout)["findings"]
    last = [f for f in findings if f["id"] == "queue.failed-jobs"]
    assert len(last) == 1
    assert "the last run of plain lane backup failed (timed out after 1s" in last[0]["message"]
    assert "lanekit kick backup" in last[0]["fix"]
    timeline = json.loads(_ok("timeline", "-c", c, "--json").stdout)
    [lane] = [lane for lane in timeline["lanes"] if lane["lane"] == "backup"]
    assert lane["runs"], lane
    # A good run afterwards clears the finding: only the latest run counts.
    _write(project.parent, project.parent / "bin")
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 2)
    findings = json.loads(_invoke("doctor", "backup", "-c", c, "--json").stdout)["findings"]
    assert not [f for f in findings if f["id"] == "queue.failed-jobs"]


def test_a_failing_command_exit_code_is_recorded(project: Path) -> None:
    """Exit 3 is a failed run with `exit 3` in its record and in status's last exit."""
    c = str(project)
    _write(project.parent, project.parent / "bin", env='{ CODE = "3" }')
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 1)
    [record] = _jobs(project)
    assert (record["state"], record["error"].split(";")[0]) == ("failed", "exit 3")
    status = json.loads(_ok("status", "--json", "-c", c).stdout)["lanes"][0]
    assert status["last_exit"] == 1  # the run's own exit: some jobs failed


def test_pause_and_resume_a_plain_lane(project: Path) -> None:
    """A paused plain lane runs nothing (`skipped reason=paused`, no record); resumed, it runs."""
    c = str(project)
    _ok("apply", "-c", c)
    _ok("pause", "backup", "-c", c)
    assert _invoke("kick", "backup", "-c", c).exit_code != 0
    _ok("run", "backup")
    assert _jobs(project) == []
    assert [e["reason"] for e in _log(project) if e.get("event") == EventName.SKIPPED] == [
        Reason.PAUSED
    ]
    _ok("resume", "backup", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 1)
    assert [record["state"] for record in _jobs(project)] == ["succeeded"]


@pytest.mark.parametrize("retry", [False, True])
def test_a_run_cut_short_by_a_crash_is_repeated_only_with_retry_on_crash(
    project: Path, retry: bool
) -> None:
    """A run cut short (`lanekit stop`: SIGTERM, as a bootout or a shutdown sends; its job
    goes back to its queue unspent, exactly where a crash's recovery puts it). The next fire without
    retry_on_crash records the cut-short run failed (`interrupted`) and runs a new one; with
    it, the next fire runs the cut-short one again (same id, no new job)."""
    c = str(project)
    extra = {"retry_on_crash": "true"} if retry else {}
    _write(project.parent, project.parent / "bin", env='{ NAP = "30" }', **extra)
    _ok("apply", "-c", c)
    pid = int(_ok("kick", "backup", "-c", c).stdout.split()[-1])
    queue = _queue(project)
    _wait_claimed(queue)
    [cut] = _jobs(project)
    assert f"stopped its run (pid {pid})" in _ok("stop", "backup", "-c", c).stderr
    _wait_runs(project, 1)
    assert [e["exit"] for e in _log(project) if e.get("event") == EventName.FINISH] == ["75"]
    _write(project.parent, project.parent / "bin", **extra)
    _ok("apply", "-c", c)
    _ok("kick", "backup", "-c", c)
    _wait_runs(project, 2)
    records = {record["job_id"]: record for record in _jobs(project)}
    if retry:
        assert list(records) == [cut["job_id"]]
        assert records[cut["job_id"]]["state"] == "succeeded"
    else:
        assert len(records) == 2
        assert records.pop(cut["job_id"])["state"] == "failed", _log(project)
        assert [record["state"] for record in records.values()] == ["succeeded"]
        failed = [e for e in _log(project) if e.get("event") == EventName.FAILED]
        assert [e["reason"] for e in failed] == [Reason.INTERRUPTED]


def test_a_command_that_cannot_start_fails_the_run_and_doctor_says_why(project: Path) -> None:
    """The command gone: the run fails (`cannot start`, not retried, not `interrupted` at the
    next fire) and doctor reports lane.cannot-start."""
    c = str(project)
    (project.parent / "bin" / "backup").unlink()
    _ok("apply", "-c", c, "--force")
    for runs in (1, 2):
        _invoke("kick", "backup", "-c", c)
        _wait_runs(project, runs)
    records = _jobs(project)
    assert [record["state"] for record in records] == ["failed", "failed"]
    assert all(record["error"].startswith("cannot start 'backup'") for record in records)
    reasons = [e.get("reason") for e in _log(project) if e.get("event") == EventName.FAILED]
    assert reasons == [Reason.CANNOT_START, Reason.CANNOT_START]
    findings = json.loads(_invoke("doctor", "backup", "-c", c, "--json").stdout)["findings"]
    assert "lane.cannot-start" in {f["id"] for f in findings}
