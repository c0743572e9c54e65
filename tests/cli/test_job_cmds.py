"""CLI: retry, requeue, cancel, pause, resume - real runs, real files, the emulated launchd."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.queue.records import JobState
from lanekit.run.lanelog import read_events
from lanekit.service.launchd import Launchd, open_launchd
from lanekit.state.paths import Paths

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.verbs"

[queues.inbox]
dir = "{queue}"

# Succeeds for a job whose payload contains "ok", fails otherwise.
[lanes.work]
queue = "inbox"
command = ["/bin/sh", "-c", "grep -q ok \\"$0\\"", "{{job}}"]
schedule = "@daily"
max_attempts = {attempts}
nice = {nice}
"""


def write_config(tmp_path: Path, *, attempts: int = 1, nice: int = 0) -> Path:
    """lanes.toml with one lane `work` on queue `inbox` under tmp_path."""
    path = tmp_path / "lanes.toml"
    path.write_text(CONFIG.format(queue=tmp_path / "inbox", attempts=attempts, nice=nice))
    return path


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A one-lane lanes.toml in the current directory, its queue created."""
    monkeypatch.chdir(tmp_path)
    Queue(tmp_path / "inbox").ensure()
    return write_config(tmp_path)


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def failed_job(config: Path, job_id: str) -> Queue:
    """Enqueue a job that fails and run the lane (max_attempts 1): the job ends in failed/."""
    queue = Queue(config.parent / "inbox")
    queue.enqueue({"x": "bad"}, job_id)
    code, _, err = invoke("run", "-c", str(config), "work")
    assert code == 1, err
    location = queue.locate(job_id)
    assert location is not None
    assert location.state is JobState.FAILED
    return queue


def test_retry_puts_a_failed_job_back_with_attempts_reset_and_the_reason_kept(
    config: Path,
) -> None:
    """retry: failed/ -> queue/, attempts 0, the old reason in the record, .error gone; --dry-run
    and --json tell the same move without making it."""
    queue = failed_job(config, "j1")
    code, out, _ = invoke("retry", "j1", "--dry-run", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["dry_run"] is True
    assert doc["jobs"][0]["to"] == str(queue.queue / "j1.json")
    assert (queue.failed / "j1.json").exists()

    code, out, _ = invoke("retry", "j1")
    assert code == 0, out
    assert (queue.queue / "j1.json").exists()
    assert not (queue.failed / "j1.json").exists()
    assert not (queue.failed / "j1.error").exists()
    record = queue.store.read("j1")
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)
    assert record.error is not None
    assert "exit 1" in record.error


def test_retry_lane_failed_retries_the_whole_failed_dir_and_the_job_runs_again(
    config: Path,
) -> None:
    """`retry LANE --failed` brings back every failed job; once fixed, the next run does it."""
    queue = failed_job(config, "a")
    queue.enqueue({"x": "bad"}, "b")
    invoke("run", "-c", str(config), "work")
    code, out, _ = invoke("retry", "work", "--failed")
    assert code == 0, out
    assert sorted(p.name for p in queue.queue.iterdir()) == ["a.json", "b.json"]
    for name in ("a", "b"):
        (queue.queue / f"{name}.json").write_text('{"x": "ok"}')
    code, _, err = invoke("run", "-c", str(config), "work")
    assert code == 0, err
    assert queue.store.succeeded_ids() == {"a", "b"}


def test_verbs_are_all_or_nothing_and_exit_2_naming_the_job(config: Path) -> None:
    """A job in the wrong state (or nowhere) refuses the whole command; nothing moves."""
    queue = failed_job(config, "j1")
    queue.enqueue({"x": "ok"}, "q1")
    code, _, err = invoke("retry", "j1", "q1")
    assert code == 2
    assert "q1" in err
    assert "not failed" in err
    assert (queue.failed / "j1.json").exists()
    code, _, err = invoke("cancel", "nope")
    assert code == 2
    assert "no job 'nope'" in err
    code, _, err = invoke("requeue", "q1")
    assert code == 2
    assert "not delayed" in err


def test_requeue_moves_a_delayed_retry_to_queue_now(tmp_path: Path, config: Path) -> None:
    """requeue: delayed/<id>.<not-before>.json -> queue/<id>.json, attempts kept."""
    write_config(tmp_path, attempts=3)
    queue = Queue(tmp_path / "inbox")
    queue.enqueue({"x": "bad"}, "d1")
    invoke("run", "-c", str(config), "work")
    assert [p.name.split(".")[0] for p in queue.delayed.iterdir()] == ["d1"]
    code, out, _ = invoke("requeue", "d1", "--json")
    assert code == 0
    assert json.loads(out)["jobs"][0]["state"] == "queued"
    assert (queue.queue / "d1.json").exists()
    assert list(queue.delayed.iterdir()) == []
    record = queue.store.read("d1")
    assert record is not None
    assert record.attempts == 1


def test_cancel_sends_queued_and_delayed_jobs_to_failed_and_refuses_a_running_one(
    tmp_path: Path, config: Path
) -> None:
    """cancel: queue/ or delayed/ -> failed/ with reason `cancelled`; a claimed job is refused
    (exit 2) and stays claimed."""
    queue = Queue(tmp_path / "inbox")
    queue.enqueue({"x": "ok"}, "c1")
    code, _, err = invoke("cancel", "c1")
    assert code == 0, err
    assert (queue.failed / "c1.error").read_text() == "cancelled\n"
    record = queue.store.read("c1")
    assert record is not None
    assert (record.state, record.error) == (JobState.FAILED, "cancelled")

    queue.enqueue({"x": "ok"}, "r1")
    claim = queue.claimer().claim()
    assert claim is not None
    try:
        code, _, err = invoke("cancel", "r1")
        assert code == 2
        assert "is running" in err
        assert claim.path.exists()
    finally:
        queue.complete(claim)
    code, _, _ = invoke("retry", "c1")
    assert code == 0
    assert (queue.queue / "c1.json").exists()


def _domain() -> Launchd:
    return open_launchd(Paths.from_env())


def test_pause_survives_apply_and_a_reload_and_resume_undoes_it(
    tmp_path: Path, config: Path
) -> None:
    """pause disables the label and writes the marker; a run then claims nothing; apply of a
    changed plist boots it out, writes it and leaves it unloaded and disabled; status says
    paused; resume enables and loads it and the next run drains the queue."""
    code, _, err = invoke("apply")
    assert code == 0, err
    code, out, _ = invoke("pause", "work", "--json")
    assert code == 0
    assert json.loads(out)["lanes"][0]["steps"] == ["write pause marker", "disable in launchd"]
    label = "test.verbs.work"
    assert _domain().print_disabled()[label] is True

    queue = Queue(tmp_path / "inbox")
    queue.enqueue({"x": "ok"}, "p1")
    code, _, _ = invoke("run", "work")  # the installed snapshot, as launchd runs it
    assert code == 0
    assert (queue.queue / "p1.json").exists()
    events = list(read_events(tmp_path / "inbox" / "logs" / "work.log"))
    assert any(e.get("reason") == "paused" for e in events)

    write_config(tmp_path, nice=5)
    code, out, err = invoke("apply")
    assert code == 0, err
    assert "paused" in out
    assert label not in {entry.label for entry in _domain().list()}
    assert _domain().print_disabled()[label] is True
    code, out, _ = invoke("apply")
    assert "nothing to do" in out
    code, out, _ = invoke("status", "--json")
    lane = json.loads(out)["lanes"][0]
    assert lane["paused"] is True
    code, _, err = invoke("kick", "work")
    assert code == 1
    assert "paused" in err

    code, out, err = invoke("resume", "work")
    assert code == 0, err
    assert label in {entry.label for entry in _domain().list()}
    assert _domain().print_disabled()[label] is False
    code, _, _ = invoke("run", "work")
    assert code == 0
    assert queue.store.succeeded_ids() == {"p1"}


def test_doctor_calls_a_paused_lane_paused_not_a_missed_run(config: Path) -> None:
    """doctor: a paused lane is an info finding naming `lanekit resume`, not an error."""
    invoke("apply")
    invoke("pause", "work")
    _, out, _ = invoke("doctor", "--json")
    findings = json.loads(out)["findings"]
    disabled = [f for f in findings if f["id"] == "launchd.disabled"]
    assert [f["severity"] for f in disabled] == ["info"]
    assert disabled[0]["fix"] == "lanekit resume work"
    assert not [f for f in findings if f["id"] == "lane.missed-run"]


STOP_CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.stop"

[queues.inbox]
dir = "{queue}"

# Records each execution; a job whose payload says "slow" sleeps first.
[lanes.work]
queue = "inbox"
command = [
    "/bin/sh", "-c", "echo \\"$0\\" >> {runs}; if grep -q slow \\"$0\\"; then sleep 60; fi",
    "{{job}}",
]
schedule = "@daily"
kill_grace = "2s"
"""


def _stop_world(tmp_path: Path) -> tuple[Path, Queue, Path]:
    """A lane whose `slow` jobs sleep 60 s: (lanes.toml, its queue, the file of executions)."""
    runs = tmp_path / "runs.txt"
    config = tmp_path / "lanes.toml"
    config.write_text(STOP_CONFIG.format(queue=tmp_path / "inbox", runs=runs))
    queue = Queue(tmp_path / "inbox")
    queue.ensure()
    return config, queue, runs


def _start_run(config: Path) -> subprocess.Popen[bytes]:
    """`lanekit run work` as launchd would start it: a process of its own."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-m", "lanekit", "run", "-c", str(config), "work"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_running(queue: Queue, job_id: str, runs: Path) -> None:
    """Until the job is claimed and its command has started."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        location = queue.locate(job_id)
        running = location is not None and location.state is JobState.RUNNING
        if running and runs.exists() and job_id in runs.read_text():
            return
        time.sleep(0.05)
    pytest.fail(f"job {job_id} never started")


def _sleepers(job_file_part: str) -> list[int]:
    """Pids of live `sleep 60` processes started for a job (by its claimed file's path)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(proc.info["cmdline"] or [])
            if proc.info["status"] != psutil.STATUS_ZOMBIE and job_file_part in cmd:
                found.append(proc.pid)
    return found


def test_cancel_stop_ends_a_running_job_in_failed_and_the_lane_goes_on(tmp_path: Path) -> None:
    """cancel --stop of a running job: refused without --stop, a dry run changes nothing; with
    --stop its process group is stopped, the job is in failed/ with reason `cancelled` (the
    .error and the record say so), the same run goes on to the next job, and the lane's next
    run does not run the cancelled job again."""
    config, queue, runs = _stop_world(tmp_path)
    queue.enqueue({"x": "slow"}, "s1")
    runner = _start_run(config)
    try:
        _wait_running(queue, "s1", runs)
        queue.enqueue({"x": "quick"}, "q1")
        code, _, err = invoke("cancel", "s1", "-c", str(config))
        assert code == 2
        assert "--stop" in err
        code, out, err = invoke("cancel", "s1", "--stop", "--dry-run", "--json", "-c", str(config))
        assert code == 0, err
        doc = json.loads(out)
        assert doc["dry_run"] is True
        assert doc["jobs"][0]["to"] == str(queue.failed / "s1.json")
        location = queue.locate("s1")
        assert location is not None
        assert location.state is JobState.RUNNING
        assert not [n for n in os.listdir(queue.claimed) if n.endswith(".cancel")]

        began = time.monotonic()
        code, out, err = invoke("cancel", "s1", "--stop", "--json", "-c", str(config))
        assert code == 0, err
        assert time.monotonic() - began < 30  # stopped, not waited out (the job sleeps 60 s)
        doc = json.loads(out)
        assert doc["jobs"][0]["from"].startswith(str(queue.claimed))
        assert doc["jobs"][0]["to"] == str(queue.failed / "s1.json")
        assert doc["jobs"][0]["state"] == "failed"
        assert (queue.failed / "s1.error").read_text().partition("\n")[0] == "cancelled"
        record = queue.store.read("s1")
        assert record is not None
        assert record.state is JobState.FAILED
        assert (record.error or "").startswith("cancelled")
        assert _sleepers(str(queue.claimed / "s1.")) == []
        assert runner.wait(timeout=60) == 1  # the run went on, and reports a job failed
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    events = list(read_events(tmp_path / "inbox" / "logs" / "work.log"))
    assert any(e.get("event") == "done" and e.get("job") == "q1" for e in events)
    assert any(
        e.get("event") == "failed" and e.get("job") == "s1" and e.get("reason") == "cancelled"
        for e in events
    )
    assert not [n for n in os.listdir(queue.claimed) if n.startswith(".")]
    code, _, err = invoke("run", "-c", str(config), "work")
    assert code == 0, err
    assert runs.read_text().count("s1") == 1


def test_cancel_stop_settles_a_job_whose_runner_was_killed(tmp_path: Path) -> None:
    """The runner SIGKILLed mid-job leaves the job under its watcher: cancel --stop reaches the
    watcher all the same, and with nobody left to settle the claim it recovers it itself, by
    the status the watcher wrote: failed/ as cancelled, never run again."""
    config, queue, runs = _stop_world(tmp_path)
    queue.enqueue({"x": "slow"}, "k1")
    runner = _start_run(config)
    try:
        _wait_running(queue, "k1", runs)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        code, _, err = invoke("cancel", "k1", "--stop", "-c", str(config))
        assert code == 0, err
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    location = queue.locate("k1")
    assert location is not None
    assert location.state is JobState.FAILED
    assert (queue.failed / "k1.error").read_text().partition("\n")[0] == "cancelled"
    assert _sleepers(str(queue.claimed / "k1.")) == []
    code, _, err = invoke("run", "-c", str(config), "work")
    assert code == 0, err
    assert runs.read_text().count("k1") == 1


def test_purge_says_a_short_retention_as_lanes_toml_writes_it(config: Path) -> None:
    """`purge --older-than 1m` reports "older than 1m", never a fraction of an hour."""
    code, out, err = invoke("purge", "--older-than", "1m", "-c", str(config))
    assert code == 0, err
    assert "(older than 1m / 1m)" in out
    assert "0.0166667h" not in out
