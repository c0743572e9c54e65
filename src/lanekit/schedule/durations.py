"""Durations: `90s`, `15m`, `1h30m`, `2d` to seconds, and seconds back to words."""

from __future__ import annotations

import re

from lanekit.schedule.model import ScheduleError

_DURATION_HINT = "write a number with a unit: 90s, 15m, 1h, 2d, or combined like 1h30m"
_DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", re.ASCII)
_UNIT_SECONDS = (86400, 3600, 60, 1)


def parse_duration(text: str | int) -> int:
    """Seconds from "90s", "15m", "1h", "2d", "1h30m" (units in that order), or a bare integer
    (int or digit string) meaning seconds. Zero, negative and anything else are errors.
    """
    if isinstance(text, bool) or not isinstance(text, int | str):
        raise ScheduleError(f"duration {text!r} is not valid", _DURATION_HINT)
    if isinstance(text, int):
        if text <= 0:
            raise ScheduleError(f"duration {text} must be more than zero", _DURATION_HINT)
        return text
    cleaned = text.strip().lower()
    if cleaned.isascii() and cleaned.isdigit():
        seconds = int(cleaned)
    else:
        match = _DURATION_RE.fullmatch(cleaned)
        if not cleaned or match is None:
            raise ScheduleError(f'duration "{text}" is not valid', _DURATION_HINT)
        seconds = sum(
            int(group) * unit
            for group, unit in zip(match.groups(), _UNIT_SECONDS, strict=True)
            if group is not None
        )
    if seconds <= 0:
        raise ScheduleError(f'duration "{text}" must be more than zero', _DURATION_HINT)
    return seconds


def format_duration(seconds: float) -> str:
    """The inverse of parse_duration for whole seconds: 1800 -> "30m", 5400 -> "1h30m",
    90 -> "1m30s"; fractions are rounded (0.5 s and less reads "0s")."""
    left = round(seconds)
    parts = []
    for unit, name in zip(_UNIT_SECONDS, "dhms", strict=True):
        if left >= unit:
            parts.append(f"{left // unit}{name}")
            left %= unit
    return "".join(parts) or "0s"
