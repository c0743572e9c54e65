"""Events and schedule fires -> what the timeline shows: runs, markers, bursts (pure).

A run is everything one runner logged between its `start` and its `finish` (or `error`, or the
next `start` when it died without a word). Markers are points: a scheduled fire that had no run
(missed, or exit 78 when launchd says it could not start the job), a reload by `apply` and one
it skipped because the lane was running, a start launchd throttled. A burst is several lanes of
one queue running at the same time, with how many claims each won.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from lanekit.config.watch import WATCH_LANE
from lanekit.errors import ExitCode
from lanekit.timeline.events import RUN_KINDS, Event, Kind

FIRE_MATCH = timedelta(seconds=60)
"""A run that starts this long after a fire (plus the lane's ThrottleInterval) answers it;
launchd starts calendar jobs within a second of the minute unless it throttles them."""

THROTTLE_SLACK = timedelta(seconds=1)
"""How close to `previous start + ThrottleInterval` a start must be to count as throttled."""

DEFAULT_THROTTLE = 10
"""launchd's ThrottleInterval when the plist sets none (seconds)."""

MAX_ERRORS = 3
"""Error texts kept per run (the hover title and --json show them; the log has them all)."""


class Outcome(StrEnum):
    """How a run ended, as the timeline colours it."""

    OK = "ok"
    """Ran; nothing failed (exit 0)."""
    JOBS_FAILED = "jobs-failed"
    """Some jobs failed or were put back for a retry (exit 1)."""
    KILLED = "killed"
    """Stopped by a signal (exit 75), or died without finishing (SIGKILL, crash)."""
    ERROR = "error"
    """Could not work at all: the command cannot start, the queue is unusable (exit 69)."""
    THROTTLED = "throttled"
    """Ran fine, but launchd postponed its start by ThrottleInterval."""
    BUSY = "busy"
    """Skipped: the lane's previous run still held the lane lock."""
    RUNNING = "running"
    """Still running now (launchd reports its pid)."""
    UNFINISHED = "unfinished"
    """No end seen: it ended after the part of the log that was read, or the log is cut."""
    UNDELIVERED = "undelivered"
    """The watchdog's pass ran but could not deliver an alert through a channel (its exit 1):
    no job of its failed, it has none."""


class MarkerKind(StrEnum):
    """Points on a lane's row."""

    MISSED = "missed"
    """A scheduled fire with no run."""
    EXIT_78 = "exit-78"
    """A fire with no run while launchd's last exit for the lane is 78 (it could not start it)."""
    INSTALLED = "installed"
    """`apply` installed the lane (fires before it cannot be missed)."""
    RELOADED = "reloaded"
    """`apply` loaded or reloaded the lane's plist (its `action` says which)."""
    RELOAD_SKIPPED = "reload-skipped"
    """`apply` left the lane alone because it was running."""
    THROTTLED = "throttled"
    """A start request launchd postponed (logged by the one who asked)."""


def run_outcome(
    *,
    finish_exit: int | None,
    errored: bool,
    busy: bool,
    ended: bool,
    died: bool,
    running_now: bool,
    throttled: bool,
) -> Outcome:
    """The outcome of a run from what was logged about it; the order is the precedence (a
    table test pins it). `ended`: a finish or error line was seen; `died`: it did not end but
    a later run started (or launchd says the lane is idle and the log was read up to now)."""
    if busy:
        return Outcome.BUSY
    if errored:
        return Outcome.ERROR
    if not ended:
        if running_now:
            return Outcome.RUNNING
        return Outcome.KILLED if died else Outcome.UNFINISHED
    if finish_exit == ExitCode.INTERRUPTED or (finish_exit is not None and finish_exit < 0):
        return Outcome.KILLED
    if finish_exit not in (None, 0):
        return Outcome.JOBS_FAILED
    return Outcome.THROTTLED if throttled else Outcome.OK


@dataclass(frozen=True, slots=True)
class Window:
    """The span shown: [start, end), aware datetimes; `now` bounds what can have happened."""

    start: datetime
    end: datetime
    now: datetime

    def __post_init__(self) -> None:
        # Kept in UTC: Python subtracts and compares two datetimes of one ZoneInfo by wall
        # time, which makes a DST day 24 hours long.
        for name in ("start", "end", "now"):
            object.__setattr__(self, name, getattr(self, name).astimezone(UTC))

    def contains(self, at: datetime) -> bool:
        """True when `at` is inside the window."""
        return self.start <= at < self.end

    def overlaps(self, start: datetime, end: datetime) -> bool:
        """True when [start, end] touches the window (a point run at the start counts)."""
        return start < self.end and end >= self.start


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a lane (or one skipped start, for `busy`)."""

    lane: str
    start: datetime
    end: datetime
    outcome: Outcome
    pid: int | None = None
    exit: int | None = None
    reason: str | None = None
    """Why it ended, as the runner logged it (empty, max-jobs, signal...)."""
    claims: tuple[datetime, ...] = ()
    """When each claim was won."""
    jobs: tuple[str, ...] = ()
    """The jobs it claimed, in order."""
    done: int = 0
    failed: int = 0
    requeued: int = 0
    recovered: int = 0
    skipped: int = 0
    attempts_max: int = 0
    """The highest attempt number among its claims (2+ means it ran retries)."""
    errors: tuple[str, ...] = ()
    fire: datetime | None = None
    """The scheduled fire it answered; None for a kick, a wake from sleep or a retry."""
    throttled: bool = False
    started_before: bool = False
    """Its start lies before the window (it is shown from the window's start)."""

    @property
    def claimed(self) -> int:
        """How many jobs it claimed."""
        return len(self.claims)


@dataclass(frozen=True, slots=True)
class Marker:
    """A point on a lane's row."""

    lane: str
    at: datetime
    kind: MarkerKind
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Burst:
    """Several lanes of one queue running at once."""

    queue: str
    start: datetime
    end: datetime
    claims: Mapping[str, int]
    """Lane -> claims it won during the burst, lanes in the order of their first start."""

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lanes that ran at once."""
        return tuple(self.claims)


@dataclass(frozen=True, slots=True)
class LaneInfo:
    """What the model needs to know about a lane besides its log."""

    name: str
    queue: str
    fires: tuple[datetime, ...] = ()
    """Scheduled fires in the window (aware)."""
    throttle: int = DEFAULT_THROTTLE
    running_now: bool = False
    last_exit: int | None = None
    """launchd's last exit status now (list convention: minus the signal)."""
    known_since: datetime | None = None
    """The lane's first logged event: fires before it are not missed (it was not installed)."""

    def __post_init__(self) -> None:
        # UTC, as Window: fire + ThrottleInterval must be real seconds, not wall-clock ones.
        object.__setattr__(self, "fires", tuple(f.astimezone(UTC) for f in self.fires))
        if self.known_since is not None:
            object.__setattr__(self, "known_since", self.known_since.astimezone(UTC))


class AwayOutcome(StrEnum):
    """How a job another machine ran ended, as its queue recorded the attempt; later members
    win a shared terminal column (lanekit.timeline.layout.away_cells)."""

    SUCCEEDED = "succeeded"
    STOPPED = "stopped"
    """Stopped and put back (a signal, a reload): no failure."""
    RUNNING = "running"
    """No end recorded yet: still running there (drawn up to now)."""
    FAILED = "failed"
    ORPHANED = "orphaned"
    """Its lease lapsed unrenewed (the host died, slept or was cut off) and a run recovered it."""


@dataclass(frozen=True, slots=True)
class AwayRun:
    """One job another host ran from a lane's queue (one attempt of a server queue), drawn on
    the lane's row as that host's, never as a run of this machine's."""

    host: str
    lane: str | None
    """The lane that claimed it on that host (its name there)."""
    job: str
    attempt: int
    pid: int
    start: datetime
    end: datetime
    """When it ended; `now` while it runs."""
    outcome: AwayOutcome

    def __post_init__(self) -> None:
        # UTC, as Window.
        object.__setattr__(self, "start", self.start.astimezone(UTC))
        object.__setattr__(self, "end", self.end.astimezone(UTC))


@dataclass(frozen=True, slots=True)
class LaneRow:
    """One row of the timeline."""

    lane: str
    queue: str
    fires: tuple[datetime, ...]
    runs: tuple[Run, ...]
    markers: tuple[Marker, ...]
    other: tuple[Event, ...] = ()
    """Events of kinds this version does not draw (kept for --json)."""
    away: tuple[AwayRun, ...] = ()
    """Jobs other hosts ran from the lane's queue in the window (a server queue), oldest
    first."""

    @property
    def away_hosts(self) -> tuple[str, ...]:
        """The other hosts of `away`, in the order they first ran."""
        return tuple(dict.fromkeys(run.host for run in self.away))


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything drawn: rows in the order asked, and bursts across them."""

    window: Window
    rows: tuple[LaneRow, ...]
    bursts: tuple[Burst, ...] = ()
    events: tuple[Event, ...] = field(default=())
    """Every event read in the window, oldest first (the --json `events`)."""


# --------------------------------------------------------------------------- runs


@dataclass
class _Open:
    start: datetime
    last: datetime
    pid: int | None
    started_before: bool
    claims: list[datetime] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    counts: dict[Kind, int] = field(default_factory=dict)
    attempts_max: int = 0
    errors: list[str] = field(default_factory=list)


def _close(
    lane: str,
    run: _Open,
    *,
    end: datetime,
    outcome: Outcome,
    exit_code: int | None = None,
    reason: str | None = None,
) -> Run:
    return Run(
        lane=lane,
        start=run.start,
        end=end,
        outcome=outcome,
        pid=run.pid,
        exit=exit_code,
        reason=reason,
        claims=tuple(run.claims),
        jobs=tuple(run.jobs),
        done=run.counts.get(Kind.DONE, 0),
        failed=run.counts.get(Kind.FAILED, 0),
        requeued=run.counts.get(Kind.REQUEUED, 0),
        recovered=run.counts.get(Kind.RECOVERED, 0),
        skipped=run.counts.get(Kind.JOB_SKIPPED, 0),
        attempts_max=run.attempts_max,
        errors=tuple(run.errors[:MAX_ERRORS]),
        started_before=run.started_before,
    )


def _settle(
    *, finish_exit: int | None, errored: bool, ended: bool, died: bool, running: bool
) -> Outcome:
    return run_outcome(
        finish_exit=finish_exit,
        errored=errored,
        busy=False,
        ended=ended,
        died=died,
        running_now=running,
        throttled=False,
    )


def runs_of(
    lane: str, events: Iterable[Event], *, running_now: bool, read_to_now: bool
) -> list[Run]:
    """The lane's runs from its events (oldest first; events of other lanes are ignored).

    A run is opened by `start`, or by the first run event when the start was not read (then
    `started_before`); closed by `finish` or `error`; a run still open at the next `start`
    died. `read_to_now`: the events reach the present, so an open last run that launchd does
    not report running has died too.
    """
    runs: list[Run] = []
    current: _Open | None = None
    for event in events:
        if event.lane != lane:
            continue
        kind = event.kind
        if kind is Kind.START:
            if current is not None:
                runs.append(
                    _close(
                        lane,
                        current,
                        end=current.last,
                        outcome=_settle(
                            finish_exit=None, errored=False, ended=False, died=True, running=False
                        ),
                    )
                )
            current = _Open(event.at, event.at, event.number("pid"), started_before=False)
            continue
        if kind is Kind.BUSY:
            runs.append(Run(lane, event.at, event.at, Outcome.BUSY))
            continue
        if kind not in RUN_KINDS:
            continue
        if current is None:
            current = _Open(event.at, event.at, None, started_before=True)
        current.last = event.at
        if kind is Kind.CLAIMED:
            current.claims.append(event.at)
            if event.job:
                current.jobs.append(event.job)
            current.attempts_max = max(current.attempts_max, event.number("attempt") or 0)
        elif kind in (Kind.FINISH, Kind.ERROR):
            errored = kind is Kind.ERROR
            if errored and event.fields.get("error"):
                current.errors.append(event.fields["error"])
            code = event.number("exit")
            runs.append(
                _close(
                    lane,
                    current,
                    end=event.at,
                    outcome=_settle(
                        finish_exit=code, errored=errored, ended=True, died=False, running=False
                    ),
                    exit_code=code,
                    reason=event.fields.get("reason"),
                )
            )
            current = None
        else:
            current.counts[kind] = current.counts.get(kind, 0) + 1
            error = event.fields.get("error")
            if error and kind in (Kind.FAILED, Kind.REQUEUED):
                current.errors.append(f"{event.job or '?'}: {error}")
    if current is not None:
        died = read_to_now and not running_now
        outcome = _settle(
            finish_exit=None, errored=False, ended=False, died=died, running=running_now
        )
        runs.append(_close(lane, current, end=current.last, outcome=outcome))
    if lane == WATCH_LANE:  # the watchdog runs no jobs: its exit 1 is an alert not delivered
        runs = [
            replace(r, outcome=Outcome.UNDELIVERED) if r.outcome is Outcome.JOBS_FAILED else r
            for r in runs
        ]
    return sorted(runs, key=lambda r: r.start)  # a busy skip is logged while a run is open


# --------------------------------------------------------------------------- fires


def answer_fires(
    runs: Sequence[Run], fires: Sequence[datetime], throttle: int
) -> tuple[list[Run], list[datetime]]:
    """Pair each fire with the first run (or busy skip) that starts within FIRE_MATCH plus
    the ThrottleInterval after it and before the next fire. Returns (runs with `fire` set,
    fires nobody answered)."""
    reach = FIRE_MATCH + timedelta(seconds=max(throttle, 0))
    ordered = sorted(fires)
    paired = list(runs)
    unanswered: list[datetime] = []
    taken: set[int] = set()
    for index, fire in enumerate(ordered):
        limit = fire + reach
        if index + 1 < len(ordered):
            limit = min(limit, ordered[index + 1])
        match = next(
            (
                i
                for i, run in enumerate(paired)
                if i not in taken
                and not run.started_before
                and fire - THROTTLE_SLACK <= run.start < limit
            ),
            None,
        )
        if match is None:
            unanswered.append(fire)
        else:
            taken.add(match)
            paired[match] = replace(paired[match], fire=fire)
    return paired, unanswered


def mark_throttled(runs: Sequence[Run], throttle: int) -> list[Run]:
    """A start launchd postponed lands ThrottleInterval after the previous start (launchd
    spawns it when the interval runs out); such runs are flagged, and an OK one becomes
    THROTTLED. Busy skips are starts too."""
    if throttle <= 0:
        return list(runs)
    gap = timedelta(seconds=throttle)
    out: list[Run] = []
    previous: datetime | None = None
    for run in runs:
        late = previous is not None and abs(run.start - (previous + gap)) <= THROTTLE_SLACK
        if late and not run.started_before:
            outcome = Outcome.THROTTLED if run.outcome is Outcome.OK else run.outcome
            out.append(replace(run, throttled=True, outcome=outcome))
        else:
            out.append(run)
        previous = run.start
    return out


def missed_markers(
    lane: str, unanswered: Iterable[datetime], info: LaneInfo, window: Window
) -> list[Marker]:
    """Fires with no run: only past ones, and only once the lane was known to be installed.
    The last of them is `exit-78` when launchd's last exit for the lane is 78."""
    due = [
        fire
        for fire in unanswered
        if fire + FIRE_MATCH + timedelta(seconds=info.throttle) <= window.now
        and (info.known_since is None or fire >= info.known_since)
    ]
    markers = [Marker(lane, fire, MarkerKind.MISSED, "no run started") for fire in due]
    if markers and info.last_exit == os.EX_CONFIG:
        markers[-1] = Marker(
            lane, due[-1], MarkerKind.EXIT_78, "launchd could not start the job (exit 78)"
        )
    return markers


_POINT_MARKERS = {
    Kind.INSTALLED: MarkerKind.INSTALLED,
    Kind.RELOADED: MarkerKind.RELOADED,
    Kind.RELOAD_SKIPPED: MarkerKind.RELOAD_SKIPPED,
    Kind.THROTTLED: MarkerKind.THROTTLED,
}


def point_markers(lane: str, events: Iterable[Event]) -> list[Marker]:
    """Markers logged as events: reloads, skipped reloads, throttled start requests."""
    markers = []
    for event in events:
        kind = _POINT_MARKERS.get(event.kind)
        if kind is None or event.lane != lane:
            continue
        detail = " ".join(f"{k}={v}" for k, v in event.fields.items())
        markers.append(Marker(lane, event.at, kind, detail))
    return markers


# --------------------------------------------------------------------------- bursts


def find_bursts(runs_by_queue: Mapping[str, Sequence[Run]]) -> list[Burst]:
    """Runs of one queue that overlap in time, grouped into connected stretches; a stretch
    with two or more lanes is a burst. Busy skips and point runs do not count."""
    bursts: list[Burst] = []
    for queue, runs in runs_by_queue.items():
        ordered = sorted(
            (r for r in runs if r.outcome is not Outcome.BUSY and r.end > r.start),
            key=lambda r: (r.start, r.lane),
        )
        group: list[Run] = []
        group_end: datetime | None = None
        for run in [*ordered, None]:
            if run is not None and group_end is not None and run.start < group_end:
                group.append(run)
                group_end = max(group_end, run.end)
                continue
            if len({r.lane for r in group}) >= 2:
                bursts.append(_burst(queue, group))
            if run is not None:
                group, group_end = [run], run.end
    return sorted(bursts, key=lambda b: (b.start, b.queue))


def _burst(queue: str, group: Sequence[Run]) -> Burst:
    claims: dict[str, int] = {}
    for run in group:
        claims[run.lane] = claims.get(run.lane, 0) + run.claimed
    return Burst(
        queue=queue,
        start=min(r.start for r in group),
        end=max(r.end for r in group),
        claims=claims,
    )


# --------------------------------------------------------------------------- the whole


def build_timeline(
    events: Sequence[Event],
    lanes: Sequence[LaneInfo],
    window: Window,
    *,
    read_to_now: bool,
    away: Mapping[str, Sequence[AwayRun]] | None = None,
) -> Timeline:
    """The timeline of `lanes` over `window` from their events (which may start before the
    window, so runs crossing its start are whole; runs are clipped to it when drawn), with
    `away`: per lane, the jobs other hosts ran from its queue."""
    away = {} if away is None else away
    ordered = sorted(events, key=lambda e: e.at)
    rows: list[LaneRow] = []
    by_queue: dict[str, list[Run]] = {}
    for info in lanes:
        runs = runs_of(info.name, ordered, running_now=info.running_now, read_to_now=read_to_now)
        runs = mark_throttled(runs, info.throttle)
        runs, unanswered = answer_fires(runs, info.fires, info.throttle)
        runs = [r for r in runs if window.overlaps(r.start, r.end)]
        mine = [e for e in ordered if e.lane == info.name and window.contains(e.at)]
        markers = missed_markers(info.name, unanswered, info, window)
        markers += point_markers(info.name, mine)
        rows.append(
            LaneRow(
                lane=info.name,
                queue=info.queue,
                fires=tuple(f for f in info.fires if window.contains(f)),
                runs=tuple(runs),
                markers=tuple(sorted(markers, key=lambda m: m.at)),
                other=tuple(e for e in mine if e.kind is Kind.OTHER),
                away=tuple(
                    sorted(
                        (r for r in away.get(info.name, ()) if window.overlaps(r.start, r.end)),
                        key=lambda r: (r.start, r.job),
                    )
                ),
            )
        )
        by_queue.setdefault(info.queue, []).extend(runs)
    return Timeline(
        window=window,
        rows=tuple(rows),
        bursts=tuple(find_bursts(by_queue)),
        events=tuple(e for e in ordered if window.contains(e.at)),
    )
