"""Shared fixtures: every test gets its own Paths under tmp_path; nothing touches ~."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lanekit.state.paths import Paths
from neighbours import SECOND_UID, SecondUser
from pgserver import PgServer
from usermanager import UserManager
from usermanager import start as start_user_manager


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Pin terminal width and colour, and point lanekit's env lookups away from the real home."""
    root = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(root / "state"))
    monkeypatch.setenv("LANEKIT_LAUNCH_AGENTS", str(root / "state" / "emulator" / "LaunchAgents"))
    monkeypatch.setenv("LANEKIT_LAUNCHD", "emulated")
    monkeypatch.delenv("LANEKIT_CONFIG", raising=False)
    yield


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A Paths tree under tmp_path (emulated backend)."""
    return Paths.under(tmp_path)


@pytest.fixture
def memory_queue(request: pytest.FixtureRequest) -> Iterator[str]:
    """The location of a fresh in-memory queue, created (`memory:NAME`: what
    lanekit.queue.open_queue opens for every caller in this process), forgotten after."""
    from lanekit.queue import memory, open_queue

    location = f"memory:{request.node.name}-{os.urandom(4).hex()}"
    open_queue(location).ensure()
    yield location
    memory.forget(location)


@pytest.fixture
def second_user() -> Iterator[SecondUser]:
    """A second, unprivileged local user (nobody) to act as the hostile neighbour: files are
    handed to it with os.chown and commands run as it with setpriv, so the test runs as root.
    Elsewhere it skips saying why, but never in CI as root (CI=true): there it must run."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (to hand files to another uid and to drop to it)")
    if shutil.which("setpriv") is None:
        missing.append("setpriv (util-linux)")
    if missing:
        reason = f"acting as a second user needs {' and '.join(missing)}"
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            pytest.fail(f"{reason}; CI as root must run these tests")
        pytest.skip(reason)
    shared = Path(tempfile.mkdtemp(prefix="lanekit-neighbours-"))
    shared.chmod(0o755)
    try:
        yield SecondUser(SECOND_UID, shared)
    finally:
        shutil.rmtree(shared)


@pytest.fixture(scope="module")
def user_manager() -> Iterator[UserManager]:
    """A real systemd user manager (tests/usermanager.py), started once per module and stopped
    by its pid; skips saying why where it cannot run, fails under CI=true as root."""
    manager = start_user_manager()
    try:
        yield manager
    finally:
        manager.stop()


@pytest.fixture
def systemd(user_manager: UserManager) -> Iterator[UserManager]:
    """The module's user manager, emptied of the test's units afterwards."""
    try:
        yield user_manager
    finally:
        user_manager.reset()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL server for the session (tests/pgserver.py); skips saying why where
    none can be started, fails instead under CI=true."""
    import pgserver

    pgserver.require()
    server, process = pgserver.start()
    previous = os.environ.get("PGPASSFILE")
    os.environ["PGPASSFILE"] = str(server.passfile)
    try:
        yield server
    finally:
        if previous is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = previous
        pgserver.stop(process, server.base)


@pytest.fixture
def pg_schema(pg_server: PgServer) -> Iterator[str]:
    """A schema name of this test's own (created by `migrate`), dropped after it."""
    name = f"t_{os.urandom(6).hex()}"
    yield name
    pg_server.admin(f"DROP SCHEMA IF EXISTS {name} CASCADE")
