"""`[watch]` in lanes.toml -> WatchSpec, and where the watchdog lane keeps its files.

The table is optional: without it there is no watchdog. With it, lanes.toml has one lane more,
`watch` (label `<label_prefix>.watch`), which lanekit.config builds from this spec: launchd
starts it every `every` and it runs one `lanekit watch` pass. The lane name `watch` and the
queue name `watch` are then the watchdog's own, and refused for lanes.toml's lanes and queues.

Errors are reported through lanes.toml's reader (lanekit.config), one line per bad key, in the
same `<file>: watch.<key>: <what is wrong>` form as every other key. A webhook URL is never
repeated in a message with its secret parts (lanekit.config.watch.redact_url).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

WATCH_LANE = "watch"
"""The watchdog's lane name (its label is `<label_prefix>.watch`) and its queue's name."""
WATCH_KEYS = (
    "every",
    "missed_after",
    "stale_claim_after",
    "repeat",
    "digest",
    "notify",
    "command",
    "webhook",
    "heartbeat",
)
NOTIFY_CHANNELS = ("macos",)
"""What `notify` may list; `command` and `webhook` are channels of their own keys."""
DEFAULT_EVERY = 300
DEFAULT_MISSED_AFTER = 900
DEFAULT_STALE_CLAIM_AFTER = 3600
DEFAULT_REPEAT = 6 * 3600
WATCH_COMMAND = ("/usr/bin/true",)
"""The watchdog lane's job command. It drains no jobs (launchd runs `lanekit watch`, its
entrypoint, not the runner), but a lane has a command; this one exists on every Mac and Linux
and needs no PATH, so doctor's command checks find nothing to say about it."""
MEMORY_NAME = "alerts.json"
HEARTBEAT_NAME = "heartbeat.url"

Key = tuple[str | int, ...]
_DIGEST_RE = r"(\d{1,2}):(\d{2})"
"""Compiled on first use (re caches it): only a `[watch]` with a `digest` asks."""


class ValueReader(Protocol):
    """The typed-value readers of lanes.toml's reader (lanekit.config), which report every
    error themselves and return None for a bad value."""

    def fail(self, key: Key, message: str, hint: str) -> None:
        """Record one error at `key`."""

    def known_keys(
        self, table: Mapping[str, Any], key: Key, allowed: Sequence[str], what: str
    ) -> None:
        """Report every key of `table` not in `allowed`."""

    def duration(self, table: Mapping[str, Any], key: Key, *, minimum: int) -> int | None:
        """A duration in seconds, at least `minimum`."""

    def string(self, table: Mapping[str, Any], key: Key) -> str | None:
        """A string a plist can carry."""

    def command(self, table: Mapping[str, Any], key: Key) -> tuple[str, ...] | None:
        """A non-empty argv of non-empty strings, `~` expanded."""


@dataclass(frozen=True, slots=True)
class WatchSpec:
    """The watchdog as lanes.toml's `[watch]` says (durations in seconds)."""

    every: int = DEFAULT_EVERY
    """The watchdog lane's StartInterval."""
    missed_after: int = DEFAULT_MISSED_AFTER
    """A fire with no run evidence this long after it is a missed run."""
    stale_claim_after: int = DEFAULT_STALE_CLAIM_AFTER
    """A claim older than this is an alert even while its owner is alive."""
    repeat: int = DEFAULT_REPEAT
    """Re-send a still-open alert after this long; 0 = never."""
    digest: time | None = None
    """Local time of the daily summary; None = no digest."""
    notify: tuple[str, ...] = ()
    """Named channels (`macos`)."""
    command: tuple[str, ...] | None = None
    """argv that gets each notice as one JSON object on stdin."""
    webhook: str | None = None
    """URL that gets each notice as an HTTP POST of the same JSON."""
    heartbeat: str | None = None
    """An off-machine dead man's switch (healthchecks.io convention): each pass GETs it, or
    POSTs its summary to `<url>/fail` when it found errors; when pings stop, the service tells
    the owner. A secret like the webhook: never written out in full."""

    @property
    def channels(self) -> tuple[str, ...]:
        """Every channel that is on, in delivery order."""
        named = [name for name in NOTIFY_CHANNELS if name in self.notify]
        if self.command is not None:
            named.append("command")
        if self.webhook is not None:
            named.append("webhook")
        return tuple(named)


def default_notify(platform: str) -> tuple[str, ...]:
    """Notification Center on a Mac; nothing elsewhere (there is no osascript)."""
    return ("macos",) if platform == "darwin" else ()


def watch_dir(state: Path, label: str) -> Path:
    """The watchdog lane's directory: its (empty) queue, its logs and its alert memory."""
    return state / "watch" / label


def memory_path(lane_dir: Path) -> Path:
    """Where a watchdog keeps its alert memory (lanekit.watch.memory)."""
    return lane_dir / MEMORY_NAME


def heartbeat_path(lane_dir: Path) -> Path:
    """Where `apply` writes the heartbeat URL (0600) for the watchdog's sh guard, which has no
    Python to read lanes.toml with; the URL never goes into the plist."""
    return lane_dir / HEARTBEAT_NAME


def webhook_digest(url: str) -> str:
    """What a snapshot keeps of a webhook URL (a secret: never written out): its SHA-256, so a
    pass can tell that lanes.toml's URL is still the one `lanekit apply` installed."""
    import hashlib

    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def fail_url(url: str) -> str:
    """`<url>/fail` (healthchecks.io's failure signal): `/fail` appended to the URL's path,
    its query kept (`https://hc-ping.com/KEY/slug?create=1` -> `.../slug/fail?create=1`)."""
    from urllib.parse import urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/fail"))


def redact_url(url: str) -> str:
    """`https://ntfy.example/…`: scheme and host only. Webhook URLs carry their secret in the
    userinfo, the query or the path (Slack's /services/T/B/SECRET), so none of those is shown."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unparsable URL)"
    rest = "/…" if (parts.path not in ("", "/") or parts.query or parts.fragment) else ""
    return f"{parts.scheme}://{host}{port}{rest}" if parts.scheme else "(a URL without a scheme)"


def read_watch(
    reader: ValueReader, table: Mapping[str, Any], *, platform: str = sys.platform
) -> WatchSpec | None:
    """`[watch]` as a WatchSpec; None when any key is bad (each reported through `reader`)."""
    key: Key = ("watch",)
    errors: list[bool] = []

    def seconds(name: str, default: int, minimum: int) -> int:
        value = reader.duration(table, (*key, name), minimum=minimum)
        if value is None and name in table:
            errors.append(True)
        return default if value is None else value

    reader.known_keys(table, key, WATCH_KEYS, "keys of [watch]")
    every = seconds("every", DEFAULT_EVERY, 1)
    missed_after = seconds("missed_after", DEFAULT_MISSED_AFTER, 1)
    stale_claim_after = seconds("stale_claim_after", DEFAULT_STALE_CLAIM_AFTER, 1)
    repeat = seconds("repeat", DEFAULT_REPEAT, 0)
    digest = _digest(reader, table, key, errors)
    notify = _notify(reader, table, key, errors, platform)
    command = reader.command(table, (*key, "command"))
    if command is None and "command" in table:
        errors.append(True)
    webhook = _url(reader, table, key, errors, "webhook")
    heartbeat = _url(reader, table, key, errors, "heartbeat")
    if errors or any(name not in WATCH_KEYS for name in table):
        return None
    return WatchSpec(
        every=every,
        missed_after=missed_after,
        stale_claim_after=stale_claim_after,
        repeat=repeat,
        digest=digest,
        notify=notify,
        command=command,
        webhook=webhook,
        heartbeat=heartbeat,
    )


def _digest(
    reader: ValueReader, table: Mapping[str, Any], key: Key, errors: list[bool]
) -> time | None:
    if "digest" not in table:
        return None
    text = reader.string(table, (*key, "digest"))
    if text is None:
        errors.append(True)
        return None
    found = re.fullmatch(_DIGEST_RE, text.strip())
    if found is None or int(found[1]) > 23 or int(found[2]) > 59:
        reader.fail(
            (*key, "digest"),
            f"{json.dumps(text)} is not a time of day",
            'write the local time as HH:MM, e.g. digest = "08:00"',
        )
        errors.append(True)
        return None
    return time(int(found[1]), int(found[2]))


def _notify(
    reader: ValueReader,
    table: Mapping[str, Any],
    key: Key,
    errors: list[bool],
    platform: str,
) -> tuple[str, ...]:
    if "notify" not in table:
        return default_notify(platform)
    value = table["notify"]
    hint = (
        f'write notify = ["macos"], or notify = [] for none (channels: '
        f"{', '.join(NOTIFY_CHANNELS)})"
    )
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        reader.fail((*key, "notify"), "expected an array of channel names", hint)
        errors.append(True)
        return ()
    unknown = [item for item in value if item not in NOTIFY_CHANNELS]
    if unknown:
        reader.fail(
            (*key, "notify"),
            f"unknown channel {json.dumps(unknown[0])} (command and webhook are keys of their own)",
            hint,
        )
        errors.append(True)
        return ()
    return tuple(dict.fromkeys(value))


def _url(
    reader: ValueReader, table: Mapping[str, Any], key: Key, errors: list[bool], name: str
) -> str | None:
    """`webhook` or `heartbeat`: an http(s) URL with a host."""
    if name not in table:
        return None
    url = reader.string(table, (*key, name))
    if url is None:
        errors.append(True)
        return None
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        ok = False
    if not ok:
        reader.fail(
            (*key, name),
            f"{redact_url(url)} is not an http:// or https:// URL with a host",
            f'write {name} = "https://host/path"',
        )
        errors.append(True)
        return None
    return url
