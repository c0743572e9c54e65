"""A command that cannot start fails early (lanekit.reconcile.preflight.cannot_start): validate and
apply
report it (the doctor check path.command-missing), `apply --force` installs anyway, and doctor's
lane.cannot-start names a lane whose run put its job back because the command could not start."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.queue.records import JobState
from lanekit.state.paths import Paths

CONFIG = """
[defaults]
path = ["{bin}", "/usr/bin", "/bin"]
label_prefix = "test.preflight"

[queues.inbox]
dir = "{queue}"

[lanes.work]
queue = "inbox"
command = ["lanekit-preflight-tool", "{{job}}"]
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lanes.toml whose lane runs `lanekit-preflight-tool`, looked up in tmp_path/bin (empty)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bin").mkdir()
    path = tmp_path / "lanes.toml"
    path.write_text(CONFIG.format(bin=tmp_path / "bin", queue=tmp_path / "inbox"))
    return path


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def install_tool(tmp_path: Path) -> None:
    """Put the lane's command on its PATH (a script that succeeds)."""
    tool = tmp_path / "bin" / "lanekit-preflight-tool"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)


def test_validate_reports_a_command_missing_from_the_lanes_path(
    tmp_path: Path, config: Path
) -> None:
    """validate exits 1 naming the lane, the command and its PATH; once the command is
    there it passes."""
    code, _, err = invoke("validate")
    assert code == 1
    assert "lanes.work.command: the job command lanekit-preflight-tool is not on" in err
    install_tool(tmp_path)
    code, out, err = invoke("validate")
    assert code == 0, err
    assert "OK" in out


def test_apply_refuses_a_lane_whose_command_is_missing_and_force_installs_it(
    tmp_path: Path, config: Path
) -> None:
    """apply (and plan) fail the lane, installing nothing; --force installs it anyway."""
    code, out, _ = invoke("apply")
    assert code == 1
    assert "lanekit-preflight-tool is not on the job's PATH" in out
    assert "--force" in out
    label = "test.preflight.work"
    assert not Paths.from_env().plist_for(label).exists()
    code, out, _ = invoke("plan")
    assert "failed" in out
    code, _, err = invoke("apply", "--force")
    assert code == 0, err
    assert Paths.from_env().plist_for(label).exists()


def test_doctor_reports_cannot_start_after_the_first_such_run(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose command cannot start puts the job back untouched (attempts unspent) and
    exits 69; doctor then reports lane.cannot-start, and no longer once a job succeeded."""
    invoke("apply", "--force")
    queue = Queue(tmp_path / "inbox")
    job_id = queue.enqueue({"n": 1})
    code, _, err = invoke("run", "work")
    assert code == 69, err
    location = queue.locate(job_id)
    assert location is not None
    assert location.state is JobState.QUEUED
    record = queue.store.read(job_id)
    assert record is not None
    assert record.attempts == 0

    code, out, _ = invoke("doctor", "--json", "--check", "lane.cannot-start")
    findings = json.loads(out)["findings"]
    assert [f["id"] for f in findings] == ["lane.cannot-start"]
    assert "lanekit-preflight-tool" in findings[0]["message"]

    install_tool(tmp_path)
    # `lanekit run` in the foreground runs jobs with this process's PATH (launchd would give
    # the lane's): put the lane's bin there too.
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    code, _, err = invoke("run", "work")
    assert code == 0, err
    code, out, _ = invoke("doctor", "--json", "--check", "lane.cannot-start")
    assert json.loads(out)["findings"] == []


def test_plan_fails_like_apply_and_apply_keeps_reminding_after_force(
    tmp_path: Path, config: Path
) -> None:
    """plan exits 1 when apply would fail a lane; after `apply --force`, a plain apply calls
    the lane unchanged but still says, on stderr, that its runs cannot start."""
    code, out, _ = invoke("plan")
    assert code == 1
    assert "failed" in out
    assert invoke("apply", "--force")[0] == 0
    code, out, err = invoke("apply")
    assert code == 0, err
    assert "unchanged" in out
    assert (
        "warning: lane work is installed but its runs cannot start: the job command "
        "lanekit-preflight-tool is not on"
    ) in err
    install_tool(tmp_path)
    assert "cannot start" not in invoke("apply")[2]
