"""A throw-away PostgreSQL server for the postgres queue's tests, one per test session.

The Debian `postgresql` package's binaries (or initdb on PATH, as Homebrew's), run as an
unprivileged user when the suite runs as root (initdb and postgres refuse root: uid 65534 by
setpriv), data and unix socket in a temp dir, fsync off, on 127.0.0.1 and a free port, scram
password login for role `lk` (database `lk`): the password lives in a 0600 pgpass file that
PGPASSFILE names, as a user's would, so no dsn carries it. Each test gets a schema of its own.
Without the binaries the tests skip saying why, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

NOBODY = 65534


@dataclass(frozen=True)
class PgServer:
    """A running server: its address, the role's password file, and how to reach it."""

    host: str
    port: int
    passfile: Path
    password: str
    base: Path

    @property
    def dsn(self) -> str:
        """A conninfo without a password (libpq reads it from PGPASSFILE)."""
        return f"host={self.host} port={self.port} user=lk dbname=lk"

    def admin(self, sql: str) -> str:
        """Run `sql` as the superuser over the unix socket (psql); its output."""
        return _run(
            [
                str(_bindir() / "psql"),
                "-qAt",
                "-h",
                str(self.base / "sock"),
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "lk",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        )


def _bindir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise FileNotFoundError("initdb")


def _as_server_user() -> list[str]:
    return (
        ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"]
        if os.geteuid() == 0
        else []
    )


def _run(argv: list[str]) -> str:
    done = subprocess.run(
        [*_as_server_user(), *argv], capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {done.stderr.strip()}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def missing_reason() -> str | None:
    """Why no server can be started here, or None."""
    try:
        _bindir()
    except FileNotFoundError:
        return (
            "no PostgreSQL server binaries (apt-get install postgresql; brew install postgresql@17)"
        )
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "running as root needs setpriv (util-linux) to start PostgreSQL as another user"
    return None


def start() -> tuple[PgServer, subprocess.Popen[bytes]]:
    """Start a server (see the module docstring) and wait until it answers."""
    base = Path(tempfile.mkdtemp(prefix="lanekit-pg-"))
    bindir = _bindir()
    for place in (base, base / "data", base / "sock"):
        place.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(place, NOBODY, NOBODY)
    (base / "data").chmod(0o700)
    _run(
        [
            str(bindir / "initdb"),
            "-D",
            str(base / "data"),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
        ]
    )
    hba = base / "data" / "pg_hba.conf"
    hba.write_text(
        "local all postgres trust\nlocal all all scram-sha-256\n"
        "host all all 127.0.0.0/8 scram-sha-256\n"
    )
    if os.geteuid() == 0:
        os.chown(hba, NOBODY, NOBODY)
    port = _free_port()
    log = (base / "server.log").open("wb")
    server = subprocess.Popen(
        [
            *_as_server_user(),
            str(bindir / "postgres"),
            "-D",
            str(base / "data"),
            "-p",
            str(port),
            "-k",
            str(base / "sock"),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
            "-c",
            "password_encryption=scram-sha-256",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        ready = subprocess.run(
            [
                *_as_server_user(),
                str(bindir / "pg_isready"),
                "-q",
                "-h",
                str(base / "sock"),
                "-p",
                str(port),
                "-U",
                "postgres",
            ],
            check=False,
        )
        if ready.returncode == 0:
            break
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"postgres did not start: {(base / 'server.log').read_text()}")
        time.sleep(0.1)
    password = os.urandom(12).hex()
    for sql in (f"CREATE ROLE lk LOGIN PASSWORD '{password}'", "CREATE DATABASE lk OWNER lk"):
        _run(
            [
                str(bindir / "psql"),
                "-q",
                "-h",
                str(base / "sock"),
                "-p",
                str(port),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ]
        )
    passfile = base / "pgpass"
    passfile.write_text(f"*:*:lk:lk:{password}\n")
    passfile.chmod(0o600)
    return PgServer("127.0.0.1", port, passfile, password, base), server


def stop(server: subprocess.Popen[bytes], base: Path) -> None:
    """Fast shutdown, then remove its files."""
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    shutil.rmtree(base, ignore_errors=True)


def require() -> None:
    """Skip (or, under CI=true, fail) when no server can be started here."""
    reason = missing_reason()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the postgres queue tests (.ci/run installs it)")
    pytest.skip(reason)
