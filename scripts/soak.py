#!/usr/bin/env python3
"""Soak run: simulated days of lanes on the emulated launchd domain, under its one clock
(lanekit.clock), with faults planted at known times and a watchdog that must report each one.

    scripts/soak.py --days 30

Five lanes drain two queues on their schedules; a producer enqueues jobs every emulated hour.
Emulated time moves through `lanekit.launchd.emuclock.advance`, which fires only what launchd
would fire (every calendar minute and StartInterval boundary that has a lane, with real
processes), so a month costs minutes of wall time, not a month. Every job's command appends
`<id> <lane>` to a ledger, so executions are counted independently of lanekit's records.

Faults, each planted at a known emulated time and undone by hand `--fix-after` later:
  runner-killed     a runner SIGKILLed while its job runs (the claim is stranded)
  job-hangs         a job that hangs until the lane's `timeout` kills it, twice: failed/
  command-missing   the lane's command removed from its PATH
  log-dir-deleted   the directory of a lane's launchd logs deleted (launchd: exit 78)
  booted-out        a lane booted out by hand (`launchctl bootout`)
  plist-edited      an installed plist edited by hand (drift from lanes.toml)
  burst             57 jobs queued, then a 6-hour outage (the Mac asleep): on wake every lane
                    of the queue fires at once, and what they cannot take is a backlog

With `[watch]` configured (the default when lanekit has the watchdog), a `command` channel
appends every notice to alerts.jsonl with the emulated time it arrived. The report gives, per
fault: when it was planted, when it became visible, when the first alert about it arrived and
when it was resolved; overall: jobs lost, jobs that succeeded twice, alerts sent twice (a new
notice for a problem already open), faults never alerted and alerts later than `missed_after`
+ `every` after the fault became visible. Exit 1 when any of those is not 0.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.config import Config, LaneSpec, load_config
from lanekit.lanelog import read_events
from lanekit.launchd import clock_for
from lanekit.launchd.emuclock import advance
from lanekit.launchd.emulator import EmulatedDomain
from lanekit.launchd.launch import EX_CONFIG
from lanekit.owned import make_private_dirs
from lanekit.paths import Paths
from lanekit.queue import Queue
from lanekit.reconcile import apply, remove
from lanekit.schedule import previous_fire

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


# --------------------------------------------------------------------------- the world


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
        """The emulated domain's time (lanekit.clock)."""
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


# --------------------------------------------------------------------------- faults


@dataclass
class Fault:
    """One planted fault: what alerts may report it, and when it was planted, seen, fixed."""

    name: str
    at: datetime
    checks: tuple[str, ...]
    """Doctor's check ids (the watchdog's alert ids) any one of which reports it."""
    subjects: tuple[str, ...]
    """Lanes or queues those alerts name."""
    planted_at: datetime | None = None
    visible_at: datetime | None = None
    fixed_at: datetime | None = None
    alerted_at: datetime | None = None
    alert: str | None = None
    resolved_at: datetime | None = None
    notes: list[str] = field(default_factory=list)
    job: str | None = None


def _stamp(text: str | None) -> datetime | None:
    if not text:
        return None
    when = datetime.fromisoformat(text)
    return when.astimezone().replace(tzinfo=None) if when.tzinfo else when


def _plant_runner_killed(world: World, fault: Fault) -> None:
    lane = world.lane("publish")
    fault.job = world.enqueue("outbox", {"seconds": SLOW_SECONDS})
    world.domain.kickstart(lane.label)
    claimed = world.queue("outbox").claimed
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(claimed.glob(f"{fault.job}.*")):
        world.domain.list()  # lets a throttled start happen
        time.sleep(0.05)
    pid = next((e.pid for e in world.domain.list() if e.label == lane.label), None)
    if pid is None:
        fault.notes.append("the runner was not running when it was to be killed")
        return
    os.kill(pid, signal.SIGKILL)
    fault.visible_at = world.now()
    world.wait_idle()


def _plant_job_hangs(world: World, fault: Fault) -> None:
    flag = world.root / "hang.flag"
    flag.write_text("remove me and the job finishes\n", encoding="utf-8")
    fault.job = world.enqueue("inbox", {"hang_while": str(flag)})


def _seen_job_hangs(world: World, fault: Fault) -> None:
    if fault.job is None:
        return
    record = world.queue("inbox").store.read(fault.job)
    if record is not None and str(record.state) == "failed":
        fault.visible_at = _stamp(record.updated_at)


def _fix_job_hangs(world: World, fault: Fault) -> None:
    (world.root / "hang.flag").unlink(missing_ok=True)
    if fault.job is not None:
        world.queue("inbox").retry(fault.job)


def _plant_command_missing(world: World, fault: Fault) -> None:
    tool = world.root / "tools" / "soak-publish"
    tool.rename(world.root / "soak-publish.removed")
    fault.visible_at = world.now()


def _fix_command_missing(world: World, fault: Fault) -> None:
    (world.root / "soak-publish.removed").rename(world.root / "tools" / "soak-publish")


def _plant_log_dir_deleted(world: World, fault: Fault) -> None:
    shutil.rmtree(world.root / "archive-logs")


def _seen_log_dir_deleted(world: World, fault: Fault) -> None:
    """Visible when launchd next tries to start the lane and cannot (exit 78): at that fire."""
    lane = world.lane("archive")
    if world.domain.print(lane.label).last_exit_code == EX_CONFIG:
        fault.visible_at = previous_fire(lane.schedule.calendar, world.now())


def _fix_log_dir_deleted(world: World, fault: Fault) -> None:
    make_private_dirs(world.root / "archive-logs")
    world.domain.kickstart(world.lane("archive").label)
    world.wait_idle()


def _plant_booted_out(world: World, fault: Fault) -> None:
    world.domain.bootout(world.lane("ingest").label)
    world.wait_idle()
    fault.visible_at = world.now()


def _reapply(world: World, fault: Fault) -> None:
    """`lanekit apply LANE`: the fault's lane only (another fault may be open on another)."""
    apply(world.config, world.paths, world.domain, lanes=[fault.subjects[0]])


def _plant_plist_edited(world: World, fault: Fault) -> None:
    path = world.paths.plist_for(world.lane("report").label)
    text = path.read_text(encoding="utf-8")
    edited = text.replace("<integer>40</integer>", "<integer>45</integer>", 1)
    if edited == text:
        fault.notes.append("the plist had no Minute 40 to edit")
    path.write_text(edited, encoding="utf-8")
    fault.visible_at = world.now()


def _plant_burst(world: World, fault: Fault) -> None:
    for n in range(BURST):
        world.enqueue("inbox", {"burst": n, "seconds": JOB_SECONDS})
    wake = world.now() + OUTAGE
    world.advance(wake, asleep=True)
    world.wait_idle(120)
    left = world.queue("inbox").counts()
    if left.queued:
        fault.visible_at = world.now()
    else:
        fault.notes.append("the wake-up burst drained every job: no backlog to report")


@dataclass(frozen=True, slots=True)
class FaultKind:
    """How to plant, notice and undo one kind of fault."""

    name: str
    checks: tuple[str, ...]
    subjects: tuple[str, ...]
    plant: Callable[[World, Fault], None]
    fix: Callable[[World, Fault], None] | None = None
    seen: Callable[[World, Fault], None] | None = None


FAULT_KINDS = (
    FaultKind(
        "runner-killed",
        ("launchd.killed", "queue.stale-claim", "queue.orphaned-job"),
        ("outbox", "publish", "archive"),
        _plant_runner_killed,
    ),
    FaultKind(
        "job-hangs",
        ("queue.failed-jobs", "queue.timeouts"),
        ("inbox", "ingest", "enrich", "report"),
        _plant_job_hangs,
        _fix_job_hangs,
        _seen_job_hangs,
    ),
    FaultKind(
        "command-missing",
        # The jobs publish cannot start wait: outbox's backlog is this fault too.
        ("path.command-missing", "lane.cannot-start", "launchd.exit-127", "queue.backlog"),
        ("publish", "outbox"),
        _plant_command_missing,
        _fix_command_missing,
    ),
    FaultKind(
        "log-dir-deleted",
        ("launchd.exit-78", "lane.missed-run"),
        ("archive",),
        _plant_log_dir_deleted,
        _fix_log_dir_deleted,
        _seen_log_dir_deleted,
    ),
    FaultKind(
        "booted-out",
        ("launchd.not-loaded", "lane.missed-run"),
        ("ingest", "inbox"),
        _plant_booted_out,
        _reapply,
    ),
    FaultKind(
        "plist-edited",
        ("plist.drift",),
        ("report",),
        _plant_plist_edited,
        _reapply,
    ),
    FaultKind(
        "burst",
        ("queue.backlog",),
        ("inbox", "ingest", "enrich", "report"),
        _plant_burst,
    ),
)
KINDS = {kind.name: kind for kind in FAULT_KINDS}


def plan_faults(start: datetime, days: int) -> list[Fault]:
    """The faults spread over the run: the first after a quiet half-day, each on its own."""
    span = timedelta(days=days) - timedelta(hours=18)
    step = span / len(FAULT_KINDS)
    faults = []
    for n, kind in enumerate(FAULT_KINDS):
        # At 17 minutes past an hour: between the lanes' fires, never on one.
        at = (start + timedelta(hours=12) + n * step).replace(minute=17, second=0)
        faults.append(Fault(kind.name, at, kind.checks, kind.subjects))
    return faults


# --------------------------------------------------------------------------- accounting


@dataclass(frozen=True, slots=True)
class Notice:
    """One notice the command channel received."""

    received: datetime
    kind: str
    check: str
    subject: str


def read_notices(path: Path) -> list[Notice]:
    """alerts.jsonl: each line a notice document (docs/json.md, "lanekit watch notice") and
    the emulated time it arrived. The notice's own `sent_at` (the watchdog's clock) is the
    time it was sent; the arrival time stands in when it has none."""
    if not path.exists():
        return []
    notices = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        notice = entry["notice"]
        sent = _stamp(notice.get("sent_at")) or datetime.fromtimestamp(float(entry["received"]))
        notices.append(
            Notice(sent, str(notice.get("kind")), str(notice.get("id")), str(notice.get("subject")))
        )
    return notices


def duplicate_alerts(notices: Sequence[Notice]) -> int:
    """New notices for a (check, subject) already open: sent twice."""
    open_keys: set[tuple[str, str]] = set()
    twice = 0
    for notice in notices:
        key = (notice.check, notice.subject)
        if notice.kind == "new":
            if key in open_keys:
                twice += 1
            open_keys.add(key)
        elif notice.kind == "resolved":
            open_keys.discard(key)
    return twice


def match_alerts(faults: Sequence[Fault], notices: Sequence[Notice]) -> None:
    """Each fault's first alert (of its checks, on its subjects, after it was planted) and
    the resolved notice of that alert that follows its fix."""
    for fault in faults:
        if fault.planted_at is None:
            continue
        for notice in notices:
            if (
                notice.kind == "new"
                and notice.check in fault.checks
                and notice.subject in fault.subjects
                and notice.received >= fault.planted_at
            ):
                fault.alerted_at, fault.alert = notice.received, f"{notice.check} {notice.subject}"
                break
        if fault.alert is None or fault.alerted_at is None:
            continue
        check, subject = fault.alert.split(" ", 1)
        for notice in notices:
            if (
                notice.kind == "resolved"
                and (notice.check, notice.subject) == (check, subject)
                and notice.received > fault.alerted_at
            ):
                fault.resolved_at = notice.received
                break


def _done_ids(queue_dir: Path) -> collections.Counter[str]:
    found: collections.Counter[str] = collections.Counter()
    for path in (queue_dir / "done").rglob("*.json"):
        found[path.name.split(".", 1)[0]] += 1
    return found


def _present(queue_dir: Path, name: str) -> set[str]:
    directory = queue_dir / name
    if not directory.is_dir():
        return set()
    return {p.name.split(".", 1)[0] for p in directory.iterdir() if p.name.endswith(".json")}


@dataclass(frozen=True, slots=True)
class FaultReport:
    """Per fault: when it was planted, seen, alerted, fixed and resolved (emulated times)."""

    name: str
    planted_at: str | None
    visible_at: str | None
    alerted_at: str | None
    alert: str | None
    fixed_at: str | None
    resolved_at: str | None
    alert_delay_minutes: float | None
    on_time: bool
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SoakResult:
    """What a soak run observed."""

    days: int
    start: str
    end: str
    wall_seconds: float
    runs: int
    jobs: int
    done: int
    failed: int
    waiting: int
    """Queued, delayed or claimed when the run ended."""
    lost: int
    succeeded_twice: int
    executions: int
    executions_beyond_one: int
    watched: bool
    notices: int
    alerts_sent_twice: int
    faults_never_alerted: int
    faults_alerted_late: int
    unmatched_alerts: tuple[str, ...]
    """Alerts no planted fault explains (checks and subjects), for a person to read."""
    faults: tuple[FaultReport, ...]

    @property
    def ok(self) -> bool:
        """0 lost, 0 succeeded twice; with a watchdog, every fault alerted in time, once."""
        clean = self.lost == 0 and self.succeeded_twice == 0
        if not self.watched:
            return clean
        return (
            clean
            and self.alerts_sent_twice == 0
            and self.faults_never_alerted == 0
            and self.faults_alerted_late == 0
        )


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat(timespec="seconds")


def _waiting(world: World) -> bool:
    for spec in world.config.queues.values():
        counts = world.queue(spec.name).counts()
        if counts.queued or counts.delayed or counts.claimed:
            return True
    return False


def account(
    world: World, faults: Sequence[Fault], *, start: datetime, days: int, runs: int, wall: float
) -> SoakResult:
    """Count jobs, executions and alerts, and match alerts to faults."""
    done: collections.Counter[str] = collections.Counter()
    failed: set[str] = set()
    waiting: set[str] = set()
    for spec in world.config.queues.values():
        done.update(_done_ids(spec.dir))
        failed |= _present(spec.dir, "failed")
        for name in ("queue", "delayed", "claimed"):
            waiting |= _present(spec.dir, name)
    ids = set(world.enqueued)
    ledger = world.root / "ledger.txt"
    executions: collections.Counter[str] = collections.Counter(
        line.split(" ", 1)[0]
        for line in (ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else [])
    )
    successes: collections.Counter[str] = collections.Counter()
    for lane in world.config.lanes.values():
        for event in read_events(lane.log_path, rotated=True):
            if event.get("event") == "done" and "job" in event:
                successes[event["job"]] += 1
    notices = read_notices(world.root / "alerts.jsonl")
    match_alerts(faults, notices)
    explained = {(c, s) for f in faults for c in f.checks for s in f.subjects}
    unmatched = sorted(
        {f"{n.check} {n.subject}" for n in notices if n.kind == "new"}
        - {f"{c} {s}" for c, s in explained}
    )
    deadline = world.watch.deadline if world.watch is not None else timedelta(0)
    reports = []
    for fault in faults:
        delay = None
        if fault.alerted_at is not None and fault.visible_at is not None:
            delay = (fault.alerted_at - fault.visible_at).total_seconds() / 60
        on_time = delay is not None and delay <= deadline.total_seconds() / 60
        reports.append(
            FaultReport(
                fault.name,
                _iso(fault.planted_at),
                _iso(fault.visible_at),
                _iso(fault.alerted_at),
                fault.alert,
                _iso(fault.fixed_at),
                _iso(fault.resolved_at),
                None if delay is None else round(delay, 1),
                on_time,
                tuple(fault.notes),
            )
        )
    expected = [r for r in reports if r.visible_at is not None]
    return SoakResult(
        days=days,
        start=start.isoformat(timespec="minutes"),
        end=world.now().isoformat(timespec="minutes"),
        wall_seconds=round(wall, 1),
        runs=runs,
        jobs=len(ids),
        done=len(ids & set(done)),
        failed=len(ids & failed),
        waiting=len(ids & waiting),
        lost=len(ids - set(done) - failed - waiting),
        succeeded_twice=sum(1 for job in ids if done[job] > 1 or successes[job] > 1),
        executions=sum(executions.values()),
        executions_beyond_one=sum(n - 1 for n in executions.values() if n > 1),
        watched=world.watch is not None,
        notices=len(notices),
        alerts_sent_twice=duplicate_alerts(notices),
        faults_never_alerted=sum(1 for r in expected if r.alerted_at is None),
        faults_alerted_late=sum(1 for r in expected if r.alerted_at is not None and not r.on_time),
        unmatched_alerts=tuple(unmatched),
        faults=tuple(reports),
    )


# --------------------------------------------------------------------------- the run


def _hours(start: datetime, end: datetime) -> Iterator[datetime]:
    at = start + HOUR
    while at <= end:
        yield at
        at += HOUR


def _fix_due(world: World, fixes: list[tuple[datetime, Fault]], fix_after: timedelta) -> None:
    """Undo each fault `fix_after` after it became visible (as a person would, by hand)."""
    for at, fault in list(fixes):
        if at + fix_after <= world.now():
            fix = KINDS[fault.name].fix
            assert fix is not None
            fix(world, fault)
            fault.fixed_at = world.now()
            fixes.remove((at, fault))


def run_soak(
    *,
    days: int,
    root: Path,
    watch: WatchSettings | None,
    fix_after: timedelta = timedelta(hours=3),
    start: datetime | None = None,
    per_hour: int = 2,
) -> SoakResult:
    """Soak for `days` emulated days from `start` (default: tomorrow 00:00) under `root`."""
    began = time.monotonic()
    world = make_world(root, watch)
    if start is None:
        start = (world.now() + timedelta(days=1)).replace(hour=0, minute=0, second=0)
    start = start.replace(microsecond=0)
    world.advance(start, asleep=True)  # from the real now to the first day: a quiet night
    world.wait_idle()
    end = start + timedelta(days=days)
    faults = plan_faults(start, days)
    runs = 0
    pending = list(faults)
    fixes: list[tuple[datetime, Fault]] = []
    for hour in _hours(start, end):
        # Fixes first: planting the next fault moves the clock on, past fires a fix is due for.
        _fix_due(world, fixes, fix_after)
        for fault in [f for f in pending if f.at < hour]:
            runs += world.advance(fault.at)
            fault.planted_at = world.now()
            KINDS[fault.name].plant(world, fault)
            pending.remove(fault)
        for fault in faults:
            kind = KINDS[fault.name]
            if fault.visible_at is None and fault.planted_at is not None and kind.seen:
                kind.seen(world, fault)
            due = fault.visible_at is not None and fault.fixed_at is None and kind.fix
            if due and fault not in [f for _, f in fixes]:
                fixes.append((max(fault.visible_at or hour, fault.planted_at or hour), fault))
        if world.now() > hour:
            continue  # an outage slept through this hour: nothing was enqueued in it
        runs += world.advance(hour)
        for n in range(per_hour):
            world.enqueue("inbox" if n % 2 == 0 else "outbox", {"seconds": JOB_SECONDS})
    # Drain: hour by hour until nothing waits (at most a day, in which every lane fires).
    for hour in _hours(end, end + timedelta(days=1)):
        _fix_due(world, fixes, fix_after)
        if not _waiting(world) and not fixes:
            break
        runs += world.advance(hour)
    world.wait_idle()
    result = account(
        world, faults, start=start, days=days, runs=runs, wall=time.monotonic() - began
    )
    for name in world.config.lanes:
        remove(world.config, world.paths, world.domain, name, force=True)
    return result


def watch_available() -> bool:
    """Whether this lanekit has the watchdog (`[watch]`, lanekit.watch)."""
    return importlib.util.find_spec("lanekit.watch") is not None


def _render(result: SoakResult) -> str:
    lines = [
        f"soak: {result.days} emulated days ({result.start} to {result.end}) in "
        f"{result.wall_seconds:.0f} s of wall time; {result.runs} launchd starts",
        f"jobs: {result.jobs} enqueued, {result.done} done, {result.failed} failed, "
        f"{result.waiting} waiting; lost {result.lost}, succeeded twice "
        f"{result.succeeded_twice}; executions {result.executions} "
        f"({result.executions_beyond_one} beyond one)",
    ]
    if result.watched:
        lines.append(
            f"alerts: {result.notices} notices; sent twice {result.alerts_sent_twice}; faults "
            f"never alerted {result.faults_never_alerted}; alerted late "
            f"{result.faults_alerted_late}"
        )
    else:
        lines.append("alerts: no watchdog in this lanekit (lanekit.watch): not measured")
    lines.append(
        f"{'fault':<16} {'planted':<16} {'visible':<16} {'alerted':<16} {'delay':>7}  "
        f"{'resolved':<16} alert"
    )
    for fault in result.faults:
        delay = "-" if fault.alert_delay_minutes is None else f"{fault.alert_delay_minutes:.0f}m"
        lines.append(
            f"{fault.name:<16} {(fault.planted_at or '-')[5:16]:<16} "
            f"{(fault.visible_at or '-')[5:16]:<16} {(fault.alerted_at or '-')[5:16]:<16} "
            f"{delay:>7}  {(fault.resolved_at or '-')[5:16]:<16} {fault.alert or '-'}"
        )
        for note in fault.notes:
            lines.append(f"    note: {note}")
    if result.unmatched_alerts:
        lines.append("alerts no planted fault explains: " + ", ".join(result.unmatched_alerts))
    lines.append("ok" if result.ok else "NOT OK")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak and print (or --json) its report; exit 1 unless it is ok."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--dir", type=Path, help="work here (kept) instead of a temp dir")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-watch", action="store_true", help="run without [watch]")
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2 (faults need room)")
    watch = None if args.no_watch or not watch_available() else WatchSettings()
    if args.dir is not None:
        result = run_soak(days=args.days, root=args.dir.resolve(), watch=watch)
    else:
        with tempfile.TemporaryDirectory(prefix="lanekit-soak-") as tmp:
            result = run_soak(days=args.days, root=Path(tmp), watch=watch)
    print(json.dumps(asdict(result), indent=2) if args.json else _render(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
