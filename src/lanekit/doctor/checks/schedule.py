"""Checks on when launchd will start the job, read from the plist the way launchd reads it:
StartCalendarInterval wildcards and ranges, StartInterval against ThrottleInterval, and lanes of
one queue that fire in the same minute."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.schedule import DEFAULT_THROTTLE

RANGES = {"Minute": (0, 59), "Hour": (0, 23), "Day": (1, 31), "Weekday": (0, 7), "Month": (1, 12)}
"""StartCalendarInterval keys and their valid values (launchd.plist(5))."""


def calendar_entries(job: Mapping[str, Any]) -> list[object]:
    """StartCalendarInterval as a list of entries (launchd accepts one dict or an array)."""
    value = job.get("StartCalendarInterval")
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def describe_entry(entry: Mapping[str, Any]) -> str:
    """`{Hour=3}` for messages: the entry as written, keys in launchd's order."""
    order = ("Month", "Day", "Weekday", "Hour", "Minute")
    keys = sorted(entry, key=lambda k: (order.index(k) if k in order else len(order), str(k)))
    return "{" + ", ".join(f"{k}={entry[k]!r}" for k in keys) + "}"


def _edit(target: Target) -> str:
    if target.lane is not None:
        return f"`schedule` of [lanes.{target.lane.name}] in lanes.toml, then run `lanekit apply`"
    return f"StartCalendarInterval in {target.plist_path}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@check(
    "schedule.every-minute",
    summary="a calendar entry without Minute runs every minute of the matching hours",
)
def every_minute(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """`{Hour=3}` is not "at 3 o'clock" but sixty runs from 03:00 to 03:59."""
    if target.plist is None:
        return
    for entry in calendar_entries(target.plist):
        if not isinstance(entry, dict) or "Minute" in entry:
            continue
        if not all(_is_int(v) for v in entry.values()):
            continue  # schedule.out-of-range says it
        if "Hour" in entry:
            hour = entry["Hour"]
            when = f"every minute from {hour:02d}:00 to {hour:02d}:59"
        else:
            when = "every minute of every matching day"
        minute = "a cron line with a minute, e.g. `0 3 * * *`,"
        fix = (
            f"write {minute} in {_edit(target)}"
            if target.lane is not None
            else f"add <key>Minute</key><integer>0</integer> to that entry in {_edit(target)}"
        )
        yield Problem(
            Severity.WARNING,
            f"StartCalendarInterval entry {describe_entry(entry)} has no Minute, so launchd "
            f"runs the job {when}.",
            fix,
        )


@check(
    "schedule.out-of-range",
    summary="a calendar value or StartInterval launchd drops or ignores (the job never fires then)",
)
def out_of_range(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd logs a warning nobody reads and drops the whole entry (Hour 24, Day 0), or
    treats a negative value (and Month 0) as a wildcard; StartInterval <= 0 is ignored."""
    job = target.plist
    if job is None:
        return
    for entry in calendar_entries(job):
        if not isinstance(entry, dict):
            yield Problem(
                Severity.ERROR,
                f"StartCalendarInterval holds {entry!r}, not a dictionary, so launchd ignores it.",
                f"write a dictionary such as {{Hour=10, Minute=40}} in {_edit(target)}",
            )
            continue
        for key, value in entry.items():
            if key not in RANGES:
                yield Problem(
                    Severity.ERROR,
                    f"StartCalendarInterval entry {describe_entry(entry)} has unknown key "
                    f"{key!r}; launchd knows {', '.join(RANGES)}.",
                    f"fix the key in {_edit(target)}",
                )
                continue
            low, high = RANGES[key]
            if not _is_int(value):
                yield Problem(
                    Severity.ERROR,
                    f"StartCalendarInterval entry {describe_entry(entry)}: {key} {value!r} is not "
                    "an integer, so launchd drops the entry.",
                    f"write {key} as an <integer> between {low} and {high} in {_edit(target)}",
                )
            elif value < 0 or (key == "Month" and value == 0):
                yield Problem(
                    Severity.WARNING,
                    f"StartCalendarInterval entry {describe_entry(entry)}: {key} {value} is "
                    f"treated as a wildcard (every {key.lower()}), not as a value.",
                    f"write {key} between {low} and {high}, or leave it out, in {_edit(target)}",
                )
            elif not low <= value <= high:
                yield Problem(
                    Severity.ERROR,
                    f"StartCalendarInterval entry {describe_entry(entry)}: {key} {value} is "
                    f"outside {low}-{high}, so launchd drops the whole entry and never fires it.",
                    f"write {key} between {low} and {high} in {_edit(target)}",
                )
    interval = job.get("StartInterval")
    if interval is not None and (not _is_int(interval) or interval <= 0):
        yield Problem(
            Severity.ERROR,
            f"StartInterval {interval!r} is not a positive integer, so launchd ignores it and "
            "the job never fires on a timer.",
            "write StartInterval as a positive number of seconds",
        )


@check(
    "schedule.collision",
    summary="lanes draining one queue fire in the same minute (a burst of runners at once)",
    needs_lane=True,
)
def collision(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Seed 001: five lanes woke at once on one queue. lanekit's claims keep that safe, but the
    lanes compete for the same jobs while the rest of the minute stays idle."""
    lane = target.lane
    if lane is None:
        return
    for found in ctx.collisions():
        if lane.name not in found.lanes:
            continue
        other = found.lanes[1] if found.lanes[0] == lane.name else found.lanes[0]
        when = f" (next at {found.example:%Y-%m-%d %H:%M})" if found.example is not None else ""
        yield Problem(
            Severity.WARNING,
            f"lane {lane.name} can fire in the same minute as lane {other} on queue "
            f"{found.queue}{when}: their runners start together and race for the same jobs.",
            f"shift the minute of one of them in `schedule` of [lanes.{other}] or "
            f"[lanes.{lane.name}] in lanes.toml, then run `lanekit apply`",
        )


@check(
    "schedule.interval-below-throttle",
    summary="StartInterval is shorter than ThrottleInterval (launchd starts it less often)",
)
def interval_below_throttle(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd never spawns a job twice within ThrottleInterval (default 10 s), so a 5 s
    interval silently becomes 10 s."""
    job = target.plist
    if job is None:
        return
    interval = job.get("StartInterval")
    throttle = job.get("ThrottleInterval", DEFAULT_THROTTLE)
    if not isinstance(interval, int) or not isinstance(throttle, int):
        return
    if not _is_int(interval) or not _is_int(throttle) or not 0 < interval < throttle:
        return
    if target.lane is not None:
        fix = (
            f"set every >= {throttle}s, or throttle_interval = {interval}, in "
            f"[lanes.{target.lane.name}] of lanes.toml, then run `lanekit apply`"
        )
    else:
        fix = (
            f"set StartInterval to {throttle} or more, or add <key>ThrottleInterval</key>"
            f"<integer>{interval}</integer>, in {target.plist_path}"
        )
    yield Problem(
        Severity.WARNING,
        f"StartInterval {interval} s is below the ThrottleInterval of {throttle} s, so launchd "
        f"starts the job at most every {throttle} s.",
        fix,
    )
