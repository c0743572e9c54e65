"""Schedules in plain English (`every day at 10:40`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lanekit.schedule.model import MONTH_NAMES, WEEKDAY_NAMES, CalendarEntry, Schedule
from lanekit.schedule.quirks import MONTHS_WITH


def _join(items: Sequence[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _runs(values: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs in an ascending sequence: [1,2,3,5] -> [(1,3),(5,5)]."""
    runs: list[tuple[int, int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


def _ranged(values: Sequence[int], name: Mapping[int, str] | None = None) -> str:
    """`1, 2, 3 and 5` with runs of three or more written `1 to 3`."""
    label = (lambda v: name[v]) if name is not None else str
    parts: list[str] = []
    for low, high in _runs(values):
        if high - low >= 2:
            parts.append(f"{label(low)} to {label(high)}")
        else:
            parts.extend(label(v) for v in range(low, high + 1))
    return _join(parts)


def _weekday_list(weekdays: Iterable[int]) -> str:
    # Monday first, so a working week reads "Monday to Friday" and a weekend stays together.
    order = sorted((w - 1) % 7 for w in set(weekdays))
    return _ranged(order, {i: WEEKDAY_NAMES[(i + 1) % 7] for i in range(7)})


def _month_list(months: Iterable[int]) -> str:
    return _ranged(sorted(set(months)), {i + 1: n for i, n in enumerate(MONTH_NAMES)})


def _day_list(days: Iterable[int]) -> str:
    values = sorted(set(days))
    return ("day " if len(values) == 1 else "days ") + _ranged(values)


def _interval_phrase(seconds: int) -> str:
    for unit, name in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if seconds % unit == 0:
            count = seconds // unit
            return f"every {name}" if count == 1 else f"every {count} {name}s"
    raise AssertionError("unreachable: every integer is a multiple of 1")


def _hourly_phrase(minutes: Sequence[int]) -> str:
    if len(minutes) >= 2 and minutes[0] == 0:
        step = minutes[1]
        if 60 % step == 0 and list(minutes) == list(range(0, 60, step)):
            return f"every {step} minutes"
    return "every hour at " + _join([f":{m:02d}" for m in minutes])


def _time_phrase(pairs: frozenset[tuple[int | None, int | None]]) -> tuple[str, bool]:
    """(text, is_clock_times): "at 10:40 and 16:40" is clock times, "every 15 minutes" not."""
    if (None, None) in pairs:
        return "every minute", False
    whole_hours = sorted(h for h, m in pairs if h is not None and m is None)
    hourly = sorted(m for h, m in pairs if h is None and m is not None)
    clock = sorted(
        (h, m)
        for h, m in pairs
        if h is not None and m is not None and h not in whole_hours and m not in hourly
    )
    parts: list[str] = []
    if hourly:
        parts.append(_hourly_phrase(hourly))
    if whole_hours:
        spans = [f"from {a:02d}:00 to {b:02d}:59" for a, b in _runs(whole_hours)]
        parts.append("every minute " + " and ".join(spans))
    if clock:
        parts.append("at " + _join([f"{h:02d}:{m:02d}" for h, m in clock]))
    return " and ".join(parts), not hourly and not whole_hours


_DayKey = tuple[int | None, int | None, int | None]


def _day_phrase(keys: Sequence[_DayKey]) -> tuple[str | None, str] | None:
    """(prefix, suffix) forms for a set of (month, day, weekday) keys, or None if irregular.

    The prefix form reads before clock times ("every Monday at 09:00"); the suffix form reads
    after a time ("at 00:00 on day 1 of every month", "every 15 minutes on Monday").
    """
    by_month: dict[int | None, set[tuple[int | None, int | None]]] = {}
    for month, day, weekday in keys:
        by_month.setdefault(month, set()).add((day, weekday))
    rests = list(by_month.values())
    if any(rest != rests[0] for rest in rests) or (None in by_month and len(by_month) > 1):
        return None
    rest = rests[0]
    months = sorted(m for m in by_month if m is not None)
    in_months = f" in {_month_list(months)}" if months else ""
    days = {d for d, _ in rest if d is not None}
    weekdays = {w for _, w in rest if w is not None}
    if (None, None) in rest or (not days and len(weekdays) == 7):
        return "every day" + in_months, in_months.strip()
    if not days:
        names = _weekday_list(weekdays)
        return f"every {names}{in_months}", f"on {names}{in_months}"
    if months and len(months) == 1 and len(days) == 1:
        on_days = f"on {MONTH_NAMES[months[0] - 1]} {next(iter(days))}"
    else:
        on_days = f"on {_day_list(days)} of " + (_month_list(months) if months else "every month")
    if all(w is None for _, w in rest):
        return None, on_days
    if all(d is not None and w is not None for d, w in rest):
        return None, f"{on_days} and every {_weekday_list(weekdays)}{in_months}"
    return None


def _phrase(times: frozenset[tuple[int | None, int | None]], keys: Sequence[_DayKey]) -> str:
    day = _day_phrase(keys)
    if day is None:
        # Days of every month beside days of some months (`0 0 15,31 * *`, written as Day=15
        # and one Month+Day entry per month with a 31st): each group in its own words.
        every = [key for key in keys if key[0] is None]
        some = [key for key in keys if key[0] is not None]
        if every and some and _day_phrase(every) is not None and _day_phrase(some) is not None:
            return f"{_phrase(times, every)}; {_phrase(times, some)}"
        return "; ".join(_phrase(times, [key]) for key in keys)
    prefix, suffix = day
    time_text, is_clock = _time_phrase(times)
    if is_clock and prefix is not None:
        return f"{prefix} {time_text}"
    return f"{time_text} {suffix}".strip()


def _every_month_again(by_day: dict[_DayKey, set[tuple[int | None, int | None]]]) -> None:
    """Read parse_cron's one-entry-per-month form of day 29-31 (lanekit.schedule.quirks) as the
    day of every month it stands for, when every such month is there at the same times."""
    for day, months in MONTHS_WITH.items():
        keys = [(month, day, None) for month in months]
        if not all(key in by_day for key in keys):
            continue
        times = by_day[keys[0]]
        if any(by_day[key] != times for key in keys):
            continue
        for key in keys:
            del by_day[key]
        by_day.setdefault((None, day, None), set()).update(times)


def describe(entries: Iterable[CalendarEntry]) -> str:
    """Plain English for calendar entries, deterministic: "every day at 10:40 and 16:40",
    "every Monday at 09:00", "every 15 minutes", "at 00:00 on day 1 of every month",
    "on demand only" when there are none. Irregular sets fall back to a "; "-joined listing.
    """
    ordered = sorted(set(entries), key=CalendarEntry.sort_key)
    if not ordered:
        return "on demand only"
    by_day: dict[_DayKey, set[tuple[int | None, int | None]]] = {}
    for e in ordered:
        by_day.setdefault((e.month, e.day, e.weekday), set()).add((e.hour, e.minute))
    _every_month_again(by_day)
    by_times: dict[frozenset[tuple[int | None, int | None]], list[_DayKey]] = {}
    for key, times in by_day.items():
        by_times.setdefault(frozenset(times), []).append(key)
    return "; ".join(_phrase(times, keys) for times, keys in by_times.items())


def describe_schedule(schedule: Schedule) -> str:
    """describe() for a whole Schedule: calendar, StartInterval ("every 15 minutes"), or
    "on demand only".
    """
    parts: list[str] = []
    if schedule.calendar:
        parts.append(describe(schedule.calendar))
    if schedule.interval is not None:
        parts.append(_interval_phrase(schedule.interval))
    return "; and ".join(parts) if parts else "on demand only"
