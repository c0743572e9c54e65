"""The timeline as one self-contained HTML page: inline SVG and CSS, no script, no font, no URL.

Built with xml.etree.ElementTree, never by splicing strings: lane names, job ids and error
texts may hold `<`, `&` and quotes, and the serializer escapes every text and attribute. The
only raw text is the stylesheet below, a constant. Light and dark mode follow the reader's
system (prefers-color-scheme). Every run, marker and burst carries a <title>, which browsers
show on hover.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, tzinfo
from pathlib import Path
from xml.etree import ElementTree as ET

from lanekit.errors import UsageError
from lanekit.system.fsops import replace_file
from lanekit.timeline.build import JobLife, TimelineResult
from lanekit.timeline.layout import (
    AwayBar,
    Bar,
    Point,
    around,
    away_bars,
    axis_ticks,
    bars,
    points,
    x_of,
)
from lanekit.timeline.model import (
    AwayOutcome,
    AwayRun,
    Burst,
    Marker,
    MarkerKind,
    Outcome,
    Run,
    Timeline,
    Window,
)

CHART_WIDTH = 1100
"""Pixels of the whole SVG; the page scales it to the window (viewBox)."""
LABEL_WIDTH = 150
ROW_HEIGHT = 30
BAR_HEIGHT = 16
AXIS_HEIGHT = 26

MAX_CLOSE_UPS = 8
"""Bursts drawn close up at most (each a chart of its lanes): a busy day has dozens of bursts,
and a page with one close-up each ran to megabytes; the rest are on the day's chart."""
CAPTION_CHAR = 6.6
"""Roughly how wide one character of a burst caption is drawn (px), to keep captions apart."""

OUTCOME_WORDS = {
    Outcome.OK: "ran ok",
    Outcome.JOBS_FAILED: "some jobs failed",
    Outcome.KILLED: "killed",
    Outcome.ERROR: "could not run",
    Outcome.THROTTLED: "throttled start",
    Outcome.BUSY: "skipped: still running",
    Outcome.RUNNING: "running now",
    Outcome.UNFINISHED: "no end logged",
    Outcome.UNDELIVERED: "watchdog: alert not delivered",
}
AWAY_WORDS = {
    AwayOutcome.SUCCEEDED: "ran on another host",
    AwayOutcome.STOPPED: "stopped on another host, put back",
    AwayOutcome.RUNNING: "running on another host now",
    AwayOutcome.FAILED: "failed on another host",
    AwayOutcome.ORPHANED: "orphaned on another host (its lease lapsed)",
}
"""A job another host ran: an outlined strip at the foot of the lane's row (this machine's
runs are filled bars), its host in its hover title."""
AWAY_HEIGHT = 5
MARKER_WORDS = {
    MarkerKind.MISSED: "missed run",
    MarkerKind.EXIT_78: "exit 78: launchd could not start it",
    MarkerKind.INSTALLED: "installed by apply",
    MarkerKind.RELOADED: "reloaded by apply",
    MarkerKind.RELOAD_SKIPPED: "reload skipped: lane was running",
    MarkerKind.THROTTLED: "start throttled",
}

STYLE = """
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #1d2330; --muted: #667085; --grid: #e4e7ec; --row: #f6f7f9;
  --ok: #2e9e5b; --jobs-failed: #e07a1f; --killed: #c62828; --error: #8e1b1b;
  --throttled: #c9a400; --busy: #9c6ade; --running: #1f8fd6; --unfinished: #98a2b3;
  --missed: #d97706; --exit-78: #c62828; --reload: #2563eb; --burst: rgba(217, 70, 239, 0.13);
  --burst-edge: #c026d3; --fire: #98a2b3; --undelivered: #b45309; }
@media (prefers-color-scheme: dark) { :root {
  --bg: #111418; --fg: #e6e8eb; --muted: #98a2b3; --grid: #2a2f37; --row: #171b21;
  --ok: #3fbf73; --jobs-failed: #f59e42; --killed: #f05252; --error: #ff8080;
  --throttled: #e3c341; --busy: #b794f4; --running: #4fb3f6; --unfinished: #667085;
  --missed: #fbbf24; --exit-78: #f05252; --reload: #60a5fa; --burst: rgba(232, 121, 249, 0.16);
  --burst-edge: #e879f9; --fire: #667085; --undelivered: #f59e0b; } }
body { background: var(--bg); color: var(--fg); margin: 24px auto; max-width: 1180px;
  padding: 0 16px; font: 14px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", Helvetica,
  Arial, sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.counts span { display: inline-block; margin-right: 18px; }
.counts b { font-size: 18px; }
svg { width: 100%; height: auto; display: block; }
svg text { fill: var(--fg); font-size: 12px; }
svg .axis text { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: var(--grid); stroke-width: 1; }
svg .band { fill: var(--row); }
svg .fire { stroke: var(--fire); stroke-width: 1; stroke-dasharray: 2 2; }
.run.ok { fill: var(--ok); } .run.jobs-failed { fill: var(--jobs-failed); }
.run.killed { fill: var(--killed); } .run.error { fill: var(--error); }
.run.throttled { fill: var(--throttled); } .run.busy { fill: var(--busy); }
.run.running { fill: var(--running); } .run.unfinished { fill: var(--unfinished); }
.run.undelivered { fill: var(--undelivered); }
.tag.undelivered { background: var(--undelivered); }
.marker.missed { fill: var(--bg); stroke: var(--missed); stroke-width: 2.5; }
.marker.exit-78 { fill: var(--exit-78); stroke: var(--bg); stroke-width: 1; }
.marker.reloaded { fill: var(--reload); }
.marker.installed { fill: var(--bg); stroke: var(--fire); stroke-width: 1.5; }
.marker.reload-skipped { fill: var(--bg); stroke: var(--reload); stroke-width: 2.5; }
.marker.throttled { fill: var(--throttled); }
.burst rect { fill: var(--burst); stroke: var(--burst-edge); stroke-width: 1.5; }
.burst text { fill: var(--burst-edge); font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 10px 0 0; padding: 0;
  list-style: none; color: var(--muted); }
.legend svg { width: 16px; height: 16px; display: inline-block; vertical-align: -3px;
  margin-right: 5px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 10px 5px 0; border-bottom: 1px solid var(--grid);
  vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.t { white-space: nowrap; font-variant-numeric: tabular-nums; color: var(--muted); }
.tag { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
  color: #fff; background: var(--muted); }
.tag.burst { background: var(--burst-edge); }
.tag.missed, .tag.exit-78 { background: var(--missed); }
.tag.jobs-failed { background: var(--jobs-failed); }
.tag.killed, .tag.error { background: var(--killed); }
.tag.reloaded, .tag.reload-skipped { background: var(--reload); }
.tag.throttled { background: var(--throttled); color: #1d2330; }
.away { fill: none; stroke-width: 1.5; stroke-dasharray: 3 2; }
.away.succeeded { stroke: var(--ok); } .away.stopped { stroke: var(--unfinished); }
.away.running { stroke: var(--running); } .away.failed { stroke: var(--jobs-failed); }
.away.orphaned { stroke: var(--killed); fill: var(--killed); fill-opacity: 0.25; }
.tag.away-failed { background: var(--jobs-failed); }
.tag.away-orphaned { background: var(--killed); }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
"""


def page_name(day: date) -> str:
    """The page of one day, by name (a digest can link `<dir>/timeline-YYYY-MM-DD.html`)."""
    return f"timeline-{day.isoformat()}.html"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(
        parent, tag, {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
    )
    if text is not None:
        element.text = text
    return element


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _hms(at: datetime, tz: tzinfo | None) -> str:
    return at.astimezone(tz).strftime("%H:%M:%S")


def run_title(run: Run, tz: tzinfo | None) -> str:
    """The hover text of a run: when, how it ended, what it did, why it failed."""
    parts = [
        f"{run.lane}: {OUTCOME_WORDS[run.outcome]}",
        f"{_hms(run.start, tz)} to {_hms(run.end, tz)}"
        + (" (began the day before)" if run.started_before else ""),
    ]
    if run.outcome is not Outcome.BUSY:
        parts.append(
            f"{run.claimed} jobs claimed: {run.done} done, {run.failed} failed, "
            f"{run.requeued} put back, {run.recovered} recovered"
        )
    if run.exit is not None:
        parts.append(f"exit {run.exit}" + (f" ({run.reason})" if run.reason else ""))
    if run.pid is not None:
        parts.append(f"pid {run.pid}")
    if run.fire is not None:
        parts.append(f"answered the fire at {run.fire.astimezone(tz):%H:%M}")
    if run.throttled:
        parts.append("launchd postponed this start by ThrottleInterval")
    if run.attempts_max > 1:
        parts.append(f"includes retries (attempt {run.attempts_max})")
    parts.extend(f"error: {e}" for e in run.errors)
    return "\n".join(parts)


def away_title(run: AwayRun, tz: tzinfo | None) -> str:
    """The hover text of a job another host ran: which host, which job, how it ended."""
    lane = f" (its lane {run.lane})" if run.lane else ""
    return "\n".join(
        [
            f"on host {run.host}{lane}: {AWAY_WORDS[run.outcome]}",
            f"job {run.job}, attempt {run.attempt}, pid {run.pid}",
            f"{_hms(run.start, tz)} to {_hms(run.end, tz)}",
        ]
    )


def _marker_title(marker: Marker, tz: tzinfo | None) -> str:
    text = f"{marker.lane}: {MARKER_WORDS[marker.kind]} at {_hms(marker.at, tz)}"
    return text + (f"\n{marker.detail}" if marker.detail else "")


def _burst_title(burst: Burst, tz: tzinfo | None) -> str:
    claims = "\n".join(f"{lane}: {n} claims won" for lane, n in burst.claims.items())
    return (
        f"burst on queue {burst.queue}: {len(burst.lanes)} lanes at once, "
        f"{_hms(burst.start, tz)} to {_hms(burst.end, tz)}\n{claims}"
    )


def _close_ups(bursts: Sequence[Burst]) -> set[int]:
    """The numbers (1-based, in time order) of the bursts drawn close up: at most
    MAX_CLOSE_UPS, those with the most claims (the earlier first among equals)."""
    ranked = sorted(
        range(1, len(bursts) + 1), key=lambda n: (-sum(bursts[n - 1].claims.values()), n)
    )
    return set(ranked[:MAX_CLOSE_UPS])


def _marker_shape(
    parent: ET.Element, kind: MarkerKind, x: float, cy: float, top: float, **attrs: str
) -> ET.Element:
    """One marker's shape, distinct for each kind whatever the colours (the chart and the
    legend draw it here): a ring for a missed run, a cross for exit 78, a triangle for an
    install, a diamond for the reloads and throttles (told apart by fill and stroke)."""
    attrs = {"class": f"marker {kind}", **attrs}
    if kind is MarkerKind.MISSED:
        return _sub(parent, "circle", cx=_num(x), cy=_num(cy), r="6", **attrs)
    if kind is MarkerKind.EXIT_78:
        left, right, low, high = _num(x - 6), _num(x + 6), _num(cy - 6), _num(cy + 6)
        d = f"M{left} {low} L{right} {high} M{right} {low} L{left} {high}"
        shape = _sub(parent, "path", d=d, **attrs)
        shape.set("style", "stroke: var(--exit-78); stroke-width: 3")
        return shape
    if kind is MarkerKind.INSTALLED:
        return _sub(parent, "path", d=f"M{_num(x)} {_num(top)} l6 12 l-12 0 z", **attrs)
    return _sub(parent, "path", d=f"M{_num(x)} {_num(top)} l6 8 l-6 8 l-6 -8 z", **attrs)


def _draw_marker(group: ET.Element, point: Point, cy: float, tz: tzinfo | None) -> None:
    top = cy - BAR_HEIGHT / 2 - 3
    marker = point.marker
    shape = _marker_shape(group, marker.kind, point.x, cy, top, **{"data-lane": marker.lane})
    _sub(shape, "title", _marker_title(marker, tz))


def _draw_bursts(
    body: ET.Element,
    bursts: Sequence[Burst],
    lanes_y: Mapping[str, float],
    window: Window,
    tz: tzinfo | None,
    *,
    day: bool,
) -> None:
    """Each burst's box over its lanes' rows, with a caption beside it (`day`: the day's
    chart, whose boxes are the page's burst anchors; else a close-up)."""
    plot = CHART_WIDTH - LABEL_WIDTH - 10
    captions: list[tuple[float, float, float]] = []  # (y, left, right) of each caption drawn
    for number, burst in enumerate(bursts, start=1):
        ys = [lanes_y[lane] for lane in burst.lanes if lane in lanes_y]
        if not ys or not window.overlaps(burst.start, burst.end):
            continue
        x0 = x_of(max(burst.start, window.start), window, plot)
        x1 = x_of(min(burst.end, window.end), window, plot)
        group = _sub(
            body,
            "g",
            class_="burst",
            id=f"burst-{number}" if day else f"close-{number}",
        )
        group.set("data-queue", burst.queue)
        box = _sub(
            group,
            "rect",
            x=_num(x0 - 5),
            y=_num(min(ys) + 2),
            width=_num(max(x1 - x0, 0) + 10),
            height=_num(max(ys) - min(ys) + ROW_HEIGHT - 4),
            rx="5",
        )
        _sub(box, "title", _burst_title(burst, tz))
        claims = sum(burst.claims.values())
        # Beside the box, halfway down it: the first lane's row carries markers near the burst.
        # A caption that would overlap one already drawn (bursts close together) shrinks to
        # the burst's number, or is left out: the box's title (hover) says it all.
        anchor = "end" if x1 > plot * 0.6 else "start"
        y = (min(ys) + max(ys) + ROW_HEIGHT) / 2 + 4
        at = x0 - 10 if anchor == "end" else x1 + 10
        for caption in (f"burst · {len(burst.lanes)} lanes · {claims} claims", f"#{number}"):
            width = CAPTION_CHAR * len(caption)
            left, right = (at - width, at) if anchor == "end" else (at, at + width)
            if not any(
                abs(y - cy) < ROW_HEIGHT and left < hi and lo < right for cy, lo, hi in captions
            ):
                captions.append((y, left, right))
                _sub(group, "text", caption, x=_num(at), y=_num(y), text_anchor=anchor)
                break


def chart(
    timeline: Timeline, window: Window, tz: tzinfo | None, *, label: str, bursts: Sequence[Burst]
) -> ET.Element:
    """One SVG chart of every lane over `window` (the day, or a burst's close-up)."""
    rows = timeline.rows
    plot = CHART_WIDTH - LABEL_WIDTH - 10
    height = AXIS_HEIGHT + ROW_HEIGHT * len(rows) + 28
    svg = ET.Element(
        "svg",
        {
            "viewBox": f"0 0 {CHART_WIDTH} {height}",
            "role": "img",
            "aria-label": label,
        },
    )
    _sub(svg, "title", label)
    body = _sub(svg, "g", transform=f"translate({LABEL_WIDTH},0)")
    for index, _row in enumerate(rows):
        if index % 2 == 0:
            _sub(
                body,
                "rect",
                class_="band",
                x="0",
                y=_num(AXIS_HEIGHT + index * ROW_HEIGHT),
                width=_num(plot),
                height=_num(ROW_HEIGHT),
            )
    axis = _sub(body, "g", class_="axis")
    bottom = AXIS_HEIGHT + ROW_HEIGHT * len(rows)
    for tick in axis_ticks(window, tz, 12):
        x = x_of(tick.at, window, plot)
        _sub(
            axis,
            "line",
            class_="grid",
            x1=_num(x),
            x2=_num(x),
            y1=str(AXIS_HEIGHT - 4),
            y2=_num(bottom),
        )
        anchor = "start" if x < 20 else "end" if x > plot - 20 else "middle"
        _sub(axis, "text", tick.label, x=_num(x), y="14", text_anchor=anchor)
    lanes_y = {row.lane: AXIS_HEIGHT + i * ROW_HEIGHT for i, row in enumerate(rows)}
    _draw_bursts(body, bursts, lanes_y, window, tz, day=window == timeline.window)
    for row in rows:
        y = lanes_y[row.lane]
        cy = y + ROW_HEIGHT / 2
        lane = _sub(svg, "g", class_="lane", id=f"lane-{row.lane}")
        lane.set("data-lane", row.lane)
        name = _sub(lane, "text", row.lane, x="8", y=_num(cy + 4))
        _sub(name, "title", f"lane {row.lane} (queue {row.queue})")
        group = _sub(lane, "g", transform=f"translate({LABEL_WIDTH},0)")
        for fire in row.fires:
            if window.contains(fire):
                x = x_of(fire, window, plot)
                line = _sub(
                    group,
                    "line",
                    class_="fire",
                    x1=_num(x),
                    x2=_num(x),
                    y1=_num(y + 3),
                    y2=_num(y + ROW_HEIGHT - 3),
                )
                _sub(line, "title", f"{row.lane}: scheduled at {fire.astimezone(tz):%H:%M}")
        marks = points(row, window, plot)
        # Installs go under the bars (context); everything else on top (what happened).
        for point in marks:
            if point.marker.kind is MarkerKind.INSTALLED:
                _draw_marker(group, point, cy, tz)
        for bar in bars(row, window, plot):
            if not window.overlaps(bar.run.start, bar.run.end):
                continue
            _draw_bar(group, bar, cy, tz)
        for point in marks:
            if point.marker.kind is not MarkerKind.INSTALLED:
                _draw_marker(group, point, cy, tz)
        for away in away_bars(row, window, plot):
            _draw_away(group, away, y + ROW_HEIGHT - AWAY_HEIGHT - 1, tz)
    return svg


def _draw_away(group: ET.Element, bar: AwayBar, top: float, tz: tzinfo | None) -> None:
    rect = _sub(
        group,
        "rect",
        class_=f"away {bar.run.outcome}",
        x=_num(bar.x),
        y=_num(top),
        width=_num(bar.width),
        height=_num(AWAY_HEIGHT),
    )
    rect.set("data-host", bar.run.host)
    _sub(rect, "title", away_title(bar.run, tz))


def _draw_bar(group: ET.Element, bar: Bar, cy: float, tz: tzinfo | None) -> None:
    height = BAR_HEIGHT if bar.run.outcome is not Outcome.BUSY else BAR_HEIGHT / 2
    rect = _sub(
        group,
        "rect",
        class_=f"run {bar.run.outcome}",
        x=_num(bar.x),
        y=_num(cy - height / 2),
        width=_num(bar.width),
        height=_num(height),
        rx="2",
    )
    rect.set("data-lane", bar.run.lane)
    _sub(rect, "title", run_title(bar.run, tz))


def _legend(parent: ET.Element, *, away: bool = False) -> None:
    items = _sub(parent, "ul", class_="legend")
    for outcome, words in OUTCOME_WORDS.items():
        item = _sub(items, "li")
        svg = _sub(item, "svg", viewBox="0 0 16 16")
        _sub(svg, "rect", class_=f"run {outcome}", x="1", y="3", width="14", height="10", rx="2")
        item[-1].tail = words
    for away_kind, words in AWAY_WORDS.items() if away else ():
        item = _sub(items, "li")
        svg = _sub(item, "svg", viewBox="0 0 16 16")
        _sub(svg, "rect", class_=f"away {away_kind}", x="1", y="9", width="14", height="5")
        item[-1].tail = f"a job {words} (not this machine's; hover for the host)"
    for kind in MarkerKind:  # every marker a chart may draw, each in the shape it is drawn in
        item = _sub(items, "li")
        svg = _sub(item, "svg", viewBox="-1 -1 18 18")
        _marker_shape(svg, kind, 8, 8, 0)
        item[-1].tail = MARKER_WORDS[kind]
    item = _sub(items, "li")
    svg = _sub(item, "svg", viewBox="0 0 16 16")
    _sub(svg, "line", class_="fire", x1="8", x2="8", y1="1", y2="15")
    item[-1].tail = "scheduled fire"
    item = _sub(items, "li")
    svg = _sub(item, "svg", viewBox="0 0 16 16", class_="burst")
    _sub(svg, "rect", x="1", y="1", width="14", height="14", rx="3")
    item[-1].tail = "burst: lanes of one queue at once"


def _notable(result: TimelineResult, tz: tzinfo | None) -> list[tuple[datetime, str, str, str]]:
    """(when, tag class, tag words, text) of what stands out."""
    found: list[tuple[datetime, str, str, str]] = []
    for burst in result.timeline.bursts:
        claims = ", ".join(f"{lane} {n}" for lane, n in burst.claims.items())
        found.append(
            (
                burst.start,
                "burst",
                "burst",
                f"{len(burst.lanes)} lanes of queue {burst.queue} at once until "
                f"{_hms(burst.end, tz)}; claims won: {claims}",
            )
        )
    for row in result.timeline.rows:
        for run in row.runs:
            if run.outcome in (Outcome.OK, Outcome.BUSY, Outcome.UNFINISHED):
                continue
            error = f" ({run.errors[0]})" if run.errors else ""
            found.append(
                (
                    run.start,
                    str(run.outcome),
                    OUTCOME_WORDS[run.outcome],
                    f"{row.lane}: {run.claimed} jobs, exit {run.exit}{error}",
                )
            )
        for away in row.away:
            if away.outcome in (AwayOutcome.FAILED, AwayOutcome.ORPHANED):
                found.append(
                    (
                        away.start,
                        f"away-{away.outcome}",
                        AWAY_WORDS[away.outcome],
                        f"{row.lane}: job {away.job} (attempt {away.attempt}) on host {away.host}",
                    )
                )
        for marker in row.markers:
            if marker.kind is MarkerKind.INSTALLED:
                continue
            found.append(
                (
                    marker.at,
                    str(marker.kind),
                    MARKER_WORDS[marker.kind],
                    f"{row.lane}: {marker.detail}",
                )
            )
    return sorted(found, key=lambda item: item[0])


def _table(parent: ET.Element, header: Sequence[str]) -> ET.Element:
    table = _sub(parent, "table")
    head = _sub(_sub(table, "thead"), "tr")
    for name in header:
        _sub(head, "th", name)
    return _sub(table, "tbody")


def _job(parent: ET.Element, job: JobLife, tz: tzinfo | None) -> None:
    section = _sub(parent, "section", id=f"job-{job.job_id}")
    _sub(section, "h2", f"Job {job.job_id}")
    view = job.view
    state = "not found in the lanes' queues" if view is None else str(view.state)
    text = f"now {state}"
    if view is not None and view.record is not None:
        text += f"; queued {view.record.queued_at}; {view.record.attempts} attempts"
    _sub(section, "p", text, class_="sub")
    if job.output is not None:
        kept = _sub(section, "p", "Its output (stdout and stderr, attempt by attempt): ")
        _sub(kept, "a", str(job.output), href=job.output.as_uri())
    body = _table(section, ("time", "lane", "event", "details"))
    for event in job.events:
        row = _sub(body, "tr")
        _sub(row, "td", _hms(event.at, tz), class_="t")
        _sub(row, "td", event.lane)
        _sub(row, "td", event.name)
        _sub(_sub(row, "td"), "code", " ".join(f"{k}={v}" for k, v in event.fields.items()))


def page(result: TimelineResult, tz: tzinfo | None = None) -> str:
    """The whole page as text (doctype included)."""
    timeline = result.timeline
    w = timeline.window
    start = w.start.astimezone(tz)
    heading = (
        f"Lanes on {start:%A %-d %B %Y}"
        if result.day is not None
        else f"Lanes since {start:%Y-%m-%d %H:%M}"
    )
    html = ET.Element("html", lang="en")
    head = _sub(html, "head")
    _sub(head, "meta", charset="utf-8")
    _sub(head, "meta", name="viewport", content="width=device-width, initial-scale=1")
    _sub(head, "meta", name="color-scheme", content="light dark")
    _sub(head, "title", f"lanekit timeline: {heading}")
    _sub(head, "style", STYLE)
    body = _sub(html, "body")
    if result.day is not None:
        body.set("id", f"day-{result.day.isoformat()}")
    _sub(body, "h1", heading)
    zone = start.strftime("%Z")
    hours = (w.end - w.start).total_seconds() / 3600
    _sub(
        body,
        "p",
        f"{len(timeline.rows)} lanes, {w.start.astimezone(tz):%Y-%m-%d %H:%M} to "
        f"{w.end.astimezone(tz):%Y-%m-%d %H:%M} {zone} ({hours:.0f} hours). "
        "Hover over a run, a marker or a burst for its details.",
        class_="sub",
    )
    counts = _sub(body, "p", class_="counts")
    runs = [r for row in timeline.rows for r in row.runs if r.outcome is not Outcome.BUSY]
    bad = [r for r in runs if r.outcome in (Outcome.JOBS_FAILED, Outcome.KILLED, Outcome.ERROR)]
    missed = [
        m
        for row in timeline.rows
        for m in row.markers
        if m.kind in (MarkerKind.MISSED, MarkerKind.EXIT_78)
    ]
    for number, one, many in (
        (len(runs), "run", "runs"),
        (sum(r.claimed for r in runs), "job claimed", "jobs claimed"),
        (len(timeline.bursts), "burst", "bursts"),
        (len(bad), "run that failed", "runs that failed"),
        (len(missed), "missed run", "missed runs"),
        *(
            [(len(away), "job on other hosts", "jobs on other hosts")]
            if (away := [r for row in timeline.rows for r in row.away])
            else []
        ),
    ):
        span = _sub(counts, "span")
        _sub(span, "b", str(number))
        span[-1].tail = f" {one if number == 1 else many}"
    body.append(chart(timeline, w, tz, label=heading, bursts=timeline.bursts))
    _legend(body, away=any(row.away for row in timeline.rows))
    shown = _close_ups(timeline.bursts)
    for number, burst in enumerate(timeline.bursts, start=1):
        if number not in shown:
            continue
        close = around(burst, w)
        claims = sum(burst.claims.values())
        section = _sub(body, "section", class_="close-up", id=f"burst-{number}-close-up")
        _sub(
            section,
            "h2",
            f"Burst {number}: {len(burst.lanes)} lanes of queue {burst.queue} at "
            f"{_hms(burst.start, tz)}, {claims} claims",
        )
        won = ", ".join(f"{lane} {n}" for lane, n in burst.claims.items())
        _sub(
            section,
            "p",
            f"Claims won: {won}. Each job was claimed by exactly one lane.",
            class_="sub",
        )
        # Only the burst's lanes: a close-up is about them, and every row drawn again per
        # burst is what made a busy day's page megabytes long.
        theirs = replace(timeline, rows=tuple(r for r in timeline.rows if r.lane in burst.lanes))
        section.append(chart(theirs, close, tz, label=f"burst {number} close-up", bursts=(burst,)))
    if len(shown) < len(timeline.bursts):
        _sub(
            body,
            "p",
            f"Close-ups of the {len(shown)} bursts with the most claims; the other "
            f"{len(timeline.bursts) - len(shown)} are on the chart above (hover for each) and "
            "under What stands out.",
            class_="sub",
        )
    notable = _notable(result, tz)
    if notable:
        _sub(body, "h2", "What stands out")
        rows = _table(body, ("time", "", "what"))
        for when, tag, words, text in notable:
            row = _sub(rows, "tr")
            _sub(row, "td", _hms(when, tz), class_="t")
            _sub(_sub(row, "td"), "span", words, class_=f"tag {tag}")
            _sub(row, "td", text)
    if result.job is not None:
        _job(body, result.job, tz)
    for note in result.notes:
        _sub(body, "p", f"Note: {note}", class_="sub")
    return "<!DOCTYPE html>\n" + ET.tostring(html, encoding="unicode", method="html") + "\n"


def write_page(path: Path, text: str) -> Path:
    """Write the page atomically (temp file with a random name, then rename); a directory
    gets `page_name`-style naming from the caller. Mode 0600: error texts may be private."""
    target = path.absolute()
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    replace_file(str(target), text.encode("utf-8"), tmp=str(tmp), durable=True, mode=0o600)
    return target


def save(result: TimelineResult, path: Path, tz: tzinfo | None = None) -> Path:
    """Write the page to `path`, or into `path/page_name(day)` when `path` is a directory;
    returns the file written."""
    if path.is_dir():
        day = result.day or result.timeline.window.start.astimezone(tz).date()
        path = path / page_name(day)
    text = page(result, tz)
    try:
        return write_page(path, text)
    except OSError as exc:
        raise UsageError(
            f"--html {path}: cannot write it: {exc.strerror or exc}",
            "give a file (or a directory) that exists and you may write, e.g. --html day.html",
        ) from None
