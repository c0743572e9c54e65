"""Issue 10's "done when", end to end through the CLI: a lane left alone with a hung job, a
failing job and a growing done/ stays healthy, and a second project's lane of the same name
never touches the first's. Real job processes, real signals, the emulated launchd domain."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.state.paths import Paths

JOB = """\
#!/bin/sh
# hang: ignores SIGTERM, so only the SIGKILL after kill_grace stops it.
case "$(cat "$1")" in
  *hang*) trap '' TERM; sleep 60 ;;
  *fail*) [ -e "$(dirname "$0")/fixed" ] && exit 0
          echo "disk on fire at step 3" >&2; exit 3 ;;
  *) exit 0 ;;
esac
"""

CONFIG = """\
[defaults]
label_prefix = "com.example.months"
path = ["/usr/bin", "/bin"]

[queues.inbox]
dir = "{queue}"

[lanes.process]
queue = "inbox"
command = ["{job}", "{{job}}"]
schedule = "0 3 * * *"
timeout = "2s"
kill_grace = 1
max_attempts = 2
"""


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Run `lanekit ARGS` in-process; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def project(root: Path) -> Path:
    """A project directory with lanes.toml, its job script and its queue; returns lanes.toml."""
    root.mkdir()
    job = root / "job.sh"
    job.write_text(JOB)
    job.chmod(0o755)
    config = root / "lanes.toml"
    config.write_text(CONFIG.format(queue=root / "inbox", job=job))
    return config


def job_doc(config: Path, job_id: str) -> dict[str, object]:
    """`lanekit job process ID --json` of the project."""
    code, out, err = invoke("job", "process", job_id, "--json", "-c", str(config))
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def test_a_lane_left_alone_for_months_stays_healthy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hung job stopped at its timeout, failing job retried then failed with its stderr shown,
    `retry` brings it back, old successes are purged with the guard intact, and project B's
    lane `process` is refused instead of taking over project A's."""
    a = project(tmp_path / "a")
    monkeypatch.chdir(a.parent)
    assert invoke("apply")[0] == 0
    queue = Queue(a.parent / "inbox")
    # Each job's payload decides what job.sh does with it.
    for job_id, payload in (("hung", "hang"), ("flaky", "fail"), ("fine", "ok")):
        stdin = json.dumps({"do": payload})
        code, _, err = invoke("enqueue", "process", "-", "--id", job_id, "-c", str(a), stdin=stdin)
        assert code == 0, err

    code, _, _ = invoke("run", "process", "-c", str(a))
    assert code == 1  # two jobs failed their first attempt; the hung one was killed, not waited for
    hung = job_doc(a, "hung")
    assert hung["state"] == "queued"
    assert hung["retry_at"] is not None  # a delayed retry, due after its back-off
    assert "timed out after 2s" in json.dumps(hung)
    assert job_doc(a, "fine")["state"] == "succeeded"

    # The retries are due later; run them now, and both use up their last attempt.
    assert invoke("requeue", "hung", "flaky", "-c", str(a))[0] == 0
    assert invoke("run", "process", "-c", str(a))[0] == 1
    flaky = job_doc(a, "flaky")
    assert flaky["state"] == "failed"
    assert "disk on fire at step 3" in json.dumps(flaky)
    assert job_doc(a, "hung")["state"] == "failed"
    code, out, _ = invoke("job", "process", "flaky", "-c", str(a))
    assert code == 0
    assert "disk on fire at step 3" in out

    # `retry` brings the failing job back with fresh attempts; this time it succeeds.
    (a.parent / "fixed").touch()
    assert invoke("retry", "flaky", "-c", str(a))[0] == 0
    assert invoke("run", "process", "-c", str(a))[0] == 0
    assert job_doc(a, "flaky")["state"] == "succeeded"

    # Long after keep_done (30 days), done/ is purged, yet the ids still cannot run again.
    purged = queue.purge(keep_done=30 * 86400, keep_failed=90 * 86400, now=time.time() + 40 * 86400)
    assert set(purged.done) == {"fine", "flaky"}
    assert queue.locate("fine") is None
    again = json.dumps({"do": "ok"})
    code, _, err = invoke("enqueue", "process", "-", "--id", "fine", "-c", str(a), stdin=again)
    assert code != 0
    assert "fine" in err

    # Project B, elsewhere, with a lane of the same name and prefix: refused, A's lane intact.
    b = project(tmp_path / "b")
    monkeypatch.chdir(b.parent)
    code, _, err = invoke("apply")
    assert code == 2
    assert str(a) in err and str(b) in err
    snapshot = json.loads(Paths.from_env().snapshot_for("com.example.months.process").read_text())
    assert snapshot["queue_dir"] == str(a.parent / "inbox")
