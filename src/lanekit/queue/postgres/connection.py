"""The PostgreSQL queue's one client: a lazy connection per process, in autocommit (every step
is one short statement; no transaction is ever held open while a job runs).

A connection is never shared across a fork: a child that uses the queue opens its own session,
and the parent's inherited socket is set aside unclosed (closing it in the child would end the
parent's session). Keepalives and tcp_user_timeout make a partition fail a statement in about
two seconds instead of hanging; statement_timeout bounds a slow one; connect_timeout bounds a
server that does not answer. A server that cannot be reached is one QueueUnavailableError line
(exit 75: try again later; no job is lost, a lapsed lease is recovered by the next run).
"""

from __future__ import annotations

import os

from lanekit.errors import ExitCode, LanekitError, QueueError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    import psycopg

CONNECT_TIMEOUT = 2
"""Seconds to wait for the server to accept a connection (doctor's queue.db-unreachable too)."""
STATEMENT_TIMEOUT_MS = 5000
"""No statement of the queue's takes more than milliseconds; one that does is stuck."""
TCP_USER_TIMEOUT_MS = 2000
"""Unacknowledged data for longer than this ends the connection (a partition)."""

TUPLES_OK = 2
"""libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK): a statement that returned rows."""
DOWN_MEMORY = 2.0
"""Seconds a failed connect is remembered (see Session._down)."""

_INHERITED: list[object] = []
"""Connections a forked child inherited: kept referenced and never closed, so the child's
exit cannot send the parent's session a Terminate (psycopg closes a connection it frees)."""


class QueueUnavailableError(LanekitError):
    """The queue's server cannot be reached (or dropped the connection): try again later."""

    exit_code = ExitCode.INTERRUPTED


def connect_options() -> dict[str, Any]:
    """The libpq options lanekit adds to every conninfo."""
    return {
        "connect_timeout": CONNECT_TIMEOUT,
        "keepalives": 1,
        "keepalives_idle": 2,
        "keepalives_interval": 1,
        "keepalives_count": 2,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
        "application_name": "lanekit",
        "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
    }


class Session:
    """This process's connection to one server (opened at the first statement)."""

    def __init__(self, dsn: str, where: str) -> None:
        self.dsn = dsn
        self.where = where
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._cursor: psycopg.Cursor[tuple[Any, ...]] | None = None
        """The connection's one cursor, reused by every statement (Connection.execute makes
        a new one per statement: about 7% of the client's CPU per claim and settle)."""
        self._pid = 0
        self._down: tuple[float, QueueUnavailableError] | None = None
        """The last failed connect, and when: another within DOWN_MEMORY seconds fails at
        once the same way (doctor's checks, a status of many lanes, do not wait 2 s each)."""

    def connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The open connection of this process (a new one after a fork or a failure)."""
        conn = self._conn
        if conn is not None and self._pid != os.getpid():
            _INHERITED.append(conn)  # the parent's: never closed here
            conn = self._conn = self._cursor = None
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        import time

        import psycopg

        down = self._down
        if (
            down is not None
            and self._pid == os.getpid()
            and time.monotonic() - down[0] < DOWN_MEMORY
        ):
            raise down[1]
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, **connect_options())
        except psycopg.Error as exc:
            error = self.unavailable(exc)
            self._down, self._pid = (time.monotonic(), error), os.getpid()
            raise error from None
        self._conn, self._pid, self._down = conn, os.getpid(), None
        self._cursor = conn.cursor()
        return conn

    def backend_pid(self) -> int:
        """The server process serving this process's session (a test sees a fork get its own)."""
        return int(self.connection().info.backend_pid)

    def rows(
        self, query: str, params: Sequence[Any] | dict[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit); its rows (none for a statement without any)."""
        import psycopg

        conn = self.connection()
        cursor = self._cursor
        if cursor is None or cursor.connection is not conn:
            cursor = self._cursor = conn.cursor()
        try:
            cursor.execute(query, params, prepare=True)
            result = cursor.pgresult
            # The result's status, not cursor.description: that builds a Column per column.
            return cursor.fetchall() if result is not None and result.status == TUPLES_OK else []
        except (psycopg.OperationalError, psycopg.errors.QueryCanceled) as exc:
            self.close()
            raise self.unavailable(exc) from None
        except psycopg.errors.UniqueViolation as exc:
            if "attempts_one_success" not in str(exc):
                raise
            raise QueueError(
                f"{self.where}: the database refused a second succeeded attempt of one job",
                "success is recorded once: the job already succeeded (`lanekit job`)",
            ) from None

    def script(self, text: str) -> None:
        """Run several statements in one transaction (migrations only)."""
        import psycopg

        conn = self.connection()
        try:
            with conn.transaction():
                conn.execute(text)
        except psycopg.errors.ObjectInUse:
            raise  # a migration's own refusal (its caller says why), not a lost server
        except psycopg.OperationalError as exc:
            self.close()
            raise self.unavailable(exc) from None

    def close(self) -> None:
        """Close this process's connection (the next statement opens another)."""
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None and self._pid == os.getpid():
            conn.close()
        elif conn is not None:
            _INHERITED.append(conn)

    def unavailable(self, exc: Exception) -> QueueUnavailableError:
        """The one-line error for a server that cannot be used right now."""
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return QueueUnavailableError(
            f"{self.where}: the server cannot be reached: {first}",
            "check the server and the dsn (`lanekit doctor`); the next run tries again, "
            "and no job is lost",
        )


_SESSIONS: dict[str, Session] = {}


def session_for(dsn: str, where: str) -> Session:
    """This process's one session to `dsn` (every queue object on it shares the connection;
    after a fork the child's first statement opens its own)."""
    found = _SESSIONS.get(dsn)
    if found is None:
        found = _SESSIONS[dsn] = Session(dsn, where)
    return found
