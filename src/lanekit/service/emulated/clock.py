"""Driving the emulated domain's clock: `lanekit emulator tick --until TIME | --for DURATION`.

Off macOS nothing fires on a clock: the emulated domain has no daemon, so a calendar or
interval lane runs only when something calls `tick`. `advance` moves the emulated time from
where it stands (the domain's clock, lanekit.state.clock: now plus the offset the last advance left)
to `until` and fires what launchd would fire in that span, with real processes; the clock is
moved to each fire before its jobs start, so they log and record that time:

- awake (the default): every fire in order, calendar minutes and StartInterval boundaries; at
  each one the jobs due are started (a job still running misses the fire, and a start within
  ThrottleInterval of the previous one is postponed, both as launchd does), then `advance`
  waits (up to `wait` seconds) for those runs to end before it moves on, as if the Mac were
  awake and each run finished before the next fire;
- asleep: the Mac slept through the span and wakes at `until`: each calendar job with at least
  one fire in the span runs once (launchd coalesces missed calendar fires into one run on wake),
  and StartInterval fires during the sleep are missed (launchd.plist(5);
  launchd-semantics.md, "Throttling and sleep").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.errors import UsageError
from lanekit.schedule import next_fires
from lanekit.service.emulated.emulator import EmulatedDomain, Timer

MAX_FIRES = 500
"""More fires than this in one awake span is refused: each one starts real processes."""


@dataclass(frozen=True, slots=True)
class Fire:
    """One moment of the span and the lanes launchd started (or postponed) then."""

    at: datetime
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TickReport:
    """What `advance` did."""

    start: datetime
    until: datetime
    asleep: bool
    fires: tuple[Fire, ...]
    still_running: tuple[str, ...] = ()
    """Labels whose run had not ended when `advance` returned (awake: after `wait`)."""

    @property
    def runs(self) -> int:
        """How many starts launchd made (or postponed) in the span."""
        return sum(len(f.labels) for f in self.fires)


def _calendar_fires(timer: Timer, start: datetime, until: datetime) -> list[datetime]:
    if not timer.calendar:
        return []
    found: list[datetime] = []
    after = start
    while len(found) <= MAX_FIRES:
        batch = [f for f in next_fires(timer.calendar, after, 64) if f <= until]
        found.extend(batch)
        if len(batch) < 64:
            break
        after = batch[-1]
    return found


def _interval_fires(timer: Timer, start: datetime, until: datetime) -> list[float]:
    if timer.interval is None:
        return []
    first = max(start.timestamp(), timer.interval_base)
    steps = int((first - timer.interval_base) // timer.interval) + 1
    moment = timer.interval_base + steps * timer.interval
    found: list[float] = []
    while moment <= until.timestamp() and len(found) <= MAX_FIRES:
        found.append(moment)
        moment += timer.interval
    return found


def advance(
    state_dir: Path,
    launch_agents: Path,
    until: datetime,
    *,
    asleep: bool = False,
    now: datetime | None = None,
    wait: float = 60.0,
) -> TickReport:
    """Move the emulated clock to `until` (naive local time) and fire what launchd would.

    The span starts at the domain's time (lanekit.state.clock), or at `now` plus the domain's offset
    when that is later."""
    domain = EmulatedDomain(state_dir, launch_agents=launch_agents)
    offset = timedelta(seconds=domain.offset())
    # The domain's time now; a `now` given (the real time, for tests) only ever moves it on.
    start = max(datetime.now(), now or datetime.min) + offset
    if until <= start:
        raise UsageError(
            f"--until {until:%Y-%m-%d %H:%M:%S} is not after the emulated time"
            f" ({start:%Y-%m-%d %H:%M:%S})",
            "give a later time (`--for 10m` moves it on from there)",
        )
    timers = domain.timers()
    calendar = {t.label: _calendar_fires(t, start, until) for t in timers}
    intervals = {t.label: _interval_fires(t, start, until) for t in timers}
    if asleep:
        domain.set_clock(until.timestamp())
        woke = _at(domain, until).wake(
            until,
            [label for label, fires in calendar.items() if fires],
            {label: fires[-1] for label, fires in intervals.items() if fires},
        )
        fires = (Fire(until, tuple(woke)),) if woke else ()
        return TickReport(start, until, asleep, fires)
    moments = sorted(
        {f for fires in calendar.values() for f in fires}
        # A millisecond late, so float rounding never puts a fire just before its interval.
        | {datetime.fromtimestamp(f + 0.001) for fires in intervals.values() for f in fires}
    )
    if len(moments) > MAX_FIRES:
        raise UsageError(
            f"{len(moments)} fires between {start:%Y-%m-%d %H:%M} and {until:%Y-%m-%d %H:%M}:"
            f" more than {MAX_FIRES}, each with real processes",
            "use a shorter span, or --asleep (each lane then runs once, as after a sleep)",
        )
    done: list[Fire] = []
    running: set[str] = set()
    for moment in moments:
        # The clock first: the jobs started at `moment` are handed the domain's time then.
        domain.set_clock(moment.timestamp())
        started = _at(domain, moment).tick(moment)
        if started:
            done.append(Fire(moment, tuple(started)))
        running.update(started)
        deadline = time.monotonic() + wait
        for label in sorted(running):
            if domain.wait_idle(label, max(deadline - time.monotonic(), 0.0)):
                running.discard(label)
    domain.set_clock(until.timestamp())
    _at(domain, until).reap()  # a start postponed within the span happens by its end
    return TickReport(start, until, asleep, tuple(done), tuple(sorted(running)))


def _at(domain: EmulatedDomain, moment: datetime) -> EmulatedDomain:
    """The domain seen at emulated time `moment` (throttling and timers count from it)."""
    stamp = moment.timestamp()
    return EmulatedDomain(domain.state_dir, launch_agents=domain.launch_agents, clock=lambda: stamp)


def parse_until(text: str, now: datetime) -> datetime:
    """`--until`: an ISO time (`2026-12-01T10:40`), or a time of day (`10:40`: the next one)."""
    try:
        if len(text) <= 8 and ":" in text:
            clock = datetime.strptime(text, "%H:%M:%S" if text.count(":") == 2 else "%H:%M")
            when = now.replace(
                hour=clock.hour, minute=clock.minute, second=clock.second, microsecond=0
            )
            return when if when > now else when + timedelta(days=1)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--until {text!r} is not a time",
            "give HH:MM (the next one) or an ISO date and time, e.g. 2026-12-01T10:40",
        ) from None
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo else moment
