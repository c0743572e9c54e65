"""When schedules fire, in local wall time: the next fires, the previous one, whether one
fires in a given minute, and the first minute two sets of entries both fire (which
lanekit.schedule.collisions asks of two lanes on one queue)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from lanekit.schedule.model import SEARCH_DAYS, CalendarEntry, Schedule, can_occur


@dataclass(frozen=True, slots=True)
class _Matcher:
    month: int | None
    day: int | None
    weekday: int | None
    times: tuple[int, ...]
    """Minutes of the day this entry fires at, ascending."""

    @classmethod
    def of(cls, entry: CalendarEntry) -> _Matcher:
        hours = range(24) if entry.hour is None else (entry.hour,)
        minutes = range(60) if entry.minute is None else (entry.minute,)
        times = tuple(h * 60 + m for h in hours for m in minutes)
        return cls(entry.month, entry.day, entry.weekday, times)

    def on(self, day: date) -> bool:
        if self.month is not None and day.month != self.month:
            return False
        if self.day is None and self.weekday is None:
            return True
        if self.day is not None and day.day == self.day:
            return True
        return self.weekday is not None and _weekday(day) == self.weekday


def _weekday(day: date) -> int:
    """launchd's weekday: 0 is Sunday."""
    return (day.weekday() + 1) % 7


def _matchers(entries: Iterable[CalendarEntry]) -> list[_Matcher]:
    return [
        _Matcher.of(e)
        for e in sorted(set(entries), key=CalendarEntry.sort_key)
        if can_occur(e.month, e.day, e.weekday)
    ]


def _day_times(matchers: Sequence[_Matcher], day: date) -> list[int]:
    hits = [m.times for m in matchers if m.on(day)]
    if len(hits) <= 1:
        return list(hits[0]) if hits else []
    return sorted(set().union(*hits))


def local_naive(moment: datetime) -> datetime:
    """Aware datetimes become naive local wall time, with fold=1 in the second pass through a
    repeated hour (so 01:15 EST stays after 01:30 EDT); naive ones already are."""
    if moment.tzinfo is None:
        return moment
    wall = moment.astimezone().replace(tzinfo=None)
    again = wall.replace(fold=1)
    if again.timestamp() != wall.timestamp() and again.timestamp() == moment.timestamp():
        return again
    return wall


def _exists(wall: datetime) -> bool:
    """False for a wall time skipped by a spring-forward DST change in the local zone."""
    try:
        return datetime.fromtimestamp(wall.timestamp()) == wall
    except (OverflowError, OSError, ValueError):
        return True


def _at(day: date, minute_of_day: int) -> datetime:
    return datetime(day.year, day.month, day.day, minute_of_day // 60, minute_of_day % 60)


def _forward(matchers: Sequence[_Matcher], start: datetime) -> Iterator[datetime]:
    """Fire times at or after the minute-aligned `start`; gives up after SEARCH_DAYS days
    without a fire (so a leap-day schedule still yields as many fires as asked for).
    """
    first_day, first_minute = start.date(), start.hour * 60 + start.minute
    offset = last_hit = 0
    while offset - last_hit < SEARCH_DAYS:
        try:
            day = first_day + timedelta(days=offset)
        except OverflowError:
            return
        times = _day_times(matchers, day)
        begin = bisect.bisect_left(times, first_minute) if offset == 0 else 0
        for minute_of_day in times[begin:]:
            wall = _at(day, minute_of_day)
            if _exists(wall):
                last_hit = offset
                yield wall
        offset += 1


def _backward(matchers: Sequence[_Matcher], end: datetime) -> Iterator[datetime]:
    """Fire times at or before the minute-aligned `end`, latest first; gives up after
    SEARCH_DAYS days without a fire (the same bound as _forward: a Feb-29 schedule's previous
    fire can be 8 years back, 2104 -> 2096)."""
    last_day, last_minute = end.date(), end.hour * 60 + end.minute
    for offset in range(SEARCH_DAYS + 1):
        try:
            day = last_day - timedelta(days=offset)
        except OverflowError:
            return
        times = _day_times(matchers, day)
        stop = bisect.bisect_right(times, last_minute) if offset == 0 else len(times)
        for minute_of_day in reversed(times[:stop]):
            wall = _at(day, minute_of_day)
            if _exists(wall):
                yield wall


def next_fires(entries: Iterable[CalendarEntry], after: datetime, n: int) -> list[datetime]:
    """The next `n` times launchd starts the job, strictly after `after`.

    Naive local wall time in and out (an aware `after` is converted to local wall time). Fires
    are whole minutes, found day by day (never minute by minute); the search stops after
    SEARCH_DAYS days without a fire.

    DST, decided here and relied on by doctor: an entry matches wall-clock fields, so
    - a wall time that does not exist (the spring-forward gap, e.g. 02:30 in New York on the
      second Sunday of March) does not fire;
    - a wall time that occurs twice (the fall-back hour) fires once, at its first occurrence.
    launchd 10.9 (cronemu) walked struct tm fields to the next matching wall time and converted
    it with mktime(tm_isdst = -1), so for the gap it asked libc for a time that does not exist
    (libc may shift it by an hour, or fail); modern launchd is closed. Skipping the gap is the
    conservative model: doctor's missed-run check never expects a run that launchd may not
    make.
    """
    if n <= 0:
        return []
    start = local_naive(after).replace(second=0, microsecond=0) + timedelta(minutes=1)
    return list(itertools.islice(_forward(_matchers(entries), start), n))


def fires_at(entries: Iterable[CalendarEntry], minute: datetime) -> bool:
    """True when launchd starts the job in this minute (naive local wall time; seconds are
    ignored). Same DST rules as next_fires; costs one day's matching, whatever the schedule."""
    wall = local_naive(minute).replace(second=0, microsecond=0)
    times = _day_times(_matchers(entries), wall.date())
    return wall.hour * 60 + wall.minute in times and _exists(wall)


def previous_fire(entries: Iterable[CalendarEntry], before: datetime) -> datetime | None:
    """The latest fire time at or before `before` (naive local wall time), looking back at most
    SEARCH_DAYS days, so every schedule lanekit accepts has one; None if there is none (a time
    before year 1 plus the bound). Same DST rules as next_fires; `before` in the second pass
    through a repeated hour (fold=1, or an aware time there) comes after every fire of that
    hour, since they all fired in its first pass.
    """
    end = _after_repeat(local_naive(before).replace(second=0, microsecond=0))
    return next(_backward(_matchers(entries), end), None)


def _repeated(wall: datetime) -> bool:
    """True for a wall time the local zone shows twice (the fall-back hour)."""
    try:
        first = wall.replace(fold=0).timestamp()
        second = wall.replace(fold=1).timestamp()
    except (OverflowError, OSError, ValueError):
        return False
    return first != second


def _after_repeat(end: datetime) -> datetime:
    """`end` itself, except in the second pass through a repeated hour (fold=1): every fire of
    that hour happened in its first pass (fires are once, at the first occurrence), so all of
    them are before `end`: the last minute of the repeated stretch. At the second 01:15 EST on
    a New York fall-back night, `*/30` last fired at 01:30 EDT, not 01:00."""
    if not end.fold or not _repeated(end):
        return end
    last = end.replace(fold=0)
    while _repeated(last + timedelta(minutes=1)):
        last += timedelta(minutes=1)
    return last


def schedule_next_fires(
    schedule: Schedule, after: datetime, n: int, loaded_at: datetime | None = None
) -> list[datetime]:
    """The next `n` starts of a lane, strictly after `after` (naive local wall time).

    Calendar entries as in next_fires. A StartInterval timer is armed when launchd loads the
    job, so its fires are loaded_at + k*interval (k >= 1, in real elapsed seconds); when the
    load time is unknown it is taken to be `after` (fires at after + interval, + 2*interval...).
    """
    if n <= 0:
        return []
    after = local_naive(after)
    fires = set(next_fires(schedule.calendar, after, n)) if schedule.calendar else set()
    if schedule.interval is not None:
        base = local_naive(loaded_at) if loaded_at is not None else after
        elapsed = after.timestamp() - base.timestamp()
        k = max(1, int(elapsed // schedule.interval) + 1)
        origin = base.timestamp()
        for step in range(k, k + n):
            fire = datetime.fromtimestamp(origin + step * schedule.interval)
            if fire > after:
                fires.add(fire)
    return sorted(fires)[:n]


def first_common_fire(
    a: Iterable[CalendarEntry], b: Iterable[CalendarEntry], start: datetime
) -> datetime | None:
    """The first minute at or after the minute-aligned `start` in which both sets of entries
    fire (naive local wall time; same DST rules as next_fires), None if there is none within
    SEARCH_DAYS."""
    return _first_common(_matchers(a), _matchers(b), start)


def _first_common(a: Sequence[_Matcher], b: Sequence[_Matcher], start: datetime) -> datetime | None:
    first_day, first_minute = start.date(), start.hour * 60 + start.minute
    for offset in range(SEARCH_DAYS):
        try:
            day = first_day + timedelta(days=offset)
        except OverflowError:
            return None
        times_a = _day_times(a, day)
        if not times_a:
            continue
        common = sorted(set(times_a).intersection(_day_times(b, day)))
        for minute_of_day in common:
            if offset == 0 and minute_of_day < first_minute:
                continue
            wall = _at(day, minute_of_day)
            if _exists(wall):
                return wall
    return None
