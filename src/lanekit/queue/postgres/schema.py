"""The PostgreSQL queue's schema, versioned: the migrations `lanekit db migrate` applies, and
the check every other use makes (runs never migrate: an older schema is refused with the
command that upgrades it, a newer one, written by a newer lanekit, with exit 69).

Tables (in the queue's `schema`, shared by every queue named in it):
    meta        key/value: `version`
    jobs        one row per job (queue, id): its payload, state, attempts, the fencing token
                (`token`, +1 at every claim, never given back), the lease (`lease_expires` on
                the server's clock, set while it runs) and its holder (host, pid, start,
                claimed_at: the running attempt, kept after it ends as the last holder's), a
                watcher's recorded outcome
    attempts    one row per ended claim (queue, job_id, token): host, pid, outcome, written
                once when the claim ends (settle, take-back); a partial unique index allows
                one `succeeded` row per job, so a second success is refused by the database
    tombstones  succeeded ids whose rows were purged: the re-execution guard outlives them
"""

from __future__ import annotations

from lanekit.state.schemas import POSTGRES_QUEUE_SCHEMA as VERSION

__all__ = ["MIGRATIONS", "VERSION", "render"]

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema.
    """
    CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE {s}.jobs (
        queue text NOT NULL,
        id text NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        payload bytea NOT NULL,
        state text NOT NULL DEFAULT 'queued'
            CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        token bigint NOT NULL DEFAULT 0,
        not_before timestamptz,
        queued_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        lane text,
        error text,
        lease_host text,
        lease_pid integer,
        lease_start text,
        lease_expires timestamptz,
        claimed_at timestamptz,
        outcome jsonb,
        cancel_requested boolean NOT NULL DEFAULT false,
        PRIMARY KEY (queue, id),
        CHECK ((state = 'running') = (lease_expires IS NOT NULL))
    );
    CREATE INDEX jobs_ready ON {s}.jobs (queue, seq) WHERE state = 'queued';
    CREATE INDEX jobs_leases ON {s}.jobs (queue, lease_expires) WHERE state = 'running';
    CREATE INDEX jobs_finished ON {s}.jobs (queue, finished_at)
        WHERE state IN ('succeeded', 'failed');
    CREATE INDEX jobs_newest ON {s}.jobs (queue, seq DESC);
    CREATE TABLE {s}.attempts (
        queue text NOT NULL,
        job_id text NOT NULL,
        token bigint NOT NULL,
        attempt integer NOT NULL,
        lane text,
        host text NOT NULL,
        pid integer NOT NULL,
        start text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        ended_at timestamptz,
        outcome text CHECK (outcome IN ('succeeded', 'failed', 'stopped', 'orphaned')),
        error text,
        PRIMARY KEY (queue, job_id, token)
    );
    CREATE UNIQUE INDEX attempts_one_success ON {s}.attempts (queue, job_id)
        WHERE outcome = 'succeeded';
    CREATE TABLE {s}.tombstones (
        queue text NOT NULL,
        id text NOT NULL,
        succeeded_at timestamptz NOT NULL,
        PRIMARY KEY (queue, id)
    );
    """,
    # 2: the finished jobs' index orders them by state and seq, with finished_at carried in
    # it: `jobs --failed` counts and pages one state's jobs in the index alone (a page's
    # boundary is found there, then the page is read by seq), purge reads one state's
    # finished_at from it. It replaces (queue, finished_at): as many index entries per job.
    """
    DROP INDEX {s}.jobs_finished;
    CREATE INDEX jobs_finished ON {s}.jobs (queue, state, seq) INCLUDE (finished_at)
        WHERE state IN ('succeeded', 'failed');
    """,
    # 3: an attempt's row is written once, when its claim ends, instead of inserted at the
    # claim and updated at the end (a heap tuple and an index entry a job fewer, no dead tuple);
    # the running attempt is read from its job's lease columns. A claim made under 2 has an
    # open row that 3's settle would not close: refused while any job runs (pause the lanes).
    """
    DO $migrate$ BEGIN
        IF EXISTS (SELECT 1 FROM {s}.jobs WHERE state = 'running') THEN
            RAISE EXCEPTION USING ERRCODE = 'object_in_use',
                MESSAGE = 'lanekit: jobs are running under the schema being migrated';
        END IF;
    END $migrate$;
    """,
)
assert len(MIGRATIONS) == VERSION


def render(statement: str, schema: str) -> str:
    """`statement` for `schema` (validated by location.schema_problem: letters, digits and _,
    so it is written into SQL quoted, never interpolated from anything else)."""
    return statement.replace("{s}", f'"{schema}"')
