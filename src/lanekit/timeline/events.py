"""Lane-log lines -> typed timeline events, through one table.

The lane log is written by runners, `apply` and (later) other verbs; each adds events over
time. The reader must keep working when it meets one it does not know: an unknown event is
kept as `Kind.OTHER` with its name and fields (shown in --json, ignored by the layout), and a
new kind is one row in `RULES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


class Kind(StrEnum):
    """What an event means for the timeline (a closed vocabulary; `other` is the rest)."""

    START = "start"
    """A run took the lane lock and began."""
    FINISH = "finish"
    """A run ended normally (with `exit`, `reason` and its counts)."""
    ERROR = "error"
    """A run could not work at all (the command cannot start, the queue is unusable)."""
    BUSY = "busy"
    """A start found the lane's previous run still holding the lane lock: skipped."""
    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"
    REQUEUED = "requeued"
    RECOVERED = "recovered"
    """A dead owner's claim was given back (or failed) by this run."""
    JOB_SKIPPED = "job-skipped"
    """A claimed job that had already succeeded (the re-execution guard)."""
    INSTALLED = "installed"
    """`apply` installed and loaded the lane for the first time."""
    RELOADED = "reloaded"
    """`apply` (re)loaded the lane's plist."""
    RELOAD_SKIPPED = "reload-skipped"
    """`apply` did not reload the lane because it was running."""
    THROTTLED = "throttled"
    """A start request launchd postponed by ThrottleInterval."""
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Rule:
    """`event=<event>` with every `when` field equal maps to `kind` (first match wins)."""

    event: str
    kind: Kind
    when: Mapping[str, str] = field(default_factory=dict)


RULES: tuple[Rule, ...] = (
    Rule("start", Kind.START),
    Rule("finish", Kind.FINISH),
    Rule("error", Kind.ERROR),
    Rule("skipped", Kind.BUSY, {"reason": "lane-busy"}),
    Rule("skipped", Kind.RELOAD_SKIPPED, {"by": "apply"}),
    Rule("skipped", Kind.JOB_SKIPPED),
    Rule("claimed", Kind.CLAIMED),
    Rule("done", Kind.DONE),
    Rule("failed", Kind.FAILED),
    Rule("requeued", Kind.REQUEUED),
    Rule("recovered", Kind.RECOVERED),
    Rule("applied", Kind.INSTALLED, {"action": "create"}),
    Rule("applied", Kind.RELOADED),
    Rule("throttled", Kind.THROTTLED),
)
"""The whole event -> kind mapping (pinned as a table by tests/timeline/test_events.py)."""


RUN_KINDS = frozenset(
    {
        Kind.START,
        Kind.FINISH,
        Kind.ERROR,
        Kind.BUSY,
        Kind.CLAIMED,
        Kind.DONE,
        Kind.FAILED,
        Kind.REQUEUED,
        Kind.RECOVERED,
        Kind.JOB_SKIPPED,
    }
)
"""Kinds only a run of the lane writes: one of them after a fire means launchd started it
(`apply` writes reloaded/reload-skipped, which say nothing about a fire)."""


def _rules_by_event() -> dict[str, tuple[Rule, ...]]:
    grouped: dict[str, list[Rule]] = {}
    for rule in RULES:
        grouped.setdefault(rule.event, []).append(rule)
    return {event: tuple(rules) for event, rules in grouped.items()}


_RULES_BY_EVENT = _rules_by_event()
"""RULES by event name, in RULES' order: classify runs once per line of a day's timeline."""


def classify(event: str, fields: Mapping[str, str]) -> Kind:
    """The kind of a lane-log event, by RULES; `other` when no rule matches."""
    for rule in _RULES_BY_EVENT.get(event, ()):
        if all(fields.get(k) == v for k, v in rule.when.items()):
            return rule.kind
    return Kind.OTHER


@dataclass(frozen=True, slots=True)
class Event:
    """One lane-log line, typed."""

    at: datetime
    """When it was logged (aware, UTC)."""
    lane: str
    kind: Kind
    name: str
    """The event as logged (`skipped`, `claimed`, or one this version does not know)."""
    job: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    """Every other key of the line (exit, reason, attempt, error, pid, ...), as text."""

    def number(self, key: str) -> int | None:
        """An integer field, None when absent or not an integer."""
        text = self.fields.get(key)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            return None


def parse_ts(text: str) -> datetime | None:
    """A lane-log timestamp (`2026-12-01T10:40:00.123Z`) as an aware UTC datetime."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


_OWN_KEYS = frozenset({"ts", "lane", "event", "job"})
"""The keys an Event has fields of its own for; the rest go into Event.fields."""


def to_event(fields: Mapping[str, str], lane: str) -> Event | None:
    """A parsed logfmt line as an Event; None for a line without a usable ts or event (a torn
    line). `lane` names the lane whose log it came from (the line's own `lane=` may be absent)."""
    when = parse_ts(fields.get("ts", ""))
    name = fields.get("event")
    if when is None or not name:
        return None
    rest = {k: v for k, v in fields.items() if k not in _OWN_KEYS}
    # Positional: a frozen dataclass's keyword call costs a third more, once per event.
    return Event(
        when,
        fields.get("lane") or lane,
        classify(name, rest),
        name,
        fields.get("job") or None,
        rest,
    )
