"""`lanekit watch --test`: one test notice through every channel the watchdog sends through,
and the user's answer whether it arrived (lanekit.state.confirmations keeps it per channel).

A channel that took a notice has not necessarily shown it: osascript exits 0 while macOS drops
the notice of an app without notification permission. So the test ends with a question only a
person can answer; the CLI asks it on a terminal and records the answer (record_answer).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lanekit.config import Config
from lanekit.config.watch import WATCH_LANE
from lanekit.doctor import Severity
from lanekit.errors import ExitCode
from lanekit.state.confirmations import Confirmation, load_confirmations, remember_confirmation
from lanekit.state.paths import Paths
from lanekit.state.schemas import WATCH_SCHEMA
from lanekit.watch.alerts import Notice, NoticeKind
from lanekit.watch.channels import OSASCRIPT, Channel, ChannelError

TEST_CHECK = "watch.test"


@dataclass(frozen=True, slots=True)
class ChannelTest:
    """What one channel did with the test notice."""

    channel: str
    error: str | None
    """Why the channel refused it; None: it took it (whether it was shown, only the user knows)."""
    confirmed: bool | None
    """The user's last answer for this channel before this test; None: never asked."""

    @property
    def sent(self) -> bool:
        """The channel took the notice."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class TestResult:
    """The test notice's fate on every channel."""

    label: str
    channels: tuple[ChannelTest, ...]

    @property
    def exit_code(self) -> ExitCode:
        """1 when no channel is on or one refused the notice, else 0."""
        ok = bool(self.channels) and all(c.sent for c in self.channels)
        return ExitCode.OK if ok else ExitCode.FAILURE

    def to_json(self) -> dict[str, Any]:
        """The `lanekit watch --test --json` document (docs/json.md)."""
        return {
            "schema": WATCH_SCHEMA,
            "label": self.label,
            "test": True,
            "channels": [
                {
                    "channel": c.channel,
                    "sent": c.sent,
                    "error": c.error,
                    "confirmed": c.confirmed,
                }
                for c in self.channels
            ],
        }


def test_notice(subject: str, at: datetime) -> Notice:
    """The test notice about the watchdog `subject` (its label)."""
    return Notice(
        kind=NoticeKind.TEST,
        check=TEST_CHECK,
        severity=Severity.INFO,
        subject=subject,
        subject_kind="project",
        lanes=(),
        message=(
            f"lanekit test notice from {subject}: if you can read this, the watchdog's "
            "alerts reach you. Answer y in the terminal that sent it."
        ),
        fix="",
        first_seen=at,
        at=at,
    )


def send_test(
    config: Config,
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    osascript: str = OSASCRIPT,
    channels: Sequence[Channel] | None = None,
    now: Callable[[], datetime] = datetime.now,
) -> TestResult:
    """Send one test notice through each channel of `config`'s watchdog (those `lanekit
    apply` installed; `channels` replaces them in a harness) and say what each did, with the
    user's earlier answer for it."""
    from lanekit.watch.watchdog import installed_channels

    env = os.environ if env is None else env
    label = config.lanes[WATCH_LANE].label
    chosen = (
        list(channels)
        if channels is not None
        else installed_channels(config, paths, env, osascript)[0]
    )
    return TestResult(label, tuple(_try(channel, label, now(), paths) for channel in chosen))


def _try(channel: Channel, label: str, at: datetime, paths: Paths) -> ChannelTest:
    before = load_confirmations(paths.state).get(channel.name)
    confirmed = None if before is None else before.arrived
    try:
        channel.send(test_notice(label, at))
    except ChannelError as exc:
        return ChannelTest(channel.name, exc.message, confirmed)
    return ChannelTest(channel.name, None, confirmed)


def record_answer(paths: Paths, channel: str, arrived: bool, at: datetime) -> None:
    """Remember whether the user saw `channel`'s test notice (doctor stops warning once yes)."""
    remember_confirmation(paths.state, Confirmation(channel, arrived, at.timestamp()))
