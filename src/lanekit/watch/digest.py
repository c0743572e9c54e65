"""The daily digest: once a day at `[watch] digest`, one notice about yesterday.

Per lane: runs (`start` events), jobs done, failed and retried (`done`, `failed`, `requeued`),
and missed runs (calendar fires since the lane was installed with no run evidence within
`missed_after`); and the alerts
opened and resolved that day (the memory's history). Each lane log is read only over
yesterday (lanelog.read_between seeks to it), so a long log costs a few reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from lanekit.config import Config, LaneSpec
from lanekit.config.watch import WATCH_LANE, WatchSpec
from lanekit.doctor import Severity
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.watch.alerts import Notice, NoticeKind
from lanekit.watch.memory import Happened

DIGEST_CHECK = "watch.digest"
"""The notice id of the digest (in the notice document's `id`)."""


def digest_due(at: time, now: datetime, last_day: str | None) -> bool:
    """True once per local day, from `at` on."""
    return now.time() >= at and last_day != f"{now:%Y-%m-%d}"


@dataclass(frozen=True, slots=True)
class LaneDay:
    """One lane's yesterday."""

    runs: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    missed: int = 0
    opened: int = 0
    resolved: int = 0

    def to_json(self, lane: str) -> dict[str, Any]:
        """The lane's figures in the digest notice's `details.lanes`."""
        return {
            "lane": lane,
            "runs": self.runs,
            "done": self.done,
            "failed": self.failed,
            "retried": self.retried,
            "missed": self.missed,
            "alerts_opened": self.opened,
            "alerts_resolved": self.resolved,
        }


def lane_day(
    lane: LaneSpec, start: datetime, end: datetime, missed_after: int, history: Sequence[Happened]
) -> LaneDay:
    """What `lane` did between `start` and `end` (naive local times)."""
    from lanekit.run.lanelog import EventName, read_between
    from lanekit.schedule import next_fires
    from lanekit.timeline.build import known_since
    from lanekit.timeline.events import RUN_KINDS, classify

    counts = {EventName.START: 0, EventName.DONE: 0, EventName.FAILED: 0, EventName.REQUEUED: 0}
    evidence: list[float] = []
    slack = float(missed_after)
    for event in read_between(lane.log_path, start.timestamp(), end.timestamp() + slack):
        name = event.get("event", "")
        ts = _epoch(event.get("ts", ""))
        if ts is None:
            continue
        if classify(name, event) in RUN_KINDS:
            evidence.append(ts)
        if ts < end.timestamp() and name in counts:
            counts[name] += 1
    # Counted from the lane's installation, as the timeline does: a fire before the lane's
    # first logged event could not have run (launchd never replays one from before loading).
    since = known_since(lane)
    first = start.timestamp() if since is None else max(start.timestamp(), since.timestamp())
    fires = [
        f
        for f in next_fires(lane.schedule.calendar, start - timedelta(seconds=1), 2000)
        if f < end and f.timestamp() >= first
    ]
    missed = sum(
        1
        for fire in fires
        if not any(fire.timestamp() <= ts <= fire.timestamp() + slack for ts in evidence)
    )
    window = (start.timestamp(), end.timestamp())
    mine = [h for h in history if window[0] <= h.at < window[1] and lane.name in h.lanes]
    return LaneDay(
        runs=counts[EventName.START],
        done=counts[EventName.DONE],
        failed=counts[EventName.FAILED],
        retried=counts[EventName.REQUEUED],
        missed=missed,
        opened=sum(1 for h in mine if h.kind == str(NoticeKind.NEW)),
        resolved=sum(1 for h in mine if h.kind == str(NoticeKind.RESOLVED)),
    )


def _epoch(ts: str) -> float | None:
    from lanekit.timeline.events import parse_ts

    when = parse_ts(ts)
    return None if when is None else when.timestamp()


def write_day_page(
    config: Config, launchd: Launchd | ServiceManager, paths: Paths, day: date, now: datetime
) -> Path:
    """The day's `lanekit timeline` page, written under the state dir (`timeline/`, 0700) for
    the digest to link; the same page `lanekit timeline --day DAY --html` writes."""
    from lanekit.system.owned import make_private_dirs
    from lanekit.timeline.build import TimelineRequest, timeline_of
    from lanekit.timeline.html import page_name, save

    lanes = tuple(name for name in config.lanes if name != WATCH_LANE)
    result = timeline_of(config, TimelineRequest(lanes=lanes, day=day), launchd, now=now)
    folder = paths.state / "timeline"
    make_private_dirs(folder)
    return save(result, folder / page_name(day))


def digest_notice(
    config: Config,
    history: Sequence[Happened],
    now: datetime,
    watch: WatchSpec,
    page: Path | None = None,
) -> Notice:
    """The digest of the local day before `now`'s; `page` is that day's timeline page, linked
    from the message and in `details.page`."""
    today = datetime.combine(now.date(), time())
    start = today - timedelta(days=1)
    lanes = [lane for lane in config.lanes.values() if lane.name != WATCH_LANE]
    days = {lane.name: lane_day(lane, start, today, watch.missed_after, history) for lane in lanes}
    window = [h for h in history if start.timestamp() <= h.at < today.timestamp()]
    opened = sum(1 for h in window if h.kind == str(NoticeKind.NEW))
    resolved = sum(1 for h in window if h.kind == str(NoticeKind.RESOLVED))
    parts = [
        f"{name}: {d.runs} runs, {d.done} done, {d.failed} failed, {d.retried} retried, "
        f"{d.missed} missed"
        for name, d in days.items()
    ]
    message = (
        f"{start:%Y-%m-%d}: "
        + ("; ".join(parts) if parts else "no lanes")
        # Alerts of lanes and of queues alike, so the totals are not the sum of the lanes'.
        + f". Alerts: {opened} opened, {resolved} resolved."
        + ("" if page is None else f" The day: {page.absolute().as_uri()}")
    )
    details: Mapping[str, Any] = {
        "day": f"{start:%Y-%m-%d}",
        "lanes": [d.to_json(name) for name, d in days.items()],
        "alerts_opened": opened,
        "alerts_resolved": resolved,
        "page": None if page is None else str(page.absolute()),
    }
    return Notice(
        kind=NoticeKind.DIGEST,
        check=DIGEST_CHECK,
        severity=Severity.INFO,
        subject=str(config.path),
        subject_kind="project",
        lanes=tuple(days),
        message=message,
        fix="lanekit status",
        first_seen=now,
        at=now,
        details=details,
    )
