"""The alert model and the pure diff (new / still open / repeat / resolved), as tables."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lanekit.doctor import Finding, Severity, SubjectKind
from lanekit.watch.alerts import (
    Alert,
    Notice,
    NoticeKind,
    Remembered,
    alerts_from,
    diff,
    from_iso,
    iso,
)

T0 = datetime(2026, 12, 1, 9, 0, 0)
HOUR = 3600.0


def _alert(check: str = "launchd.exit-78", subject: str = "funnel", **kw: object) -> Alert:
    base: dict[str, object] = {
        "check": check,
        "severity": Severity.ERROR,
        "subject": subject,
        "kind": SubjectKind.LANE,
        "lanes": (subject,),
        "message": f"{check} on {subject}.",
        "fix": "lanekit doctor",
    }
    base.update(kw)
    return Alert(**base)  # type: ignore[arg-type]


def _kept(alert: Alert, first: datetime, last: datetime) -> dict[str, Remembered]:
    return {alert.key: Remembered(alert, first, last)}


A = _alert()
B = _alert("queue.stale-claim", "notes", kind=SubjectKind.QUEUE)


@pytest.mark.parametrize(
    ("name", "open_now", "before", "now", "repeat", "kinds"),
    [
        ("new", [A], {}, T0, 6 * HOUR, [NoticeKind.NEW]),
        ("still open", [A], _kept(A, T0, T0), T0 + timedelta(hours=1), 6 * HOUR, []),
        ("repeat due", [A], _kept(A, T0, T0), T0 + timedelta(hours=6), 6 * HOUR, ["repeat"]),
        ("repeat never", [A], _kept(A, T0, T0), T0 + timedelta(days=9), 0, []),
        ("resolved", [], _kept(A, T0, T0), T0 + timedelta(minutes=5), 6 * HOUR, ["resolved"]),
        ("nothing", [], {}, T0, 6 * HOUR, []),
        ("one of two", [A, B], _kept(A, T0, T0), T0, 6 * HOUR, ["new"]),
        ("renewed", [_alert(renewed=True)], _kept(A, T0, T0), T0, 6 * HOUR, ["new"]),
    ],
)
def test_diff_table(
    name: str,
    open_now: list[Alert],
    before: dict[str, Remembered],
    now: datetime,
    repeat: float,
    kinds: list[str],
) -> None:
    """Which notices a pass sends for what is open now against what it remembered."""
    result = diff(open_now, before, now=now, repeat=repeat)
    assert [n.kind for n in result.notices] == kinds, name
    assert set(result.remembered) == {a.key for a in open_now}, name


def test_diff_keeps_first_seen_and_moves_last_sent_on_repeat() -> None:
    """first_seen survives every pass; last_sent moves only when a notice goes out."""
    quiet = diff([A], _kept(A, T0, T0), now=T0 + timedelta(hours=1), repeat=6 * HOUR)
    assert quiet.remembered[A.key].last_sent == T0
    later = T0 + timedelta(hours=7)
    loud = diff([A], _kept(A, T0, T0), now=later, repeat=6 * HOUR)
    assert loud.remembered[A.key].first_seen == T0
    assert loud.remembered[A.key].last_sent == later
    assert loud.notices[0].first_seen == T0


def test_resolved_notice_carries_what_was_open() -> None:
    """The resolved notice repeats the alert it closes, so a reader knows which one."""
    [notice] = diff([], _kept(B, T0, T0), now=T0, repeat=0).notices
    assert (notice.check, notice.subject, notice.subject_kind) == (
        "queue.stale-claim",
        "notes",
        "queue",
    )
    assert notice.text.startswith("resolved: ")


def test_resolved_notice_does_not_repeat_the_problem_text() -> None:
    """Issue 32 item 12: a resolved notice that repeats the old problem (and its fix) reads
    as the problem again; it names the check and subject and says it is gone."""
    [notice] = diff([], _kept(B, T0, T0), now=T0, repeat=0).notices
    assert B.message not in notice.text
    assert B.fix not in notice.text
    assert "queue.stale-claim" in notice.text
    assert "no longer" in notice.text
    assert "notes" in notice.text


def test_findings_of_one_check_on_one_subject_are_one_alert() -> None:
    """Three orphaned jobs of one queue are one alert that counts them; another subject or
    another check is another alert."""
    queue = SubjectKind.QUEUE
    findings = [
        Finding("queue.orphaned-job", Severity.WARNING, "notes", f"job {n}.", "wait", kind=queue)
        for n in (1, 2, 3)
    ]
    findings.append(Finding("queue.orphaned-job", Severity.WARNING, "notes", "lane.", "x"))
    findings.append(
        Finding("queue.backlog", Severity.WARNING, "notes", "late.", "kick", kind=queue)
    )
    alerts = alerts_from(findings)
    assert [(a.check, a.kind) for a in alerts] == [
        ("queue.orphaned-job", SubjectKind.QUEUE),
        ("queue.orphaned-job", SubjectKind.LANE),
        ("queue.backlog", SubjectKind.QUEUE),
    ]
    assert alerts[0].message == "job 1. (and 2 more like it)"


def test_notice_round_trips_through_json() -> None:
    """A notice kept in the outbox reads back equal (times to the second)."""
    notice = Notice.of(NoticeKind.REPEAT, A, first_seen=T0, at=T0 + timedelta(hours=6))
    assert Notice.from_json(notice.to_json()) == notice
    assert from_iso(iso(T0)) == T0


def test_notice_text_and_title() -> None:
    """What a person reads: severity in the title; the fix after the message."""
    notice = Notice.of(NoticeKind.NEW, A, first_seen=T0, at=T0)
    assert notice.title == "lanekit: funnel (error)"
    assert notice.text == "launchd.exit-78 on funnel. Fix: lanekit doctor"
    again = Notice.of(NoticeKind.REPEAT, A, first_seen=T0, at=T0)
    assert again.text.startswith("still open: ")
