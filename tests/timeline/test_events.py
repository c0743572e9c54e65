"""Lane-log lines -> typed events: the one table, and tolerance of what it does not know."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from lanekit.timeline.events import RULES, Event, Kind, classify, parse_ts, to_event


@pytest.mark.parametrize(
    ("event", "fields", "kind"),
    [
        ("start", {"pid": "7"}, Kind.START),
        ("finish", {"exit": "0", "reason": "empty"}, Kind.FINISH),
        ("error", {"exit": "69"}, Kind.ERROR),
        ("skipped", {"reason": "lane-busy"}, Kind.BUSY),
        ("skipped", {"reason": "running", "by": "apply", "pid": "7"}, Kind.RELOAD_SKIPPED),
        ("skipped", {"reason": "already-succeeded"}, Kind.JOB_SKIPPED),
        ("claimed", {"attempt": "1"}, Kind.CLAIMED),
        ("done", {"exit": "0"}, Kind.DONE),
        ("failed", {"exit": "3"}, Kind.FAILED),
        ("requeued", {"reason": "signal"}, Kind.REQUEUED),
        ("recovered", {"to": "queue"}, Kind.RECOVERED),
        ("applied", {"action": "create", "by": "apply"}, Kind.INSTALLED),
        ("applied", {"action": "update", "by": "apply"}, Kind.RELOADED),
        ("throttled", {"by": "kick"}, Kind.THROTTLED),
        ("paused", {"by": "pause"}, Kind.OTHER),
        ("timeout", {"job": "x"}, Kind.OTHER),
    ],
)
def test_classify_table(event: str, fields: dict[str, str], kind: Kind) -> None:
    """Each logged event maps to one kind; an event this version does not know is `other`."""
    assert classify(event, fields) is kind


def test_every_kind_but_other_has_a_rule() -> None:
    """A kind nothing maps to would be dead vocabulary: every kind except `other` has a row."""
    assert {rule.kind for rule in RULES} == set(Kind) - {Kind.OTHER}


def test_to_event_keeps_unknown_fields_and_events() -> None:
    """An unknown event keeps its name and every field (for --json); ts, lane, event and job
    become attributes."""
    fields = {
        "ts": "2026-11-30T15:40:00.250Z",
        "lane": "funnel",
        "event": "orphan-settled",
        "job": "j1",
        "exit": "0",
        "new_key": "v",
    }
    event = to_event(fields, "other-name")
    assert event is not None
    assert event.kind is Kind.OTHER
    assert event.name == "orphan-settled"
    assert event.lane == "funnel"
    assert event.job == "j1"
    assert dict(event.fields) == {"exit": "0", "new_key": "v"}
    assert event.at == datetime(2026, 11, 30, 15, 40, 0, 250000, tzinfo=UTC)
    assert event.number("exit") == 0
    assert event.number("new_key") is None


def test_to_event_builds_what_the_dataclass_builds() -> None:
    """to_event makes its Event without Event's __init__ (figure (f)); the object is the one
    Event(...) makes from the same values: every field, equality, frozenness. A field added
    to Event without a place in to_event's constructor fails here."""
    fields = {"ts": "2026-11-30T15:40:00.250Z", "event": "claimed", "job": "j1", "attempt": "2"}
    event = to_event(fields, "funnel")
    assert event is not None
    values = {f.name: getattr(event, f.name) for f in dataclasses.fields(Event)}
    assert values == {
        "at": datetime(2026, 11, 30, 15, 40, 0, 250000, tzinfo=UTC),
        "lane": "funnel",
        "kind": Kind.CLAIMED,
        "name": "claimed",
        "job": "j1",
        "fields": {"attempt": "2"},
    }
    assert event == Event(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.lane = "other"  # type: ignore[misc]
    assert fields == {  # the caller's mapping is copied, not emptied
        "ts": "2026-11-30T15:40:00.250Z",
        "event": "claimed",
        "job": "j1",
        "attempt": "2",
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"lane": "x", "event": "start"},
        {"ts": "yesterday", "lane": "x", "event": "start"},
        {"ts": "2026-11-30T15:40:00.250Z", "lane": "x"},
    ],
)
def test_to_event_refuses_torn_lines(fields: dict[str, str]) -> None:
    """A line without a usable ts or event (torn after a disk-full) is no event, not an error."""
    assert to_event(fields, "x") is None


def test_parse_ts_is_utc() -> None:
    """Log timestamps are UTC with a Z; an offset-less one is taken as UTC too."""
    assert parse_ts("2026-11-30T15:40:00.000Z") == datetime(2026, 11, 30, 15, 40, tzinfo=UTC)
    assert parse_ts("2026-11-30T15:40:00") == datetime(2026, 11, 30, 15, 40, tzinfo=UTC)
    offset = parse_ts("2026-11-30T17:40:00+02:00")
    assert offset == datetime(2026, 11, 30, 15, 40, tzinfo=UTC)
    assert offset is not None
    assert offset.tzinfo is UTC
