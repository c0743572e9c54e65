"""A lane's `schedule` / `every` values to one Schedule, and every error of every entry."""

from __future__ import annotations

from collections.abc import Mapping

from lanekit.schedule.cron import day_and_warning, parse_cron, too_many_entries
from lanekit.schedule.durations import parse_duration
from lanekit.schedule.model import (
    MAX_ENTRIES,
    WARN_ENTRIES,
    CalendarEntry,
    Schedule,
    ScheduleError,
)
from lanekit.schedule.quirks import calendar_warnings
from lanekit.schedule.tables import parse_table


def build_schedule(value: object, every: str | int | None = None) -> Schedule:
    """A lane's `schedule` (None, cron text, a table, or a list of them) and `every` -> Schedule.

    Entries from all list elements are deduplicated, sorted and limited to MAX_ENTRIES in total
    (a warning past WARN_ENTRIES);
    an element's error carries `.index`. `every` becomes StartInterval seconds.

    A lane with both a calendar and `every` is rejected: launchd would run it on both triggers
    independently (launchd.plist(5)), which is rarely meant, and lanekit's plists carry one or
    the other. Write the interval as a cron step instead, or drop one.
    """
    interval = None
    if every is not None:
        try:
            interval = parse_duration(every)
        except ScheduleError as exc:
            exc.field = "every"
            raise
    items: list[object]
    listed = isinstance(value, list | tuple)
    if value is None:
        items = []
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        items = [value]
    entries: set[CalendarEntry] = set()
    warnings: list[str] = []
    for index, item in enumerate(items):
        try:
            if isinstance(item, str):
                parsed = parse_cron(item)
                entries.update(parsed)
                text = item.strip()
                note = day_and_warning(text)
                if note is not None:
                    warnings.append(note)
                warnings.extend(calendar_warnings(text, parsed))
            elif isinstance(item, Mapping):
                entry = parse_table(item)
                entries.add(entry)
                warnings.extend(calendar_warnings(entry.to_table_text(), [entry]))
            else:
                raise ScheduleError(
                    f"expected cron text or a table, got {type(item).__name__}",
                    'write "40 10 * * *" or {Hour = 10, Minute = 40}',
                )
        except ScheduleError as exc:
            exc.index = index if listed else None
            exc.field = "schedule"
            raise
    if len(entries) > MAX_ENTRIES:
        raise too_many_entries(len(entries), "schedule")
    if len(entries) > WARN_ENTRIES:
        warnings.append(
            f"the schedule expands to {len(entries)} launchd entries (more than {WARN_ENTRIES}): "
            "launchd keeps each and arms a timer for it; a coarser step or a narrower range "
            "is usually what was meant"
        )
    if entries and interval is not None:
        raise ScheduleError(
            "schedule and every are both set; launchd would run the lane on both, independently",
            "keep one: a cron step like */15 in schedule, or only every",
        )
    return Schedule(
        calendar=tuple(sorted(entries, key=CalendarEntry.sort_key)),
        interval=interval,
        warnings=tuple(warnings),
    )


def schedule_entry_errors(value: object) -> list[ScheduleError]:
    """Every element of a lane's `schedule` that does not parse, each with its `.index` (or
    None for a single value): build_schedule stops at the first, `validate` lists them all."""
    listed = isinstance(value, list | tuple)
    items = list(value) if isinstance(value, list | tuple) else [] if value is None else [value]
    errors: list[ScheduleError] = []
    for index, item in enumerate(items):
        try:
            build_schedule(item)
        except ScheduleError as exc:
            exc.index = index if listed else None
            exc.field = "schedule"
            errors.append(exc)
    return errors
