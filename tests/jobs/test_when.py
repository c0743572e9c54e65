"""When a job for later may first run: `--at TIME` and `--delay DURATION` on the command's
clock (lanekit.jobs.when)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lanekit.errors import UsageError
from lanekit.jobs.when import not_before, parse_at, parse_delay
from lanekit.state.clock import REAL, Clock


def test_delay_counts_from_the_commands_clock() -> None:
    """--delay 15m is 900 s after now, on the emulated clock where it is ahead."""
    ahead = Clock(86400.0)
    assert abs(parse_delay("15m", REAL) - (REAL.time() + 900)) < 2
    assert abs(parse_delay("1h30m", ahead) - (ahead.time() + 5400)) < 2
    with pytest.raises(UsageError, match=r"--delay 'soon'"):
        parse_delay("soon", REAL)


def test_at_a_time_of_day_is_the_next_such_minute() -> None:
    """HH:MM is today's when still ahead, else tomorrow's; always within a day."""
    now = REAL.now()
    soon = (now + timedelta(minutes=2)).strftime("%H:%M")
    passed = (now - timedelta(minutes=2)).strftime("%H:%M")
    assert 0 < parse_at(soon, REAL) - REAL.time() <= 180
    assert 86000 < parse_at(passed, REAL) - REAL.time() <= 86400
    with pytest.raises(UsageError, match="not a time of day"):
        parse_at("25:00", REAL)


def test_at_a_date_and_time_is_local_and_never_past() -> None:
    """A full local date-time is taken as such (a zone when given); a past one is refused."""
    later = datetime.now() + timedelta(days=2)
    text = later.strftime("%Y-%m-%d %H:%M")
    assert abs(parse_at(text, REAL) - later.replace(second=0, microsecond=0).timestamp()) < 2
    zoned = (datetime.now().astimezone() + timedelta(hours=5)).isoformat(timespec="seconds")
    assert abs(parse_at(zoned, REAL) - (REAL.time() + 5 * 3600)) < 3
    with pytest.raises(UsageError, match="already past"):
        parse_at("2001-01-01 09:00", REAL)
    with pytest.raises(UsageError, match="not a time"):
        parse_at("tomorrow", REAL)


def test_at_and_delay_together_are_refused() -> None:
    """One of them, or neither (None: at the next run)."""
    assert not_before(None, None, REAL) is None
    with pytest.raises(UsageError, match="either --at or --delay"):
        not_before("09:00", "1h", REAL)
