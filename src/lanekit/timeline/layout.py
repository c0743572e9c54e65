"""The timeline placed on a time axis (pure): hour ticks, terminal cells, SVG geometry.

The axis is linear in real time, labelled in local wall time: a DST day is 23 or 25 hours
wide, and its labels skip (02:00 in March in New York) or repeat (01:00 in November).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum

from lanekit.timeline.model import (
    AwayOutcome,
    AwayRun,
    Burst,
    LaneRow,
    Marker,
    MarkerKind,
    Outcome,
    Run,
    Window,
)

HOUR = timedelta(hours=1)
TICK_STEPS = (1, 2, 3, 4, 6, 12, 24)
"""Hours between labelled ticks; the smallest that fits is used."""
MINUTE_STEPS = (1, 2, 5, 10, 15, 30)
"""Minutes between ticks on a window shorter than a few hours (a burst's close-up)."""
SECOND_STEPS = (1, 2, 5, 10, 15, 30, 60)
"""Seconds between ticks on a window of a few minutes."""
MIN_BAR_PX = 3.0
"""A run of one second still gets a visible bar."""


def fraction(at: datetime, window: Window) -> float:
    """Where `at` falls in the window, 0.0 (start) to 1.0 (end), clipped."""
    span = (window.end - window.start).total_seconds()
    if span <= 0:
        return 0.0
    share = (at - window.start).total_seconds() / span
    return min(max(share, 0.0), 1.0)


@dataclass(frozen=True, slots=True)
class AxisTick:
    """A labelled point on the time axis."""

    at: datetime
    label: str


def axis_ticks(window: Window, tz: tzinfo | None, max_ticks: int) -> list[AxisTick]:
    """Ticks on whole local hours (or minutes, for a short window), as many as fit in
    `max_ticks`; `tz` None is the machine's local time."""
    span = window.end - window.start
    if span < timedelta(minutes=10):
        for seconds in SECOND_STEPS:
            step = timedelta(seconds=seconds)
            if span / step <= max_ticks:
                return _fixed_ticks(window, tz, step, "%H:%M:%S")
    for minutes in MINUTE_STEPS:
        step = timedelta(minutes=minutes)
        if span / step <= max_ticks and span < 4 * HOUR:
            return _fixed_ticks(window, tz, step, "%H:%M")
    if span <= timedelta(hours=36):
        for hours in TICK_STEPS:
            if span / (hours * HOUR) <= max_ticks:
                return _hour_ticks(window, tz, hours)
    days = max(1, -(-(span.days + 1) // max(max_ticks, 1)))
    return _day_ticks(window, tz, days)


def _day_ticks(window: Window, tz: tzinfo | None, every: int) -> list[AxisTick]:
    """Local midnights labelled MM-DD, every `every` days (a --since span of several days)."""
    ticks: list[AxisTick] = []
    day = window.start.astimezone(tz).date()
    index = 0
    while True:
        midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
        if tz is None:
            midnight = datetime(day.year, day.month, day.day).astimezone()
        if midnight > window.end:
            return ticks
        if midnight >= window.start and index % every == 0:
            ticks.append(AxisTick(midnight, midnight.strftime("%m-%d")))
        if midnight >= window.start:
            index += 1
        day += timedelta(days=1)


def _hour_ticks(window: Window, tz: tzinfo | None, every: int) -> list[AxisTick]:
    local = window.start.astimezone(tz)
    at = window.start
    if local.minute or local.second or local.microsecond:
        at = window.start + (
            timedelta(hours=1)
            - timedelta(minutes=local.minute, seconds=local.second, microseconds=local.microsecond)
        )
    ticks: list[AxisTick] = []
    while at <= window.end:
        wall = at.astimezone(tz)
        if wall.hour % every == 0:
            ticks.append(AxisTick(at, wall.strftime("%H:%M")))
        at += HOUR
    return ticks


def _fixed_ticks(window: Window, tz: tzinfo | None, step: timedelta, form: str) -> list[AxisTick]:
    seconds = step.total_seconds()
    first = window.start.timestamp()
    at_epoch = first - (first % seconds)
    if at_epoch < first:
        at_epoch += seconds
    ticks = []
    at = window.start + timedelta(seconds=at_epoch - first)
    while at <= window.end:
        ticks.append(AxisTick(at, at.astimezone(tz).strftime(form)))
        at += step
    return ticks


# --------------------------------------------------------------------------- terminal


class Cell(StrEnum):
    """What one terminal column of a lane's row shows; later members win a shared column."""

    EMPTY = "empty"
    FIRE = "fire"
    INSTALLED = "installed"
    RELOADED = "reloaded"
    OK = "ok"
    THROTTLED = "throttled"
    BUSY = "busy"
    RUNNING = "running"
    UNFINISHED = "unfinished"
    UNDELIVERED = "undelivered"
    RELOAD_SKIPPED = "reload-skipped"
    JOBS_FAILED = "jobs-failed"
    KILLED = "killed"
    ERROR = "error"
    MISSED = "missed"
    EXIT_78 = "exit-78"


_PRECEDENCE = {cell: rank for rank, cell in enumerate(Cell)}

RUN_CELLS = {
    Outcome.OK: Cell.OK,
    Outcome.JOBS_FAILED: Cell.JOBS_FAILED,
    Outcome.KILLED: Cell.KILLED,
    Outcome.ERROR: Cell.ERROR,
    Outcome.THROTTLED: Cell.THROTTLED,
    Outcome.BUSY: Cell.BUSY,
    Outcome.RUNNING: Cell.RUNNING,
    Outcome.UNFINISHED: Cell.UNFINISHED,
    Outcome.UNDELIVERED: Cell.UNDELIVERED,
}
MARKER_CELLS = {
    MarkerKind.MISSED: Cell.MISSED,
    MarkerKind.EXIT_78: Cell.EXIT_78,
    MarkerKind.INSTALLED: Cell.INSTALLED,
    MarkerKind.RELOADED: Cell.RELOADED,
    MarkerKind.RELOAD_SKIPPED: Cell.RELOAD_SKIPPED,
    MarkerKind.THROTTLED: Cell.THROTTLED,
}


def column(at: datetime, window: Window, width: int) -> int:
    """The terminal column (0..width-1) holding `at`."""
    return min(int(fraction(at, window) * width), width - 1)


def row_cells(row: LaneRow, window: Window, width: int) -> list[Cell]:
    """One cell per column: fires, then runs spanning their columns, then markers, each
    column keeping its most important content (Cell order)."""
    cells = [Cell.EMPTY] * width

    def put(index: int, cell: Cell) -> None:
        if _PRECEDENCE[cell] > _PRECEDENCE[cells[index]]:
            cells[index] = cell

    for fire in row.fires:
        if window.contains(fire):
            put(column(fire, window, width), Cell.FIRE)
    for run in row.runs:
        if not window.overlaps(run.start, run.end):
            continue  # a close-up window shows part of the day
        first = column(max(run.start, window.start), window, width)
        last = column(min(run.end, window.end), window, width)
        for index in range(first, last + 1):
            put(index, RUN_CELLS[run.outcome])
    for marker in row.markers:
        if window.contains(marker.at):
            put(column(marker.at, window, width), MARKER_CELLS[marker.kind])
    return cells


_AWAY_PRECEDENCE = {outcome: rank for rank, outcome in enumerate(AwayOutcome)}


def away_cells(runs: Sequence[AwayRun], window: Window, width: int) -> list[AwayOutcome | None]:
    """One cell per column of another host's line under a lane: the outcome of its jobs there
    (None: none ran), each column keeping the most important (AwayOutcome order)."""
    cells: list[AwayOutcome | None] = [None] * width
    for run in runs:
        if not window.overlaps(run.start, run.end):
            continue
        first = column(max(run.start, window.start), window, width)
        last = column(min(run.end, window.end), window, width)
        for index in range(first, last + 1):
            held = cells[index]
            if held is None or _AWAY_PRECEDENCE[run.outcome] > _AWAY_PRECEDENCE[held]:
                cells[index] = run.outcome
    return cells


def burst_columns(bursts: Sequence[Burst], window: Window, width: int) -> list[bool]:
    """Columns under a burst (the highlight row below the lanes)."""
    covered = [False] * width
    for burst in bursts:
        if not window.overlaps(burst.start, burst.end):
            continue
        first = column(max(burst.start, window.start), window, width)
        last = column(min(burst.end, window.end), window, width)
        for index in range(first, last + 1):
            covered[index] = True
    return covered


# --------------------------------------------------------------------------- SVG


@dataclass(frozen=True, slots=True)
class Bar:
    """A run drawn from x to x + width (pixels)."""

    x: float
    width: float
    run: Run


@dataclass(frozen=True, slots=True)
class Point:
    """A marker at x (pixels)."""

    x: float
    marker: Marker


def x_of(at: datetime, window: Window, width: float) -> float:
    """Pixel position of `at` on an axis `width` pixels wide."""
    return round(fraction(at, window) * width, 2)


def bars(row: LaneRow, window: Window, width: float) -> list[Bar]:
    """The row's runs as bars, at least MIN_BAR_PX wide, clipped to the window."""
    out = []
    for run in row.runs:
        x0 = x_of(max(run.start, window.start), window, width)
        x1 = x_of(min(run.end, window.end), window, width)
        w = max(x1 - x0, MIN_BAR_PX)
        x0 = min(x0, width - w)
        out.append(Bar(round(x0, 2), round(w, 2), run))
    return out


@dataclass(frozen=True, slots=True)
class AwayBar:
    """A job another host ran, drawn from x to x + width (pixels)."""

    x: float
    width: float
    run: AwayRun


def away_bars(row: LaneRow, window: Window, width: float) -> list[AwayBar]:
    """The row's jobs run on other hosts as bars, as `bars` places runs."""
    out = []
    for run in row.away:
        if not window.overlaps(run.start, run.end):
            continue
        x0 = x_of(max(run.start, window.start), window, width)
        x1 = x_of(min(run.end, window.end), window, width)
        w = max(x1 - x0, MIN_BAR_PX)
        out.append(AwayBar(round(min(x0, width - w), 2), round(w, 2), run))
    return out


def points(row: LaneRow, window: Window, width: float) -> list[Point]:
    """The row's markers that fall inside the window."""
    return [Point(x_of(m.at, window, width), m) for m in row.markers if window.contains(m.at)]


def around(burst: Burst, window: Window, *, margin: float = 0.25) -> Window:
    """A close-up window on a burst: its span plus `margin` of it either side (at least a
    minute), kept inside the day."""
    span = burst.end - burst.start
    pad = max(span * margin, timedelta(seconds=30))
    start = max(burst.start - pad, window.start)
    end = min(burst.end + pad, window.end)
    return Window(start, end, window.now)
