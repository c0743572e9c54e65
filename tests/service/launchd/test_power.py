"""`pmset -g log` parsing on real captures (tests/launchd/samples/macos-tools/pmset-log-*):
Sleep, Wake and DarkWake entries with their times, and the sleep spans made of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from lanekit.service.launchd.power import PowerEvent, asleep_at, parse_pmset_log, sleep_spans

TOOLS = Path(__file__).resolve().parent / "samples" / "macos-tools"


def capture(name: str) -> str:
    """A capture's output (after its `# ---` line)."""
    return (TOOLS / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


def at(text: str) -> datetime:
    """A pmset timestamp."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S %z")


def test_entries_and_spans_of_a_clamshell_night() -> None:
    """Every line of the capture is an entry, with its offset and `N secs`; "Entering DarkWake
    state" is a dark wake, not sleep; two sleeps, each until the next wake."""
    entries = parse_pmset_log(capture("pmset-log-01"))
    assert [e.event for e in entries] == [
        PowerEvent.SLEEP,
        PowerEvent.WAKE,
        PowerEvent.DARK_WAKE,
        PowerEvent.WAKE,
        PowerEvent.SLEEP,
        PowerEvent.DARK_WAKE,
        PowerEvent.WAKE,
        PowerEvent.DARK_WAKE,
        PowerEvent.WAKE,
    ]
    first = entries[0]
    assert first.at == at("2021-01-21 18:56:24 +0100")
    assert first.at.utcoffset() == timedelta(hours=1)
    assert first.seconds == 21
    assert first.message.startswith("Entering Sleep state due to 'Clamshell Sleep'")
    assert entries[3].seconds is None
    spans = sleep_spans(entries)
    assert [(s.start, s.end, s.reason) for s in spans] == [
        (at("2021-01-21 18:56:24 +0100"), at("2021-01-21 18:56:45 +0100"), "Clamshell Sleep"),
        (at("2021-01-21 20:15:17 +0100"), at("2021-01-21 20:15:31 +0100"), "Clamshell Sleep"),
    ]
    # each span agrees with the duration its Sleep line states
    assert [int((s.end - s.start).total_seconds()) for s in spans] == [21, 14]


def test_a_sleep_without_its_wake_line_ends_by_its_duration() -> None:
    """Only the Sleep line of a 54731 s sleep is in the capture (the rest are other domains):
    it ends 54731 s after it began, and a time inside it is asleep, in any timezone."""
    entries = parse_pmset_log(capture("pmset-log-02"))
    assert [(e.event, e.seconds) for e in entries] == [(PowerEvent.SLEEP, 54731)]
    [span] = sleep_spans(entries)
    assert span.start == at("2020-08-29 08:11:59 +0800")
    assert span.end == at("2020-08-29 23:24:10 +0800")
    noon_utc = datetime(2020, 8, 29, 4, 0, tzinfo=UTC)  # 12:00 at +0800
    assert asleep_at([span], noon_utc) == span
    assert asleep_at([span], span.end + timedelta(seconds=1)) is None
    assert asleep_at([span], span.start - timedelta(seconds=1)) is None


def test_headers_and_other_domains_are_not_entries() -> None:
    """Section summary, column header, rule, UUID, Assertions and Notification lines (a paste
    with spaces for tabs) give no entry."""
    assert parse_pmset_log(capture("pmset-log-03")) == []
    assert parse_pmset_log("") == []


def test_idle_sleeps_with_a_last_one_still_open() -> None:
    """Five idle sleeps; the last has no wake after it in the capture: 9 s by its line."""
    spans = sleep_spans(parse_pmset_log(capture("pmset-log-04")))
    assert [s.reason for s in spans] == ["Idle Sleep"] * 5
    assert [int((s.end - s.start).total_seconds()) for s in spans] == [8, 8, 12, 9, 9]
    assert spans[-1].start == at("2021-06-04 17:17:12 +0530")
