"""The PostgreSQL queue: the JobQueue seam on a server, so several machines drain one queue.

Every step is one autocommit statement (connection.Session); none holds a transaction open
while a job runs:
- enqueue inserts with the id as primary key; an id already there is reported with its state,
  a succeeded one (its row, or its tombstone after a purge) is refused;
- claim is one statement: a `FOR UPDATE SKIP LOCKED` CTE over the partial index of ready jobs,
  the job moved to running with attempts + 1, the fencing token + 1 (never given back, unlike
  an attempt a crash did not spend), the lease owner and `lease_expires = now() + lease` on
  the server's clock: the running attempt is the job row's, its own row is written when it
  ends (one insert a job, not an insert and an update);
- renew and settle are fenced by the token and the running state (zero rows: the lease is
  lost; a fenced settle changes nothing and raises ClaimFencedError); settle writes the
  attempt's row in the same statement. "Running" is spelled `lease_expires IS NOT NULL` (a
  CHECK makes it the same as state = 'running'): so spelled, the planner looks the row up by
  its primary key instead of walking the partial index of running jobs on stale statistics;
- a runner going on to its next job settles and claims in one statement (the settle's CTEs,
  then the claim's, gated on the settle having changed its row): one round trip a job;
- recover takes expired leases on any host, re-checking the predicate under the row lock in
  the same statement (a late renew or settle wins), records the attempt `orphaned`, and
  retries or fails the job per `on_orphan`; a job whose watcher recorded its end is settled by
  that, never run again;
- a partial unique index allows one succeeded attempt per job: success is recorded once even
  across a partition. Execution stays at-least-once.
The job reaches its command as a file: the payload is written to a 0700 spool in lanekit's
state directory at claim and removed at settle.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from pathlib import Path

from lanekit.errors import ExitCode, LanekitError, QueueError, UsageError
from lanekit.queue import outcome as job_outcome
from lanekit.queue.model import (
    CANCELLED,
    Claim,
    ClaimFencedError,
    JobExistsError,
    LeaseRenewal,
    LeaseTerms,
    Moved,
    Purged,
    Recovered,
    Settled,
    Verdict,
    VerdictKind,
    error_file_text,
)
from lanekit.queue.observed import ClaimState, ClaimView, JobLocation, RecoverReason
from lanekit.queue.policy import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX,
    DEFER_SECONDS,
    backoff,
    gave_up,
)
from lanekit.queue.postgres import schema as pg_schema
from lanekit.queue.postgres.connection import session_for
from lanekit.queue.postgres.lease import awake_clock, fence_deadline
from lanekit.queue.postgres.location import OnOrphan, PgLocation
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record
from lanekit.state.clock import epoch
from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from lanekit.queue.counts import QueueCounts
    from lanekit.queue.model import Dropped
    from lanekit.queue.outcome import Outcome
    from lanekit.queue.paging import AttemptSpan, AttemptView, JobView, Page


class SchemaError(QueueError):
    """The queue's schema is missing, older than this lanekit (`lanekit db migrate`), or newer
    (a newer lanekit migrated it: exit 69 until this one is upgraded)."""


class MigrationBusyError(LanekitError):
    """A migration that must not run while jobs run under the old schema: try again once
    they ended (exit 75)."""

    exit_code = ExitCode.INTERRUPTED


class _Handle:
    """The backend's side of one claim: the fencing token and the self-fence deadline."""

    __slots__ = ("deadline", "held", "token")
    fd = -1
    """No descriptor keeps the claim: its lease does, renewed by the watcher."""

    def __init__(self, token: int, deadline: float) -> None:
        self.token = token
        self.deadline = deadline
        """awake_clock() time by which the holder must have stopped the job."""
        self.held = True

    def release(self) -> None:
        """The claim is settled (idempotent)."""
        self.held = False


_STATE_OF_OUTCOME = {
    JobState.SUCCEEDED: "succeeded",
    JobState.FAILED: "failed",
}

_RECORD_COLUMNS = (
    "id, state, attempts, extract(epoch from queued_at)::float8, "
    "extract(epoch from updated_at)::float8, lane, error"
)


def _record(row: tuple[Any, ...]) -> Record:
    """A Record from the _RECORD_COLUMNS of a row."""
    job_id, state, attempts, queued, updated, lane, error = row[:7]
    return Record(job_id, JobState(state), attempts, iso_utc(queued), iso_utc(updated), lane, error)


_CLAIM = """
    next AS (
        SELECT queue, id FROM {{s}}.jobs
        WHERE queue = %(q)s AND state = 'queued'
          AND (not_before IS NULL OR not_before <= now()) {gate}
        ORDER BY seq
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE {{s}}.jobs j
        SET state = 'running', attempts = j.attempts + 1, token = j.token + 1,
            lane = coalesce(%(lane)s, j.lane), not_before = NULL,
            lease_host = %(host)s, lease_pid = %(pid)s, lease_start = %(start)s,
            lease_expires = now() + make_interval(secs => %(lease)s),
            claimed_at = now(), updated_at = now(), outcome = NULL,
            cancel_requested = false
        FROM next
        WHERE j.queue = next.queue AND j.id = next.id
        RETURNING j.id, j.state, j.attempts, extract(epoch from j.queued_at)::float8,
            extract(epoch from j.updated_at)::float8, j.lane, j.error, j.token,
            j.payload
    )"""
"""The claim's CTE (`claimed` returns the job; the columns _record reads, token, payload):
the oldest ready job over the partial index of ready ones, moved to running with attempts + 1,
the token + 1, the lease and its holder (the running attempt: its row in `attempts` is written
when it ends). `{gate}` adds a condition to the pick (the settle-and-claim statement's: only
once its settle changed its row)."""

_ENDED = """state = %(state)s, attempts = %(attempts)s, error = %(error)s,
    updated_at = now(),
    not_before = CASE WHEN %(wait)s::float8 IS NULL THEN NULL
        ELSE now() + make_interval(secs => %(wait)s::float8) END,
    finished_at = CASE WHEN %(state)s IN ('succeeded', 'failed') THEN now() END,
    lease_expires = NULL, outcome = NULL, cancel_requested = false"""
"""The SET list of a claim that ends (settled by its holder, or taken back by a recovery):
the job's new state and no lease. The holder's columns (lease_host, lease_pid, lease_start,
claimed_at) stay as the last holder's: the ending statement writes the attempt's row from
them. One text for both, so they cannot drift apart."""

_ATTEMPT_ROW = """INSERT INTO {s}.attempts
        (queue, job_id, token, attempt, lane, host, pid, start, started_at, ended_at, outcome,
         error)"""
"""The attempt's row, written once when its claim ends (by _SETTLE and the take-back)."""

_SETTLE = (
    """
    done AS (
        UPDATE {s}.jobs SET """
    + _ENDED
    + """
        WHERE queue = %(q)s AND id = %(id)s AND token = %(token)s
          AND lease_expires IS NOT NULL
        RETURNING id, token, extract(epoch from not_before)::float8 AS retry_at, lane,
            lease_host, lease_pid, lease_start, claimed_at
    ), closed AS (
        """
    + _ATTEMPT_ROW
    + """
        SELECT %(q)s, id, token, %(attempt)s, lane, lease_host, lease_pid, lease_start,
            claimed_at, now(), %(outcome)s, %(error)s
        FROM done
    )"""
)
"""The settle's CTEs, fenced by the token and the running state (`done` returns id, token,
the retry's not_before and the holder; no row: fenced), writing the attempt's row in the same
statement."""

_CLAIM_ALONE = f"WITH {_CLAIM.format(gate='')} SELECT * FROM claimed"
_SETTLE_ALONE = f"WITH {_SETTLE} SELECT done.id, done.token, done.retry_at FROM done"
_SETTLE_AND_CLAIM = (
    f"WITH {_SETTLE}, {_CLAIM.format(gate='AND EXISTS (SELECT 1 FROM done)')} "
    "SELECT done.id, done.token, done.retry_at, claimed.* FROM done LEFT JOIN claimed ON true"
)
"""The statements: a claim, a settle, and a settle with the next claim (the runner's step
from one job to the next: one round trip instead of two)."""


class PostgresQueue:
    """A queue in a PostgreSQL schema (see the module docstring)."""

    def __init__(
        self,
        location: PgLocation,
        *,
        clock: Callable[[], float] = epoch,
        max_job_bytes: int = DEFAULT_MAX_JOB_BYTES,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        spool: Path | None = None,
    ) -> None:
        self.location = location
        self.clock = clock
        self._max_job_bytes = max_job_bytes
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._spool = spool
        self.session = session_for(location.dsn, location.where)
        self._checked = False
        self._sql: dict[str, str] = {}

    # --- plumbing ------------------------------------------------------------------------

    def _q(self, name: str, text: str) -> str:
        """Statement `name` rendered for this queue's schema (once per process)."""
        found = self._sql.get(name)
        if found is None:
            found = self._sql[name] = pg_schema.render(text, self.location.schema)
        return found

    def _rows(self, name: str, text: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if not self._checked:
            self.check()
        return self.session.rows(self._q(name, text), {"q": self.location.queue, **params})

    @property
    def spool(self) -> Path:
        """The 0700 directory claims' payloads are written to (in lanekit's state directory)."""
        if self._spool is None:
            from lanekit.state.paths import Paths

            state = Paths.from_env().state
            self._spool = state / "spool" / f"{self.location.schema}.{self.location.queue}"
        return self._spool

    @property
    def where(self) -> str:
        """The queue, its schema and its conninfo (which carries no password)."""
        return self.location.where

    @property
    def max_job_bytes(self) -> int:
        """The largest job, in bytes."""
        return self._max_job_bytes

    def schema_version(self) -> int | None:
        """The schema's version in the database (None: not created)."""
        found = self.session.rows(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.location.schema}".meta',)
        )
        if not found or not found[0][0]:
            return None
        rows = self.session.rows(
            self._q("version", "SELECT value FROM {s}.meta WHERE key = 'version'")
        )
        return int(rows[0][0]) if rows else None

    def missing(self) -> str | None:
        """Why the queue cannot be used now (the server cannot be reached, no schema, or one
        of another version), or None."""
        from lanekit.queue.postgres.connection import QueueUnavailableError

        try:
            return self._schema_problem()
        except QueueUnavailableError as exc:
            return exc.message

    def _schema_problem(self) -> str | None:
        """Why the schema cannot be used (QueueUnavailableError: the server cannot be reached)."""
        version = self.schema_version()
        if version == pg_schema.VERSION:
            return None
        if version is None:
            return f"{self.where}: schema not created (`lanekit db migrate {self.location.queue}`)"
        if version < pg_schema.VERSION:
            return (
                f"{self.where}: schema version {version}, this lanekit needs "
                f"{pg_schema.VERSION} (`lanekit db migrate {self.location.queue}`)"
            )
        return (
            f"{self.where}: schema version {version} is newer than this lanekit's "
            f"{pg_schema.VERSION}: upgrade lanekit on this machine"
        )

    def rename_failure(self) -> str | None:
        """None: a claim on the server is a row update, no rename (JobQueue.rename_failure)."""
        return None

    def ensure(self) -> None:
        """Make the spool and check the schema (runs and `apply` never migrate: `lanekit db
        migrate` does). A server out of reach is not refused here: `apply` installs the lanes
        all the same, their runs wait for it (exit 75), and doctor says so."""
        import contextlib

        from lanekit.queue.postgres.connection import QueueUnavailableError
        from lanekit.system.owned import make_private_dirs

        make_private_dirs(self.spool)
        with contextlib.suppress(QueueUnavailableError):
            self.check()

    def check(self) -> None:
        """SchemaError unless the schema is this lanekit's version (QueueUnavailableError, exit
        75, when the server cannot be reached); the spool made (0700)."""
        problem = self._schema_problem()
        if problem is not None:
            newer = "newer than" in problem
            hint = (
                "upgrade lanekit here to the version that migrated it"
                if newer
                else f"run `lanekit db migrate {self.location.queue}` once, from any machine"
            )
            raise SchemaError(problem, hint)
        from lanekit.system.owned import check_private, make_private_dirs

        make_private_dirs(self.spool)
        check_private(self.spool, "spool directory", directory=True)  # ours, nobody else's
        self._checked = True

    def migrate(self) -> tuple[int | None, int]:
        """Create or upgrade the schema: (version before, version now). SchemaError for a
        schema newer than this lanekit's. Serialized by an advisory lock, in one transaction."""
        schema = f'"{self.location.schema}"'
        self.session.rows(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        before = self.schema_version()
        if before is not None and before > pg_schema.VERSION:
            raise SchemaError(
                f"{self.where}: schema version {before} is newer than this lanekit's "
                f"{pg_schema.VERSION}",
                "upgrade lanekit here to the version that migrated it",
            )
        start = before or 0
        if start == pg_schema.VERSION:
            return before, start
        steps = [
            pg_schema.render(text, self.location.schema) for text in pg_schema.MIGRATIONS[start:]
        ]
        script = "\n".join(
            [
                f"SELECT pg_advisory_xact_lock(hashtext('lanekit.migrate.' || '{schema}'));",
                *steps,
                pg_schema.render(
                    "INSERT INTO {s}.meta (key, value) "
                    f"VALUES ('version', '{pg_schema.VERSION}') "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;",
                    self.location.schema,
                ),
            ]
        )
        current = self.schema_version()
        if current is None or current < pg_schema.VERSION:
            import psycopg

            try:
                self.session.script(script)
            except psycopg.errors.ObjectInUse:
                raise MigrationBusyError(
                    f"{self.where}: jobs are running under schema version {current} "
                    f"(schema {self.location.schema}): not migrated to {pg_schema.VERSION}, "
                    "whose runs record a running attempt differently",
                    "pause the lanes that drain its queues (`lanekit pause LANE`), let the "
                    "running jobs end, run `lanekit db migrate` again, then `lanekit resume`",
                ) from None
        return before, pg_schema.VERSION

    # --- enqueue and claim ---------------------------------------------------------------

    def enqueue(
        self,
        payload: Mapping[str, Any] | bytes | str,
        job_id: str | None = None,
        *,
        not_before: float | None = None,
    ) -> str:
        """Add a job; JobExistsError for an id already here (with its state) or already
        succeeded (also after its row was purged: the tombstone). `not_before` (epoch
        seconds) keeps it from running earlier."""
        from lanekit.queue.ids import new_job_id, validate_job_id
        from lanekit.queue.payload import payload_bytes

        data = payload_bytes(payload, self._max_job_bytes)
        job_id = new_job_id() if job_id is None else validate_job_id(job_id)
        rows = self._rows(
            "enqueue",
            """
            INSERT INTO {s}.jobs (queue, id, payload, not_before)
            SELECT %(q)s, %(id)s, %(payload)s, to_timestamp(%(nb)s::float8)
            WHERE NOT EXISTS (SELECT 1 FROM {s}.tombstones WHERE queue = %(q)s AND id = %(id)s)
            ON CONFLICT (queue, id) DO NOTHING
            RETURNING id
            """,
            {"id": job_id, "payload": data, "nb": not_before},
        )
        if rows:
            return job_id
        state = self._state_of(job_id)
        if state is JobState.SUCCEEDED or state is None:
            raise JobExistsError(
                f"job {job_id} already succeeded ({self.where})",
                "lanekit never runs a succeeded id again: give the new job another id",
            )
        raise JobExistsError(f"job {job_id} is already {state}", "give it another id")

    def _state_of(self, job_id: str) -> JobState | None:
        """The job's state; SUCCEEDED for a purged success (its tombstone); None: no trace."""
        rows = self._rows(
            "state_of",
            """
            SELECT state FROM {s}.jobs WHERE queue = %(q)s AND id = %(id)s
            UNION ALL
            SELECT 'succeeded' FROM {s}.tombstones WHERE queue = %(q)s AND id = %(id)s
            LIMIT 1
            """,
            {"id": job_id},
        )
        return JobState(rows[0][0]) if rows else None

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> PostgresClaimer:
        """A claimer for this process (payloads were checked at enqueue: nothing is dropped)."""
        if not self._checked:
            self.check()
        return PostgresClaimer(self, lane)

    def _claim_params(self, lane: str | None) -> tuple[str, float, dict[str, Any]]:
        """(owner, send time, parameters) of a claim about to be sent (_CLAIM's)."""
        from socket import gethostname

        from lanekit.queue.ids import own_owner

        owner = own_owner()
        _, pid, start = owner.rsplit("-", 2)
        params = {
            "lane": lane,
            "host": gethostname(),
            "pid": int(pid),
            "start": start,
            "lease": self.location.lease,
        }
        return owner, awake_clock(), params

    def _claimed(self, row: tuple[Any, ...], owner: str, sent: float) -> Claim:
        """The Claim of _CLAIM's returned row (its payload written to the spool)."""
        record, token, payload = _record(row), int(row[7]), bytes(row[8])
        file = self._write_payload(record.job_id, token, payload)
        handle = _Handle(token, fence_deadline(sent, self.location.lease))
        return Claim(
            record.job_id,
            file,
            record.attempts,
            owner,
            record,
            handle,
            lease_until=epoch() + self.location.lease,
        )

    def _claim(self, lane: str | None) -> Claim | None:
        """The oldest ready job, now this process's: one statement."""
        owner, sent, params = self._claim_params(lane)
        rows = self._rows("claim", _CLAIM_ALONE, params)
        return self._claimed(rows[0], owner, sent) if rows else None

    def _settle_and_claim(
        self, claim: Claim, verdict: Verdict, lane: str | None
    ) -> tuple[Settled, Claim | None]:
        """Settle and claim the next ready job in one statement: _SETTLE's CTEs, then
        _CLAIM's, gated on the settle having changed its row (a fenced settle claims nothing).
        The statement sees the jobs as they were before it: the job it settles was running,
        so a settle that puts it back never hands it straight back (a later claim() may)."""
        handle, params = self._settle_params(claim, verdict)
        owner, sent, claim_params = self._claim_params(lane)
        rows = self._rows(
            "settle_and_claim",
            _SETTLE_AND_CLAIM,
            {**params, **claim_params},
        )
        settled = self._settled(claim, handle, rows, params["state"])
        row = rows[0][3:]
        return settled, (None if row[0] is None else self._claimed(row, owner, sent))

    def _write_payload(self, job_id: str, token: int, payload: bytes) -> str:
        """The payload as a 0600 file in the spool, new (O_EXCL, O_NOFOLLOW)."""
        # The token makes the name new: no earlier claim of the job wrote it.
        path = f"{self.spool}/{job_id}.{token}.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            from lanekit.system.fdio import write_all

            write_all(fd, payload)
        finally:
            os.close(fd)
        return path

    def _drop_files(self, file: str) -> None:
        """A recovered claim's payload and the watcher's files beside it."""
        for path in (
            file,
            job_outcome.status_path(file),
            job_outcome.cancel_path(file),
            job_outcome.started_path(file),
        ):
            with _suppress_missing():
                os.unlink(path)  # noqa: PTH108 - a str path in the spool

    # --- the lease -----------------------------------------------------------------------

    def renew(self, claim: Claim) -> bool:
        """Extend the lease, fenced by the token; False when it is no longer this holder's
        (taken over, or settled). The self-fence deadline moves to the send time + lease."""
        terms = self.lease_terms(claim)
        if terms is None or not claim.held:
            return False
        renewal = self.renew_lease(terms)
        if renewal.held:
            assert isinstance(claim.handle, _Handle)
            claim.handle.deadline = renewal.deadline
        return renewal.held

    def lease_terms(self, claim: Claim) -> LeaseTerms | None:
        """The claim's lease, for its watcher (which renews it from its own process)."""
        handle = claim.handle
        if not isinstance(handle, _Handle):
            return None
        return LeaseTerms(
            str(self.location), claim.job_id, handle.token, self.location.lease, handle.deadline
        )

    def renew_lease(self, terms: LeaseTerms) -> LeaseRenewal:
        """One renew, fenced by the token and the running state; the deadline measured from
        its send time (never from the server's clock)."""
        sent = awake_clock()
        rows = self._rows(
            "renew",
            """
            UPDATE {s}.jobs SET lease_expires = now() + make_interval(secs => %(lease)s)
            WHERE queue = %(q)s AND id = %(id)s AND token = %(token)s AND lease_expires IS NOT NULL
            RETURNING cancel_requested
            """,
            {"id": terms.job_id, "token": terms.token, "lease": self.location.lease},
        )
        if not rows:
            return LeaseRenewal(held=False, cancel=False, deadline=terms.deadline)
        deadline = fence_deadline(sent, self.location.lease)
        return LeaseRenewal(held=True, cancel=bool(rows[0][0]), deadline=deadline)

    def lease_deadline(self, claim: Claim) -> float:
        """When (awake_clock()) the holder must have stopped the claim's job on its own."""
        handle = claim.handle
        return handle.deadline if isinstance(handle, _Handle) else float("inf")

    # --- settle --------------------------------------------------------------------------

    def _ending(
        self, attempts: int, kind: VerdictKind, error: str, max_attempts: int
    ) -> tuple[JobState, int, str | None, float | None, str]:
        """(state, attempts, error, backoff seconds, attempt outcome) a claim ends with."""
        if kind is VerdictKind.SUCCEEDED:
            return JobState.SUCCEEDED, attempts, None, None, "succeeded"
        if kind is VerdictKind.GAVE_UP:
            return JobState.FAILED, attempts, error, None, "failed"
        if kind is VerdictKind.FAILED and attempts >= max_attempts:
            return JobState.FAILED, attempts, gave_up(error or "released", attempts), None, "failed"
        if kind is VerdictKind.FAILED:
            wait = backoff(self.backoff_base, self.backoff_max, attempts)
            return JobState.QUEUED, attempts, error or None, (wait or None), "failed"
        # STOPPED, or DEFERRED (the lane cannot start its command): no attempt spent; a
        # deferred job waits DEFER_SECONDS so a lane started on arrival does not spin on it.
        deferred = DEFER_SECONDS if kind is VerdictKind.DEFERRED else None
        return JobState.QUEUED, max(attempts - 1, 0), error or None, deferred, "stopped"

    def _settle_params(self, claim: Claim, verdict: Verdict) -> tuple[_Handle, dict[str, Any]]:
        """The claim's handle and _SETTLE's parameters; QueueError for a settled claim."""
        handle = claim.handle
        if not isinstance(handle, _Handle) or not handle.held:
            raise QueueError(
                f"{self.where}: claim of job {claim.job_id} was already settled",
                "settle each claim once",
            )
        error = verdict.error
        if verdict.kind is VerdictKind.GAVE_UP:
            error = error or "failed without a message"
        state, attempts, error_text, wait, outcome = self._ending(
            claim.attempt, verdict.kind, error, verdict.max_attempts
        )
        return handle, {
            "id": claim.job_id,
            "token": handle.token,
            "attempt": claim.attempt,
            "state": str(state),
            "attempts": attempts,
            "error": error_text,
            "wait": wait,
            "outcome": outcome,
        }

    def _settled(
        self, claim: Claim, handle: _Handle, rows: list[tuple[Any, ...]], state: str
    ) -> Settled:
        """The Settled of _SETTLE's `done` rows; ClaimFencedError when there are none."""
        handle.release()
        # The payload only: the runner removes the watcher's status and cancel request itself
        # (a fifth of a job's cost was these unlinks); recover() sweeps a dead run's files.
        with _suppress_missing():
            os.unlink(claim.file)  # noqa: PTH108 - a str path in the spool
        if not rows:
            raise ClaimFencedError(
                f"{self.where}: job {claim.job_id}'s lease (token {handle.token}) was taken "
                "over before it was settled: fenced, nothing changed",
                "the job's lease lapsed (a partition, a sleep, a stalled renew); the run that "
                "recovered it decides what happens next",
            )
        job_state = JobState(state)
        not_before = rows[0][2]
        return Settled(claim.job_id, job_state, self._place(claim.job_id, job_state), not_before)

    def settle(self, claim: Claim, verdict: Verdict) -> Settled:
        """Finish the claim, fenced by its token and the running state, writing its attempt's
        row in the same statement. ClaimFencedError when its lease was taken over."""
        handle, params = self._settle_params(claim, verdict)
        rows = self._rows("settle", _SETTLE_ALONE, params)
        return self._settled(claim, handle, rows, params["state"])

    def record_outcome(self, claim: Claim, outcome: Outcome) -> None:
        """Keep how the job ended in its row (fenced), so recover() on any host settles it by
        that; the watcher's status file beside the payload says the same on this host."""
        terms = self.lease_terms(claim)
        if terms is None or not claim.held:
            raise QueueError(
                f"{self.where}: claim of job {claim.job_id} was already settled",
                "settle each claim once",
            )
        self.keep_outcome(terms, outcome)

    def keep_outcome(self, terms: LeaseTerms, outcome: Outcome) -> None:
        """The job's outcome in its row, fenced by the token and the running state (a claim
        taken over keeps nothing)."""
        import json

        self._rows(
            "record_outcome",
            """
            UPDATE {s}.jobs SET outcome = %(outcome)s::jsonb
            WHERE queue = %(q)s AND id = %(id)s AND token = %(token)s AND lease_expires IS NOT NULL
            """,
            {
                "id": terms.job_id,
                "token": terms.token,
                "outcome": json.dumps(json.loads(outcome.to_bytes())),
            },
        )

    def cancel_requested(self, claim: Claim) -> bool:
        """Whether `lanekit cancel --stop` (on any host) asked for the claim's job to stop."""
        handle = claim.handle
        if not isinstance(handle, _Handle) or not handle.held:
            return False
        rows = self._rows(
            "cancel_requested",
            """
            SELECT cancel_requested FROM {s}.jobs
            WHERE queue = %(q)s AND id = %(id)s AND token = %(token)s AND lease_expires IS NOT NULL
            """,
            {"id": claim.job_id, "token": handle.token},
        )
        return bool(rows and rows[0][0])

    def request_cancel(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """Ask a running job's watcher, on whichever host, to stop it (through the database)."""
        rows = self._rows(
            "request_cancel",
            """
            UPDATE {s}.jobs SET cancel_requested = cancel_requested OR NOT %(dry)s
            WHERE queue = %(q)s AND id = %(id)s AND state = 'running'
            RETURNING lease_host
            """,
            {"id": job_id, "dry": dry_run},
        )
        if not rows:
            state = self._state_of(job_id)
            now = "not in the queue" if state is None else str(state)
            raise UsageError(f"job {job_id} is not running ({now})", "only a running job")
        source = self._place(job_id, JobState.RUNNING)
        return Moved(job_id, source, self._place(job_id, JobState.FAILED), JobState.FAILED)

    # --- recover -------------------------------------------------------------------------

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Take back the claims whose lease lapsed (the server's clock decides; `stale_after`
        and `now` are the directory queue's and play no part): each in one statement that
        re-checks the lapse under the row lock, so a renew or settle that got there first
        wins. A job whose end was recorded is settled by it; one that was not is `orphaned`
        and retried (no attempt spent) or failed, per on_orphan."""
        lapsed = self._rows(
            "lapsed",
            """
            SELECT id, token, attempts, lease_host, lease_pid, lease_start, outcome
            FROM {s}.jobs
            WHERE queue = %(q)s AND state = 'running' AND lease_expires < now()
            ORDER BY lease_expires
            """,
            {},
        )
        recovered = []
        for job_id, token, attempts, host, pid, start, recorded in lapsed:
            owner = f"{host}-{pid}-{start}"
            outcome = (
                None if recorded is None else job_outcome.Outcome.from_bytes(_json_bytes(recorded))
            )
            state, new_attempts, error, wait, attempt_outcome = self._recovery(
                attempts, outcome, max_attempts
            )
            if not dry_run and not self._take_back(
                job_id, token, state, new_attempts, error, wait, attempt_outcome
            ):
                continue  # renewed or settled meanwhile: no longer lapsed
            if not dry_run:  # what its dead run left in this machine's spool, if it ran here
                self._drop_files(f"{self.spool}/{job_id}.{token}.json")
            shown = new_attempts if outcome is None or state is not JobState.QUEUED else attempts
            recovered.append(
                Recovered(
                    job_id,
                    RecoverReason.LEASE_EXPIRED,
                    self._place(job_id, state),
                    state,
                    owner,
                    shown,
                    None if outcome is None else outcome.exit,
                )
            )
        return recovered

    def _recovery(
        self, attempts: int, outcome: Outcome | None, max_attempts: int
    ) -> tuple[JobState, int, str | None, float | None, str]:
        """What a lapsed claim becomes: by its recorded outcome, else per on_orphan."""
        if outcome is None:
            if self.location.on_orphan is OnOrphan.FAIL:
                error = "orphaned: its lease lapsed before its end was recorded (on_orphan=fail)"
                return JobState.FAILED, attempts, error, None, "orphaned"
            error = "orphaned: its lease lapsed before its end was recorded: run again"
            return JobState.QUEUED, max(attempts - 1, 0), error, None, "orphaned"
        text = job_outcome.describe(outcome)
        if outcome.cancelled:
            return self._ending(attempts, VerdictKind.GAVE_UP, CANCELLED, max_attempts)
        if outcome.exit == 0:
            return self._ending(attempts, VerdictKind.SUCCEEDED, "", max_attempts)
        kind = VerdictKind.STOPPED if outcome.stopped else VerdictKind.FAILED
        return self._ending(attempts, kind, text, max_attempts)

    def _take_back(  # noqa: PLR0917 - private; one caller
        self,
        job_id: str,
        token: int,
        state: JobState,
        attempts: int,
        error: str | None,
        wait: float | None,
        attempt_outcome: str,
    ) -> bool:
        """One lapsed claim, taken back in one statement whose predicate is re-checked under
        the row lock (token, running, lease still expired): False when it no longer holds."""
        rows = self._rows(
            "take_back",
            """
            WITH lapsed AS (
                SELECT queue, id, token, attempts FROM {s}.jobs
                WHERE queue = %(q)s AND id = %(id)s AND token = %(token)s
                  AND state = 'running' AND lease_expires < now()
                FOR UPDATE SKIP LOCKED
            ), moved AS (
                UPDATE {s}.jobs j SET """
            + _ENDED
            + """
                FROM lapsed
                WHERE j.queue = lapsed.queue AND j.id = lapsed.id AND j.token = lapsed.token
                  AND j.state = 'running' AND j.lease_expires < now()
                RETURNING j.id, j.token, lapsed.attempts, j.lane, j.lease_host, j.lease_pid,
                    j.lease_start, j.claimed_at
            ), attempt AS (
                """
            + _ATTEMPT_ROW
            + """
                SELECT %(q)s, id, token, attempts, lane, lease_host, lease_pid, lease_start,
                    claimed_at, now(), %(outcome)s, %(error)s
                FROM moved
                -- a claim made under schema 2 by a run that began before the migration has
                -- an open row already: closed instead
                ON CONFLICT (queue, job_id, token) DO UPDATE
                SET ended_at = now(), outcome = EXCLUDED.outcome, error = EXCLUDED.error
            )
            SELECT id, token FROM moved
            """,
            {
                "id": job_id,
                "token": token,
                "state": str(state),
                "attempts": attempts,
                "error": error,
                "wait": wait,
                "outcome": attempt_outcome,
            },
        )
        return bool(rows)

    # --- observing -----------------------------------------------------------------------

    def succeeded(self, job_id: str) -> bool:
        """The re-execution guard: True once `job_id` succeeded (also after a purge)."""
        return self._state_of(job_id) is JobState.SUCCEEDED

    def counts(self, now: float | None = None) -> QueueCounts:
        """Every state's count, the oldest queued job and claim, and the leases by host (how
        many lapsed, on the server's clock), in one query."""
        from lanekit.queue.counts import HostLeases, QueueCounts

        [row] = self._rows(
            "counts",
            """
            SELECT
                count(*) FILTER (WHERE state = 'queued'
                    AND (not_before IS NULL OR not_before <= now())),
                count(*) FILTER (WHERE state = 'queued' AND not_before > now()),
                count(*) FILTER (WHERE state = 'running'),
                count(*) FILTER (WHERE state = 'succeeded'),
                count(*) FILTER (WHERE state = 'failed'),
                extract(epoch from now() - min(queued_at) FILTER (WHERE state = 'queued'))::float8,
                extract(epoch from now() - min(claimed_at)
                    FILTER (WHERE state = 'running'))::float8,
                (SELECT ARRAY[coalesce(array_agg(host ORDER BY host), '{}'),
                        coalesce(array_agg(running::text ORDER BY host), '{}'),
                        coalesce(array_agg(expired::text ORDER BY host), '{}')]
                    FROM (SELECT lease_host AS host, count(*) AS running,
                            count(*) FILTER (WHERE lease_expires < now()) AS expired
                        FROM {s}.jobs WHERE queue = %(q)s AND state = 'running'
                        GROUP BY lease_host) AS by_host)
            FROM {s}.jobs WHERE queue = %(q)s
            """,
            {},
        )
        queued, delayed, claimed, done, failed, oldest_queued, oldest_claim, hosts = row
        # Three parallel text arrays (host, running, expired): plain arrays load without
        # registering a composite type. Sorted here, by code point, whatever the collation.
        leases = tuple(
            sorted(
                (
                    HostLeases(host, int(running), int(expired))
                    for host, running, expired in zip(*hosts, strict=True)
                ),
                key=lambda held: held.host,
            )
        )
        return QueueCounts(
            queued, delayed, claimed, done, failed, oldest_queued, oldest_claim, leases
        )

    def claims(self, now: float | None = None) -> list[ClaimView]:
        """Every claim, oldest first: LIVE while its lease holds, STRANDED once it lapsed
        (the server's clock decides; recover() takes it back)."""
        from lanekit.queue.counts import ClaimInfo

        rows = self._rows(
            "claims",
            """
            SELECT id, token, lease_host, lease_pid, lease_start,
                extract(epoch from now() - claimed_at)::float8, lease_expires < now()
            FROM {s}.jobs WHERE queue = %(q)s AND state = 'running'
            ORDER BY claimed_at
            """,
            {},
        )
        views = []
        for job_id, token, host, pid, start, age, lapsed in rows:
            path = Path(f"{self.spool}/{job_id}.{token}.json")
            info = ClaimInfo(job_id, path, pid, start, host, age, None if not lapsed else False)
            views.append(ClaimView(info, ClaimState.STRANDED if lapsed else ClaimState.LIVE))
        return views

    def page(
        self,
        page: int = 1,
        per_page: int = 20,
        state: JobState | None = None,
        *,
        delayed: bool | None = None,
    ) -> Page:
        """Page `page` of the jobs (all, or those in `state`; `delayed`: of the queued ones,
        only those waiting for their time, or only the ready ones), newest first."""
        from lanekit.queue.paging import Page, adjust_item_count, paginate

        chosen = _page_filter(state, delayed)
        name = f"page.{state}.{delayed}"
        # The filter is written into the statement (a word of the JobState vocabulary), not
        # passed as a parameter, so each (state, delayed) has a statement of its own whose
        # plan reads the partial index of that state; only the chosen jobs are counted.
        [(total,)] = self._rows(
            name + ".count", "SELECT count(*) FROM {s}.jobs WHERE queue = %(q)s" + chosen, {}
        )
        start, stop, meta = paginate(total, page, per_page)
        # Keyset by seq: the page's first seq is found in the index alone (jobs_newest, or
        # the state's partial index: no row is read for the jobs of the pages before), then
        # the page is read from there, per_page rows. The numbered page of the contract stays.
        rows = self._rows(
            name,
            "SELECT " + _RECORD_COLUMNS + ", CASE WHEN state = 'queued' AND not_before > now()"
            " THEN extract(epoch from not_before)::float8 END"
            " FROM {s}.jobs WHERE queue = %(q)s"
            + chosen
            + " AND seq <= (SELECT seq FROM {s}.jobs WHERE queue = %(q)s"
            + chosen
            + " ORDER BY seq DESC OFFSET %(start)s LIMIT 1)"
            " ORDER BY seq DESC LIMIT %(limit)s",
            {"start": start, "limit": stop - start},
        )
        items = [_record(row) for row in rows]
        waiting = {row[0]: iso_utc(row[7]) for row in rows if row[7] is not None}
        elsewhere = 0
        if state is not None and not total:
            [(elsewhere,)] = self._rows(
                "page.everything", "SELECT count(*) FROM {s}.jobs WHERE queue = %(q)s", {}
            )
        return Page(
            items, adjust_item_count(meta, len(items)), [], state, elsewhere, waiting, delayed
        )

    def job(self, job_id: str) -> JobView | None:
        """Everything known about one job (a purged success: its tombstone), or None."""
        from lanekit.queue.ids import validate_job_id
        from lanekit.queue.paging import JobView

        validate_job_id(job_id)
        rows = self._rows(
            "job",
            "SELECT "
            + _RECORD_COLUMNS
            + """, extract(epoch from not_before)::float8, token
            FROM {s}.jobs WHERE queue = %(q)s AND id = %(id)s
            """,
            {"id": job_id},
        )
        if not rows:
            return None
        record = _record(rows[0])
        not_before, token = rows[0][7], rows[0][8]
        error = (
            error_file_text(record.error)
            if record.state is JobState.FAILED and record.error
            else None
        )
        retry_at = None if not_before is None else iso_utc(not_before)
        where = (
            f"{self.spool}/{job_id}.{token}.json"
            if record.state is JobState.RUNNING
            else self._place(job_id, record.state)
        )
        history = tuple(self.attempts(job_id))
        return JobView(job_id, record.state, Path(where), record, error, retry_at, history)

    def attempts(self, job_id: str) -> list[AttemptView]:
        """Every claim of the job, oldest first, with its host and outcome: the ended ones'
        rows, then the running one (its job's lease columns)."""
        from lanekit.queue.paging import AttemptView

        rows = self._rows(
            "attempts",
            """
            SELECT attempt, host, pid, outcome, started, ended FROM (
                SELECT token, attempt, host, pid, outcome,
                    extract(epoch from started_at)::float8 AS started,
                    extract(epoch from ended_at)::float8 AS ended
                FROM {s}.attempts
                WHERE queue = %(q)s AND job_id = %(id)s AND ended_at IS NOT NULL
                UNION ALL
                SELECT token, attempts, lease_host, lease_pid, NULL,
                    extract(epoch from claimed_at)::float8, NULL
                FROM {s}.jobs
                WHERE queue = %(q)s AND id = %(id)s AND lease_expires IS NOT NULL
            ) AS every ORDER BY token
            """,
            {"id": job_id},
        )
        return [
            AttemptView(
                attempt,
                host,
                pid,
                outcome,
                iso_utc(started),
                None if ended is None else iso_utc(ended),
            )
            for attempt, host, pid, outcome, started, ended in rows
        ]

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job is now (its state, in the database)."""
        state = self._state_of(job_id)
        return None if state is None else JobLocation(job_id, state, self._place(job_id, state))

    def contradictions(self) -> list[tuple[Record, JobLocation | None]]:
        """None: a job's state is one column of its one row."""
        return []

    def success_copies(self) -> Counter[str]:
        """Per id, how many succeeded attempts the database holds (its unique index keeps
        it at one)."""
        rows = self._rows(
            "success_copies",
            """
            SELECT job_id, count(*) FROM {s}.attempts
            WHERE queue = %(q)s AND outcome = 'succeeded' GROUP BY job_id
            """,
            {},
        )
        return Counter({str(job_id): int(count) for job_id, count in rows})

    def failed_ids(self) -> list[str]:
        """Ids of the jobs that failed for good, oldest first."""
        rows = self._rows(
            "failed_ids",
            "SELECT id FROM {s}.jobs WHERE queue = %(q)s AND state = 'failed' ORDER BY seq",
            {},
        )
        return [row[0] for row in rows]

    # --- operator verbs ------------------------------------------------------------------

    def _move(self, name: str, job_id: str, set_sql: str, where_sql: str, dry_run: bool) -> bool:
        """One verb's conditional update (nothing with dry_run); whether the job matched."""
        rows = self._rows(
            name + ("_dry" if dry_run else ""),
            (
                "SELECT id FROM {s}.jobs WHERE queue = %(q)s AND id = %(id)s AND " + where_sql
                if dry_run
                else "UPDATE {s}.jobs SET "
                + set_sql
                + ", updated_at = now() WHERE queue = %(q)s AND id = %(id)s AND "
                + where_sql
                + " RETURNING id"
            ),
            {"id": job_id},
        )
        return bool(rows)

    def _refuse(self, job_id: str, wanted: str) -> UsageError:
        """Why a verb did not move the job, naming where it is."""
        state = self._state_of(job_id)
        if state is JobState.RUNNING:
            return UsageError(
                f"job {job_id} is running ({self._place(job_id, state)}): not moved",
                "stop it with `lanekit cancel --stop`, or wait for it to finish",
            )
        now = "not in the queue" if state is None else str(state)
        return UsageError(f"job {job_id} is not {wanted} ({now})", f"only a {wanted} job")

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into the queue with all its attempts again."""
        if not self._move(
            "retry",
            job_id,
            "state = 'queued', attempts = 0, not_before = NULL, finished_at = NULL",
            "state = 'failed'",
            dry_run,
        ):
            raise self._refuse(job_id, "failed")
        return self._moved(job_id, JobState.FAILED, JobState.QUEUED)

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A retry waiting out its backoff: queued now."""
        if not self._move(
            "requeue",
            job_id,
            "not_before = NULL",
            "state = 'queued' AND not_before > now()",
            dry_run,
        ):
            raise self._refuse(job_id, "delayed")
        return self._moved(job_id, JobState.QUEUED, JobState.QUEUED)

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or waiting job to failed, reason `cancelled`; never a running one."""
        if not self._move(
            "cancel",
            job_id,
            f"state = 'failed', error = '{CANCELLED}', not_before = NULL, finished_at = now()",
            "state = 'queued'",
            dry_run,
        ):
            raise self._refuse(job_id, "queued")
        return self._moved(job_id, JobState.QUEUED, JobState.FAILED)

    def _moved(self, job_id: str, source: JobState, state: JobState) -> Moved:
        return Moved(job_id, self._place(job_id, source), self._place(job_id, state), state)

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Remove finished jobs past `keep_done` and failed ones past `keep_failed` (with their
        attempts). Succeeded ids get a tombstone first, in a statement of its own that commits
        before the rows go, so an enqueue racing the purge meets the row or the tombstone,
        never neither; tombstones a purge finds older than twice keep_done expire first (so a
        succeeded id is refused for at least keep_done after its row went). `now` (epoch
        seconds) stands in for the server's now() (a test's purge of the future)."""
        params = {"now": now, "done": keep_done, "failed": keep_failed}
        cut = "coalesce(to_timestamp(%(now)s::float8), now())"
        done_where = (
            f"state = 'succeeded' AND finished_at <= {cut}"
            " - make_interval(secs => %(done)s::float8)"
        )
        failed_where = (
            f"state = 'failed' AND finished_at <= {cut} - make_interval(secs => %(failed)s::float8)"
        )
        if dry_run:
            rows = self._rows(
                "purge_dry",
                "SELECT id, state FROM {s}.jobs WHERE queue = %(q)s AND (("
                + done_where
                + ") OR ("
                + failed_where
                + ")) ORDER BY seq",
                params,
            )
            return _purged(rows, (), dry_run=True)
        expired = self._rows(
            "purge_expire",
            "DELETE FROM {s}.tombstones WHERE queue = %(q)s AND succeeded_at <= "
            + cut
            + " - make_interval(secs => 2 * %(done)s::float8) RETURNING id",
            params,
        )
        self._rows(
            "purge_tombstones",
            "INSERT INTO {s}.tombstones (queue, id, succeeded_at) "
            "SELECT queue, id, finished_at FROM {s}.jobs WHERE queue = %(q)s AND "
            + done_where
            + " ON CONFLICT DO NOTHING",
            params,
        )
        rows = self._rows(
            "purge",
            "WITH gone AS (DELETE FROM {s}.jobs WHERE queue = %(q)s AND (("
            + done_where
            + ") OR ("
            + failed_where
            + ")) RETURNING id, state, seq), attempts AS ("
            "DELETE FROM {s}.attempts a USING gone WHERE a.queue = %(q)s AND a.job_id = gone.id"
            ") SELECT id, state FROM gone ORDER BY seq",
            params,
        )
        for job_id, _state in rows:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.output_path(job_id))  # noqa: PTH108 - this machine's copy only
        return _purged(rows, tuple(row[0] for row in expired), dry_run=False)

    def output_path(self, job_id: str) -> str:
        """The job's output as this machine kept it, beside the spool in lanekit's state
        (`output/<schema>.<queue>/<id>.log`): each host keeps what its runs printed, and
        purge removes this host's copy with the row."""
        from lanekit.queue.ids import validate_job_id

        where = f"{self.location.schema}.{self.location.queue}"
        return f"{self.spool.parent.parent}/output/{where}/{validate_job_id(job_id)}.log"

    def _place(self, job_id: str, state: JobState) -> str:
        """What stands for the job in results: `postgres:QUEUE/<state>/<id>`."""
        return f"postgres:{self.location.queue}/{state}/{job_id}"

    def clock_skew(self) -> float:
        """Seconds the server's clock is ahead of this machine's (negative: behind), taken at
        the middle of one round trip. For doctor only: no lease decision uses it."""
        import time

        before = time.time()
        [(server,)] = self.session.rows("SELECT extract(epoch from clock_timestamp())::float8")
        after = time.time()
        return float(server) - (before + after) / 2

    def close(self) -> None:
        """Close this process's connection (tests; a run's ends with its process)."""
        self.session.close()

    def attempts_between(self, start: float, end: float) -> list[AttemptSpan]:
        """The attempts running at some time in [start, end), every host's, oldest first: one
        statement over the ended attempts' rows (the window is a day: a scan of the queue's
        attempts, which purge keeps to the retention) and the running ones (their jobs'
        lease columns, over the partial index of running jobs)."""
        from lanekit.queue.paging import AttemptSpan

        rows = self._rows(
            "attempts_between",
            """
            SELECT job_id, lane, attempt, host, pid, outcome, started, ended FROM (
                SELECT job_id, token, lane, attempt, host, pid, outcome, started_at,
                    extract(epoch from started_at)::float8 AS started,
                    extract(epoch from ended_at)::float8 AS ended
                FROM {s}.attempts
                WHERE queue = %(q)s AND started_at < to_timestamp(%(end)s)
                  AND ended_at >= to_timestamp(%(start)s)
                UNION ALL
                SELECT id, token, lane, attempts, lease_host, lease_pid, NULL, claimed_at,
                    extract(epoch from claimed_at)::float8, NULL
                FROM {s}.jobs
                WHERE queue = %(q)s AND state = 'running'
                  AND claimed_at < to_timestamp(%(end)s)
            ) AS every
            ORDER BY started_at, job_id, token
            """,
            {"start": start, "end": end},
        )
        return [
            AttemptSpan(job_id, lane, attempt, host, pid, outcome, started, ended)
            for job_id, lane, attempt, host, pid, outcome, started, ended in rows
        ]


def _page_filter(state: JobState | None, delayed: bool | None) -> str:
    """The WHERE clause's tail that chooses a page's jobs (JobQueue.page's `state`, `delayed`)."""
    chosen = "" if state is None else f" AND state = '{JobState(state)}'"
    if delayed is True:
        chosen += " AND state = 'queued' AND not_before > now()"
    elif delayed is False:
        chosen += " AND state = 'queued' AND (not_before IS NULL OR not_before <= now())"
    return chosen


def _purged(rows: list[tuple[Any, ...]], expired: tuple[str, ...], *, dry_run: bool) -> Purged:
    done = tuple(job_id for job_id, state in rows if state == JobState.SUCCEEDED)
    failed = tuple(job_id for job_id, state in rows if state == JobState.FAILED)
    return Purged(done, failed, expired, dry_run)


def _json_bytes(value: object) -> bytes:
    """A jsonb column (psycopg hands it over parsed) as the bytes Outcome.from_bytes reads."""
    import json

    return json.dumps(value).encode("utf-8")


class _suppress_missing:  # noqa: N801 - a context manager used like contextlib.suppress
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, value: object, traceback: object) -> bool:
        return isinstance(value, FileNotFoundError)


class PostgresClaimer:
    """Claims for this process, oldest ready job first."""

    def __init__(self, queue: PostgresQueue, lane: str | None) -> None:
        self.queue = queue
        self.lane = lane

    def claim(self) -> Claim | None:
        """The next job this process holds, or None when nothing is ready."""
        return self.queue._claim(self.lane)

    def settle_and_claim(self, claim: Claim, verdict: Verdict) -> tuple[Settled, Claim | None]:
        """Settle the claim and claim the next ready job in one statement (one round trip)."""
        return self.queue._settle_and_claim(claim, verdict, self.lane)


def open_location(
    location: str, *, clock: Callable[[], float], max_job_bytes: int
) -> PostgresQueue:
    """The queue at a `postgres:` location (lanekit.queue.open_queue's branch)."""
    from lanekit.queue.postgres.location import parse

    try:
        parsed = parse(location)
    except ValueError as exc:
        raise UsageError(str(exc), "re-apply the lane (`lanekit apply`)") from None
    return PostgresQueue(parsed, clock=clock, max_job_bytes=max_job_bytes)
