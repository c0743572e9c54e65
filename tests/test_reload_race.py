"""The safe-reload promise under a race: runs start and finish at random while apply reloads.

Real processes on the emulated domain: a background thread keeps enqueueing jobs of random
length and kicking lanes, while the main thread changes every lane's plist and runs `apply`
200 times. Each job traps SIGTERM and appends to a ledger, so any job signalled by a reload
would leave a line there. Without --force that ledger must stay empty, and every job must end
up done exactly once.

What "running" means here: a run that holds the lane lock (it may be claiming or running a
job). apply takes that lock before a bootout and holds it until the label has left launchd, so
a run that launchd starts inside that window finds the lane busy and claims nothing; such a
run may itself be stopped by the bootout, but it has no job to lose or to signal.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from lanekit.config import Config, load_config
from lanekit.queue.directory.backend import Queue
from lanekit.reconcile import ActionKind, Outcome, Result, apply
from lanekit.run.lanelog import read_events
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.launchd import LaunchctlError
from lanekit.state.paths import Paths

LANES = ("red", "green", "blue")
RELOADS = 200
JOB_SCRIPT = (
    'trap \'echo "TERM $0" >> "$LEDGER"; exit 143\' TERM; '
    'secs=$(sed -n \'s/.*"sleep": *\\([0-9.]*\\).*/\\1/p\' "$0"); '
    'sleep "${secs:-0}" & wait $!'
)


def _config(paths: Paths, ledger: Path) -> Config:
    text = '[defaults]\nlabel_prefix = "test.race"\nthrottle_interval = 0\nexit_timeout = 5\n'
    for name in LANES:
        text += f'[queues.{name}]\ndir = "{paths.home / name}"\n'
        text += (
            f'[lanes.{name}]\nqueue = "{name}"\nmax_jobs = 3\n'
            f'command = ["/bin/sh", "-c", {_toml(JOB_SCRIPT)}, "{{job}}"]\n'
            f'env = {{ LEDGER = "{ledger}" }}\n'
        )
    path = paths.cwd / "lanes.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def _toml(text: str) -> str:
    return "'''" + text + "'''"


def _generation(config: Config, gen: int) -> Config:
    """The same lanes with a plist change (an env value), so every apply has reloads to do."""
    lanes = {
        name: replace(lane, env={**lane.env, "GEN": str(gen)})
        for name, lane in config.lanes.items()
    }
    return replace(config, lanes=lanes)


class Chaos(threading.Thread):
    """Enqueue jobs of random length and kick random lanes until stopped."""

    def __init__(self, paths: Paths, config: Config, seed: int) -> None:
        super().__init__(daemon=True)
        self.domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
        self.queues = {name: Queue(lane.queue.dir) for name, lane in config.lanes.items()}
        self.labels = {name: lane.label for name, lane in config.lanes.items()}
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.enqueued: list[str] = []
        self.kicks = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                name = self.random.choice(LANES)
                sleep = round(self.random.uniform(0.0, 0.25), 3)
                self.enqueued.append(self.queues[name].enqueue({"sleep": sleep}))
                with contextlib.suppress(LaunchctlError):  # not loaded mid-reload: fine
                    self.domain.kickstart(self.labels[name])
                    self.kicks += 1
                time.sleep(self.random.uniform(0.0, 0.05))
        except BaseException as exc:
            self.error = exc


@pytest.mark.slow
def test_reloads_never_signal_a_running_lane(paths: Paths) -> None:
    """200 applies with changed plists while runs come and go: no job is ever signalled
    without --force, no job is lost or run twice, and both reloads and skips happened."""
    ledger = paths.cwd / "ledger.txt"
    paths.cwd.mkdir(parents=True, exist_ok=True)
    ledger.touch()
    base = _config(paths, ledger)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    assert apply(_generation(base, 0), paths, domain).count(Result.FAILED) == 0
    chaos = Chaos(paths, base, seed=20260917)
    outcomes: list[Outcome] = []
    chaos.start()
    try:
        for gen in range(1, RELOADS + 1):
            result = apply(_generation(base, gen), paths, domain)
            outcomes.extend(result.outcomes)
    finally:
        chaos.stop.set()
        chaos.join(timeout=30)
    assert chaos.error is None
    for lane in base.lanes.values():
        assert domain.wait_idle(lane.label, timeout=30)

    assert ledger.read_text() == "", "a reload signalled a running job"
    failed = [o for o in outcomes if o.result is Result.FAILED]
    assert failed == []
    reloaded = [o for o in outcomes if o.result is Result.DONE and o.action.bootout]
    skipped = [o for o in outcomes if o.result is Result.SKIPPED]
    assert reloaded, "no reload happened: the test did not exercise bootout"
    assert skipped, "no run overlapped a reload: the test did not exercise the race"
    assert all(o.action.kind in {ActionKind.UPDATE, ActionKind.SKIP_RUNNING} for o in skipped)
    assert chaos.kicks > 0

    # Every job enqueued is queued, delayed or done - once; none claimed, failed or lost.
    done_ids: list[str] = []
    for name, lane in base.lanes.items():
        counts = Queue(lane.queue.dir).counts()
        assert (counts.claimed, counts.failed) == (0, 0), name
        events = list(read_events(lane.log_path))
        done_ids += [e["job"] for e in events if e["event"] == "done"]
        assert not [e for e in events if e["event"] == "requeued"], name
    assert len(done_ids) == len(set(done_ids))
    assert set(done_ids) <= set(chaos.enqueued)
    total = sum(
        c.queued + c.delayed + c.done
        for c in (Queue(lane.queue.dir).counts() for lane in base.lanes.values())
    )
    assert total == len(chaos.enqueued)
