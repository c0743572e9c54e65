"""A day of lanes written as lane-log lines in New York wall time, for the timeline tests.

`at("10:40:01")` is an aware datetime on DAY in America/New_York; `line(...)` is a logfmt line
exactly as the runner writes it (lanelog.format_line), so the tests parse what lanes log.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from lanekit.run.lanelog import format_line, format_ts, parse_line
from lanekit.timeline.build import TimelineResult
from lanekit.timeline.events import Event, to_event
from lanekit.timeline.model import LaneInfo, Timeline, Window, build_timeline

NY = ZoneInfo("America/New_York")
DAY = date(2026, 11, 30)


def at(clock: str, day: date = DAY) -> datetime:
    """A New York wall time on `day` (HH:MM or HH:MM:SS), aware."""
    return datetime.combine(day, time.fromisoformat(clock), tzinfo=NY)


def day_window(day: date = DAY, now: datetime | None = None) -> Window:
    """The whole New York day (23, 24 or 25 hours)."""
    start = datetime.combine(day, time(0), tzinfo=NY)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=NY)
    return Window(start, end, end + timedelta(days=1) if now is None else now)


def line(when: datetime, lane: str, event: str, **fields: object) -> str:
    """The lane-log line a lane writes at `when`."""
    return format_line(format_ts(when.astimezone(UTC).timestamp()), lane, event, fields)


def events(lines: Sequence[str]) -> list[Event]:
    """Lines -> Events (each line's lane is its own)."""
    out = []
    for text in lines:
        fields = parse_line(text)
        event = to_event(fields, fields["lane"])
        assert event is not None, text
        out.append(event)
    return out


def run_lines(
    lane: str,
    start: datetime,
    jobs: Sequence[str],
    *,
    seconds: float = 1.0,
    exit_code: int = 0,
    fail: Sequence[str] = (),
    pid: int = 100,
) -> list[str]:
    """A whole run: start, a claim and an outcome per job `seconds` apart, finish."""
    out = [line(start, lane, "start", pid=pid)]
    t = start
    for job in jobs:
        t += timedelta(seconds=seconds / 2)
        out.append(line(t, lane, "claimed", job=job, attempt=1))
        t += timedelta(seconds=seconds / 2)
        if job in fail:
            out.append(line(t, lane, "requeued", job=job, exit=3, error="exit 3"))
        else:
            out.append(line(t, lane, "done", job=job, exit=0, duration="0.5"))
    t += timedelta(milliseconds=10)
    out.append(
        line(
            t,
            lane,
            "finish",
            reason="empty",
            exit=exit_code,
            claimed=len(jobs),
            done=len(jobs) - len(fail),
            failed=0,
            requeued=len(fail),
            skipped=0,
            recovered=0,
            duration=f"{(t - start).total_seconds():.3f}",
        )
    )
    return out


def incident() -> tuple[list[Event], list[LaneInfo]]:
    """The seed-001 morning: five lanes of queue notes burst at 10:40, apply skips funnel's
    reload while it runs and reloads it after, digest misses its 16:40, publish cannot start
    its command, and an event this version does not know."""
    fire = at("10:40")
    lines: list[str] = []
    lanes = ("funnel", "thumbs", "social", "portraits", "digest")
    for n, lane in enumerate(lanes):
        jobs = [f"j{n}-{k}" for k in range(3 + n % 2)]
        lines += run_lines(lane, fire + timedelta(seconds=n * 0.2), jobs, seconds=2, pid=200 + n)
    lines.append(line(at("10:40:05"), "funnel", "skipped", reason="running", pid=200, by="apply"))
    lines.append(line(at("10:41:00"), "funnel", "applied", action="skip-running", by="apply"))
    lines += run_lines(
        "funnel", at("16:40"), ["late-1"], seconds=1, exit_code=1, fail=["late-1"], pid=300
    )
    lines.append(line(at("09:00"), "publish", "start", pid=400))
    lines.append(line(at("09:00:00.300"), "publish", "claimed", job="weekly", attempt=2))
    lines.append(
        line(
            at("09:00:00.310"),
            "publish",
            "requeued",
            job="weekly",
            reason="cannot-start",
            error="cannot start 'publish-tool': No such file or directory",
        )
    )
    lines.append(
        line(
            at("09:00:00.320"),
            "publish",
            "error",
            exit=69,
            error="lane publish: cannot start <publish-tool> & co",
        )
    )
    lines.append(line(at("12:00"), "thumbs", "paused", by="pause", note="an event from the future"))
    infos = [
        LaneInfo(
            name=lane,
            queue="notes",
            fires=(fire, at("16:40")) if lane in ("funnel", "digest") else (fire,),
            known_since=at("06:00"),
        )
        for lane in lanes
    ]
    infos.append(
        LaneInfo(name="publish", queue="outbox", fires=(at("09:00"),), known_since=at("06:00"))
    )
    return events(lines), infos


def incident_timeline() -> Timeline:
    """The incident, modelled."""
    evs, infos = incident()
    return build_timeline(evs, infos, day_window(), read_to_now=True)


def incident_result() -> TimelineResult:
    """The incident as `lanekit timeline --day 2026-11-30` returns it."""
    return TimelineResult(incident_timeline(), DAY)
