"""The soak's world: its lanes.toml, the job and notifier it runs, and the emulated
domain it is applied in (scripts/soak.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.config import Config, LaneSpec, load_config
from lanekit.queue.directory.backend import Queue
from lanekit.reconcile import apply
from lanekit.service import clock_for
from lanekit.service.emulated.clock import advance
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths

HOUR = timedelta(hours=1)
EMULATED_ENV = {"LANEKIT_LAUNCHD": "emulated"}
BURST = 57
OUTAGE = timedelta(hours=6)
JOB_SECONDS = 0.02
SLOW_SECONDS = 4.0
"""The job the runner-killed fault catches mid-run."""
HANG_TIMEOUT = 3
"""The inbox lanes' `timeout` (seconds): the hanging job is killed after it."""

JOB_SCRIPT = '''\
"""Soak job: append "<job id> <lane>" to the ledger; sleep, or hang while its flag exists."""
import json, os, sys, time

job_file, ledger = sys.argv[1], sys.argv[2]
with open(job_file, encoding="utf-8") as f:
    payload = json.load(f)
line = f"{os.environ['LANEKIT_JOB_ID']} {os.environ['LANEKIT_LANE']}\\n".encode()
fd = os.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
try:
    os.write(fd, line)
finally:
    os.close(fd)
flag = payload.get("hang_while")
while flag and os.path.exists(flag):
    time.sleep(0.2)
time.sleep(float(payload.get("seconds", 0.02)))
'''

NOTIFIER_SCRIPT = '''\
"""Soak notifier (a `command` channel): append the notice on stdin, with the emulated time it
arrived (the offset the emulated domain handed the watchdog), to the alerts file."""
import json, os, sys, time

notice = json.load(sys.stdin)
try:
    offset = float(os.environ.get("LANEKIT_CLOCK_OFFSET", "0"))
except ValueError:
    offset = 0.0
line = json.dumps({"received": time.time() + offset, "notice": notice}) + "\\n"
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
try:
    os.write(fd, line.encode())
finally:
    os.close(fd)
'''


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """`[watch]` for the soak (durations as lanes.toml writes them, and in seconds)."""

    every: str = "1h"
    missed_after: str = "15m"
    every_seconds: int = 3600
    missed_after_seconds: int = 900

    @property
    def deadline(self) -> timedelta:
        """An alert is on time within missed_after + every of the fault becoming visible."""
        return timedelta(seconds=self.every_seconds + self.missed_after_seconds)


def lanes_toml(root: Path, watch: WatchSettings | None) -> str:
    """Two queues, five lanes; the publish lane's command is a tool on its own PATH."""
    python = sys.executable
    job = root / "bin" / "soak_job.py"
    ledger = root / "ledger.txt"
    run = f'["{python}", "{job}", "{{job}}", "{ledger}"]'
    lines = [
        "# Written by scripts/soak.py.",
        "[defaults]",
        'label_prefix = "local.lanekit-soak"',
        f'path = ["{root / "tools"}", "/usr/bin", "/bin"]',
        "throttle_interval = 1",
        "",
        "[queues.inbox]",
        f'dir = "{root / "inbox"}"',
        "durable = false",
        "",
        "[queues.outbox]",
        f'dir = "{root / "outbox"}"',
        "durable = false",
        "",
    ]
    inbox = {"ingest": "0 * * * *", "enrich": "20 */2 * * *", "report": "40 10 * * *"}
    for name, schedule in inbox.items():
        lines += [
            f"[lanes.{name}]",
            'queue = "inbox"',
            f"command = {run}",
            f'schedule = "{schedule}"',
            "max_jobs = 10",
            "max_attempts = 2",
            f'timeout = "{HANG_TIMEOUT}s"',
            "kill_grace = 1",
            "",
        ]
    lines += [
        "[lanes.publish]",
        'queue = "outbox"',
        f'command = ["soak-publish", "{job}", "{{job}}", "{ledger}"]',
        'schedule = "5 */3 * * *"',
        "",
        "[lanes.archive]",
        'queue = "outbox"',
        f"command = {run}",
        'schedule = "50 3 * * *"',
        f'stdout_log = "{root / "archive-logs" / "archive.out.log"}"',
        f'stderr_log = "{root / "archive-logs" / "archive.err.log"}"',
        "",
    ]
    if watch is not None:
        notifier = root / "bin" / "soak_notifier.py"
        lines += [
            "[watch]",
            f'every = "{watch.every}"',
            f'missed_after = "{watch.missed_after}"',
            'stale_claim_after = "1h"',
            'repeat = "6h"',
            f'command = ["{python}", "{notifier}", "{root / "alerts.jsonl"}"]',
            "",
        ]
    return "\n".join(lines)


def _write_tools(root: Path) -> None:
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "bin" / "soak_job.py").write_text(JOB_SCRIPT, encoding="utf-8")
    (root / "bin" / "soak_notifier.py").write_text(NOTIFIER_SCRIPT, encoding="utf-8")
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    publish = tools / "soak-publish"
    publish.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    publish.chmod(0o755)
    (root / "archive-logs").mkdir(mode=0o700, exist_ok=True)


@dataclass
class World:
    """The soak's lanes, domain and clock, and what it enqueued."""

    root: Path
    paths: Paths
    config: Config
    domain: EmulatedDomain
    watch: WatchSettings | None
    enqueued: dict[str, str] = field(default_factory=dict)
    """Job id -> queue name."""

    def now(self) -> datetime:
        """The emulated domain's time (lanekit.state.clock)."""
        return clock_for(self.paths, EMULATED_ENV).now()

    def queue(self, name: str) -> Queue:
        """The queue, on the domain's clock (its ids and records carry emulated times)."""
        spec = self.config.queues[name]
        return Queue(
            spec.dir,
            durable=False,
            clock=lambda: clock_for(self.paths, EMULATED_ENV).time(),
        )

    def lane(self, name: str) -> LaneSpec:
        """A lane of lanes.toml."""
        return self.config.lanes[name]

    def enqueue(self, queue: str, payload: dict[str, object]) -> str:
        """Enqueue one job now (emulated) and remember it."""
        job = self.queue(queue).enqueue(payload)
        self.enqueued[job] = queue
        return job

    def advance(self, until: datetime, *, asleep: bool = False) -> int:
        """Move the emulated clock to `until`, firing what launchd would; runs started."""
        if until <= self.now():
            return 0
        report = advance(
            self.paths.emulator, self.paths.launch_agents, until, asleep=asleep, wait=90
        )
        return report.runs

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until no lane runs (a fault's own starts, e.g. a kickstart, have finished)."""
        for lane in self.config.lanes.values():
            self.domain.wait_idle(lane.label, timeout)


def make_world(root: Path, watch: WatchSettings | None) -> World:
    """Write the files, apply lanes.toml to a fresh emulated domain."""
    root.mkdir(parents=True, exist_ok=True)
    _write_tools(root)
    paths = Paths.under(root)
    paths.home.mkdir(parents=True, exist_ok=True)
    (root / "lanes.toml").write_text(lanes_toml(root, watch), encoding="utf-8")
    config = load_config(root / "lanes.toml", paths)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    return World(root, paths, config, domain, watch)
