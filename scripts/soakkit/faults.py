"""The faults the soak plants: how each is planted, seen and fixed, and when."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lanekit.reconcile import apply
from lanekit.schedule import previous_fire
from lanekit.system.owned import make_private_dirs
from soakkit.world import BURST, JOB_SECONDS, OUTAGE, SLOW_SECONDS, World


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


def stamp(text: str | None) -> datetime | None:
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
        fault.visible_at = stamp(record.updated_at)


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
    if world.domain.print(lane.label).last_exit_code == os.EX_CONFIG:
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
