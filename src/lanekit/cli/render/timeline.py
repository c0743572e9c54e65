"""How `lanekit timeline` looks in a terminal: one row per lane on a scaled time axis, a burst
row, a legend, then what stands out (bursts, failures, missed runs, reloads) in words.

Every glyph is distinct without colour (pipes and NO_COLOR get the same picture, uncoloured).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, tzinfo

from rich.console import Console
from rich.text import Text

from lanekit.cli.render import escaped, json_out, line, note, stdout
from lanekit.timeline.build import JobLife, TimelineResult
from lanekit.timeline.document import to_json
from lanekit.timeline.layout import (
    Cell,
    around,
    away_cells,
    axis_ticks,
    burst_columns,
    row_cells,
)
from lanekit.timeline.model import (
    AwayOutcome,
    AwayRun,
    Burst,
    LaneRow,
    MarkerKind,
    Outcome,
    Run,
    Window,
)

GLYPHS: dict[Cell, tuple[str, str, str]] = {
    Cell.EMPTY: ("·", "grey30", ""),
    Cell.FIRE: ("¦", "grey62", "scheduled fire"),
    Cell.OK: ("█", "green", "ran ok"),
    Cell.THROTTLED: ("t", "yellow", "throttled start"),
    Cell.BUSY: ("b", "magenta", "skipped: busy"),
    Cell.RUNNING: ("▶", "cyan", "running now"),
    Cell.UNFINISHED: ("…", "grey62", "no end logged"),
    Cell.UNDELIVERED: ("U", "yellow", "watchdog: alert not delivered"),
    Cell.INSTALLED: ("i", "blue", "installed"),
    Cell.RELOADED: ("R", "blue", "reloaded"),
    Cell.RELOAD_SKIPPED: ("S", "bold blue", "reload skipped: running"),
    Cell.JOBS_FAILED: ("F", "red", "jobs failed"),
    Cell.KILLED: ("K", "bold red", "killed"),
    Cell.ERROR: ("E", "reverse red", "could not run"),
    Cell.MISSED: ("M", "bold yellow", "missed run"),
    Cell.EXIT_78: ("X", "bold red", "exit 78 (launchd)"),
}
"""Glyph, style and legend words of each cell kind."""

AWAY_GLYPHS: dict[AwayOutcome, tuple[str, str, str]] = {
    AwayOutcome.SUCCEEDED: ("▒", "green", "ran there"),
    AwayOutcome.STOPPED: ("s", "grey62", "stopped there, put back"),
    AwayOutcome.RUNNING: ("▷", "cyan", "running there now"),
    AwayOutcome.FAILED: ("f", "red", "failed there"),
    AwayOutcome.ORPHANED: ("O", "bold red", "orphaned there (its lease lapsed)"),
}
"""Glyph, style and legend words of a job another host ran (its `@host` line under the lane):
none is a glyph of this machine's runs."""
AWAY_MARK = "@"
"""Starts the name of another host's line under a lane."""

BURST_GLYPH = "^"
DEFAULT_WIDTH = 100
"""Columns when stdout is not a terminal and --width is not given."""
MIN_WIDTH = 60
_NAME_MAX = 12
MAX_CLOSE_UPS = 3
"""Bursts drawn again at their own scale (the rest are listed in words)."""
_SUMMARY = 9


def _hm(at: datetime, tz: tzinfo | None) -> str:
    return at.astimezone(tz).strftime("%H:%M")


def _hms(at: datetime, tz: tzinfo | None) -> str:
    return at.astimezone(tz).strftime("%H:%M:%S")


def _title(result: TimelineResult, tz: tzinfo | None) -> str:
    w = result.timeline.window
    start = w.start.astimezone(tz)
    hours = (w.end - w.start).total_seconds() / 3600
    if result.day is not None:
        extra = "" if hours == 24 else f", a {hours:.0f}-hour day (daylight saving)"
        return f"timeline {start:%Y-%m-%d %a} ({start:%Z}{extra})"
    return f"timeline since {start:%Y-%m-%d %H:%M} to {_hm(w.end, tz)} ({start:%Z})"


def _axis(window: Window, tz: tzinfo | None, pad: int, chart: int) -> Text:
    labels = [" "] * chart
    span = (window.end - window.start).total_seconds()
    for tick in axis_ticks(window, tz, max(chart // 9, 1)):
        col = min(int((tick.at - window.start).total_seconds() / span * chart), chart - 1)
        text = tick.label
        if col + len(text) > chart:
            continue
        if any(c != " " for c in labels[max(col - 1, 0) : col + len(text) + 1]):
            continue
        labels[col : col + len(text)] = list(text)
    return Text(" " * pad + "".join(labels))


def _summary(runs: Sequence[Run]) -> str:
    real = [r for r in runs if r.outcome is not Outcome.BUSY]
    jobs = sum(r.claimed for r in real)
    return f"{len(real)}r {jobs}j"


def _rows(
    rows: Sequence[LaneRow],
    window: Window,
    bursts: Sequence[Burst],
    sizes: tuple[int, int],
    *,
    seen: set[Cell],
    away_seen: set[AwayOutcome],
) -> list[Text]:
    """One line per lane over `window` (under it one per other host that ran jobs of its
    queue: `@host`), then the burst row."""
    name_width, chart = sizes
    out = []
    for row in rows:
        text = Text(row.lane[:name_width].ljust(name_width) + " ")
        for cell in row_cells(row, window, chart):
            glyph, style, _ = GLYPHS[cell]
            seen.add(cell)
            text.append(glyph, style=style)
        text.append(" " + _summary(row.runs).rjust(_SUMMARY))
        out.append(text)
        for host in row.away_hosts:
            out.append(_away_line(host, row.away, window, sizes, away_seen))
    if bursts:
        covered = burst_columns(bursts, window, chart)
        text = Text("burst".ljust(name_width) + " ")
        text.append("".join(BURST_GLYPH if c else " " for c in covered), style="bold magenta")
        out.append(text)
    return out


def _away_line(
    host: str,
    runs: Sequence[AwayRun],
    window: Window,
    sizes: tuple[int, int],
    away_seen: set[AwayOutcome],
) -> Text:
    """Another host's jobs of the lane's queue, on a line of their own under the lane."""
    name_width, chart = sizes
    theirs = [run for run in runs if run.host == host]
    text = Text((AWAY_MARK + host)[:name_width].ljust(name_width) + " ")
    for outcome in away_cells(theirs, window, chart):
        if outcome is None:
            text.append(" ")
            continue
        glyph, style, _ = AWAY_GLYPHS[outcome]
        away_seen.add(outcome)
        text.append(glyph, style=style)
    jobs = len({run.job for run in theirs if window.overlaps(run.start, run.end)})
    text.append(" " + f"{jobs}j".rjust(_SUMMARY))
    return text


def chart_lines(result: TimelineResult, width: int, tz: tzinfo | None = None) -> list[Text]:
    """The picture: title, axis, one row per lane, the burst row; a close-up of each burst
    (its lanes over its seconds, where the day's scale makes it one column); the legend."""
    timeline = result.timeline
    width = max(width, MIN_WIDTH)
    names = [row.lane for row in timeline.rows]
    name_width = min(max([len(n) for n in names] + [5]), _NAME_MAX)
    chart = width - name_width - 1 - _SUMMARY - 1
    sizes = (name_width, chart)
    seen: set[Cell] = set()
    away_seen: set[AwayOutcome] = set()
    out = [
        Text(_title(result, tz), style="bold"),
        _axis(timeline.window, tz, name_width + 1, chart),
    ]
    out += _rows(
        timeline.rows, timeline.window, timeline.bursts, sizes, seen=seen, away_seen=away_seen
    )
    for number, burst in enumerate(timeline.bursts[:MAX_CLOSE_UPS], start=1):
        close = around(burst, timeline.window)
        lanes = [row for row in timeline.rows if row.lane in burst.claims]
        out.append(Text(""))
        out.append(
            Text(f"burst {number} close-up, {_hms(close.start, tz)} to {_hms(close.end, tz)}:")
        )
        out.append(_axis(close, tz, name_width + 1, chart))
        out += _rows(lanes, close, (burst,), sizes, seen=seen, away_seen=away_seen)
    out.extend(_legend(seen - {Cell.EMPTY}, bool(timeline.bursts), width, away_seen))
    return out


def _legend(
    cells: Iterable[Cell], bursts: bool, width: int, away: Iterable[AwayOutcome] = ()
) -> list[Text]:
    items = [(GLYPHS[c][0], GLYPHS[c][1], GLYPHS[c][2]) for c in Cell if c in set(cells)]
    shown_away = set(away)
    if shown_away:
        items.append((AWAY_MARK, "", "host: a line of jobs another host ran, not this one"))
        items += [AWAY_GLYPHS[o] for o in AwayOutcome if o in shown_away]
    if bursts:
        items.append((BURST_GLYPH, "bold magenta", "lanes of one queue at once"))
    items.append(("", "", "r runs, j jobs claimed"))
    lines: list[Text] = []
    current = Text("legend: ")
    for glyph, style, words in items:
        piece = Text()
        if glyph:
            piece.append(glyph, style=style)
            piece.append(" ")
        piece.append(words)
        if current.cell_len + piece.cell_len + 3 > width and current.cell_len > 8:
            lines.append(current)
            current = Text("        ")
        elif current.cell_len > 8:
            current.append("   ")
        current.append_text(piece)
    lines.append(current)
    return lines


def _burst_line(burst: Burst, tz: tzinfo | None) -> str:
    claims = ", ".join(f"{lane} {n}" for lane, n in burst.claims.items())
    return (
        f"burst {_hms(burst.start, tz)}-{_hms(burst.end, tz)} on queue {burst.queue}: "
        f"{len(burst.lanes)} lanes at once; claims won: {claims}"
    )


def _run_line(run: Run, tz: tzinfo | None) -> str:
    what = {
        Outcome.JOBS_FAILED: f"exit {run.exit}: {run.failed} failed, {run.requeued} retried",
        Outcome.KILLED: "killed" if run.exit is None else f"stopped (exit {run.exit})",
        Outcome.ERROR: "could not run" + (f" (exit {run.exit})" if run.exit else ""),
        Outcome.THROTTLED: "start throttled by launchd",
        Outcome.RUNNING: "running now",
        Outcome.UNDELIVERED: f"exit {run.exit}: an alert could not be delivered",
    }.get(run.outcome, str(run.outcome))
    error = f": {run.errors[0]}" if run.errors else ""
    return f"{_hms(run.start, tz)} {run.lane}: {what}, {run.claimed} jobs{error}"


def _away_words(lane: str, run: AwayRun, tz: tzinfo | None) -> str:
    return (
        f"{_hms(run.start, tz)} {lane}: job {run.job} (attempt {run.attempt}) on host "
        f"{run.host}: {run.outcome}"
        + (" (its lease lapsed)" if run.outcome is AwayOutcome.ORPHANED else "")
    )


_MARKER_WORDS = {
    MarkerKind.MISSED: "missed run (scheduled, nothing started)",
    MarkerKind.EXIT_78: "launchd could not start it (exit 78)",
    MarkerKind.INSTALLED: "installed by apply",
    MarkerKind.RELOADED: "reloaded by apply",
    MarkerKind.RELOAD_SKIPPED: "apply skipped the reload: lane was running",
    MarkerKind.THROTTLED: "start request throttled by launchd",
}


def notable_lines(result: TimelineResult, tz: tzinfo | None = None) -> list[str]:
    """What stands out, oldest first: bursts, runs that did not end well, markers."""
    timed: list[tuple[datetime, str]] = []
    for burst in result.timeline.bursts:
        timed.append((burst.start, _burst_line(burst, tz)))
    for row in result.timeline.rows:
        for run in row.runs:
            if run.outcome not in (Outcome.OK, Outcome.BUSY, Outcome.UNFINISHED):
                timed.append((run.start, _run_line(run, tz)))
        for away in row.away:
            if away.outcome in (AwayOutcome.FAILED, AwayOutcome.ORPHANED):
                timed.append((away.start, _away_words(row.lane, away, tz)))
        for marker in row.markers:
            if marker.kind is MarkerKind.INSTALLED:
                continue  # the chart shows it; in words it would only repeat per lane
            timed.append(
                (marker.at, f"{_hms(marker.at, tz)} {row.lane}: {_MARKER_WORDS[marker.kind]}")
            )
    timed.sort(key=lambda item: item[0])
    return [text for _, text in timed]


def job_lines(job: JobLife, tz: tzinfo | None = None) -> list[str]:
    """A job's life, one line per step."""
    view = job.view
    out = [
        f"job {job.job_id}: "
        + ("not found in the lanes' queues" if view is None else str(view.state))
    ]
    if view is not None and view.record is not None:
        out.append(f"  queued   {view.record.queued_at}  attempts {view.record.attempts}")
    if job.output is not None:
        out.append(f"  output   {job.output}  (lanekit job LANE {job.job_id} --output)")
    for tried in () if view is None else view.history:  # a server queue's, every host's
        ended = f" to {tried.ended_at}" if tried.ended_at else ""
        out.append(
            f"  attempt {tried.attempt} on host {tried.host} (pid {tried.pid}): "
            f"{tried.outcome or 'running'}, {tried.started_at}{ended}"
        )
    for event in job.events:
        detail = " ".join(f"{k}={v}" for k, v in event.fields.items())
        out.append(f"  {_hms(event.at, tz)} {event.lane}: {event.name} {detail}".rstrip())
    return out


def render_lines(result: TimelineResult, width: int, tz: tzinfo | None = None) -> list[Text]:
    """Everything the terminal shows, as lines (the golden tests compare these)."""
    lines = chart_lines(result, width, tz)
    notable = notable_lines(result, tz)
    if notable:
        lines.append(Text(""))
        lines.extend(Text(text) for text in notable)
    if result.job is not None:
        lines.append(Text(""))
        lines.extend(Text(text) for text in job_lines(result.job, tz))
    if result.notes:
        lines.append(Text(""))
        lines.extend(Text(f"note: {text}") for text in result.notes)
    return lines


def show(result: TimelineResult, width: int | None = None, *, as_json: bool = False) -> None:
    """Print the timeline (or its JSON document) on stdout."""
    if as_json:
        json_out(to_json(result))
        return
    base = stdout()
    columns = width or (base.width if base.is_terminal else DEFAULT_WIDTH)
    # A console of its own: the shared one wraps at its width, the chart must be cut at ours.
    console = Console(
        file=base.file,
        width=columns,
        force_terminal=base.is_terminal,
        no_color=base.no_color,
        color_system=None if base.no_color else base.color_system,  # type: ignore[arg-type]
        highlight=False,
    )
    for text in render_lines(result, columns):
        text.no_wrap = True
        text.overflow = "ellipsis"
        console.print(escaped(text), crop=True)


def written(path: str, *, to_stderr: bool = False) -> None:
    """Where the page was written (on stderr when stdout carries the JSON document)."""
    if to_stderr:
        note(f"wrote {path}")
    else:
        line(f"wrote {path}")
