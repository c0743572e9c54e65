"""What the schedule tests share: the reference instant, zones, and generated cron text with the
sets its fields select (computed independently of lanekit.schedule)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from hypothesis import assume
from hypothesis import strategies as st

from lanekit.schedule import (
    CalendarEntry,
    ScheduleError,
    parse_cron,
)

AFTER = datetime(2026, 11, 30, 12, 0)  # a Monday


@contextmanager
def local_zone(name: str) -> Iterator[None]:
    """Run with TZ=name (time.tzset), restoring the previous zone afterwards."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def plist(entries: tuple[CalendarEntry, ...]) -> list[dict[str, int]]:
    return [e.to_plist() for e in entries]


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second)


@dataclass(frozen=True)
class Cron:
    """A generated cron expression with the sets its fields select (computed independently)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_star: bool
    weekday_star: bool


MONTH_ABBR = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_ABBR = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@st.composite
def cron_field(
    draw: st.DrawFn, low: int, high: int, max_items: int, min_step: int, names: tuple[str, ...] = ()
) -> tuple[str, frozenset[int]]:
    """One field as text plus the values it selects (before Weekday 7 folding)."""

    def token(value: int) -> str:
        named: bool = draw(st.booleans())
        if names and named:
            return names[value - low] if value - low < len(names) else str(value)
        return str(value)

    kind = draw(st.sampled_from(["star", "one", "list", "range", "step", "rangestep"]))
    if kind == "star":
        return "*", frozenset(range(low, high + 1))
    if kind == "one":
        value = draw(st.integers(low, high))
        return token(value), frozenset({value})
    if kind == "list":
        values = draw(st.lists(st.integers(low, high), min_size=1, max_size=max_items))
        return ",".join(token(v) for v in values), frozenset(values)
    if kind == "step":
        step = draw(st.integers(min_step, high - low + 1))
        return f"*/{step}", frozenset(range(low, high + 1, step))
    first = draw(st.integers(low, high))
    last = draw(st.integers(first, min(high, first + max_items)))
    if kind == "range":
        return f"{token(first)}-{token(last)}", frozenset(range(first, last + 1))
    step = draw(st.integers(1, 5))
    return f"{first}-{last}/{step}", frozenset(range(first, last + 1, step))


@st.composite
def crons(draw: st.DrawFn) -> Cron:
    """Random 5-field cron text over every syntax form, kept small enough for launchd."""
    minute = draw(cron_field(0, 59, 3, 15))
    hour = draw(cron_field(0, 23, 3, 4))
    day = draw(cron_field(1, 31, 3, 5))
    month = draw(cron_field(1, 12, 3, 2, MONTH_ABBR))
    weekday_text, weekday_values = draw(cron_field(0, 7, 3, 2, DAY_ABBR))
    if weekday_text == "*":
        weekday_values = frozenset(range(7))
    weekdays = frozenset(0 if w == 7 else w for w in weekday_values)
    return Cron(
        text=" ".join((minute[0], hour[0], day[0], month[0], weekday_text)),
        minutes=minute[1],
        hours=hour[1],
        days=day[1],
        months=month[1],
        weekdays=weekdays,
        day_star=day[0] == "*",
        weekday_star=weekday_text == "*",
    )


def cron_matches_day(cron: Cron, day: date) -> bool:
    """POSIX cron: day-of-month and day-of-week are ORed unless one of them is `*`."""
    if day.month not in cron.months:
        return False
    by_day = day.day in cron.days
    by_weekday = day.isoweekday() % 7 in cron.weekdays
    if cron.day_star or cron.weekday_star:
        return by_day and by_weekday
    return by_day or by_weekday


def brute_force(cron: Cron, after: datetime, n: int, horizon_days: int) -> list[datetime]:
    """Minute-by-minute scan of the matching days (non-matching days skipped whole)."""
    start = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    found: list[datetime] = []
    for offset in range(horizon_days):
        day = start.date() + timedelta(days=offset)
        if not cron_matches_day(cron, day):
            continue
        midnight = datetime(day.year, day.month, day.day)
        for minute_of_day in range(1440):
            moment = midnight + timedelta(minutes=minute_of_day)
            if moment < start or moment.hour not in cron.hours:
                continue
            if moment.minute in cron.minutes:
                found.append(moment)
                if len(found) == n:
                    return found
    return found


def parsed(cron: Cron) -> tuple[CalendarEntry, ...]:
    """parse_cron, or reject the example when launchd cannot take it (too big, never fires)."""
    try:
        return parse_cron(cron.text)
    except ScheduleError as exc:
        assume("launchd entries; at most" not in exc.message and "never occurs" not in exc.message)
        raise


def optional(low: int, high: int) -> st.SearchStrategy[int | None]:
    return st.none() | st.integers(low, high)
