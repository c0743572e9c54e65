"""Where notices go: `macos` (Notification Center), `command` (argv, JSON on stdin), `webhook`
(HTTP POST of the same JSON). A channel raises ChannelError when it did not take the notice;
the pass logs it, keeps the notice for the next pass and goes on with the other channels.

- macos runs `/usr/bin/osascript -e 'on run argv' -e 'display notification (item 1 of argv)
  with title (item 2 of argv)' -e 'end run' TEXT TITLE`: the text travels as an argument and
  is never part of the AppleScript source, so quotes, backslashes, newlines and `"; do shell
  script "` in a lane name or message arrive as written. The osascript path is a parameter
  (OSASCRIPT by default) so a test can put a fake one in its place.
- command runs without a shell, with CHANNEL_TIMEOUT, and fails on a non-zero exit.
- webhook POSTs with urllib and CHANNEL_TIMEOUT, and fails on any HTTP error status; its
  messages name the URL through spec.redact_url only (no userinfo, path or query).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from lanekit.config.watch import WatchSpec, redact_url
from lanekit.errors import LanekitError
from lanekit.system.quoting import printable
from lanekit.watch.alerts import Notice
from lanekit.watch.notifier import run_notifier

OSASCRIPT = "/usr/bin/osascript"
CHANNEL_TIMEOUT = 10.0
"""Seconds a command or webhook may take to accept one notice."""
APPLESCRIPT = (
    "on run argv",
    "display notification (item 1 of argv) with title (item 2 of argv)",
    "end run",
)
"""The whole AppleScript: fixed text; the notice is only ever its `argv`."""


class ChannelError(LanekitError):
    """A channel did not take a notice (it is retried on the next pass)."""


class Channel(Protocol):
    """Something that takes one notice at a time."""

    @property
    def name(self) -> str:
        """`macos`, `command` or `webhook`: how logs and JSON name it."""

    def send(self, notice: Notice) -> None:
        """Deliver `notice`, or raise ChannelError."""


def notice_bytes(notice: Notice) -> bytes:
    """The notice document as one line of JSON (what `command` and `webhook` receive)."""
    return (json.dumps(notice.to_json(), sort_keys=True, ensure_ascii=False) + "\n").encode()


def osascript_argv(notice: Notice, osascript: str = OSASCRIPT) -> list[str]:
    """osascript's argv for `notice`: the fixed script, then TEXT and TITLE as arguments."""
    script = [part for line in APPLESCRIPT for part in ("-e", line)]
    return [osascript, *script, notice.text, notice.title]


@dataclass(frozen=True, slots=True)
class MacosChannel:
    """Notification Center through osascript."""

    osascript: str = OSASCRIPT
    env: Mapping[str, str] | None = None
    timeout: float = CHANNEL_TIMEOUT

    @property
    def name(self) -> str:
        """`macos`."""
        return "macos"

    def send(self, notice: Notice) -> None:
        """Show the notice; ChannelError when osascript is missing or fails."""
        _run(self.name, osascript_argv(notice, self.osascript), b"", self.timeout, self.env)


@dataclass(frozen=True, slots=True)
class CommandChannel:
    """A program of the user's that gets each notice as JSON on stdin."""

    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None
    timeout: float = CHANNEL_TIMEOUT

    @property
    def name(self) -> str:
        """`command`."""
        return "command"

    def send(self, notice: Notice) -> None:
        """Run the command with the notice on stdin; ChannelError on a non-zero exit."""
        _run(self.name, list(self.argv), notice_bytes(notice), self.timeout, self.env)


@dataclass(frozen=True, slots=True)
class WebhookChannel:
    """An HTTP endpoint (ntfy, a Slack-style incoming webhook, your own) that gets a POST."""

    url: str
    timeout: float = CHANNEL_TIMEOUT

    @property
    def name(self) -> str:
        """`webhook`."""
        return "webhook"

    def send(self, notice: Notice) -> None:
        """POST the notice; ChannelError on an HTTP error status, a timeout or no answer."""
        # Imported here: urllib.request brings http, ssl and email (~25 ms), which a pass
        # pays only when a webhook has something to send.
        import urllib.error
        import urllib.request

        shown = redact_url(self.url)
        url, headers = with_basic_auth(self.url)
        # The scheme is http or https: lanekit.config.watch refuses any other in lanes.toml.
        request = urllib.request.Request(  # noqa: S310
            url,
            data=notice_bytes(notice),
            headers={
                "Content-Type": "application/json",
                "User-Agent": "lanekit-watch",
                **headers,
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                answer.read(1 << 16)
        except urllib.error.HTTPError as exc:
            raise ChannelError(
                f"webhook {shown}: {http_failure(exc, self.timeout)}",
                "check the endpoint; the notice is sent again on the next pass",
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            raise ChannelError(
                f"webhook {shown}: {http_failure(exc, self.timeout)}",
                "check the URL and the network; the notice is sent again on the next pass",
            ) from None


def http_failure(exc: Exception, timeout: float) -> str:
    """Why an HTTP request failed, in words that never hold the URL (a secret): `HTTP 500
    Internal Server Error`, `no answer within 5 s`, the errno text, or the error's type."""
    import urllib.error

    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {printable(str(exc.reason))}"
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, OSError) and reason.strerror:
        return printable(reason.strerror)  # errno text only: it never holds the URL
    return type(reason).__name__ if isinstance(reason, Exception) else "no answer"


def with_basic_auth(url: str) -> tuple[str, dict[str, str]]:
    """`https://user:pass@host/...` as the URL without its userinfo and an Authorization
    header (urllib would otherwise take `user:pass@host` for the host name)."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None:
        return url, {}
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    header = {"Authorization": "Basic " + base64.b64encode(secret).decode("ascii")}
    return urlunsplit(parts._replace(netloc=netloc)), header


def _run(
    name: str,
    argv: Sequence[str],
    stdin: bytes,
    timeout: float,
    env: Mapping[str, str] | None,
) -> None:
    program = argv[0]
    try:
        ran = run_notifier(argv, stdin, timeout=timeout, env=os.environ if env is None else env)
    except OSError as exc:
        raise ChannelError(
            f"{name} channel: {program} cannot be started ({exc.strerror or exc})",
            "fix the path (the watchdog runs with the PATH of lanes.toml's [defaults])",
        ) from None
    if ran.returncode is None:
        raise ChannelError(
            f"{name} channel: {program} did not finish within {timeout:g} s (killed)",
            "make it return quickly; the notice is sent again on the next pass",
        )
    if ran.returncode != 0:
        tail = f": {printable(ran.stderr)}" if ran.stderr else ""
        raise ChannelError(
            f"{name} channel: {program} exited {ran.returncode}{tail}",
            "the notice is sent again on the next pass",
        )


def channels_for(
    watch: WatchSpec,
    *,
    osascript: str = OSASCRIPT,
    timeout: float = CHANNEL_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> list[Channel]:
    """The channels `[watch]` turns on, in delivery order; the programs they run get `env`
    (the watchdog lane's, as launchd gives it: lanekit.run.jobenv), else this process's."""
    found: list[Channel] = []
    for name in watch.channels:
        if name == "macos":
            found.append(MacosChannel(osascript, env=env, timeout=timeout))
        elif name == "command" and watch.command is not None:
            found.append(CommandChannel(watch.command, env=env, timeout=timeout))
        elif name == "webhook" and watch.webhook is not None:
            found.append(WebhookChannel(watch.webhook, timeout=timeout))
    return found
