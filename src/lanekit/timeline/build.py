"""The core of `lanekit timeline`: read what lanekit recorded for the span asked, then model it.

Sources: each lane's event log (only the span, by binary search on its timestamps: see
lanelog.read_between), the lanes' schedules (fires in the span), launchd's list (which lanes
run now, their last exit), for a queue several machines share (postgres) the attempts other
hosts made in the span (one query per queue: JobQueue.attempts_between), and for `--job` the
job's record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from lanekit.config import Config, LaneSpec, find_config, load_config, select_lanes
from lanekit.errors import LanekitError, UsageError
from lanekit.queue import directory_of, open_queue
from lanekit.queue.paging import AttemptSpan, JobView
from lanekit.run.lanelog import read_between, read_events
from lanekit.schedule import Schedule, next_fires
from lanekit.service import manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import Observation, ServiceManager
from lanekit.state.paths import Paths
from lanekit.timeline.events import Event, parse_ts, to_event
from lanekit.timeline.model import (
    DEFAULT_THROTTLE,
    AwayOutcome,
    AwayRun,
    LaneInfo,
    Timeline,
    Window,
    build_timeline,
)

LOOKBEHIND = timedelta(hours=2)
"""Read this much before the window, so a run that started before it is shown whole."""
LOOKAHEAD = timedelta(hours=2)
"""And this much after, so a run still going at the window's end shows how it ended."""
_FIRE_BATCH = 512


@dataclass(frozen=True, slots=True)
class TimelineRequest:
    """What `lanekit timeline` was asked for."""

    lanes: tuple[str, ...] = ()
    day: date | None = None
    """The local day to show (default: today)."""
    since: date | None = None
    """Show from this local day's start to now instead of one day."""
    job: str | None = None
    """Also trace this job's life (claims, attempts, outcome)."""
    config_path: Path | None = None


@dataclass(frozen=True, slots=True)
class JobLife:
    """A job's life as logged: queued, each claim and attempt, each outcome."""

    job_id: str
    view: JobView | None
    """Its record and where its file is now; None when no selected lane's queue knows it."""
    events: tuple[Event, ...]
    output: Path | None = None
    """The file that keeps its output (stdout and stderr, attempt by attempt), once it ran."""


@dataclass(frozen=True, slots=True)
class TimelineResult:
    """What `lanekit timeline` shows."""

    timeline: Timeline
    day: date | None
    """The day shown, None for a --since span."""
    job: JobLife | None = None
    notes: tuple[str, ...] = ()
    """What could not be read (launchd unavailable...), said under the chart."""


def parse_day(text: str, option: str, today: date | None = None) -> date:
    """`YYYY-MM-DD` (or `today`, `yesterday`, counted from `today`, default the real date) as
    a date; UsageError naming the option."""
    word = text.strip().lower()
    today = date.today() if today is None else today
    if word == "today":
        return today
    if word == "yesterday":
        return today - timedelta(days=1)
    try:
        return date.fromisoformat(word)
    except ValueError:
        raise UsageError(
            f"{option} {text!r} is not a day",
            f"write it as YYYY-MM-DD, e.g. {option} {today.isoformat()}",
        ) from None


def local_midnight(day: date) -> datetime:
    """The instant a local day starts (aware; the machine's time zone, DST included)."""
    return datetime(day.year, day.month, day.day).astimezone()


def day_window(day: date, now: datetime) -> Window:
    """A whole local day: 23, 24 or 25 hours long."""
    return Window(local_midnight(day), local_midnight(day + timedelta(days=1)), now)


def fires_between(schedule: Schedule, start: datetime, end: datetime) -> tuple[datetime, ...]:
    """Calendar fires in [start, end) as aware datetimes (StartInterval fires depend on when
    launchd loaded the job, which it does not report: none are drawn)."""
    if not schedule.calendar:
        return ()
    fires: list[datetime] = []
    after = start.astimezone().replace(tzinfo=None) - timedelta(minutes=1)
    while True:
        batch = next_fires(schedule.calendar, after, _FIRE_BATCH)
        for fire in batch:
            at = fire.astimezone()
            if at >= end:
                return tuple(fires)
            if at >= start:
                fires.append(at)
        if len(batch) < _FIRE_BATCH:
            return tuple(fires)
        after = batch[-1]


def _lane_events(lane: LaneSpec, start: datetime, end: datetime) -> Iterator[Event]:
    for fields in read_between(lane.log_path, start.timestamp(), end.timestamp()):
        event = to_event(fields, lane.name)
        if event is not None:
            yield event


def known_since(lane: LaneSpec) -> datetime | None:
    """The first event of the oldest copy of the lane's log (one line read): when the lane
    was installed, as far as lanekit knows (fires before it are not missed)."""
    first = next(read_events(lane.log_path, rotated=True), None)
    return None if first is None else parse_ts(first.get("ts", ""))


def _observed(
    launchd: Launchd | ServiceManager, labels: Sequence[str]
) -> tuple[Observation, tuple[str, ...]]:
    try:
        return manager_of(launchd).observe(labels), ()
    except LanekitError as exc:
        note = f"launchd could not be asked ({exc.message}): running lanes not known"
        return Observation({}), (note,)


def _short(host: str) -> str:
    """A host name's short form: macOS flips between `name` and `name.local`."""
    return host.split(".", 1)[0].lower()


def _away_run(span: AttemptSpan, now: datetime) -> AwayRun:
    """An attempt as drawn: one with no end recorded yet runs there still, up to now."""
    start = datetime.fromtimestamp(span.started, UTC)
    end, outcome = now, AwayOutcome.RUNNING
    if span.ended is not None and span.outcome is not None:
        end, outcome = datetime.fromtimestamp(span.ended, UTC), AwayOutcome(span.outcome)
    return AwayRun(span.host, span.lane, span.job_id, span.attempt, span.pid, start, end, outcome)


def away_runs(
    lanes: Sequence[LaneSpec], window: Window, here: str
) -> tuple[dict[str, list[AwayRun]], tuple[str, ...]]:
    """Per lane shown, the jobs hosts other than `here` ran from its queue in the window,
    from one query per queue kept elsewhere than this machine (a directory queue is drained
    by this machine alone: its lane logs tell everything, and it is not asked). An attempt
    goes to the row of the lane of its name, else to the first row of its queue shown. Also
    a note per queue that could not be asked."""
    by_queue: dict[str, list[LaneSpec]] = {}
    for lane in lanes:
        if directory_of(lane.queue.dir) is None:
            by_queue.setdefault(str(lane.queue.dir), []).append(lane)
    found: dict[str, list[AwayRun]] = {}
    notes: list[str] = []
    for location, queue_lanes in by_queue.items():
        try:
            spans = open_queue(location).attempts_between(
                window.start.timestamp(), window.end.timestamp()
            )
        except LanekitError as exc:
            notes.append(
                f"queue {queue_lanes[0].queue.name} could not be asked ({exc.message}): "
                "runs on other hosts not shown"
            )
            continue
        names = {lane.name for lane in queue_lanes}
        for span in spans:
            if _short(span.host) == _short(here):
                continue  # this machine's own: its lane log draws it
            row = span.lane if span.lane in names else queue_lanes[0].name
            found.setdefault(row, []).append(_away_run(span, window.now))
    return found, tuple(notes)


def _job_life(job_id: str, lanes: Sequence[LaneSpec], events: Sequence[Event]) -> JobLife:
    view: JobView | None = None
    output: Path | None = None
    for queue_dir in dict.fromkeys(lane.queue.dir for lane in lanes):
        queue = open_queue(queue_dir)
        view = queue.job(job_id)
        if view is not None:
            kept = queue.output_path(job_id)
            output = Path(kept) if kept is not None and Path(kept).is_file() else None
            break
    return JobLife(job_id, view, tuple(e for e in events if e.job == job_id), output)


def _job_start(job_id: str, lanes: Sequence[LaneSpec]) -> date | None:
    """The local day a job was first queued, from its record."""
    for queue_dir in dict.fromkeys(lane.queue.dir for lane in lanes):
        view = open_queue(queue_dir).job(job_id)
        if view is not None and view.record is not None:
            when = parse_ts(view.record.queued_at)
            if when is not None:
                return when.astimezone().date()
    return None


def timeline(
    request: TimelineRequest,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    env: Mapping[str, str] | None = None,
    *,
    now: datetime | None = None,
) -> TimelineResult:
    """The core of `lanekit timeline`: the lanes' day (or span) as a Timeline, as of `now`
    (default: the launchd backend's clock, lanekit.state.clock)."""
    if request.day is not None and request.since is not None:
        raise UsageError("--day and --since cannot be combined", "choose one of them")
    env = os.environ if env is None else env
    config = load_config(find_config(request.config_path, env, paths.cwd), paths)
    if now is None:
        from lanekit.service import clock_for

        now = clock_for(paths, env).now()
    return timeline_of(config, request, launchd, now=now)


def timeline_of(
    config: Config,
    request: TimelineRequest,
    launchd: Launchd | ServiceManager,
    *,
    now: datetime | None = None,
) -> TimelineResult:
    """As `timeline`, for a loaded config."""
    lanes = select_lanes(config, request.lanes)
    now = (datetime.now() if now is None else now).astimezone()
    since = request.since
    if request.job is not None and request.day is None and since is None:
        since = _job_start(request.job, lanes)
    if since is not None:
        window = Window(local_midnight(since), now, now)
        if window.end <= window.start:
            raise UsageError(
                f"--since {since.isoformat()} is in the future", "give a day up to today"
            )
    else:
        window = day_window(request.day or now.date(), now)
    read_from, read_to = window.start - LOOKBEHIND, window.end + LOOKAHEAD
    seen, notes = _observed(launchd, [lane.label for lane in lanes])
    events: list[Event] = []
    infos: list[LaneInfo] = []
    for lane in lanes:
        events.extend(_lane_events(lane, read_from, read_to))
        lane_seen = seen[lane.label]
        infos.append(
            LaneInfo(
                name=lane.name,
                queue=lane.queue.name,
                fires=fires_between(lane.schedule, window.start, window.end),
                throttle=DEFAULT_THROTTLE
                if lane.throttle_interval is None
                else lane.throttle_interval,
                running_now=lane_seen.running,
                last_exit=lane_seen.last_exit if lane_seen.loaded else None,
                known_since=known_since(lane),
            )
        )
    from socket import gethostname

    away, away_notes = away_runs(lanes, window, gethostname())
    notes = (*notes, *away_notes)
    built = build_timeline(events, infos, window, read_to_now=read_to >= now, away=away)
    job = None if request.job is None else _job_life(request.job, lanes, built.events)
    day = None if since is not None else window.start.date()
    return TimelineResult(built, day, job, notes)
