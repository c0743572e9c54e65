"""Alerts: doctor's findings as the watchdog remembers and sends them, and the pure diff.

One vocabulary with doctor: an alert is the findings of ONE check on ONE subject (lane, plist
or queue), keyed by (check, subject); several findings of one check on one subject (three
orphaned jobs) are one alert that says how many. `diff` compares what is open now with what
was remembered and decides, with no I/O, which notices a pass sends:

  new       open now, not remembered (or `renewed`: the problem grew, e.g. more jobs failed)
  repeat    remembered and still open, last sent at least `repeat` ago (0: never)
  resolved  remembered, not open now: one notice, then forgotten
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from lanekit.doctor import Finding, Severity, SubjectKind
from lanekit.state.schemas import NOTICE_SCHEMA


class NoticeKind(StrEnum):
    """Why a notice is sent."""

    NEW = "new"
    REPEAT = "repeat"
    RESOLVED = "resolved"
    DIGEST = "digest"
    TEST = "test"
    """`lanekit watch --test` (and selftest): proves a channel shows what it takes."""


@dataclass(frozen=True, slots=True)
class Alert:
    """One open problem: what doctor's check `check` says about `subject`."""

    check: str
    severity: Severity
    subject: str
    kind: SubjectKind
    lanes: tuple[str, ...]
    message: str
    fix: str
    renewed: bool = field(default=False, compare=False)
    """The problem grew since the last pass (more jobs failed): it is sent as new again."""

    @property
    def key(self) -> str:
        """`check kind:subject`: a lane and a queue may share a name."""
        return alert_key(self.check, self.kind, self.subject)


def alert_key(check: str, kind: SubjectKind | str, subject: str) -> str:
    """The memory key of the alert of `check` on a subject."""
    return f"{check} {kind}:{subject}"


def alerts_from(findings: Iterable[Finding]) -> list[Alert]:
    """One alert per (check, subject), in the order doctor reported them; the first finding
    speaks for the others, which are counted."""
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(alert_key(finding.id, finding.kind, finding.subject), []).append(finding)
    alerts = []
    for same in grouped.values():
        first = same[0]
        more = len(same) - 1
        message = first.message + (f" (and {more} more like it)" if more else "")
        alerts.append(
            Alert(
                check=first.id,
                severity=min((f.severity for f in same), key=lambda s: s.rank),
                subject=first.subject,
                kind=first.kind,
                lanes=first.lanes,
                message=message,
                fix=first.fix,
            )
        )
    return alerts


@dataclass(frozen=True, slots=True)
class Remembered:
    """An open alert as the memory keeps it between passes."""

    alert: Alert
    first_seen: datetime
    last_sent: datetime


@dataclass(frozen=True, slots=True)
class Notice:
    """One message a pass sends through every channel."""

    kind: NoticeKind
    check: str
    severity: Severity
    subject: str
    subject_kind: str
    """`lane`, `plist`, `queue` (doctor's SubjectKind), or `project` for a digest."""
    lanes: tuple[str, ...]
    message: str
    fix: str
    first_seen: datetime
    at: datetime
    """When the pass issued it (naive local time, like the pass's clock)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """The digest's per-lane figures (empty for alerts)."""

    @classmethod
    def of(cls, kind: NoticeKind, alert: Alert, *, first_seen: datetime, at: datetime) -> Notice:
        """The notice of `kind` about `alert`."""
        return cls(
            kind=kind,
            check=alert.check,
            severity=alert.severity,
            subject=alert.subject,
            subject_kind=str(alert.kind),
            lanes=alert.lanes,
            message=alert.message,
            fix=alert.fix,
            first_seen=first_seen,
            at=at,
        )

    @property
    def title(self) -> str:
        """`lanekit: funnel (error)`: what Notification Center shows in bold."""
        if self.kind is NoticeKind.DIGEST:
            return "lanekit: daily digest"
        if self.kind is NoticeKind.TEST:
            return "lanekit: test notice"
        what = "resolved" if self.kind is NoticeKind.RESOLVED else str(self.severity)
        return f"lanekit: {self.subject} ({what})"

    @property
    def text(self) -> str:
        """The sentence a person reads: the problem and its fix, or that it is resolved (in
        words of its own: the old problem's text would read as the problem again)."""
        if self.kind is NoticeKind.RESOLVED:
            since = f"{self.first_seen:%Y-%m-%d %H:%M}"
            return (
                f"resolved: {self.check} no longer finds a problem with {self.subject_kind} "
                f"{self.subject} (open since {since})."
            )
        if self.kind in (NoticeKind.DIGEST, NoticeKind.TEST):
            return self.message
        again = "still open: " if self.kind is NoticeKind.REPEAT else ""
        return f"{again}{self.message} Fix: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        """The notice document (docs/json.md; keys pinned by a contract test)."""
        return {
            "schema": NOTICE_SCHEMA,
            "kind": str(self.kind),
            "id": self.check,
            "severity": str(self.severity),
            "subject": self.subject,
            "subject_kind": self.subject_kind,
            "lanes": list(self.lanes),
            "message": self.message,
            "fix": self.fix,
            "title": self.title,
            "text": self.text,
            "first_seen": iso(self.first_seen),
            "sent_at": iso(self.at),
            "details": dict(self.details),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Notice:
        """A notice read back from the memory's outbox (KeyError/ValueError when damaged)."""
        return cls(
            kind=NoticeKind(data["kind"]),
            check=str(data["id"]),
            severity=Severity(data["severity"]),
            subject=str(data["subject"]),
            subject_kind=str(data["subject_kind"]),
            lanes=tuple(str(name) for name in data["lanes"]),
            message=str(data["message"]),
            fix=str(data["fix"]),
            first_seen=from_iso(str(data["first_seen"])),
            at=from_iso(str(data["sent_at"])),
            details=dict(data.get("details") or {}),
        )


def iso(when: datetime) -> str:
    """A naive local time as ISO 8601 with its UTC offset, to the second."""
    return when.astimezone().isoformat(timespec="seconds")


def from_iso(text: str) -> datetime:
    """The inverse of `iso`: naive local time."""
    moment = datetime.fromisoformat(text)
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo else moment


@dataclass(frozen=True, slots=True)
class Diff:
    """What one pass sends, and what it remembers afterwards."""

    notices: tuple[Notice, ...]
    remembered: Mapping[str, Remembered]


def diff(
    open_now: Sequence[Alert],
    remembered: Mapping[str, Remembered],
    *,
    now: datetime,
    repeat: float,
) -> Diff:
    """The notices for `open_now` given `remembered` (see the module docstring); `repeat` in
    seconds, 0 = never. Pure: the same inputs give the same notices."""
    notices: list[Notice] = []
    kept: dict[str, Remembered] = {}
    for alert in open_now:
        before = remembered.get(alert.key)
        if before is None or alert.renewed:
            first_seen = now if before is None else before.first_seen
            notices.append(Notice.of(NoticeKind.NEW, alert, first_seen=first_seen, at=now))
            kept[alert.key] = Remembered(replace(alert, renewed=False), first_seen, now)
        elif repeat > 0 and (now - before.last_sent).total_seconds() >= repeat:
            notices.append(
                Notice.of(NoticeKind.REPEAT, alert, first_seen=before.first_seen, at=now)
            )
            kept[alert.key] = Remembered(alert, before.first_seen, now)
        else:
            kept[alert.key] = Remembered(alert, before.first_seen, before.last_sent)
    for key, before in remembered.items():
        if key not in kept:
            notices.append(
                Notice.of(NoticeKind.RESOLVED, before.alert, first_seen=before.first_seen, at=now)
            )
    return Diff(tuple(notices), kept)
