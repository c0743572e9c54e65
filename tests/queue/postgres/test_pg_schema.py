"""The postgres queue's schema on a real server (tests/pgserver.py): an attempt's row is
written once, when its claim ends (version 3), and the migration to it refuses to run while a
claim made under version 2 is running, and copes with one that slipped in past it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lanekit.errors import ExitCode
from lanekit.queue.model import Verdict
from lanekit.queue.postgres import schema as schema_sql
from lanekit.queue.postgres.backend import MigrationBusyError, PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from lanekit.queue.records import JobState
from pgserver import PgServer


def _queue(server: PgServer, schema: str, root: Path, *, migrate: bool = True) -> PostgresQueue:
    queue = PostgresQueue(
        PgLocation("sch", server.dsn, schema=schema, lease=30), spool=root / "spool"
    )
    if migrate:
        queue.migrate()
        queue.ensure()
    return queue


def _at_version_2(queue: PostgresQueue, schema: str) -> None:
    """The schema as lanekit's schema 2 made it."""
    queue.session.rows(f'CREATE SCHEMA "{schema}"')
    queue.session.script(
        "".join(schema_sql.render(text, schema) for text in schema_sql.MIGRATIONS[:2])
        + f"INSERT INTO \"{schema}\".meta (key, value) VALUES ('version', '2');"
    )


def _claim_under_2(queue: PostgresQueue, schema: str, job_id: str, *, lapsed: bool) -> None:
    """A running job as schema 2's claim left it: the lease on the job's row and an open
    attempt row (inserted at the claim, closed at the end)."""
    expires = "now() - interval '1 s'" if lapsed else "now() + interval '30 s'"
    queue.session.rows(
        f'INSERT INTO "{schema}".jobs (queue, id, payload, state, attempts, token, lane, '
        "lease_host, lease_pid, lease_start, lease_expires, claimed_at) "
        f"VALUES ('sch', %s, '\\x7b7d', 'running', 1, 1, 'l', 'elsewhere', 4242, 's', "
        f"{expires}, now() - interval '5 s')",
        (job_id,),
    )
    queue.session.rows(
        f'INSERT INTO "{schema}".attempts (queue, job_id, token, attempt, lane, host, pid, '
        "start, started_at) VALUES ('sch', %s, 1, 1, 'l', 'elsewhere', 4242, 's', "
        "now() - interval '5 s')",
        (job_id,),
    )


def _rows(queue: PostgresQueue, job_id: str) -> list[tuple[object, ...]]:
    return queue.session.rows(
        f'SELECT token, attempt, host, outcome, ended_at IS NOT NULL FROM "{queue.location.schema}"'
        ".attempts WHERE queue = 'sch' AND job_id = %s ORDER BY token",
        (job_id,),
    )


def test_an_attempt_row_is_written_once_when_its_claim_ends(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """A claim writes no attempt row (the running attempt is its job's lease columns, which
    `attempts` shows as running); its settle writes one, started when the claim was made."""
    queue = _queue(pg_server, pg_schema, tmp_path)
    queue.enqueue({}, job_id="once")
    claimer = queue.claimer(lane="l")
    held = claimer.claim()
    assert held is not None
    assert _rows(queue, "once") == []
    [running] = queue.attempts("once")
    assert (running.attempt, running.outcome, running.ended_at, running.pid) == (
        1,
        None,
        None,
        int(held.owner.rsplit("-", 2)[1]),
    )
    spans = queue.attempts_between(time.time() - 60, time.time() + 60)
    assert [(span.job_id, span.outcome, span.ended) for span in spans] == [("once", None, None)]
    time.sleep(0.01)
    queue.settle(held, Verdict.succeeded())
    [(token, attempt, host, outcome, ended)] = _rows(queue, "once")
    assert (token, attempt, host, outcome, ended) == (1, 1, running.host, "succeeded", True)
    [done] = queue.attempts("once")
    assert (done.started_at, done.outcome) == (running.started_at, "succeeded")
    assert done.ended_at is not None and done.ended_at >= done.started_at
    spans = queue.attempts_between(time.time() - 60, time.time() + 60)
    assert [(span.job_id, span.outcome) for span in spans] == [("once", "succeeded")]


def test_migrating_to_3_waits_for_the_jobs_running_under_2(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """A claim made under schema 2 has an open attempt row its own settle closes: migrating
    under it is refused (exit 75, nothing changed, the fix named), and goes through once it
    ended."""
    queue = _queue(pg_server, pg_schema, tmp_path, migrate=False)
    _at_version_2(queue, pg_schema)
    _claim_under_2(queue, pg_schema, "busy", lapsed=False)
    with pytest.raises(MigrationBusyError, match="running under schema version 2") as caught:
        queue.migrate()
    assert caught.value.exit_code == ExitCode.INTERRUPTED
    assert "lanekit pause" in caught.value.hint
    assert queue.schema_version() == 2
    queue.session.rows(  # schema 2's settle: the job ends, its attempt row is closed
        f"UPDATE \"{pg_schema}\".jobs SET state = 'succeeded', lease_expires = NULL, "
        "finished_at = now() WHERE id = 'busy'"
    )
    queue.session.rows(
        f"UPDATE \"{pg_schema}\".attempts SET ended_at = now(), outcome = 'succeeded' "
        "WHERE job_id = 'busy'"
    )
    assert queue.migrate() == (2, schema_sql.VERSION)
    assert [item.outcome for item in queue.attempts("busy")] == ["succeeded"]


def test_a_claim_of_a_run_begun_under_2_is_closed_when_taken_back(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """A run that checked schema 2 before the migration and claimed after it leaves an open
    row; when its lease lapses, the take-back closes that row as `orphaned` (one row for the
    claim, not a second)."""
    queue = _queue(pg_server, pg_schema, tmp_path)
    _claim_under_2(queue, pg_schema, "slipped", lapsed=True)
    assert [item.outcome for item in queue.attempts("slipped")] == [None]  # once, running
    [recovered] = queue.recover(stale_after=0, max_attempts=3)
    assert (recovered.job_id, recovered.state) == ("slipped", JobState.QUEUED)
    assert _rows(queue, "slipped") == [(1, 1, "elsewhere", "orphaned", True)]
    assert [item.outcome for item in queue.attempts("slipped")] == ["orphaned"]
