"""The postgres queue's pages on a real server: keyset pages of one state cover each job once,
newest first, under the contract's numbered pages; schema version 1 is migrated to 2 (the
finished jobs' index by state and seq) with its jobs kept."""

from __future__ import annotations

from pathlib import Path

from lanekit.queue.model import Verdict
from lanekit.queue.postgres import schema as schema_sql
from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from lanekit.queue.records import JobState
from pgserver import PgServer


def make(server: PgServer, schema: str, root: Path, *, migrate: bool = True) -> PostgresQueue:
    """A queue on the test's schema (migrated and checked unless `migrate` is False)."""
    queue = PostgresQueue(
        PgLocation("pages", server.dsn, schema=schema), backoff_base=0, spool=root / "spool"
    )
    if migrate:
        queue.migrate()
        queue.ensure()
    return queue


def finish(queue: PostgresQueue, count: int) -> tuple[list[str], list[str]]:
    """`count` jobs run in order, every third failed: (succeeded ids, failed ids), oldest first."""
    ids = [queue.enqueue({"n": n}, job_id=f"job-{n:03d}") for n in range(count)]
    claimer = queue.claimer()
    done, failed = [], []
    for n, job_id in enumerate(ids):
        claim = claimer.claim()
        assert claim is not None and claim.job_id == job_id
        if n % 3 == 0:
            queue.settle(claim, Verdict.gave_up("boom"))
            failed.append(job_id)
        else:
            queue.settle(claim, Verdict.succeeded())
            done.append(job_id)
    return done, failed


def test_keyset_pages_of_one_state_cover_each_job_once_newest_first(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """Numbered pages of the failed (and of every) job, read by seq from a boundary found in
    the index: together each job once, newest first, with the contract's PageMeta; a page past
    the last clamps to it; an empty state says how many jobs are elsewhere."""
    queue = make(pg_server, pg_schema, tmp_path)
    done, failed = finish(queue, 22)
    first = queue.page(1, 3, JobState.FAILED)
    assert (first.meta.total, first.meta.total_pages, first.meta.next_page) == (8, 3, 2)
    seen = []
    for number in range(1, first.meta.total_pages + 1):
        page = queue.page(number, 3, JobState.FAILED)
        assert page.meta.page == number and page.elsewhere == 0
        assert all(record.state is JobState.FAILED for record in page.items)
        seen += [record.job_id for record in page.items]
    assert seen == failed[::-1]
    last = queue.page(99, 3, JobState.FAILED)
    assert last.meta.page == 3 and [r.job_id for r in last.items] == failed[::-1][6:]
    assert (last.meta.from_, last.meta.to) == (7, 8)
    everything = [r.job_id for n in range(1, 5) for r in queue.page(n, 6).items]
    assert everything == sorted(done + failed, reverse=True)
    assert [r.job_id for r in queue.page(1, 0, JobState.SUCCEEDED).items] == done[::-1]
    running = queue.page(1, 3, JobState.RUNNING)
    assert (running.items, running.meta.total, running.elsewhere) == ([], 0, 22)


def test_migrate_upgrades_a_version_1_schema_and_keeps_its_jobs(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """A schema at version 1 (a lanekit before the finished jobs' index by state) is refused
    until migrated; `migrate` brings it to version 2, its finished jobs paged as before."""
    old = make(pg_server, pg_schema, tmp_path, migrate=False)
    old.session.rows(f'CREATE SCHEMA "{pg_schema}"')
    old.session.script(
        schema_sql.render(schema_sql.MIGRATIONS[0], pg_schema)
        + f"INSERT INTO \"{pg_schema}\".meta (key, value) VALUES ('version', '1');"
    )
    assert old.schema_version() == 1
    assert old.missing() is not None and "lanekit db migrate pages" in str(old.missing())
    old.session.rows(
        f'INSERT INTO "{pg_schema}".jobs (queue, id, payload, state, finished_at) '
        "VALUES ('pages', 'kept', '\\x7b7d', 'succeeded', now())"
    )
    assert old.migrate() == (1, schema_sql.VERSION)
    [(definition,)] = old.session.rows(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'jobs_finished'",
        (pg_schema,),
    )
    assert "(queue, state, seq) INCLUDE (finished_at)" in definition
    queue = make(pg_server, pg_schema, tmp_path)
    assert [r.job_id for r in queue.page(1, 5, JobState.SUCCEEDED).items] == ["kept"]
