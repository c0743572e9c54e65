"""Properties over generated cron text: fire times agree with a minute scan, and entries
round-trip through their plist form."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from schedule_cases import (
    Cron,
    brute_force,
    crons,
    local_zone,
    optional,
    parsed,
)

from lanekit.schedule import (
    MAX_ENTRIES,
    CalendarEntry,
    describe,
    next_fires,
    parse_table,
)


@settings(max_examples=40, deadline=None)
@given(
    cron=crons(),
    after=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 12, 31)),
)
def test_next_fires_agree_with_brute_force(cron: Cron, after: datetime) -> None:
    """For random cron text, next_fires equals a minute scan of the following year."""
    entries = parsed(cron)
    with local_zone("UTC"):
        expected = brute_force(cron, after, 5, 366)
        horizon = after.replace(second=0, microsecond=0) + timedelta(days=366)
        got = [f for f in next_fires(entries, after, 5) if f < horizon]
    assert got == expected, cron.text


@settings(max_examples=50, deadline=None)
@given(cron=crons())
def test_cron_plist_round_trip(cron: Cron) -> None:
    """parse_cron -> to_plist -> parse_table gives back the same entries."""
    entries = parsed(cron)
    assert 1 <= len(entries) <= MAX_ENTRIES
    assert tuple(parse_table(e.to_plist(), strict=False) for e in entries) == entries


@given(
    entry=st.builds(
        CalendarEntry,
        month=optional(1, 12),
        day=optional(1, 28),
        weekday=optional(0, 6),
        hour=optional(0, 23),
        minute=optional(0, 59),
    )
)
def test_entry_round_trip(entry: CalendarEntry) -> None:
    """Any valid entry survives to_plist -> parse_table, and describe() is deterministic."""
    assert parse_table(entry.to_plist(), strict=False) == entry
    assert describe([entry]) == describe([entry])
    assert describe([entry])
