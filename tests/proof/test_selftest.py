"""`lanekit selftest` end to end on a private emulated domain (real processes, real SIGTERM),
and its darwin branch through the scripted fake launchctl."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.proof.selftest import run_selftest
from lanekit.service.launchd.domain import Caller
from lanekit.state.paths import Paths
from places import FAKE_LAUNCHCTL

FAKE = FAKE_LAUNCHCTL
STEPS = [
    "bootstrap",
    "print",
    "claim rename",
    "durable enqueue",
    "kickstart",
    "throttled second kick",
    "bootout while running",
    "test notice",
    "cleanup",
]


@pytest.mark.slow
def test_selftest_passes_on_the_emulated_domain(tmp_path: Path) -> None:
    """Every step passes against the emulated domain: the job runs, the second kick is
    throttled and still runs, bootout mid-job puts the job back; the temp dir is removed and
    the JSON report lists every step."""
    paths = Paths.under(tmp_path)
    report = run_selftest(paths, env={"LANEKIT_LAUNCHD": "emulated"})
    assert [step.name for step in report.steps] == STEPS
    assert report.ok, [s for s in report.steps if not s.ok]
    assert "back in queue/" in report.steps[6].detail
    assert not Path(report.directory).exists()
    document = json.loads((paths.state / "selftest.json").read_text())
    assert document["ok"] is True and document["schema"] == 1
    assert [s["name"] for s in document["steps"]] == STEPS


@pytest.mark.slow
def test_selftest_cli_prints_the_table_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit selftest --report FILE` prints one row per step and the report's path."""
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LANEKIT_LAUNCHD", "emulated")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["selftest", "--report", str(out)])
    assert result.exit_code == 0, result.output
    assert "all steps passed" in result.output
    assert json.loads(out.read_text())["ok"] is True


def test_selftest_darwin_branch_drives_launchctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the launchctl backend (the scripted fake, with a real `print` capture) selftest
    bootstraps into the user's domain, prints the job, kickstarts it where it is loaded,
    reports the run that never comes as a failure (exit 1), and still boots the lane out."""
    wrapper = tmp_path / "launchctl"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    capture = (FAKE.parent / "samples" / "print-05.txt").read_text().partition("# ---\n")[2]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"print": {"stdout": capture}, "kickstart": {"stdout": "4242"}}))
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(script))
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", str(log))
    monkeypatch.setattr(Caller, "current", classmethod(lambda cls: Caller(501, 501, 501)))
    env = {**os.environ, "LANEKIT_LAUNCHD": "launchctl", "LANEKIT_LAUNCHCTL": str(wrapper)}
    report = run_selftest(Paths.under(tmp_path, backend="launchctl"), env=env, timeout=0.5)
    assert report.domain == "gui/501"
    assert not report.ok
    by_name = {step.name: step for step in report.steps}
    assert by_name["bootstrap"].ok and by_name["print"].ok
    assert not by_name["kickstart"].ok and "pid 4242" in by_name["kickstart"].detail
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    target = f"gui/501/{report.label}"
    plist = Paths.under(tmp_path, backend="launchctl").state / "selftest" / f"{report.label}.plist"
    assert ["bootstrap", "gui/501", str(plist)] in calls
    assert ["kickstart", "-p", target] in calls
    assert ["bootout", target] in calls
    assert ["list"] not in calls


def test_selftest_uses_one_label_and_refuses_a_second_at_once(tmp_path: Path) -> None:
    """Every selftest loads the same label from the same plist path (one Background Items
    record on macOS 13+, not one per run); while one runs (its lock held) a second is refused
    with one clear line, and nothing of the first is touched."""
    from lanekit.errors import LanekitError
    from lanekit.proof.selftest import LABEL
    from lanekit.run.lanelock import try_lock

    paths = Paths.under(tmp_path)
    (paths.state / "selftest").mkdir(parents=True, exist_ok=True)
    fd = try_lock(str(paths.state / "selftest" / ".lock"))  # a selftest in progress
    assert fd is not None
    try:
        with pytest.raises(LanekitError) as refused:
            run_selftest(paths, env={"LANEKIT_LAUNCHD": "emulated"})
    finally:
        os.close(fd)
    assert "another `lanekit selftest`" in refused.value.message
    assert LABEL in refused.value.message
    assert not (paths.state / "selftest.json").exists()


def test_selftest_sends_a_test_notice_and_says_whether_it_was_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: selftest sends a test notice through (a fake) osascript; unconfirmed, it says
    so with the Script Editor fix; once `lanekit watch --test` recorded a yes, it says
    confirmed."""
    from datetime import datetime

    from lanekit.watch.testnotice import record_answer

    got = tmp_path / "osascript-args"
    osascript = tmp_path / "osascript"
    osascript.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{got}"\n')
    osascript.chmod(0o755)
    paths = Paths.under(tmp_path)
    env = {**os.environ, "LANEKIT_LAUNCHD": "emulated"}
    # An unusable manager would stop the lane steps early: the notice is sent regardless.
    report = run_selftest(paths, env=env, timeout=0.5, osascript=str(osascript))
    by_name = {step.name: step for step in report.steps}
    step = by_name["test notice"]
    assert step.ok
    assert "never confirmed" in step.detail
    assert "Script Editor" in step.detail and "lanekit watch --test" in step.detail
    assert report.facts["test_notice"] == "unconfirmed"
    assert "lanekit: test notice" in got.read_text()
    record_answer(paths, "macos", True, datetime.now())
    again = run_selftest(paths, env=env, timeout=0.5, osascript=str(osascript))
    assert again.facts["test_notice"] == "confirmed"
    document = json.loads((paths.state / "selftest.json").read_text())
    assert document["facts"]["test_notice"] == "confirmed"


@pytest.mark.skipif(sys.platform == "darwin", reason="a Mac has osascript")
def test_selftest_off_macos_sends_no_notice(tmp_path: Path) -> None:
    """Without osascript (not a Mac) the step says why nothing was sent."""
    paths = Paths.under(tmp_path)
    report = run_selftest(paths, env={**os.environ, "LANEKIT_LAUNCHD": "emulated"}, timeout=0.5)
    step = {s.name: s for s in report.steps}["test notice"]
    assert step.ok and "not macOS" in step.detail
    assert report.facts["test_notice"] == "not sent"
