"""`lanekit try` where systemd runs the lanes (a real user manager, tests/usermanager.py): the
lane's runner runs with what its unit gives, read from the service file (ExecStart,
Environment= over the manager's own environment, WorkingDirectory, the logs), as the runner
systemd starts does, and a job gets what such a runner gives it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lanekit.config import load_config
from lanekit.proof.tryrun import TryRequest, try_run
from lanekit.queue import open_queue
from lanekit.reconcile import apply, kick
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.systemctl import Systemctl
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow

PER_START = {
    "INVOCATION_ID",  # systemd's, for one start
    "SYSTEMD_EXEC_PID",
    "MANAGERPID",
    "LANEKIT_JOB_ID",  # the job's identity: another job, another file
    "LANEKIT_JOB_FILE",
    "LANEKIT_ATTEMPT",
}
"""What differs between two runs of one lane whoever starts them."""


def _env(path: Path) -> dict[str, str]:
    """`env`'s output (one NAME=value a line; values here have no newline)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_try_runs_with_the_units_environment(systemd: UserManager, paths: Paths) -> None:
    """A lane whose command writes its environment and working directory: started by systemd
    (a kick), by `try LANE --job FILE` and by `try LANE` (the runner as the unit starts it);
    all have the same variables with the same values (but what each start sets for itself)
    and the same working directory, and try reports the unit's argv and PATH."""
    out = paths.home / "out"
    out.mkdir(parents=True)
    text = (
        '[defaults]\nlabel_prefix = "com.example.try"\n'
        f'[queues.q]\ndir = "{paths.home / "q"}"\n'
        '[lanes.e]\nqueue = "q"\nschedule = "0 3 * * *"\n'
        'command = ["/bin/sh", "-c", "env > \\"$OUT/$LANEKIT_JOB_ID.env\\";'
        ' pwd > \\"$OUT/$LANEKIT_JOB_ID.pwd\\"", "sh", "{job}"]\n'
        f'env = {{ OUT = "{out}", SPACED = "a b %h $HOME" }}\n'
    )
    (paths.cwd / "lanes.toml").parent.mkdir(parents=True, exist_ok=True)
    (paths.cwd / "lanes.toml").write_text(text, encoding="utf-8")
    config = load_config(paths.cwd / "lanes.toml", paths)
    manager = SystemdManager(
        Systemctl(systemd.env), systemd.unit_dir, paths.state, "the test's manager"
    )
    apply(config, paths, manager)
    queue = open_queue(config.lanes["e"].queue.dir, durable=False)
    queue.enqueue({"n": 1}, job_id="by-systemd")
    kick(config, paths, manager, "e")
    deadline = time.monotonic() + 15
    while queue.counts().done != 1:
        assert time.monotonic() < deadline, queue.counts()
        time.sleep(0.1)
    job = paths.home / "by-try.json"
    job.write_text('{"n": 2}')
    env = {k: v for k, v in systemd.env.items() if k != "LANEKIT_LAUNCHD"}
    env["LANEKIT_STATE_DIR"] = str(paths.state)
    result = try_run(
        TryRequest(lane="e", job=job, config_path=paths.cwd / "lanes.toml"), paths, env
    )
    assert result.ran and result.exit_code == 0, result
    by_systemd, by_try = _env(out / "by-systemd.env"), _env(out / "by-try.env")
    assert by_try["SPACED"] == "a b %h $HOME"
    assert {k: v for k, v in by_try.items() if k not in PER_START} == {
        k: v for k, v in by_systemd.items() if k not in PER_START
    }
    assert (out / "by-try.pwd").read_text() == (out / "by-systemd.pwd").read_text()
    assert result.cwd == str(config.lanes["e"].queue.dir)
    assert result.env_path == by_systemd["PATH"]
    assert result.argv[0] == "/bin/sh"
    # `try LANE`: the lane's runner as the unit starts it (ExecStart, the unit's environment),
    # which claims the next job and gives it the same environment.
    queue.enqueue({"n": 3}, job_id="by-try-entry")
    entry = try_run(TryRequest(lane="e", config_path=paths.cwd / "lanes.toml"), paths, env)
    assert entry.ran and entry.exit_code == 0, entry
    assert entry.lanekit_runner
    assert entry.argv == tuple(
        manager.define(manager.artifact_path(config.lanes["e"].label).read_bytes()).argv
    )
    by_entry = _env(out / "by-try-entry.env")
    assert {k: v for k, v in by_entry.items() if k not in PER_START} == {
        k: v for k, v in by_systemd.items() if k not in PER_START
    }
    assert queue.counts().done == 2


def test_try_starts_the_runner_as_the_unit_does(systemd: UserManager, paths: Paths) -> None:
    """The environment, argv and working directory `try LANE` starts the runner with are the
    ones systemd gave the runner it started for the same unit (read from /proc while it runs
    a job), but what systemd sets for one start; not launchd's (no XPC_SERVICE_NAME)."""
    from lanekit.doctor import lane_target
    from lanekit.proof.tryrun import systemd_launch

    text = (
        '[defaults]\nlabel_prefix = "com.example.try"\n'
        f'[queues.q]\ndir = "{paths.home / "q"}"\n'
        '[lanes.s]\nqueue = "q"\nschedule = "0 3 * * *"\ncommand = ["/bin/sleep", "30"]\n'
        'env = { SPACED = "a b %h $HOME" }\n'
    )
    (paths.cwd / "lanes.toml").parent.mkdir(parents=True, exist_ok=True)
    (paths.cwd / "lanes.toml").write_text(text, encoding="utf-8")
    config = load_config(paths.cwd / "lanes.toml", paths)
    manager = SystemdManager(
        Systemctl(systemd.env), systemd.unit_dir, paths.state, "the test's manager"
    )
    apply(config, paths, manager)
    queue = open_queue(config.lanes["s"].queue.dir, durable=False)
    queue.enqueue({"n": 1})
    kick(config, paths, manager, "s")
    label = config.lanes["s"].label
    deadline = time.monotonic() + 15
    while queue.counts().claimed != 1:
        assert time.monotonic() < deadline, queue.counts()
        time.sleep(0.1)
    pid = manager.observe([label])[label].pid
    assert pid is not None
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    real = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
    real_cwd = os.readlink(f"/proc/{pid}/cwd")
    real_argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    env = {k: v for k, v in systemd.env.items() if k != "LANEKIT_LAUNCHD"}
    launch = systemd_launch(
        lane_target(config.lanes["s"], paths), TryRequest(lane="s"), paths, env, None
    )
    assert launch is not None
    assert "XPC_SERVICE_NAME" not in launch.env
    assert {k: v for k, v in launch.env.items() if k not in PER_START} == {
        k: v for k, v in real.items() if k not in PER_START
    }
    assert launch.cwd == real_cwd
    assert list(launch.argv) == real_argv
    manager.stop(label, kill_after=5, grace=10)
