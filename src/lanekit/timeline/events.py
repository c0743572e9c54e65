"""Lane-log lines -> typed timeline events, through one table.

The lane log is written by runners, `apply` and (later) other verbs; each adds events over
time. The reader must keep working when it meets one it does not know: an unknown event is
kept as `Kind.OTHER` with its name and fields (shown in --json, ignored by the layout), and a
new kind is one row in `RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from lanekit.run.lanelog import EventName, Reason


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
    Rule(EventName.START, Kind.START),
    Rule(EventName.FINISH, Kind.FINISH),
    Rule(EventName.ERROR, Kind.ERROR),
    Rule(EventName.SKIPPED, Kind.BUSY, {"reason": Reason.LANE_BUSY}),
    Rule(EventName.SKIPPED, Kind.RELOAD_SKIPPED, {"by": "apply"}),
    Rule(EventName.SKIPPED, Kind.JOB_SKIPPED),
    Rule(EventName.CLAIMED, Kind.CLAIMED),
    Rule(EventName.DONE, Kind.DONE),
    Rule(EventName.FAILED, Kind.FAILED),
    Rule(EventName.REQUEUED, Kind.REQUEUED),
    Rule(EventName.RECOVERED, Kind.RECOVERED),
    Rule(EventName.APPLIED, Kind.INSTALLED, {"action": "create"}),
    Rule(EventName.APPLIED, Kind.RELOADED),
    Rule(EventName.THROTTLED, Kind.THROTTLED),
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
        # A loop, not all() over a generator: most rules have no `when`, and building the
        # generator cost as much as the rest of classify, once per line of a day.
        for key, value in rule.when.items():
            if fields.get(key) != value:
                break
        else:
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


def _event_factory() -> Callable[[datetime, str, Kind, str, str | None, Mapping[str, str]], Event]:
    """Event(...) for to_event at half the cost, once per line of a day's timeline (figure
    (f)): a frozen dataclass's __init__ sets each field through object.__setattr__, this sets
    the slots through their descriptors. A renamed field fails here at import; an added one
    fails tests/timeline/test_events.py, which compares the two constructors' objects."""
    slots = Event.__dict__
    set_at, set_lane, set_kind, set_name, set_job, set_fields = (
        slots[name].__set__ for name in ("at", "lane", "kind", "name", "job", "fields")
    )
    new = object.__new__

    def new_event(  # noqa: PLR0917 - Event's fields, in Event's order
        at: datetime, lane: str, kind: Kind, name: str, job: str | None, rest: Mapping[str, str]
    ) -> Event:
        event: Event = new(Event)
        set_at(event, at)
        set_lane(event, lane)
        set_kind(event, kind)
        set_name(event, name)
        set_job(event, job)
        set_fields(event, rest)
        return event

    return new_event


_new_event = _event_factory()


def parse_ts(text: str) -> datetime | None:
    """A lane-log timestamp (`2026-12-01T10:40:00.123Z`) as an aware UTC datetime."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is UTC:
        return when  # the `Z` lanekit writes: already UTC, no second datetime to build
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


_OWN_KEYS = ("ts", "lane", "event", "job")
"""The keys an Event has fields of its own for; the rest go into Event.fields."""


def to_event(fields: Mapping[str, str], lane: str) -> Event | None:
    """A parsed logfmt line as an Event; None for a line without a usable ts or event (a torn
    line). `lane` names the lane whose log it came from (the line's own `lane=` may be absent)."""
    when = parse_ts(fields.get("ts", ""))
    name = fields.get("event")
    if when is None or not name:
        return None
    rest = dict(fields)
    # Popped from a copy, not filtered by a comprehension: half the time, once per event.
    for key in _OWN_KEYS:
        rest.pop(key, None)
    return _new_event(
        when,
        fields.get("lane") or lane,
        classify(name, rest),
        name,
        fields.get("job") or None,
        rest,
    )
