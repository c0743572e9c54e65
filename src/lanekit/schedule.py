"""Schedules: cron text and launchd tables -> StartCalendarInterval entries (launchd semantics).

Pure functions only: parsing, next fire times, plain-English descriptions, collisions.
"""

from __future__ import annotations

from dataclasses import dataclass

PLIST_KEYS = ("Month", "Day", "Weekday", "Hour", "Minute")


@dataclass(frozen=True, slots=True, order=True)
class CalendarEntry:
    """One StartCalendarInterval dict; None is launchd's wildcard (the key is omitted)."""

    month: int | None = None
    day: int | None = None
    weekday: int | None = None
    hour: int | None = None
    minute: int | None = None

    def to_plist(self) -> dict[str, int]:
        """The plist dict with wildcard keys omitted, e.g. {"Hour": 10, "Minute": 40}."""
        values = (self.month, self.day, self.weekday, self.hour, self.minute)
        return {k: v for k, v in zip(PLIST_KEYS, values, strict=True) if v is not None}


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a lane fires: calendar entries (StartCalendarInterval), an interval, or neither.

    A lane with neither runs only when kicked (or at load with run_at_load).
    """

    calendar: tuple[CalendarEntry, ...] = ()
    interval: int | None = None
    """StartInterval in seconds."""

    @property
    def is_empty(self) -> bool:
        """True when the lane only runs on demand."""
        return not self.calendar and self.interval is None
