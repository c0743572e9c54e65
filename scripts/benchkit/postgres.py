"""The postgres queue's figures, on a server the caller names (`--pg "host=... port=... user=...
dbname=..."`, the password from PGPASSFILE or ~/.pgpass, never on the command line):

(p) claim + settle jobs/s with 1, 2, 4 and 8 worker processes: lanekit's claim and settle as
    the runner makes them (the settle and the next claim in one statement: fencing token, lease,
    attempt rows, the payload written to and removed from the spool) vs a procrastinate-style
    and a pg-boss-style claim and finish written here after their SQL (one statement each,
    two round trips a job, unfenced, no attempt rows, no file);
(q) one `lanekit run` of 20 jobs at a backlog of 100 vs 100,000;
(r) `lanekit run` of a postgres lane with nothing queued vs `python -c pass`, in CPU seconds
    (user + system of the process);
(t) `lanekit jobs` page 1 over 100,000 finished jobs vs reading them all (JobQueue.page).
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from multiprocessing import get_context
from pathlib import Path

from benchkit.common import LANE, PY, Figure, fresh, lane_spec, median, say
from lanekit.queue.model import Verdict
from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation

WORKERS = (1, 2, 4, 8)

PROCRASTINATE_TABLE = """
CREATE TABLE {s}.procrastinate_jobs (
    id bigserial PRIMARY KEY, queue_name text NOT NULL, task_name text NOT NULL,
    priority integer NOT NULL DEFAULT 0, lock text, queueing_lock text,
    args jsonb NOT NULL DEFAULT '{{}}', status text NOT NULL DEFAULT 'todo',
    scheduled_at timestamptz, attempts integer NOT NULL DEFAULT 0, worker_id bigint
);
CREATE INDEX ON {s}.procrastinate_jobs (queue_name, priority DESC, id) WHERE status = 'todo';
"""
# procrastinate's procrastinate_fetch_job (its lock and queueing-lock checks left out: they
# only add work) and procrastinate_finish_job: by id, no token.
PROCRASTINATE_FETCH = """
WITH candidate AS (
    SELECT id FROM {s}.procrastinate_jobs
    WHERE status = 'todo' AND queue_name = 'q' AND (scheduled_at IS NULL OR scheduled_at <= now())
    ORDER BY priority DESC, id ASC LIMIT 1 FOR UPDATE SKIP LOCKED
)
UPDATE {s}.procrastinate_jobs j SET status = 'doing', worker_id = %(worker)s
FROM candidate WHERE j.id = candidate.id RETURNING j.id, j.args
"""
PROCRASTINATE_FINISH = """
UPDATE {s}.procrastinate_jobs SET status = 'succeeded', attempts = attempts + 1
WHERE id = %(id)s AND status = 'doing'
"""

PGBOSS_TABLE = """
CREATE TABLE {s}.job (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL,
    priority integer NOT NULL DEFAULT 0, data jsonb, state text NOT NULL DEFAULT 'created',
    retry_count integer NOT NULL DEFAULT 0, start_after timestamptz NOT NULL DEFAULT now(),
    started_on timestamptz, created_on timestamptz NOT NULL DEFAULT now(),
    completed_on timestamptz, output jsonb
);
CREATE INDEX ON {s}.job (name, priority DESC, created_on, id) WHERE state IN ('created', 'retry');
"""
# pg-boss's fetchNextJob and completeJobs (v10 plans.js), one job at a time; its job_state
# enum orders created < retry < active, spelled here as a list.
PGBOSS_FETCH = """
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
PGBOSS_FINISH = """
UPDATE {s}.job SET completed_on = now(), state = 'completed', output = NULL
WHERE name = 'q' AND id = %(id)s AND state = 'active'
"""


def _schema(dsn: str, name: str) -> str:
    """A fresh schema `name` (dropped first), its name."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{name}"')
    return name


def _fill_others(dsn: str, schema: str, jobs: int) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PROCRASTINATE_TABLE.replace("{s}", f'"{schema}"').replace("{{}}", "{}"))
        conn.execute(PGBOSS_TABLE.replace("{s}", f'"{schema}"'))
        conn.execute(
            f'INSERT INTO "{schema}".procrastinate_jobs (queue_name, task_name, args) '
            "SELECT 'q', 't', jsonb_build_object('n', n) FROM generate_series(1, %s) n",
            (jobs,),
        )
        conn.execute(
            f'INSERT INTO "{schema}".job (name, data) '
            "SELECT 'q', jsonb_build_object('n', n) FROM generate_series(1, %s) n",
            (jobs,),
        )
        conn.execute(f'ANALYZE "{schema}".procrastinate_jobs')
        conn.execute(f'ANALYZE "{schema}".job')


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
    import psycopg

    fetch, finish = (
        (PROCRASTINATE_FETCH, PROCRASTINATE_FINISH)
        if kind == "procrastinate"
        else (PGBOSS_FETCH, PGBOSS_FINISH)
    )
    fetch, finish = (text.replace("{s}", f'"{schema}"') for text in (fetch, finish))
    with psycopg.connect(dsn, autocommit=True) as conn:
        while rows := conn.execute(fetch, {"worker": os.getpid()}, prepare=True).fetchall():
            conn.execute(finish, {"id": rows[0][0]}, prepare=True)
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
    """(p): claim+settle jobs/s, lanekit vs the procrastinate-style and pg-boss-style claim,
    at 1/2/4/8 workers; each (workers, kind) on a fresh table of `jobs` jobs, kinds in turn."""
    spool = fresh(root, "pg-spool")
    rates: dict[tuple[int, str], float] = {}
    kinds = ["lanekit", "procrastinate", "pg-boss"]
    for workers in WORKERS:
        # Each round in another order (rotated): none always runs first after a bulk load.
        for kind in kinds:
            schema = _schema(dsn, "bench_claims")
            if kind == "lanekit":
                _fill_lanekit(dsn, schema, jobs)
            else:
                _fill_others(dsn, schema, jobs)
            rate, taken = _rate(kind, dsn, schema, spool, workers)
            assert taken == jobs, (kind, workers, taken)
            rates[workers, kind] = rate
            say(f"  (p) {workers} workers, {kind}: {rate:,.0f} jobs/s")
        kinds = kinds[1:] + kinds[:1]
    ratios = [
        rates[w, "lanekit"] / max(rates[w, "procrastinate"], rates[w, "pg-boss"]) for w in WORKERS
    ]
    ratio = min(ratios)
    table = [
        f"{w} worker{'s' if w > 1 else ''}: lanekit {rates[w, 'lanekit']:,.0f} jobs/s, "
        f"procrastinate-style {rates[w, 'procrastinate']:,.0f}, pg-boss-style "
        f"{rates[w, 'pg-boss']:,.0f} (lanekit / the faster: {ratios[i]:.2f}x)"
        for i, w in enumerate(WORKERS)
    ]
    return Figure(
        key="p",
        title="postgres claim+settle jobs/s, lanekit vs the faster of a procrastinate-style and "
        "a pg-boss-style claim (worst of 1/2/4/8 workers)",
        ratio=ratio,
        target=">= 1.0x",
        met=ratio >= 1.0,
        rounds=ratios,
        detail=[
            *table,
            f"{jobs:,} jobs per measurement, each on a fresh table; every worker a process with "
            "its own connection (autocommit, prepared statements), one job per claim; the "
            "three kinds in a rotated order from one worker count to the next",
        ],
        limits="lanekit takes one round trip a job, as its runner does (the settle and the next "
        "claim in one statement, JobClaimer.settle_and_claim), the others two (claim, finish). "
        "That one statement does more on the server (a fencing token, a lease, an attempt row "
        "inserted at claim and closed at settle, the partial unique index on succeeded "
        "attempts, the job moved between partial indexes: 11 WAL records a job) and costs "
        "about what their two round trips cost: sent bare from psycopg (no file, no lanekit "
        "Python around it) it took 310 us a job at 1 worker vs 295-351 us for the "
        "procrastinate-style pair, in a run of its own on this machine. The rest is lanekit's "
        "client side per job: the payload written to a new 0600 file in the spool for the "
        "job's command and removed at settle (70-170 us here: creating a file on this ext4 "
        "without a journal is slow after many deletions, see 'Why a creation is slow after "
        "deletions'), and about 60 us of Python (the claim's record, owner and self-fence "
        "deadline, psycopg's parameters). Matching them needs a cheaper file than a new inode "
        "per job, or less server work (the attempt row written once, not inserted and then "
        "updated), not fewer round trips",
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
            started = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            timings[backlog].append(time.perf_counter() - started)
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


def _cpu(argv: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of one child process run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
        _cpu(run_argv)
        _cpu(pass_argv)
    base, lane, client = [], [], []
    for _ in range(runs):
        base.append(_cpu(pass_argv))
        lane.append(_cpu(run_argv))
        client.append(_cpu(client_argv))
    per_round = [
        median(lane[at : at + 10]) / median(base[at : at + 10]) for at in range(0, runs, 10)
    ]
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
