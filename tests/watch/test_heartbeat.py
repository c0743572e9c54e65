"""`[watch] heartbeat` (issue 32 item 2), against a real HTTP server on 127.0.0.1: a pass GETs
the URL when all is well and POSTs its summary to `<url>/fail` when it found errors; a server
that answers 500 or hangs changes nothing else about the pass; the URL (a secret) reaches no
log, plist, snapshot or `--json` in full."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from watch_world import WATCHED, WatchWorld

from lanekit.config.watch import WATCH_LANE, fail_url
from lanekit.queue.directory.backend import Queue
from lanekit.watch import memory as memory_store
from lanekit.watch.heartbeat import PingKind, ping

SECRET = "0f8b2c9e-secret-check-key"


@dataclass
class Service:
    """What the fake healthchecks.io saw, and how it answers (`ok`, `500` or `hang`)."""

    port: int = 0
    mode: str = "ok"
    seen: list[tuple[str, str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ping/{SECRET}"


@pytest.fixture
def service() -> Iterator[Service]:
    state = Service()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            state.seen.append((self.command, self.path, body))
            if state.mode == "hang":
                state.release.wait(10)
                return
            code = 500 if state.mode == "500" else 200
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")

        do_GET = _answer  # noqa: N815
        do_POST = _answer  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


def test_fail_url_appends_to_the_path_and_keeps_the_query() -> None:
    assert fail_url("https://hc-ping.com/uuid") == "https://hc-ping.com/uuid/fail"
    assert fail_url("https://hc-ping.com/k/slug/?create=1") == (
        "https://hc-ping.com/k/slug/fail?create=1"
    )


def test_ping_get_and_fail_post(service: Service) -> None:
    """Success is a GET of the URL; failure a POST of the summary to <url>/fail."""
    ok = ping(service.url, failed=False, summary="ignored")
    bad = ping(service.url, failed=True, summary="1 error: lane x exits 78")
    assert ok.ok and ok.kind is PingKind.SUCCESS
    assert bad.ok and bad.kind is PingKind.FAIL
    assert service.seen == [
        ("GET", f"/ping/{SECRET}", ""),
        ("POST", f"/ping/{SECRET}/fail", "1 error: lane x exits 78"),
    ]
    assert SECRET not in json.dumps(ok.to_json())


def test_ping_survives_500_and_a_hanging_server(service: Service) -> None:
    """An error status or no answer within the timeout is a failed ping, never an exception,
    and never names the URL's secret."""
    service.mode = "500"
    failed = ping(service.url, failed=False, summary="")
    assert not failed.ok and failed.error is not None and "HTTP 500" in failed.error
    service.mode = "hang"
    started = time.monotonic()
    hung = ping(service.url, failed=False, summary="", timeout=0.5)
    assert time.monotonic() - started < 3
    assert not hung.ok and hung.error == "no answer within 0.5 s"
    for each in (failed, hung):
        assert SECRET not in json.dumps(each.to_json())
        assert each.shown == f"http://127.0.0.1:{service.port}/…"


def _world(tmp_path: Path, service: Service) -> WatchWorld:
    text = WATCHED.replace("[watch]\n", f'[watch]\nheartbeat = "{service.url}"\n')
    world = WatchWorld.make(tmp_path, text)
    world.apply()
    return world


def _failed_job(world: WatchWorld) -> None:
    lane = world.lane("funnel")
    Queue(lane.queue.dir).enqueue({"n": 1})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)


def test_a_pass_pings_success_then_fail_when_a_channel_refuses(
    tmp_path: Path, service: Service
) -> None:
    """A quiet pass GETs the URL; a pass whose channel refused its notice POSTs /fail with
    the summary, and the pass is otherwise the same as without a heartbeat."""
    world = _world(tmp_path, service)
    quiet = world.watch()
    assert quiet.heartbeat is not None and quiet.heartbeat.ok
    assert service.seen == [("GET", f"/ping/{SECRET}", "")]
    _failed_job(world)
    world.flag.touch()
    loud = world.watch()
    assert int(loud.exit_code) == 1  # the refused notice, as without a heartbeat
    method, path, body = service.seen[-1]
    assert (method, path) == ("POST", f"/ping/{SECRET}/fail")
    assert body.startswith("lanekit watchdog test.watch.watch: 1 open\n")
    assert "channel command refused a notice" in body
    assert loud.heartbeat is not None and loud.heartbeat.kind is PingKind.FAIL


@pytest.mark.parametrize("mode", ["500", "hang"])
def test_a_failing_heartbeat_changes_nothing_else(
    tmp_path: Path, service: Service, mode: str
) -> None:
    """With the server answering 500 or hanging, the pass sends its notices, remembers, exits
    0 and logs the failed ping with the URL redacted; the secret is nowhere on disk."""
    world = _world(tmp_path, service)
    _failed_job(world)
    service.mode = mode
    from lanekit.watch.watchdog import WatchRequest, run_pass

    started = time.monotonic()
    result = run_pass(
        WatchRequest(config_path=world.config_path),
        world.paths,
        env={},
        launchd=world.domain,
        heartbeat_timeout=0.5,
    )
    assert time.monotonic() - started < 10
    assert int(result.exit_code) == 0
    assert [n["id"] for n in world.sent()] == ["queue.failed-jobs"]
    lane = world.lane(WATCH_LANE)
    memory = memory_store.load(memory_store_path(lane.queue.dir))
    assert memory.completed_at is not None and memory.alerts
    assert result.heartbeat is not None and not result.heartbeat.ok
    log = lane.log_path.read_text()
    assert "channel=heartbeat" in log
    assert SECRET not in json.dumps(result.to_json())
    for path in world.paths.state.rglob("*"):
        if path.is_file() and path.name != "heartbeat.url":
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET.encode() not in world.paths.plist_for(lane.label).read_bytes()


def memory_store_path(directory: Path) -> Path:
    from lanekit.config.watch import memory_path

    return memory_path(directory)
