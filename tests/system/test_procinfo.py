"""Process liveness by pid and start token: dead, zombie and reused pids are told apart."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from lanekit.system import procinfo
from lanekit.system.procinfo import Liveness

LINUX = sys.platform.startswith("linux")
PLATFORMS = [
    pytest.param("linux", id="proc", marks=pytest.mark.skipif(not LINUX, reason="needs /proc")),
    pytest.param("darwin", id="psutil"),
]


def _stat_line(name: bytes, state: bytes = b"S", starttime: bytes = b"4242") -> bytes:
    fields = [state, *[b"0"] * 18, starttime, b"0", b"0"]
    return b"1234 (" + name + b") " + b" ".join(fields) + b"\n"


@pytest.mark.parametrize("name", [b"python3", b"a b", b"(x)", b"evil) S 1 2 3", b""])
def test_parse_stat_counts_fields_after_the_last_paren(name: bytes) -> None:
    """The command name may hold spaces and parentheses; state and starttime are still found."""
    assert procinfo.parse_stat(_stat_line(name)) == ("S", "4242")


@pytest.mark.parametrize("data", [b"", b"1234 python3 S 1", b"1234 (p) S 1 2 3"])
def test_parse_stat_rejects_malformed_lines(data: bytes) -> None:
    """A line without the name's parentheses or without 22 fields gives None, not a guess."""
    assert procinfo.parse_stat(data) is None


def test_starttime_must_be_an_integer() -> None:
    """The Linux token is the exact integer starttime; anything else is malformed."""
    assert procinfo.parse_stat(_stat_line(b"p", starttime=b"12.5")) is None


def test_self_token_is_this_process_start_token() -> None:
    """Our own token is stable and equals what any other process would read for our pid."""
    token = procinfo.self_token()
    assert token == procinfo.self_token() == procinfo.start_token(os.getpid())
    assert token.isdigit()


@pytest.mark.skipif(not LINUX, reason="needs /proc")
def test_linux_token_is_field_22_of_proc_stat() -> None:
    """On Linux the token is /proc/<pid>/stat field 22, read without psutil."""
    text = Path("/proc/self/stat").read_text()
    expected = text.rpartition(")")[2].split()[19]
    assert procinfo.linux_token(os.getpid()) == expected


@pytest.mark.parametrize("platform", PLATFORMS)
def test_live_process_with_its_token_is_alive(platform: str) -> None:
    """A running process and the token it started with: ALIVE (both branches)."""
    token = procinfo.start_token(os.getpid(), platform=platform)
    assert token is not None
    assert procinfo.liveness(os.getpid(), token, platform=platform) is Liveness.ALIVE


@pytest.mark.parametrize("platform", PLATFORMS)
def test_wrong_token_means_the_pid_was_reused(platform: str) -> None:
    """The pid runs, but it is not the process that made the claim: REUSED (owner is dead)."""
    assert procinfo.liveness(os.getpid(), "1", platform=platform) is Liveness.REUSED
    assert not procinfo.is_alive(os.getpid(), "1")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_exited_and_reaped_process_is_dead(platform: str) -> None:
    """After a process exits and is reaped, its pid has no token: DEAD."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    token = procinfo.start_token(child.pid, platform=platform)
    child.wait()
    assert procinfo.start_token(child.pid, platform=platform) is None
    assert procinfo.liveness(child.pid, token or "0", platform=platform) is Liveness.DEAD


@pytest.mark.parametrize("platform", PLATFORMS)
def test_zombie_counts_as_dead(platform: str) -> None:
    """A killed child its parent has not reaped yet still has a pid, but will never settle a
    claim: DEAD."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        token = procinfo.start_token(child.pid, platform=platform)
        assert token is not None
        child.kill()
        deadline = time.monotonic() + 10
        while procinfo.start_token(child.pid, platform=platform) is not None:
            assert time.monotonic() < deadline, "child never became a zombie"
            time.sleep(0.01)
        assert procinfo.liveness(child.pid, token, platform=platform) is Liveness.DEAD
    finally:
        child.kill()
        child.wait()


def test_nonpositive_pids_are_never_alive() -> None:
    """pid 0 or negative (a hand-made claim name) is not a process."""
    assert procinfo.start_token(0) is None
    assert procinfo.liveness(-1, "1") is Liveness.DEAD


def _report_token(conn: Connection) -> None:
    conn.send((os.getpid(), procinfo.self_token()))
    conn.close()


def test_forked_child_has_its_own_token() -> None:
    """The cached token is per process: a forked child computes its own, not its parent's."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork")
    parent_token = procinfo.self_token()
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_report_token, args=(sender,))
    child.start()
    pid, token = receiver.recv()
    child.join()
    assert pid == child.pid
    assert token != parent_token


def test_hosttag_is_a_short_stable_hash_of_the_short_hostname() -> None:
    """8 hex digits; `Name.local` and `name` are the same host (macOS flips between them)."""
    tag = procinfo.hosttag("MacBook-Pro.local")
    assert tag == procinfo.hosttag("macbook-pro")
    assert len(tag) == 8 and all(c in "0123456789abcdef" for c in tag)
    assert tag != procinfo.hosttag("other-host")


def test_hosttag_follows_the_host_identity_not_the_network_name(tmp_path: Path) -> None:
    """Without a name given, the tag hashes a host identity that survives a network change:
    /etc/machine-id on Linux (gethostuuid(2) on macOS), the short node name only when neither
    answers."""
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123456789abcdef0123456789abcdef\n")
    assert procinfo.host_identity(platform="linux", machine_id=str(machine_id)) == (
        "0123456789abcdef0123456789abcdef"
    )
    short = os.uname().nodename.split(".", 1)[0].lower()
    assert procinfo.host_identity(platform="linux", machine_id=str(tmp_path / "none")) == short
    assert procinfo.host_identity(platform="sunos5") == short
    assert procinfo.hosttag() == procinfo.hosttag(procinfo.host_identity())


def test_zombie_is_gone_unless_asked_for() -> None:
    """An exited child not yet reaped is dead for claims, but its parent can still read the
    token it started with (the emulator's watcher does, before reaping)."""
    import os
    import time

    from lanekit.system.procinfo import start_token

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while start_token(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert start_token(pid) is None
        assert start_token(pid, zombie_ok=True) is not None
    finally:
        os.waitpid(pid, 0)
    assert start_token(pid, zombie_ok=True) is None
