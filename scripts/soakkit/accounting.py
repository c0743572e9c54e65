"""The soak's accounting: the watchdog's notices matched to the faults, and jobs lost or
run to success twice."""

from __future__ import annotations

import collections
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.run.lanelog import read_events
from soakkit.faults import Fault, stamp
from soakkit.world import World


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
        sent = stamp(notice.get("sent_at")) or datetime.fromtimestamp(float(entry["received"]))
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


def waiting(world: World) -> bool:
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
