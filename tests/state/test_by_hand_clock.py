"""On the emulated domain, what the user starts by hand (a `lanekit run`, `lanekit try`,
`purge`, the verbs) stamps and judges by the domain's clock, as the runs the domain starts and
every other command do (lanekit.service.emulated.offset.by_hand_clock); on a process the domain
started, or on the launchctl backend, nothing changes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.service.emulated.offset import by_hand_clock
from lanekit.state.clock import epoch

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.byhand"

[queues.inbox]
dir = "{queue}"

[lanes.work]
queue = "inbox"
command = ["/bin/true", "{{job}}"]
"""
DAYS = 400


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _year_of(stamp: str) -> int:
    return int(stamp[:4])


def test_runs_and_try_started_by_hand_go_by_the_domains_clock(tmp_path: Path) -> None:
    """The domain ticked 400 days on: a job run by `lanekit run` in a terminal (a fresh
    process, no offset in its environment), by `lanekit run` in-process and by `lanekit try`
    is recorded at the domain's time, and this process's clock is the real one afterwards."""
    config = tmp_path / "lanes.toml"
    config.write_text(CONFIG.format(queue=tmp_path / "inbox"), encoding="utf-8")
    assert invoke("apply", "-c", str(config))[0] == 0
    assert invoke("emulator", "tick", "--for", f"{DAYS}d")[0] == 0
    later = time.gmtime(time.time() + DAYS * 86400).tm_year
    queue = Queue(tmp_path / "inbox")
    env = {k: v for k, v in os.environ.items() if k != "LANEKIT_CLOCK_OFFSET"}
    for how in ("terminal", "in-process", "try"):
        job = queue.enqueue({"how": how})
        if how == "terminal":
            done = subprocess.run(
                [sys.executable, "-m", "lanekit", "run", "work"],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr
        elif how == "in-process":
            assert invoke("run", "work", "-c", str(config))[0] == 0
        else:
            code, _, err = invoke("try", "work", "-c", str(config))
            assert code == 0, err
        record = queue.store.read(job)
        assert record is not None and record.state.value == "succeeded", how
        assert _year_of(record.updated_at) == later, (how, record.updated_at)
    assert abs(epoch() - time.time()) < 60  # put back after the in-process commands


def test_a_process_the_domain_started_keeps_its_own_clock(tmp_path: Path) -> None:
    """by_hand_clock answers None where the environment carries the domain's offset (a run
    the domain started) and on the launchctl backend."""
    assert by_hand_clock(tmp_path, {"LANEKIT_CLOCK_OFFSET": "5.0"}, "linux") is None
    assert by_hand_clock(tmp_path, {"LANEKIT_LAUNCHD": "launchctl"}, "darwin") is None
    clock = by_hand_clock(tmp_path, {"LANEKIT_LAUNCHD": "emulated"}, "linux")
    assert clock is not None and clock.offset == 0  # no domain yet: the real time
