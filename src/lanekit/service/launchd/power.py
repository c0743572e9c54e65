"""When the Mac was asleep, from `pmset -g log` (no root needed): the evidence for a missed run.

Each entry line is `YYYY-MM-DD HH:MM:SS +ZZZZ <Domain padded to 20><TAB><message>`, the message
ending with `N secs` when pmset knows how long the state lasted. Only three domains matter:
`Sleep` ("Entering Sleep state due to ..."; "Entering DarkWake state" is a full wake turning
into a dark wake, not sleep), `Wake` and `DarkWake` (Power Nap and maintenance wakes). Every
other line (Assertions, Notification, Wake Requests, client acks, section headers) is skipped.
Real captures: tests/launchd/samples/macos-tools/pmset-log-*.txt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class PowerEvent(StrEnum):
    """The power log entries a sleep span is made of."""

    SLEEP = "Sleep"
    """The Mac went to sleep (`Entering Sleep state`)."""
    DARK_WAKE = "DarkWake"
    """A dark wake (display off, system up): from sleep, or a full wake dimming into one."""
    WAKE = "Wake"
    """A full wake (also `DarkWake to FullWake`)."""


@dataclass(frozen=True, slots=True)
class PowerEntry:
    """One Sleep, Wake or DarkWake line of `pmset -g log`."""

    at: datetime
    """When (timezone-aware, with the offset pmset printed)."""
    event: PowerEvent
    message: str
    seconds: int | None = None
    """How long pmset says the state lasted (`N secs`), when it says."""


@dataclass(frozen=True, slots=True)
class SleepSpan:
    """The Mac was asleep from `start` to `end` (timezone-aware)."""

    start: datetime
    end: datetime
    reason: str
    """Why it slept, as pmset says (`Clamshell Sleep`, `Idle Sleep`, `Software Sleep pid=N`)."""

    def covers(self, when: datetime) -> bool:
        """`when` (timezone-aware) fell in this sleep."""
        return self.start <= when <= self.end


_ENTRY = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}) "
    r"(?:(Sleep|Wake|DarkWake) *\t|(Sleep|Wake|DarkWake) {2,})(.*)$"
)
"""A tab ends the padded domain; some pastes have spaces instead (then at least two, so that
`Wake Requests` is not `Wake`)."""
_SECONDS = re.compile(r"(\d+) secs\s*$")
_REASON = re.compile(r"due to '([^']*)'")


def parse_pmset_log(text: str) -> list[PowerEntry]:
    """The Sleep, Wake and DarkWake entries of `pmset -g log`, in the log's order."""
    entries = []
    for line in text.splitlines():
        match = _ENTRY.match(line)
        if match is None:
            continue
        stamp, tabbed, spaced, message = match.groups()
        domain = PowerEvent(tabbed or spaced)
        message = message.strip()
        if domain is PowerEvent.SLEEP and message.startswith("Entering DarkWake"):
            domain = PowerEvent.DARK_WAKE
        elif domain is PowerEvent.SLEEP and not message.startswith("Entering Sleep"):
            continue
        seconds = _SECONDS.search(message)
        entries.append(
            PowerEntry(
                datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S %z"),
                domain,
                message,
                int(seconds.group(1)) if seconds else None,
            )
        )
    return entries


def sleep_spans(entries: Sequence[PowerEntry]) -> list[SleepSpan]:
    """Each sleep from its Sleep entry to the next entry (a Wake or DarkWake; a later Sleep
    means a wake came first), or, with nothing logged after it, for the seconds its Sleep line
    states (a sleep with neither is left out)."""
    spans = []
    for index, entry in enumerate(entries):
        if entry.event is not PowerEvent.SLEEP:
            continue
        end = next((later.at for later in entries[index + 1 :]), None)
        if end is None and entry.seconds is not None:
            end = entry.at + timedelta(seconds=entry.seconds)
        if end is None:
            continue
        reason = _REASON.search(entry.message)
        spans.append(SleepSpan(entry.at, end, reason.group(1) if reason else "sleep"))
    return spans


def asleep_at(spans: Sequence[SleepSpan], when: datetime) -> SleepSpan | None:
    """The sleep `when` (timezone-aware) fell in, or None."""
    return next((span for span in spans if span.covers(when)), None)
