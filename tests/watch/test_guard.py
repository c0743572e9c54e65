"""The watchdog's sh guard (issue 32 item 3), under the emulated domain: with lanekit's
interpreter removed, launchd's start of the watchdog still tells the owner, without Python:
a notice through osascript and the heartbeat's /fail through curl (fakes on the lane's PATH),
then exit 78. A control run with the interpreter in place runs the real pass instead."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from watch_world import WatchWorld

import lanekit
from lanekit.config.watch import WATCH_LANE, fail_url, heartbeat_path
from lanekit.reconcile import apply
from lanekit.system.interpreter import GUARD_EXIT, GUARD_SCRIPT, guard_path

SECRET = "5c1f-secret-ping-key"
HEARTBEAT = f"https://hc.example/ping/{SECRET}?create=1"

FAKE = """#!/bin/sh
# A stand-in for the macOS tool: record the arguments (and stdin) and succeed.
{{ printf '%s\\n' "$@"; printf -- '--stdin--\\n'; cat; printf -- '--end--\\n'; }} >> "{log}"
"""

GUARDED = """\
[defaults]
path = ["FAKEBIN", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.guard"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
every = "1h"

[watch]
every = "5m"
notify = []
command = ["/bin/sh", "-c", "cat >> SENT"]
heartbeat = "HEARTBEAT"
"""


def _venv(root: Path) -> Path:
    """A throwaway venv whose python imports this lanekit (and its dependencies): the
    interpreter the lanes are installed with, which the test then removes."""
    venv = root / "venv"
    subprocess.run(
        [sys._base_executable, "-m", "venv", "--without-pip", str(venv)],  # type: ignore[attr-defined]
        check=True,
    )
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    here = Path(sysconfig.get_path("purelib"))
    source = Path(lanekit.__file__).resolve().parent.parent
    (site / "lanekit-under-test.pth").write_text(f"{source}\n{here}\n")
    return venv / "bin" / "python"


def _fakes(root: Path) -> tuple[Path, Path, Path]:
    fakebin = root / "fakebin"
    fakebin.mkdir()
    logs = []
    for name in ("osascript", "curl"):
        log = root / f"{name}.log"
        tool = fakebin / name
        tool.write_text(FAKE.format(log=log))
        tool.chmod(0o755)
        logs.append(log)
    return fakebin, logs[0], logs[1]


def _start(world: WatchWorld) -> int | None:
    """launchd starts the watchdog (past its ThrottleInterval); its exit status."""
    label = world.lane(WATCH_LANE).label
    domain = world.domain
    domain.set_clock(time.time() + domain.offset() + 60)
    assert domain.kickstart(label) is not None
    assert domain.wait_idle(label, 60)
    return domain.print(label).last_exit_code


@pytest.mark.slow
def test_guard_tells_the_owner_when_the_interpreter_is_gone(tmp_path: Path) -> None:
    fakebin, osascript_log, curl_log = _fakes(tmp_path)
    world = WatchWorld.make(
        tmp_path,
        GUARDED.replace("FAKEBIN", str(fakebin)).replace("HEARTBEAT", HEARTBEAT),
    )
    python = _venv(tmp_path)
    result = apply(world.config(), world.paths, world.domain, interpreter=str(python))
    assert all(str(o.result) == "done" for o in result.outcomes), result.outcomes
    lane = world.lane(WATCH_LANE)
    plist = world.paths.plist_for(lane.label).read_bytes()
    assert SECRET.encode() not in plist
    assert guard_path(world.paths.state).read_text() == GUARD_SCRIPT
    beat = heartbeat_path(lane.queue.dir)
    assert beat.read_text() == fail_url(HEARTBEAT) + "\n"  # the guard pings it as written
    assert oct(beat.stat().st_mode & 0o777) == "0o600"

    # Control: the interpreter works, so the guard becomes the watchdog (a real pass).
    assert _start(world) == 0
    assert "event=finish" in lane.log_path.read_text()
    assert not osascript_log.exists() and not curl_log.exists()

    # The interpreter vanishes (brew cleanup): the guard alone speaks.
    python.unlink()
    assert _start(world) == GUARD_EXIT
    notice = osascript_log.read_text()
    assert "display notification (item 1 of argv) with title (item 2 of argv)" in notice
    assert f"lanekit's Python cannot start lanekit ({python})" in notice
    assert "rescue.sh" in notice
    ping = curl_log.read_text()
    assert f'url = "https://hc.example/ping/{SECRET}/fail?create=1"' in ping
    args = ping.split("--stdin--")[0]
    assert SECRET not in args  # the URL came on stdin, not in curl's argv
    assert "--data-binary" in args and "cannot start lanekit" in args


def test_guard_without_a_heartbeat_file_only_notifies(tmp_path: Path) -> None:
    """Run directly: a missing interpreter, no heartbeat file: a notice, no curl, exit 78;
    a heartbeat file that is a symlink is not read."""
    fakebin, osascript_log, curl_log = _fakes(tmp_path)
    guard = tmp_path / "watchdog-guard.sh"
    guard.write_text(GUARD_SCRIPT)
    env = {"PATH": f"{fakebin}:/usr/bin:/bin"}
    argv = ["/bin/sh", str(guard), str(tmp_path / "none.url"), "x.watch", "/nonexistent/python"]
    assert subprocess.run([*argv, "-I"], env=env, check=False).returncode == GUARD_EXIT
    assert "cannot start lanekit" in osascript_log.read_text()
    assert not curl_log.exists()
    target = tmp_path / "elsewhere.url"
    target.write_text(HEARTBEAT + "\n")
    os.symlink(target, tmp_path / "link.url")
    argv[2] = str(tmp_path / "link.url")
    assert subprocess.run(argv, env=env, check=False).returncode == GUARD_EXIT
    assert not curl_log.exists()


def test_guard_execs_the_command_when_lanekit_imports(tmp_path: Path) -> None:
    """A working interpreter: the guard is replaced by the command, whose exit it returns."""
    guard = tmp_path / "watchdog-guard.sh"
    guard.write_text(GUARD_SCRIPT)
    code = "import sys; sys.exit(7)"
    ran = subprocess.run(
        ["/bin/sh", str(guard), "none", "x.watch", sys.executable, "-c", code],
        check=False,
    )
    assert ran.returncode == 7
    assert shutil.which("sh")
