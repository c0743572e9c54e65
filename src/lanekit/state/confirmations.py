"""Which watch channels the user said delivered a test notice (`lanekit watch --test`).

A channel that takes a notice has not shown it: on current macOS osascript's notice is filed as
Script Editor's, and without that app's notification permission (which osascript never asks
for) macOS drops it while osascript exits 0. Only the person in front of the screen can say it
arrived, so `lanekit watch --test` asks and this file remembers the answer per channel
(`macos`, `command`, `webhook`); doctor's `watch.channel-unconfirmed` and `selftest` read it.

One JSON file in the state dir, written atomically, 0600, versioned (CONFIRMATIONS_SCHEMA); one
someone else could write is refused (exit 69), one that cannot be read counts as no answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lanekit.state.schemas import CONFIRMATIONS_SCHEMA
from lanekit.system.atomic import write_atomic
from lanekit.system.owned import read_regular, unsafe_error, unsafe_reason
from lanekit.system.strictjson import strict_loads

CONFIRMATIONS_NAME = "confirmed-channels.json"
MACOS_FIX = (
    "allow notifications for Script Editor (System Settings → Notifications → Script Editor → "
    "Allow notifications; osascript's notices are filed as Script Editor's and macOS drops them "
    "without asking), then run `lanekit watch --test` in a terminal and answer y"
)
"""What makes the `macos` channel show its notices, said by doctor, watch --test and selftest."""
NOT_AT_SCREEN = (
    "a notice sent while nobody is logged in at the screen is not shown at all (not even later)"
)
"""Said with every macos test notice: a confirmed channel still misses those."""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The user's answer about one channel's test notice."""

    channel: str
    arrived: bool
    at: float
    """Epoch seconds of the answer."""


def confirmations_path(state: Path) -> Path:
    """Where the answers are kept: `<state>/watch/confirmed-channels.json`."""
    return state / "watch" / CONFIRMATIONS_NAME


def load_confirmations(state: Path) -> dict[str, Confirmation]:
    """The last answer per channel; empty when none was given (or the file is damaged: then
    the question is simply asked again)."""
    path = confirmations_path(state)
    read = read_regular(path, "watch channel confirmations")
    if read is None:
        return {}
    data, info = read
    reason = unsafe_reason(info)
    if reason is not None:
        raise unsafe_error(path, reason, "watch channel confirmations", info)
    try:
        document = strict_loads(data)
        if not isinstance(document, dict) or document.get("schema") != CONFIRMATIONS_SCHEMA:
            return {}
        return {
            str(name): Confirmation(str(name), bool(item["arrived"]), float(item["at"]))
            for name, item in document["channels"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def remember_confirmation(state: Path, answer: Confirmation) -> None:
    """Record `answer`, replacing the channel's earlier one (atomically, 0600)."""
    known: Mapping[str, Confirmation] = {**load_confirmations(state), answer.channel: answer}
    document = {
        "schema": CONFIRMATIONS_SCHEMA,
        "channels": {
            name: {"arrived": item.arrived, "at": item.at} for name, item in sorted(known.items())
        },
    }
    data = (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()
    write_atomic(confirmations_path(state), data)


def confirmed(state: Path, channel: str) -> bool:
    """The user said `channel`'s last test notice arrived."""
    answer = load_confirmations(state).get(channel)
    return answer is not None and answer.arrived
