"""The channels, each against the real thing it talks to: a fake `osascript` on PATH that
records its argv, a real command, and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lanekit.config.watch import WatchSpec
from lanekit.doctor import Severity, SubjectKind
from lanekit.state.schemas import NOTICE_SCHEMA
from lanekit.watch.alerts import Alert, Notice, NoticeKind
from lanekit.watch.channels import (
    APPLESCRIPT,
    ChannelError,
    CommandChannel,
    MacosChannel,
    WebhookChannel,
    channels_for,
)

T0 = datetime(2026, 12, 1, 9, 0, 0)
HOSTILE = 'lane "x"; do shell script "touch /tmp/pwned" \\ back\nslash\ttab $(echo no)'


def _notice(message: str = "launchd could not start it.", subject: str = "funnel") -> Notice:
    alert = Alert(
        "launchd.exit-78",
        Severity.ERROR,
        subject,
        SubjectKind.LANE,
        (subject,),
        message,
        "lanekit try funnel",
    )
    return Notice.of(NoticeKind.NEW, alert, first_seen=T0, at=T0)


def _fake_osascript(directory: Path, record: Path) -> Path:
    """An `osascript` that writes its argv, one JSON array, to `record`."""
    directory.mkdir(parents=True, exist_ok=True)
    fake = directory / "osascript"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    return fake


def test_macos_passes_hostile_text_as_arguments_only(tmp_path: Path) -> None:
    """Quotes, `"; do shell script "`, backslashes, newlines and tabs in a lane name and a
    message reach osascript verbatim as argv items after the fixed script, which never
    changes (nothing is spliced into AppleScript source)."""
    record = tmp_path / "argv.json"
    bin_dir = tmp_path / "bin"
    _fake_osascript(bin_dir, record)
    found = shutil.which("osascript", path=str(bin_dir))
    assert found is not None
    notice = _notice(message=HOSTILE, subject='we"ird\nlane')
    MacosChannel(found).send(notice)
    argv = json.loads(record.read_text())
    assert argv == [
        "-e",
        "on run argv",
        "-e",
        "display notification (item 1 of argv) with title (item 2 of argv)",
        "-e",
        "end run",
        f"{HOSTILE} Fix: lanekit try funnel",
        'lanekit: we"ird\nlane (error)',
    ]
    assert [part for part in argv[:6] if part != "-e"] == list(APPLESCRIPT)
    assert not Path("/tmp/pwned").exists()


def test_macos_without_osascript_is_a_channel_error(tmp_path: Path) -> None:
    """No osascript (not a Mac): the channel refuses the notice, naming the program."""
    with pytest.raises(ChannelError, match="cannot be started"):
        MacosChannel(str(tmp_path / "osascript")).send(_notice())


def test_command_gets_one_json_object_on_stdin(tmp_path: Path) -> None:
    """The command reads exactly one JSON line: the versioned notice document."""
    out = tmp_path / "got.json"
    CommandChannel(("/bin/sh", "-c", f"cat > {out}")).send(_notice(HOSTILE))
    text = out.read_text()
    assert text.count("\n") == 1
    document = json.loads(text)
    assert document["schema"] == NOTICE_SCHEMA
    assert document["message"] == HOSTILE
    assert (document["kind"], document["id"], document["subject"]) == (
        "new",
        "launchd.exit-78",
        "funnel",
    )


def test_command_failure_and_timeout_are_channel_errors(tmp_path: Path) -> None:
    """A non-zero exit names the code and stderr; a command that hangs is killed at the
    timeout (with its children) and reported, quickly."""
    with pytest.raises(ChannelError, match="exited 4: nope"):
        CommandChannel(("/bin/sh", "-c", "echo nope >&2; exit 4")).send(_notice())
    started = time.monotonic()
    with pytest.raises(ChannelError, match=r"did not finish within 0\.5 s"):
        CommandChannel(("/bin/sh", "-c", "sleep 30 & sleep 30"), timeout=0.5).send(_notice())
    assert time.monotonic() - started < 10


class _Hook(BaseHTTPRequestHandler):
    """Answers POSTs with the server's `status`, after its `delay`; keeps what it got."""

    def do_POST(self) -> None:
        """Record the request, then answer."""
        server: Any = self.server
        length = int(self.headers.get("Content-Length", "0"))
        server.got.append((self.path, self.headers.get("Content-Type"), self.rfile.read(length)))
        server.auth.append(self.headers.get("Authorization"))
        time.sleep(server.delay)
        try:
            self.send_response(server.status)
            self.end_headers()
            self.wfile.write(b"ok")
        except BrokenPipeError:
            pass  # the client gave up (the timeout test): nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def hook() -> Iterator[Any]:
    """A real HTTP server on 127.0.0.1 (a free port), status 200 until a test changes it."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.got, server.auth, server.status, server.delay = [], [], 200, 0.0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: Any, secret: bool = False) -> str:
    host, port = server.server_address[:2]
    auth = "bob:hunter2@" if secret else ""
    return f"http://{auth}{host}:{port}/hook/s3cret?token=t0ken"


def test_webhook_posts_the_notice_json(hook: Any) -> None:
    """A 200 is delivered: one POST of the notice document as application/json."""
    WebhookChannel(_url(hook)).send(_notice())
    [(path, kind, body)] = hook.got
    assert path == "/hook/s3cret?token=t0ken"
    assert kind == "application/json"
    assert json.loads(body)["id"] == "launchd.exit-78"


def test_webhook_500_is_a_channel_error_without_secrets(hook: Any) -> None:
    """An HTTP 500 refuses the notice; the message names scheme, host and port only."""
    hook.status = 500
    with pytest.raises(ChannelError) as caught:
        WebhookChannel(_url(hook, secret=True)).send(_notice())
    message = caught.value.message
    assert "HTTP 500" in message
    host, port = hook.server_address[:2]
    assert f"http://{host}:{port}/…" in message
    for secret in ("bob", "hunter2", "s3cret", "t0ken"):
        assert secret not in message
    assert hook.auth == ["Basic Ym9iOmh1bnRlcjI="]  # the userinfo went as Basic auth


def test_webhook_timeout_is_a_channel_error(hook: Any) -> None:
    """A server that answers too late: the notice is refused after the timeout."""
    hook.delay = 2.0
    started = time.monotonic()
    with pytest.raises(ChannelError, match=r"no answer within 0\.3 s"):
        WebhookChannel(_url(hook), timeout=0.3).send(_notice())
    assert time.monotonic() - started < 2.0


def test_webhook_nobody_listening_is_a_channel_error() -> None:
    """A refused connection is a refused notice, not a crash."""
    with pytest.raises(ChannelError, match=r"webhook http://127\.0\.0\.1:9/…"):
        WebhookChannel("http://127.0.0.1:9/x").send(_notice())


def test_channels_for_follows_the_spec() -> None:
    """[watch] turns on macos, command and webhook in that order; none when none is set."""
    spec = WatchSpec(notify=("macos",), command=("/bin/true",), webhook="https://h/x")
    assert [c.name for c in channels_for(spec)] == ["macos", "command", "webhook"]
    assert channels_for(WatchSpec()) == []


def test_the_notice_document_is_the_one_docs_json_describes() -> None:
    """Every notice kind has exactly the keys and types of docs/json.md's notice table."""
    from test_json_contracts import DOC, _contract, problems

    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## The `lanekit watch` notice") :]
    section = section[: section.index("\n## ", 1)]
    contract = _contract("notice", section)
    for kind in (NoticeKind.NEW, NoticeKind.REPEAT, NoticeKind.RESOLVED):
        notice = Notice.of(
            kind,
            Alert("a.b", Severity.INFO, "q", SubjectKind.QUEUE, ("l",), "m.", "f"),
            first_seen=T0,
            at=T0,
        )
        found, _ = problems(contract, notice.to_json())
        assert found == []
    for example in contract.examples:
        assert problems(contract, example)[0] == []
