"""The off-machine heartbeat (`[watch] heartbeat`): what tells the owner when the Mac, its
Python or the watchdog cannot run at all, which no local channel can.

The healthchecks.io convention (also Cronitor's and Dead Man's Snitch's shape): after each pass
a GET of the URL says "alive and fine"; when the pass found errors (an open alert of severity
error, or a channel that refused a notice) a POST of its summary to `<url>/fail` says "alive,
but something is wrong" (healthchecks.io keeps the first 100 kB of a ping's body). When pings
stop, the service alerts by its own means.

A ping never blocks or fails the pass: a short timeout, and any error, timeout or HTTP error
status becomes a `Ping` with `ok` false that the pass logs and reports. The URL is a secret
(its path is the check's key): only lanekit.config.watch.redact_url's scheme and host are ever
shown, in messages, logs and `--json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lanekit.config.watch import fail_url, redact_url

HEARTBEAT_TIMEOUT = 5.0
"""Seconds a ping may take: a pass waits no longer for a service that hangs."""
BODY_LIMIT = 100_000
"""healthchecks.io logs the first 100 kB of a ping's body; a longer summary is cut there."""


class PingKind(StrEnum):
    """Which signal a pass sent."""

    SUCCESS = "success"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Ping:
    """What became of one heartbeat ping."""

    kind: PingKind
    shown: str
    """The URL as it may be shown: scheme and host only."""
    error: str | None = None
    """Why the ping failed (never with the URL); None: the service answered 2xx/3xx."""

    @property
    def ok(self) -> bool:
        """The service took the ping."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """`heartbeat` in `lanekit watch --json`."""
        return {"url": self.shown, "kind": str(self.kind), "ok": self.ok, "error": self.error}


def ping(url: str, *, failed: bool, summary: str, timeout: float = HEARTBEAT_TIMEOUT) -> Ping:
    """GET `url`, or POST `summary` to `<url>/fail` when `failed`; never raises."""
    # Imported here: urllib.request brings http, ssl and email, which only a heartbeat needs.
    import urllib.error
    import urllib.request

    from lanekit.watch.channels import http_failure, with_basic_auth

    kind = PingKind.FAIL if failed else PingKind.SUCCESS
    shown = redact_url(url)
    target, headers = with_basic_auth(fail_url(url) if failed else url)
    body = summary.encode("utf-8")[:BODY_LIMIT] if failed else None
    request = urllib.request.Request(  # noqa: S310  (http/https only: lanekit.config.watch)
        target,
        data=body,
        headers={"User-Agent": "lanekit-watch", "Content-Type": "text/plain; charset=utf-8"}
        | headers,
        method="POST" if failed else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            answer.read(1 << 12)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        # HTTPError is a URLError: an error status is a failed ping like no answer.
        return Ping(kind, shown, http_failure(exc, timeout))
    return Ping(kind, shown)
