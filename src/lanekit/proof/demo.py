"""`lanekit demo`: the incident of seed 001 replayed for real, and lanekit preventing it.

After an outage, a backlog of 57 jobs sat in one queue and five launchd lanes fired at the same
minute; with `ls | while read` pickup scripts one job ran four times. Here the same five lanes are
applied with `apply`, fired at the same moment (the emulated domain's `tick`, or `kickstart` on a
Mac), and every job's command appends to a ledger, so the result is counted, not claimed.

Then a plist change is applied while a lane is mid-run (skipped, then applied after it finished),
a sixth lane with a PATH problem is kicked (it cannot start its command) and `doctor` names the
problem. It ends by writing the day's timeline page (lanekit's state dir, `timeline/`). Everything
else lives in one directory that is removed at the end unless `keep`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.config import Config, load_config
from lanekit.doctor import DoctorRequest, Finding, diagnose
from lanekit.errors import LanekitError
from lanekit.queue import open_queue
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState
from lanekit.reconcile import ApplyResult, Outcome, Result, apply, remove
from lanekit.run.lanelog import EventName
from lanekit.schedule import CalendarEntry, next_fires
from lanekit.service import clock_for, open_manager
from lanekit.service.emulated.manager import EmulatedManager
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths, backend_name
from lanekit.timeline.build import TimelineRequest, TimelineResult, timeline_of

BACKLOG = 57
"""The seed's backlog: 43 flagged JSON files grew to 57 during the outage."""
LANES = ("funnel", "thumbs", "social", "portraits", "digest")
"""Five lanes on one queue, as in the seed (funnel-pm and its siblings)."""
FIRE_AT = (10, 40)
"""The seed's funnel fired at 10:40 (and 16:40)."""
BROKEN_LANE = "publish"
SLOW_JOB_SECONDS = 3.0

JOB_SCRIPT = '''\
"""Demo job: append "<job id> <lane>" to the ledger, then work for a moment."""
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
time.sleep(float(payload.get("seconds", 0.05)))
'''

PUBLISH_TOOL = """#!/bin/sh
# Demo tool that lives on the user's PATH but not on the lane's: launchd would exit 127.
exit 0
"""


@dataclass(frozen=True, slots=True)
class Progress:
    """A snapshot while lanes drain: for the progress display."""

    done: int
    total: int
    running: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DrainReport:
    """The incident's outcome, counted from the ledger and the queue."""

    jobs: int
    processed: int
    """Distinct jobs that ran and were settled in done/."""
    duplicates: int
    """Jobs that ran more than once."""
    lost: int
    """Jobs enqueued that neither finished nor remain queued."""
    per_lane: Mapping[str, int]
    fired: tuple[str, ...]
    seconds: float


@dataclass(frozen=True, slots=True)
class ReloadReport:
    """The plist change applied while a lane was mid-run."""

    lane: str
    pid: int | None
    skipped: Outcome
    applied: Outcome
    waited_seconds: float


@dataclass(frozen=True, slots=True)
class DemoReport:
    """Everything `lanekit demo` showed."""

    root: Path
    backend: str
    kept: bool
    drain: DrainReport
    reload: ReloadReport
    findings: tuple[Finding, ...]
    env_hint: Mapping[str, str] = field(default_factory=dict)
    """Environment under which the CLI sees the demo's lanes (with --keep)."""
    timeline: TimelineResult | None = None
    """The day as `lanekit timeline` shows it: the burst, the skipped reload, the failure."""
    timeline_page: Path | None = None
    """Where its HTML page was written (kept after the clean-up)."""
    manager_reason: str = ""
    """Why this service manager ran the demo (on Linux: systemd when a user manager answers,
    else the emulated domain, and why)."""


def _lanes_toml(
    root: Path, prefix: str, funnel_schedule: str, fire_at: tuple[int, int] = FIRE_AT
) -> str:
    job = root / "bin" / "demo_job.py"
    ledger = root / "ledger.txt"
    lines = [
        "# Written by `lanekit demo`: five lanes drain one queue, a sixth has a PATH problem.",
        "[defaults]",
        f'label_prefix = "{prefix}"',
        'path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]',
        "max_attempts = 3",
    ]
    if fire_at == FIRE_AT:
        lines += [
            "# One second, not launchd's 10: the demo kicks a lane again seconds after the burst.",
            "throttle_interval = 1",
        ]
    lines += [
        "",
        "[queues.notes]",
        f'dir = "{root / "notes"}"',
        "",
        "[queues.outbox]",
        f'dir = "{root / "outbox"}"',
        "",
    ]
    for lane in LANES:
        schedule = funnel_schedule if lane == "funnel" else f"{fire_at[1]} {fire_at[0]} * * *"
        lines += [
            f"[lanes.{lane}]",
            'queue = "notes"',
            f'command = ["{sys.executable}", "{job}", "{{job}}", "{ledger}"]',
            f'schedule = "{schedule}"',
            f"max_jobs = {BACKLOG}",
            "",
        ]
    lines += [
        f"[lanes.{BROKEN_LANE}]",
        'queue = "outbox"',
        'command = ["lanekit-demo-publish", "{job}"]',
        'schedule = "0 9 * * 1"',
        "",
    ]
    return "\n".join(lines)


def _write_files(root: Path) -> Path:
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "bin" / "demo_job.py").write_text(JOB_SCRIPT, encoding="utf-8")
    tools = root / "user-bin"
    tools.mkdir(exist_ok=True)
    tool = tools / "lanekit-demo-publish"
    tool.write_text(PUBLISH_TOOL, encoding="utf-8")
    tool.chmod(0o755)
    return tools


def _demo_paths(root: Path, backend: str) -> Paths:
    if backend == "emulated":
        return Paths.under(root)
    real = Paths.from_env()
    return Paths(home=real.home, launch_agents=real.launch_agents, state=root / "state", cwd=root)


def _ledger(root: Path) -> list[tuple[str, str]]:
    path = root / "ledger.txt"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        job_id, _, lane = line.partition(" ")
        rows.append((job_id, lane))
    return rows


def _real_timers(manager: ServiceManager) -> bool:
    """systemd fires the burst itself, on its own timers (no emulated clock, no kickstart)."""
    return manager.kind == "systemd"


def _next_minute(now: datetime) -> tuple[int, int]:
    """(hour, minute) of the next whole minute at least 10 s away: when systemd's timers fire
    the burst."""
    at = (now + timedelta(seconds=70)).replace(second=0, microsecond=0)
    return at.hour, at.minute


def _fire_all(
    manager: ServiceManager, config: Config, fire_at: tuple[int, int] = FIRE_AT
) -> tuple[str, ...]:
    """Fire the five lanes at one moment: the emulated calendar minute, systemd's timers at
    the real one (waited for), or kickstart on a Mac."""
    labels = {config.lanes[name].label: name for name in LANES}
    if _real_timers(manager):
        now = datetime.now()
        when = now.replace(hour=fire_at[0], minute=fire_at[1], second=0, microsecond=0)
        if when < now:
            when += timedelta(days=1)
        time.sleep(max(0.0, (when - now).total_seconds()))
        return tuple(sorted(labels.values()))
    if isinstance(manager, EmulatedManager):
        # The next 10:40 on the emulated clock: an outage ends, every lane's minute arrives.
        # The domain's clock moves there first, so the runs log, record and show 10:40.
        domain = manager.emulator
        at = CalendarEntry(hour=FIRE_AT[0], minute=FIRE_AT[1])
        (when,) = next_fires((at,), domain.clock().now(), 1)
        domain.set_clock(when.timestamp())
        fired = [labels[label] for label in domain.tick(when) if label in labels]
        return tuple(sorted(fired))
    for label in labels:
        manager.kick(label)
    return tuple(sorted(labels.values()))


def _running(manager: ServiceManager, labels: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(
        sorted(labels[label] for label, pid in manager.loaded().items() if label in labels and pid)
    )


def _drain(
    *,
    root: Path,
    config: Config,
    manager: ServiceManager,
    queue: JobQueue,
    ids: set[str],
    progress: Callable[[Progress], None],
    timeout: float,
    fire_at: tuple[int, int] = FIRE_AT,
) -> DrainReport:
    labels = {config.lanes[name].label: name for name in LANES}
    fired = _fire_all(manager, config, fire_at)
    started = time.monotonic()
    deadline = started + timeout
    while True:
        counts = queue.counts()
        running = _running(manager, labels)
        progress(Progress(done=counts.done, total=len(ids), running=running))
        if counts.queued == counts.claimed == counts.delayed == 0 and not running:
            break
        if time.monotonic() > deadline:
            raise LanekitError(
                f"demo: lanes did not drain the queue within {timeout:.0f} s",
                f"inspect {root} (run the demo with --keep)",
            )
        time.sleep(0.1)
    seconds = time.monotonic() - started
    ledger = _ledger(root)
    runs = Counter(job_id for job_id, _ in ledger)
    done = {record.job_id for record in queue.page(1, 0, JobState.SUCCEEDED).items}
    still_queued = {record.job_id for record in queue.page(1, 0, JobState.QUEUED).items}
    return DrainReport(
        jobs=len(ids),
        processed=len(ids & done),
        duplicates=sum(1 for job_id in ids if runs[job_id] > 1),
        lost=len(ids - done - still_queued),
        per_lane=dict(sorted(Counter(lane for _, lane in ledger).items())),
        fired=fired,
        seconds=seconds,
    )


def _outcome(result: ApplyResult, lane: str) -> Outcome:
    return next(o for o in result.outcomes if o.action.lane == lane)


def _reload_mid_run(
    root: Path,
    prefix: str,
    paths: Paths,
    manager: ServiceManager,
    queue: JobQueue,
    *,
    fire_at: tuple[int, int] = FIRE_AT,
) -> ReloadReport:
    """Change funnel's plist while it runs a slow job: skipped, then applied once it is idle."""
    config_path = root / "lanes.toml"
    queue.enqueue({"seconds": SLOW_JOB_SECONDS}, job_id="slow-report")
    config = load_config(config_path, paths)
    label = config.lanes["funnel"].label
    pid = manager.kick(label)
    deadline = time.monotonic() + 10
    # Asking launchd also lets the emulated domain start a throttled kick when it comes due.
    while queue.counts().claimed == 0 and time.monotonic() < deadline:
        manager.loaded()
        time.sleep(0.05)
    # The seed's funnel ran at 10:40 and 16:40: adding the second time (six hours on) changes
    # its plist.
    config_path.write_text(
        _lanes_toml(
            root, prefix, f"{fire_at[1]} {fire_at[0]},{(fire_at[0] + 6) % 24} * * *", fire_at
        ),
        encoding="utf-8",
    )
    config = load_config(config_path, paths)
    skipped = _outcome(apply(config, paths, manager), "funnel")
    started = time.monotonic()
    applied = _outcome(apply(config, paths, manager, wait=SLOW_JOB_SECONDS + 15), "funnel")
    return ReloadReport(
        lane="funnel",
        pid=skipped.pid or pid,
        skipped=skipped,
        applied=applied,
        waited_seconds=time.monotonic() - started,
    )


def _kick_broken_lane(config: Config, manager: ServiceManager, timeout: float = 15.0) -> None:
    """Give the sixth lane a job and start it: its command is not on the lane's PATH, so the
    run puts the job back and ends with an error (exit 69), as it would under launchd."""
    lane = config.lanes[BROKEN_LANE]
    open_queue(lane.queue.dir, durable=False).enqueue({"to": "newsletter"}, job_id="weekly-issue")
    manager.kick(lane.label)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _running(manager, {lane.label: BROKEN_LANE}) == () and lane.log_path.exists():
            text = lane.log_path.read_text(encoding="utf-8", errors="replace")
            if f"event={EventName.ERROR}" in text or f"event={EventName.FINISH}" in text:
                return
        time.sleep(0.05)


def _write_timeline(
    config: Config, paths: Paths, manager: ServiceManager, env: Mapping[str, str]
) -> tuple[TimelineResult, Path]:
    """The day's timeline of every demo lane as of the domain's clock (the emulated 10:40's
    day), and its page under lanekit's own state dir (so it outlives the demo directory)."""
    from lanekit.timeline.html import page_name, save

    now = clock_for(paths, env).now()
    result = timeline_of(config, TimelineRequest(), manager, now=now)
    folder = Paths.from_env(env).state / "timeline"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    day = result.day or now.date()
    return result, save(result, folder / f"demo-{page_name(day)}")


def run_demo(
    *,
    directory: Path | None = None,
    keep: bool = False,
    progress: Callable[[Progress], None] = lambda _: None,
    env: Mapping[str, str] | None = None,
    timeout: float = 40.0,
) -> DemoReport:
    """Replay the incident and return what happened; cleans up unless `keep`."""
    env = dict(os.environ if env is None else env)
    backend = backend_name(env, sys.platform)
    created = directory is None or not directory.exists()
    root = Path(tempfile.mkdtemp(prefix="lanekit-demo-")) if directory is None else directory
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise LanekitError(
            f"{root}: demo directory is not empty", "pass --dir with a new or empty directory"
        )
    # A temporary label prefix keeps a real Mac's own agents out of the demo's way.
    prefix = f"local.lanekit-demo-{secrets.token_hex(3)}"
    paths = _demo_paths(root, backend)
    manager = open_manager(paths, env)
    config: Config | None = None
    try:
        tools = _write_files(root)
        fire_at = _next_minute(datetime.now()) if _real_timers(manager) else FIRE_AT
        (root / "lanes.toml").write_text(
            _lanes_toml(root, prefix, f"{fire_at[1]} {fire_at[0]} * * *", fire_at),
            encoding="utf-8",
        )
        config = load_config(root / "lanes.toml", paths)
        # The publish lane's tool is missing from its PATH on purpose (doctor's finding).
        installed = apply(config, paths, manager, install_anyway=True)
        failed = [o for o in installed.outcomes if o.result is Result.FAILED]
        if failed:
            raise failed[0].error or LanekitError(f"demo: apply failed: {failed[0].detail}")
        queue = open_queue(config.queues["notes"].dir, durable=False)
        ids = {queue.enqueue({"seconds": 0.05, "n": n}) for n in range(BACKLOG)}
        drain = _drain(
            root=root,
            config=config,
            manager=manager,
            queue=queue,
            ids=ids,
            progress=progress,
            timeout=timeout,
            fire_at=fire_at,
        )
        reload = _reload_mid_run(root, prefix, paths, manager, queue, fire_at=fire_at)
        _kick_broken_lane(config, manager)
        user_env = {**env, "PATH": f"{tools}{os.pathsep}{env.get('PATH', '')}"}
        doctor = diagnose(
            DoctorRequest(lanes=(BROKEN_LANE,), config_path=root / "lanes.toml"),
            paths,
            env=user_env,
            launchd=manager,
        )
        findings = tuple(f for f in doctor.findings if f.id == "path.command-missing")
        day, page = _write_timeline(load_config(root / "lanes.toml", paths), paths, manager, env)
    finally:
        if not keep:
            _clean_up(root, paths, manager, config, remove_root=created)
    hint = {
        "LANEKIT_CONFIG": str(root / "lanes.toml"),
        "LANEKIT_STATE_DIR": str(paths.state),
        "LANEKIT_LAUNCH_AGENTS": str(paths.launch_agents),
    }
    return DemoReport(
        root,
        "systemd" if _real_timers(manager) else backend,
        keep,
        drain,
        reload,
        findings,
        hint if keep else {},
        day,
        page,
        manager_reason=manager.domain_reason,
    )


def _clean_up(
    root: Path, paths: Paths, manager: ServiceManager, config: Config | None, *, remove_root: bool
) -> None:
    """Boot out every demo lane (stopping its processes), then delete what the demo wrote."""
    if config is not None:
        for name in config.lanes:
            try:
                remove(config, paths, manager, name, force=True)
            except LanekitError:
                continue
    if remove_root:
        shutil.rmtree(root, ignore_errors=True)
    else:
        for child in root.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
