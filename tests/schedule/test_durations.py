"""Durations (`every`, `timeout`, ...: lanekit.schedule.durations)."""

from __future__ import annotations

import pytest

from lanekit.schedule import (
    ScheduleError,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("1h", 3600),
        ("2d", 172800),
        ("1h30m", 5400),
        ("1d2h3m4s", 93784),
        (" 15M ", 900),
        ("90", 90),
        (90, 90),
    ],
)
def test_parse_duration(text: str | int, seconds: int) -> None:
    """Units s/m/h/d, combined largest first; a bare number is seconds."""
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", 'duration "0" must be more than zero'),
        ("0m", 'duration "0m" must be more than zero'),
        (0, "duration 0 must be more than zero"),
        (-5, "duration -5 must be more than zero"),
        ("-5m", 'duration "-5m" is not valid'),
        ("abc", 'duration "abc" is not valid'),
        ("1.5h", 'duration "1.5h" is not valid'),
        ("30m1h", 'duration "30m1h" is not valid'),
        ("", 'duration "" is not valid'),
        (True, "duration True is not valid"),
    ],
)
def test_bad_duration(text: str | int, message: str) -> None:
    """Zero, negative, out-of-order units and garbage are refused with the accepted forms."""
    with pytest.raises(ScheduleError) as info:
        parse_duration(text)
    assert info.value.message == message
    assert "15m" in info.value.hint
