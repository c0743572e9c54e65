"""The postgres queue's figures, on a server the caller names (`--pg "host=... port=... user=...
dbname=..."`, the password from PGPASSFILE or ~/.pgpass, never on the command line):

(p) claim + settle jobs/s with 1, 2, 4 and 8 worker processes: lanekit's claim and settle as
    the runner makes them (the settle and the next claim in one statement: fencing token, lease,
    the attempt's row, the payload written to and removed from the spool) vs procrastinate's
    and pg-boss's claim and finish as they run: procrastinate's own schema.sql (vendored,
    scripts/benchkit/vendor/) drained with its worker's fetch_job / finish_job queries, and
    pg-boss 12's job table, constraints and indexes for a standard queue drained with its
    fetchNextJob (default options) and completeJobs. Also their statements alone on a bare
    table with one partial index (`-bare`: the floor, no event rows, no other index);
(q) one `lanekit run` of 20 jobs at a backlog of 100 vs 100,000;
(r) `lanekit run` of a postgres lane with nothing queued vs `python -c pass`, in CPU seconds
    (user + system of the process);
(t) `lanekit jobs` page 1 over 100,000 finished jobs vs reading them all (JobQueue.page).
"""

from __future__ import annotations

import os
import time
from multiprocessing import get_context
from pathlib import Path

from benchkit.common import LANE, PY, Figure, fresh, lane_spec, median, round_ratios, say, timed
from lanekit.queue.model import Verdict
from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation

WORKERS = (1, 2, 4, 8)

PROCRASTINATE_SCHEMA = Path(__file__).resolve().parent / "vendor" / "procrastinate-schema.sql"
# procrastinate/sql/queries.sql's fetch_job and finish_job, as its worker sends them.
PROCRASTINATE_FETCH = (
    "SELECT id, status, task_name, priority, lock, queueing_lock, args, scheduled_at, "
    "queue_name, attempts, worker_id "
    "FROM procrastinate_fetch_job_v2(%(queues)s::varchar[], %(worker_id)s)"
)
PROCRASTINATE_FINISH = "SELECT procrastinate_finish_job_v1(%(job_id)s, %(status)s, %(delete_job)s)"

# pg-boss 12 (src/plans.ts of timgit/pg-boss at 55ee32f, MIT): the job table as createTableJob
# makes it, with the primary key, foreign keys, check and indexes createTableJobIndexes adds
# (unpartitioned), and a queue row of the default `standard` policy; FETCH is fetchNextJob with
# its default options (priority and created_on order, one job, SKIP LOCKED, minimal columns),
# FINISH is completeJobs.
PGBOSS_SCHEMA = """
CREATE TYPE {s}.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled',
    'failed');
CREATE TABLE {s}.queue (name text NOT NULL, policy text NOT NULL, PRIMARY KEY (name));
CREATE TABLE {s}.job (
    id uuid not null default gen_random_uuid(), name text not null,
    priority integer not null default(0), data jsonb,
    state {s}.job_state not null default 'created',
    retry_limit integer not null default 2, retry_count integer not null default 0,
    retry_delay integer not null default 0, retry_backoff boolean not null default false,
    retry_delay_max integer, expire_seconds int not null default 900,
    deletion_seconds int not null default 604800, singleton_key text,
    singleton_on timestamp without time zone, group_id text, group_tier text,
    start_after timestamp with time zone not null default now(),
    created_on timestamp with time zone not null default now(),
    started_on timestamp with time zone, completed_on timestamp with time zone,
    keep_until timestamp with time zone NOT NULL default now() + interval '14 days',
    output jsonb, dead_letter text, policy text, heartbeat_on timestamp with time zone,
    heartbeat_seconds int, blocked boolean not null default false,
    blocking boolean not null default false, pending_dependencies int not null default 0,
    source_name text, source_id uuid, source_created_on timestamp with time zone,
    source_retry_count int
);
ALTER TABLE {s}.job ADD PRIMARY KEY (name, id);
ALTER TABLE {s}.job ADD CONSTRAINT q_fkey FOREIGN KEY (name) REFERENCES {s}.queue (name)
    ON DELETE RESTRICT;
ALTER TABLE {s}.job ADD CONSTRAINT dlq_fkey FOREIGN KEY (dead_letter) REFERENCES {s}.queue (name)
    ON DELETE RESTRICT;
CREATE UNIQUE INDEX job_i1 ON {s}.job (name, COALESCE(singleton_key, ''))
    WHERE state = 'created' AND policy = 'short';
CREATE UNIQUE INDEX job_i2 ON {s}.job (name, COALESCE(singleton_key, ''))
    WHERE state = 'active' AND policy = 'singleton';
CREATE UNIQUE INDEX job_i3 ON {s}.job (name, state, COALESCE(singleton_key, ''))
    WHERE state <= 'active' AND policy = 'stately';
CREATE UNIQUE INDEX job_i6 ON {s}.job (name, COALESCE(singleton_key, ''))
    WHERE state <= 'active' AND policy = 'exclusive';
CREATE UNIQUE INDEX job_i8 ON {s}.job (name, singleton_key)
    WHERE state IN ('active', 'retry', 'failed') AND policy = 'key_strict_fifo';
ALTER TABLE {s}.job ADD CONSTRAINT job_key_strict_fifo_singleton_key_check
    CHECK (NOT (policy = 'key_strict_fifo' AND singleton_key IS NULL));
CREATE UNIQUE INDEX job_i4 ON {s}.job (name, singleton_on, COALESCE(singleton_key, ''))
    WHERE state <> 'cancelled' AND singleton_on IS NOT NULL;
CREATE INDEX job_i5 ON {s}.job (name, start_after) WHERE state < 'active' AND NOT blocked;
CREATE INDEX job_i7 ON {s}.job (name, group_id) WHERE state = 'active' AND group_id IS NOT NULL;
CREATE INDEX job_i9 ON {s}.job (name, id) WHERE blocking AND state = 'completed';
INSERT INTO {s}.queue (name, policy) VALUES ('q', 'standard');
"""
PGBOSS_FETCH = """
WITH next AS (
    SELECT j.id FROM {s}.job j
    WHERE j.name = 'q' AND j.state < 'active' AND NOT j.blocked AND j.start_after <= now()
    ORDER BY j.priority desc, j.created_on, j.id
    LIMIT 1
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE {s}.job j SET
    state = 'active', started_on = now(), heartbeat_on = now(),
    retry_count = CASE WHEN started_on IS NOT NULL THEN retry_count + 1 ELSE retry_count END
FROM next
WHERE name = 'q' AND j.id = next.id
RETURNING j.id, name, data, expire_seconds as "expireInSeconds",
    heartbeat_seconds as "heartbeatSeconds", group_id as "groupId", group_tier as "groupTier"
"""
PGBOSS_FINISH = """
WITH results AS (
    UPDATE {s}.job
    SET completed_on = now(), state = 'completed', output = %(output)s::jsonb,
        blocked = blocked, pending_dependencies = pending_dependencies
    WHERE name = %(name)s AND id = ANY(%(ids)s::uuid[]) AND state = 'active'
    RETURNING 1
)
SELECT COUNT(*) FROM results
"""

BARE_TABLES = """
CREATE TABLE {s}.procrastinate_jobs (
    id bigserial PRIMARY KEY, queue_name text NOT NULL, task_name text NOT NULL,
    priority integer NOT NULL DEFAULT 0, lock text, queueing_lock text,
    args jsonb NOT NULL DEFAULT '{{}}', status text NOT NULL DEFAULT 'todo',
    scheduled_at timestamptz, attempts integer NOT NULL DEFAULT 0, worker_id bigint
);
CREATE INDEX ON {s}.procrastinate_jobs (queue_name, priority DESC, id) WHERE status = 'todo';
CREATE TABLE {s}.job (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL,
    priority integer NOT NULL DEFAULT 0, data jsonb, state text NOT NULL DEFAULT 'created',
    retry_count integer NOT NULL DEFAULT 0, start_after timestamptz NOT NULL DEFAULT now(),
    started_on timestamptz, created_on timestamptz NOT NULL DEFAULT now(),
    completed_on timestamptz, output jsonb
);
CREATE INDEX ON {s}.job (name, priority DESC, created_on, id) WHERE state IN ('created', 'retry');
"""
"""The floor (`-bare`): the two queues' claim and finish statements alone, each on a bare table
with its primary key and one partial index of ready jobs (no event rows, no other index)."""
# procrastinate's fetch (its lock checks left out) and finish, by id, no token.
BARE_PROCRASTINATE_FETCH = """
WITH candidate AS (
    SELECT id FROM {s}.procrastinate_jobs
    WHERE status = 'todo' AND queue_name = 'q' AND (scheduled_at IS NULL OR scheduled_at <= now())
    ORDER BY priority DESC, id ASC LIMIT 1 FOR UPDATE SKIP LOCKED
)
UPDATE {s}.procrastinate_jobs j SET status = 'doing', worker_id = %(worker)s
FROM candidate WHERE j.id = candidate.id RETURNING j.id, j.args
"""
BARE_PROCRASTINATE_FINISH = """
UPDATE {s}.procrastinate_jobs SET status = 'succeeded', attempts = attempts + 1
WHERE id = %(id)s AND status = 'doing'
"""
# pg-boss's fetch and finish, one job at a time; its job_state enum orders created < retry <
# active, spelled here as a list.
BARE_PGBOSS_FETCH = """
WITH next AS (
    SELECT id FROM {s}.job
    WHERE name = 'q' AND state IN ('created', 'retry') AND start_after < now()
    ORDER BY priority DESC, created_on, id LIMIT 1 FOR UPDATE SKIP LOCKED
)
UPDATE {s}.job j SET state = 'active', started_on = now(),
    retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1
        ELSE j.retry_count END
FROM next WHERE j.name = 'q' AND j.id = next.id RETURNING j.id, j.data
"""
BARE_PGBOSS_FINISH = """
UPDATE {s}.job SET completed_on = now(), state = 'completed', output = NULL
WHERE name = 'q' AND id = %(id)s AND state = 'active'
"""

KINDS = ("lanekit", "procrastinate", "pg-boss", "procrastinate-bare", "pg-boss-bare")
ROUNDS = 3
"""Measurements of each (workers, kind); the figure uses their median."""


def _schema(dsn: str, name: str) -> str:
    """A fresh schema `name` (dropped first), its name."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{name}"')
    return name


def _fill_others(dsn: str, schema: str, kind: str, jobs: int) -> None:
    """`kind`'s tables in `schema` and `jobs` jobs queued in one statement (not timed)."""
    import psycopg

    q = f'"{schema}"'
    with psycopg.connect(dsn, autocommit=True) as conn:
        if kind == "procrastinate":
            conn.execute(f"SET search_path = {q}")
            conn.execute(PROCRASTINATE_SCHEMA.read_text(encoding="utf-8"))
            conn.execute(
                "INSERT INTO procrastinate_jobs (queue_name, task_name, args) "
                "SELECT 'q', 't', jsonb_build_object('n', n) FROM generate_series(1, %s) n",
                (jobs,),
            )
            tables = ["procrastinate_jobs", "procrastinate_events"]
        elif kind == "pg-boss":
            conn.execute(PGBOSS_SCHEMA.replace("{s}", q))
            conn.execute(
                f"INSERT INTO {q}.job (name, data, policy) "
                "SELECT 'q', jsonb_build_object('n', n), 'standard' FROM generate_series(1, %s) n",
                (jobs,),
            )
            tables = [f"{q}.job"]
        else:
            conn.execute(BARE_TABLES.replace("{s}", q).replace("{{}}", "{}"))
            table = f"{q}.procrastinate_jobs" if kind == "procrastinate-bare" else f"{q}.job"
            bare_procrastinate = kind == "procrastinate-bare"
            columns = "queue_name, task_name, args" if bare_procrastinate else "name, data"
            values = "'q', 't'" if bare_procrastinate else "'q'"
            conn.execute(
                f"INSERT INTO {table} ({columns}) "
                f"SELECT {values}, jsonb_build_object('n', n) FROM generate_series(1, %s) n",
                (jobs,),
            )
            tables = [table]
        for table in tables:
            conn.execute(f"ANALYZE {table}")


def _fill_lanekit(dsn: str, schema: str, jobs: int, queue: str = LANE) -> PostgresQueue:
    """The schema migrated and `jobs` jobs queued in one statement (not timed)."""
    pg = PostgresQueue(PgLocation(queue, dsn, schema=schema))
    pg.migrate()
    pg.session.rows(
        f'INSERT INTO "{schema}".jobs (queue, id, payload) '
        "SELECT %s, 'job-' || lpad(n::text, 8, '0'), convert_to(format('{\"n\": %%s}', n), 'UTF8') "
        "FROM generate_series(1, %s) n",
        (queue, jobs),
    )
    pg.session.rows(f'ANALYZE "{schema}".jobs')  # as autovacuum would after a bulk load
    return pg


def _drain(kind: str, dsn: str, schema: str, spool: str) -> int:
    """One worker: claim and settle until nothing is left; how many it took."""
    done = 0
    if kind == "lanekit":
        queue = PostgresQueue(PgLocation(LANE, dsn, schema=schema), spool=Path(spool))
        claimer = queue.claimer(lane=LANE)
        claim = claimer.claim()
        # As the runner goes on to its next job: settle it and claim the next in one step
        # (one statement), and claim() alone again only once a step found nothing ready.
        while claim is not None:
            _, claim = claimer.settle_and_claim(claim, Verdict.succeeded())
            done += 1
            if claim is None:
                claim = claimer.claim()
        return done
    return _drain_theirs(kind, dsn, schema)


def _drain_theirs(kind: str, dsn: str, schema: str) -> int:
    """One worker of procrastinate's or pg-boss's kind: fetch and finish until nothing is
    left (one job a fetch, prepared statements, autocommit); how many it took."""
    import psycopg

    done = 0
    q = f'"{schema}"'
    if kind == "procrastinate":
        with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={q}") as conn:
            [(worker,)] = conn.execute("SELECT * FROM procrastinate_register_worker_v1()")
            fetch = {"queues": ["q"], "worker_id": worker}
            while (row := conn.execute(PROCRASTINATE_FETCH, fetch, prepare=True).fetchone()) and (
                row[0] is not None
            ):
                finish = {"job_id": row[0], "status": "succeeded", "delete_job": False}
                conn.execute(PROCRASTINATE_FINISH, finish, prepare=True)
                done += 1
        return done
    if kind == "pg-boss":
        fetch_sql, finish_sql = (text.replace("{s}", q) for text in (PGBOSS_FETCH, PGBOSS_FINISH))
        with psycopg.connect(dsn, autocommit=True) as conn:
            while rows := conn.execute(fetch_sql, prepare=True).fetchall():
                params = {"output": None, "name": "q", "ids": [rows[0][0]]}
                conn.execute(finish_sql, params, prepare=True)
                done += 1
        return done
    fetch_sql, finish_sql = (
        text.replace("{s}", q)
        for text in (
            (BARE_PROCRASTINATE_FETCH, BARE_PROCRASTINATE_FINISH)
            if kind == "procrastinate-bare"
            else (BARE_PGBOSS_FETCH, BARE_PGBOSS_FINISH)
        )
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        worker = {"worker": os.getpid()}
        while rows := conn.execute(fetch_sql, worker, prepare=True).fetchall():
            conn.execute(finish_sql, {"id": rows[0][0]}, prepare=True)
            done += 1
    return done


def _rate(kind: str, dsn: str, schema: str, spool: Path, workers: int) -> tuple[float, int]:
    """(jobs/s, jobs) of `workers` processes draining the kind's table."""
    context = get_context("fork")
    started = time.perf_counter()
    with context.Pool(workers) as pool:
        counts = pool.starmap(_drain, [(kind, dsn, schema, str(spool))] * workers)
    elapsed = time.perf_counter() - started
    return sum(counts) / elapsed, sum(counts)


def bench_pg_claims(root: Path, dsn: str, jobs: int) -> Figure:
    """(p): claim+settle jobs/s, lanekit vs procrastinate and pg-boss as they run (and their
    statements on bare tables: the floor), at 1/2/4/8 workers; each (workers, kind) ROUNDS
    times on a fresh table of `jobs` jobs, the kinds in a rotated order, the median kept."""
    spool = fresh(root, "pg-spool")
    measured: dict[tuple[int, str], list[float]] = {}
    kinds = list(KINDS)
    for round_no in range(ROUNDS):
        for workers in WORKERS:
            # Each round and worker count in another order: none always runs first.
            for kind in kinds:
                schema = _schema(dsn, "bench_claims")
                if kind == "lanekit":
                    _fill_lanekit(dsn, schema, jobs)
                else:
                    _fill_others(dsn, schema, kind, jobs)
                rate, taken = _rate(kind, dsn, schema, spool, workers)
                assert taken == jobs, (kind, workers, taken)
                measured.setdefault((workers, kind), []).append(rate)
                say(f"  (p) round {round_no + 1}, {workers} workers, {kind}: {rate:,.0f} jobs/s")
            kinds = kinds[1:] + kinds[:1]
    rates = {cell: median(values) for cell, values in measured.items()}

    def against(*others: str) -> list[float]:
        return [rates[w, "lanekit"] / max(rates[w, other] for other in others) for w in WORKERS]

    ratios = against("procrastinate", "pg-boss")
    floor = against("procrastinate-bare", "pg-boss-bare")
    ratio = min(ratios)
    table = [
        f"{w} worker{'s' if w > 1 else ''}: lanekit {rates[w, 'lanekit']:,.0f} jobs/s, "
        f"procrastinate {rates[w, 'procrastinate']:,.0f}, pg-boss {rates[w, 'pg-boss']:,.0f} "
        f"(lanekit / the faster: {ratios[i]:.2f}x); their statements on bare tables: "
        f"procrastinate {rates[w, 'procrastinate-bare']:,.0f}, pg-boss "
        f"{rates[w, 'pg-boss-bare']:,.0f} (lanekit / the faster: {floor[i]:.2f}x)"
        for i, w in enumerate(WORKERS)
    ]
    return Figure(
        key="p",
        title="postgres claim+settle jobs/s, lanekit vs the faster of procrastinate and pg-boss "
        "as they run (worst of 1/2/4/8 workers)",
        ratio=ratio,
        target=">= 1.0x",
        met=ratio >= 1.0,
        rounds=ratios,
        detail=[
            *table,
            f"against their statements alone on bare tables (the floor), the worst of the four: "
            f"{min(floor):.2f}x",
            f"{jobs:,} jobs per measurement, each on a fresh table; every worker a process with "
            "its own connection (autocommit, prepared statements), one job per claim; each "
            f"figure the median of {ROUNDS} measurements, the kinds in a rotated order from one "
            "measurement to the next",
            "procrastinate: its own schema.sql (3.9.0 + 11 commits, vendored in "
            "scripts/benchkit/vendor/: 7 indexes on its jobs table, an event row per state "
            "change by trigger) and its worker's fetch_job / finish_job queries; pg-boss: its "
            "12.x job table with the keys, check and 9 partial indexes of a standard queue "
            "(unpartitioned), its fetchNextJob with default options and completeJobs",
        ],
        limits="lanekit takes one round trip a job, as its runner does (the settle and the next "
        "claim in one statement, JobClaimer.settle_and_claim), the others two (claim, finish). "
        "That one statement writes what theirs do not: a fencing token, a lease, the attempt's "
        "row (written once, at the end, since schema 3), the partial unique index on "
        "succeeded attempts, the job moved between the partial indexes that page and recover "
        "(10 WAL records a job); and per job lanekit's client writes the payload to a new "
        "0600 file in the spool for the job's command and removes it at settle. Against "
        "procrastinate as it runs (its event rows and indexes) and pg-boss (whose fetch sorts "
        "every ready job of the queue: its index is on start_after, its order by priority "
        "and created_on), lanekit is faster; against their statements alone on bare tables it "
        "is not, and that gap is the server work above and the payload file",
    )


def bench_pg_backlog(root: Path, dsn: str, small: int, large: int, runs: int) -> Figure:
    """(q): one `lanekit run` of 20 jobs at a backlog of `small` vs `large`."""
    argvs: dict[int, list[str]] = {}
    for backlog in (small, large):
        schema = _schema(dsn, f"bench_backlog_{backlog}")
        say(f"  (q) filling {backlog + 20 * runs:,} jobs")
        queue = _fill_lanekit(dsn, schema, backlog + 20 * runs)
        place = fresh(root, f"pg-backlog-{backlog}")
        spec = lane_spec(Path(str(queue.location)), ["/bin/true"], max_jobs=20)
        from dataclasses import replace

        spec = replace(spec, log_path=place / "bench.log")
        spec.write(place / "snapshot.json")
        argvs[backlog] = [
            PY,
            "-m",
            "lanekit",
            "run",
            LANE,
            "--snapshot",
            str(place / "snapshot.json"),
        ]
    timings: dict[int, list[float]] = {small: [], large: []}
    for _ in range(runs):
        for backlog, argv in argvs.items():
            timings[backlog].append(timed(argv, check=True)[0])
    per_round = [big / few for few, big in zip(timings[small], timings[large], strict=True)]
    ratio = median(per_round)
    return Figure(
        key="q",
        title=f"postgres: one run of 20 jobs at a backlog of {small:,} vs {large:,}",
        ratio=ratio,
        target="<= 1.5x",
        met=ratio <= 1.5,
        rounds=per_round,
        detail=[
            f"backlog {small:,}: {median(timings[small]) * 1e3:.0f} ms; backlog {large:,}: "
            f"{median(timings[large]) * 1e3:.0f} ms (median of {runs} runs, 20 jobs each, "
            "job = /bin/true, alternating backlogs)",
        ],
        limits="A claim reads the head of the partial index of ready jobs (queue, seq) WHERE "
        "state = 'queued': its cost does not grow with the backlog",
    )


def bench_pg_paging(root: Path, dsn: str, jobs: int, runs: int) -> Figure:
    """(t): page 1 of the jobs (newest first, the total counted) over `jobs` finished ones vs
    reading every one of them, through PostgresQueue.page; one finished state's pages too."""
    from lanekit.queue.records import JobState

    schema = _schema(dsn, "bench_paging")
    say(f"  (t) filling {jobs:,} finished jobs")
    queue = _fill_lanekit(dsn, schema, jobs)
    table = f'"{schema}".jobs'
    queue.session.rows(f"UPDATE {table} SET state = 'succeeded', finished_at = now()")
    queue.session.rows(f"UPDATE {table} SET state = 'failed', error = 'x' WHERE seq %% 50 = 0")
    queue.session.rows(f"VACUUM ANALYZE {table}")  # as autovacuum would after a bulk change
    queue.check()
    timed: dict[str, list[float]] = {}

    def timing(name: str, page: int, per_page: int, state: JobState | None = None) -> None:
        started = time.perf_counter()
        got = queue.page(page, per_page, state)
        timed.setdefault(name, []).append(time.perf_counter() - started)
        assert got.items, name

    for _ in range(runs):
        timing("page 1", 1, 20)
        timing("every job", 1, 0)
        timing("succeeded page 1", 1, 20, JobState.SUCCEEDED)
        timing("failed page 1", 1, 20, JobState.FAILED)
        timing("failed, last page", jobs // 50 // 20, 20, JobState.FAILED)
        timing("the last page", jobs // 20, 20)
    per_round = [
        page / full for page, full in zip(timed["page 1"], timed["every job"], strict=True)
    ]
    ratio = median(per_round)
    return Figure(
        key="t",
        title=f"postgres: `lanekit jobs` page 1 over {jobs:,} finished jobs vs reading them all",
        ratio=ratio,
        target="<= 5%",
        met=ratio <= 0.05,
        rounds=per_round,
        detail=[
            ", ".join(f"{name}: {median(times) * 1e3:.1f} ms" for name, times in timed.items())
            + f" (median of {runs}; 20 jobs a page; 2% of the jobs failed, the rest succeeded; "
            "the ratio is the median of the rounds' page 1 / every job)",
        ],
        limits="Page 1 shows the total, so the chosen jobs are counted: every job's entry in "
        "an index (jobs_newest), one state's in its partial index (jobs_finished by state and "
        "seq, where the count needs no row at all once vacuumed). A page's rows are read by "
        "seq from a boundary found in the same index, so a deep page skips index entries, "
        "not rows",
    )


def bench_pg_startup(root: Path, dsn: str, runs: int) -> Figure:
    """(r): CPU of `lanekit run` on a postgres lane with nothing queued vs `python -c pass`."""
    from lanekit.service.launchd.plist import ENTRYPOINT_CODE, INTERPRETER_FLAGS

    schema = _schema(dsn, "bench_empty")
    queue = _fill_lanekit(dsn, schema, 0)
    place = fresh(root, "pg-empty")
    from dataclasses import replace

    spec = replace(
        lane_spec(Path(str(queue.location)), ["/bin/true"], max_jobs=20),
        log_path=place / "bench.log",
    )
    spec.write(place / "snapshot.json")
    run_argv = [PY, *INTERPRETER_FLAGS, "-c", ENTRYPOINT_CODE, "run", LANE]
    run_argv += ["--snapshot", str(place / "snapshot.json")]
    pass_argv = [PY, "-c", "pass"]
    # The floor: the client alone, imported by the same interpreter with the same flags.
    client_argv = [PY, *INTERPRETER_FLAGS, "-c", "import psycopg"]
    for _ in range(3):
        timed(run_argv)
        timed(pass_argv)
    base, lane, client = [], [], []
    for _ in range(runs):
        base.append(timed(pass_argv)[1])
        lane.append(timed(run_argv)[1])
        client.append(timed(client_argv)[1])
    per_round = round_ratios(lane, base)
    ratio = median(per_round)
    return Figure(
        key="r",
        title="`lanekit run` of a postgres lane with nothing queued vs `python -c pass`, CPU",
        ratio=ratio,
        target="<= 5x",
        met=ratio <= 5.0,
        rounds=per_round,
        detail=[
            f"lanekit run: {median(lane) * 1e3:.1f} ms CPU; python -c pass: "
            f"{median(base) * 1e3:.1f} ms CPU (user + system, median of {runs} runs each, "
            "interleaved; the ratio is the median of rounds of 10)",
            f"the floor, `python -I -c 'import psycopg'` alone: {median(client) * 1e3:.1f} ms "
            f"CPU, {median(client) / median(base):.1f}x `python -c pass`; lanekit's own part "
            f"(its modules, the connection, its statements): "
            f"{(median(lane) - median(client)) / median(base):.1f}x",
        ],
        limits="A postgres queue cannot be peeked at without its server, so an empty run "
        "imports psycopg, its one client, and that import alone is above the target: psycopg's "
        "package __init__ imports every part of it (async connection and cursors, copy, "
        "pipelines) whatever is used, its errors module does `from asyncio import "
        "CancelledError` (asyncio, ssl), psycopg and psycopg_binary each read their version "
        "with importlib.metadata (email, zipfile) at import, psycopg.pq.misc imports "
        "ctypes.util (subprocess, tempfile, shutil) to find libpq, and _compat imports "
        "typing_extensions (inspect); each is an attribute used while psycopg is being "
        "imported, so no lazy import on lanekit's side can defer it, and importing "
        "psycopg.Connection or psycopg.pq alone runs the same package __init__. Under the "
        "floor, lanekit imports the queue machinery, connects (TCP, SCRAM), checks the schema "
        "version, recovers and claims (one statement each)",
    )
