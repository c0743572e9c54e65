"""The postgres queue's lease contract, on a real server (tests/pgserver.py): renew extends,
an expired lease is recovered by another host and the old holder's settle is fenced, recover
loses to a late renew or settle, the guard outlives a purge, the database allows one succeeded
attempt per job, a client clock an hour off changes no lease decision, a forked child gets a
session of its own, and a server that cannot be reached is one exit-75 error."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psycopg
import pytest

from crashes import Say, in_dying_process
from lanekit.errors import ExitCode, QueueError
from lanekit.queue.model import Claim, ClaimFencedError, JobExistsError, Verdict
from lanekit.queue.observed import ClaimState, RecoverReason
from lanekit.queue.postgres.backend import PostgresQueue, SchemaError
from lanekit.queue.postgres.connection import QueueUnavailableError
from lanekit.queue.postgres.lease import awake_clock, margin
from lanekit.queue.postgres.location import OnOrphan, PgLocation
from lanekit.queue.records import JobState
from lanekit.state.schemas import POSTGRES_QUEUE_SCHEMA
from pgserver import PgServer


def make(
    server: PgServer,
    schema: str,
    root: Path,
    *,
    on_orphan: OnOrphan = OnOrphan.RETRY,
    clock_skew: float = 0.0,
    name: str = "spool",
) -> PostgresQueue:
    """A queue on the test's schema; each call is another holder ("host") with a spool of its
    own, and `clock_skew` seconds off on its wall clock."""
    queue = PostgresQueue(
        PgLocation("lease", server.dsn, schema=schema, lease=30, on_orphan=on_orphan),
        clock=lambda: time.time() + clock_skew,
        backoff_base=0,
        spool=root / name,
    )
    queue.migrate()
    queue.ensure()
    return queue


@pytest.fixture
def queue(pg_server: PgServer, pg_schema: str, tmp_path: Path) -> PostgresQueue:
    return make(pg_server, pg_schema, tmp_path)


def lease_left(queue: PostgresQueue, job_id: str) -> float:
    """Seconds until the job's lease lapses, on the server's clock."""
    [(left,)] = queue.session.rows(
        f"SELECT extract(epoch from lease_expires - now())::float8 "
        f'FROM "{queue.location.schema}".jobs WHERE id = %s',
        (job_id,),
    )
    return float(left)


def expire(queue: PostgresQueue, job_id: str) -> None:
    """The lease lapses now (what 30 s without a renew would do)."""
    queue.session.rows(
        f'UPDATE "{queue.location.schema}".jobs '
        "SET lease_expires = now() - interval '1 s' WHERE id = %s",
        (job_id,),
    )


def attempts(queue: PostgresQueue, job_id: str) -> list[str | None]:
    return [item.outcome for item in queue.attempts(job_id)]


def claim(queue: PostgresQueue) -> Claim:
    taken = queue.claimer(lane="l").claim()
    assert taken is not None
    return taken


def test_a_claim_carries_a_lease_and_a_self_fence_deadline(queue: PostgresQueue) -> None:
    """The lease is on the server's clock; the holder's deadline on its own awake clock comes
    earlier (sent + lease - margin), and the payload is a 0600 file in a 0700 spool."""
    queue.enqueue({"a": 1}, job_id="j")
    before = awake_clock()
    held = claim(queue)
    assert 28 < lease_left(queue, "j") <= 30
    deadline = queue.lease_deadline(held)
    assert before + 30 - margin(30) <= deadline <= awake_clock() + 30 - margin(30)
    assert json.loads(held.path.read_bytes()) == {"a": 1}
    assert held.path.stat().st_mode & 0o777 == 0o600
    assert held.path.parent.stat().st_mode & 0o777 == 0o700


def test_renew_extends_the_lease_and_moves_the_deadline(queue: PostgresQueue) -> None:
    """renew sets lease_expires = now() + lease again, fenced by the token."""
    queue.enqueue({}, job_id="j")
    held = claim(queue)
    queue.session.rows(
        f'UPDATE "{queue.location.schema}".jobs '
        "SET lease_expires = now() + interval '3 s' WHERE id = 'j'"
    )
    first = queue.lease_deadline(held)
    assert queue.renew(held)
    assert lease_left(queue, "j") > 28
    assert queue.lease_deadline(held) >= first


def test_an_expired_lease_is_recovered_by_another_host_and_the_old_settle_is_fenced(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """Host A's lease lapses; host B's run recovers the job (attempt `orphaned`) and runs it;
    A's late settle changes nothing (ClaimFencedError), and A's renew says the lease is lost."""
    host_a = make(pg_server, pg_schema, tmp_path, name="a")
    host_b = make(pg_server, pg_schema, tmp_path, name="b")
    host_a.enqueue({}, job_id="j")
    stale = claim(host_a)
    expire(host_a, "j")
    [item] = host_b.recover(stale_after=3600, max_attempts=3)
    assert (item.job_id, item.reason, item.state) == ("j", RecoverReason.LEASE_EXPIRED, "queued")
    fresh = claim(host_b)
    assert not host_a.renew(stale)
    with pytest.raises(ClaimFencedError, match="fenced"):
        host_a.settle(stale, Verdict.succeeded())
    assert host_b.locate("j").state is JobState.RUNNING  # type: ignore[union-attr]
    host_b.settle(fresh, Verdict.succeeded())
    assert attempts(host_b, "j") == ["orphaned", "succeeded"]


def test_a_fenced_settle_and_claim_changes_nothing_and_claims_nothing(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The one statement that settles and claims the next job claims nothing when its settle
    is fenced: host A's lapsed claim was recovered and is B's now; A's settle_and_claim raises
    ClaimFencedError and the other ready job stays queued, unclaimed, no attempt row for it."""
    host_a = make(pg_server, pg_schema, tmp_path, name="a")
    host_b = make(pg_server, pg_schema, tmp_path, name="b")
    host_a.enqueue({}, job_id="j")
    host_a.enqueue({}, job_id="k")
    claimer = host_a.claimer(lane="l")
    stale = claimer.claim()
    assert stale is not None and stale.job_id == "j"
    expire(host_a, "j")
    host_b.recover(stale_after=3600, max_attempts=3)
    fresh = claim(host_b)
    assert fresh.job_id == "j"
    with pytest.raises(ClaimFencedError, match="fenced"):
        claimer.settle_and_claim(stale, Verdict.succeeded())
    assert host_b.locate("k").state is JobState.QUEUED  # type: ignore[union-attr]
    assert attempts(host_b, "k") == []
    assert host_b.locate("j").state is JobState.RUNNING  # type: ignore[union-attr]
    settled, after = host_b.claimer(lane="l").settle_and_claim(fresh, Verdict.succeeded())
    assert settled.state is JobState.SUCCEEDED
    assert after is not None and after.job_id == "k"
    assert 28 < lease_left(host_b, "k") <= 30
    assert attempts(host_b, "j") == ["orphaned", "succeeded"]
    assert attempts(host_b, "k") == [None]


def test_on_orphan_fail_never_runs_an_orphaned_job_again(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """on_orphan = "fail": a lapsed lease fails the job (`orphaned`), for lanes that must not
    repeat."""
    queue = make(pg_server, pg_schema, tmp_path, on_orphan=OnOrphan.FAIL)
    queue.enqueue({}, job_id="publish")
    claim(queue)
    expire(queue, "publish")
    [item] = queue.recover(stale_after=0, max_attempts=3)
    assert item.state is JobState.FAILED
    assert queue.claimer().claim() is None
    view = queue.job("publish")
    assert view is not None and "orphaned" in (view.error or "")


def test_recover_loses_to_a_late_renew(queue: PostgresQueue) -> None:
    """recover read the lease as lapsed, then the holder's renew landed: the take-back,
    re-checked under the row lock, changes nothing, and the holder keeps its job."""
    queue.enqueue({}, job_id="j")
    held = claim(queue)
    expire(queue, "j")
    [seen] = queue.recover(stale_after=0, max_attempts=3, dry_run=True)
    assert seen.job_id == "j"
    assert queue.renew(held)  # late, but nobody took the job yet
    assert queue.recover(stale_after=0, max_attempts=3) == []
    assert queue.settle(held, Verdict.succeeded()).state is JobState.SUCCEEDED
    assert attempts(queue, "j") == ["succeeded"]


def test_recover_skips_a_row_a_renew_holds_locked(
    queue: PostgresQueue, pg_server: PgServer
) -> None:
    """A renew in flight (its transaction holds the row) is skipped, not waited for, and
    wins once it commits."""
    queue.enqueue({}, job_id="j")
    held = claim(queue)
    expire(queue, "j")
    with psycopg.connect(pg_server.dsn) as other:
        other.execute(
            f'UPDATE "{queue.location.schema}".jobs '
            "SET lease_expires = now() + interval '30 s' WHERE id = 'j'"
        )
        started = time.monotonic()
        assert queue.recover(stale_after=0, max_attempts=3) == []
        assert time.monotonic() - started < 2
        other.commit()
    assert queue.recover(stale_after=0, max_attempts=3) == []
    assert queue.renew(held)


def test_a_settle_before_recover_leaves_recover_nothing(queue: PostgresQueue) -> None:
    """A late settle that lands before recover wins: the job is done, recover finds nothing."""
    queue.enqueue({}, job_id="j")
    held = claim(queue)
    expire(queue, "j")
    queue.settle(held, Verdict.succeeded())
    assert queue.recover(stale_after=0, max_attempts=3) == []
    assert queue.succeeded("j")


def test_the_guard_holds_after_purge(queue: PostgresQueue) -> None:
    """A succeeded id, its row purged, is refused by its tombstone."""
    queue.enqueue({}, job_id="once")
    queue.settle(claim(queue), Verdict.succeeded())
    purged = queue.purge(keep_done=3600, keep_failed=3600, now=time.time() + 7200)
    assert purged.done == ("once",)
    assert queue.job("once") is None
    with pytest.raises(JobExistsError, match="already succeeded"):
        queue.enqueue({}, job_id="once")
    assert queue.claimer().claim() is None


def test_the_database_allows_one_succeeded_attempt_per_job(queue: PostgresQueue) -> None:
    """Even a job put back by hand after its success cannot succeed twice: the partial unique
    index refuses the second succeeded attempt, and the settle says so."""
    queue.enqueue({}, job_id="j")
    queue.settle(claim(queue), Verdict.succeeded())
    queue.session.rows(
        f"UPDATE \"{queue.location.schema}\".jobs SET state = 'queued' WHERE id = 'j'"
    )
    again = claim(queue)
    with pytest.raises(QueueError, match="second succeeded attempt"):
        queue.settle(again, Verdict.succeeded())
    assert queue.success_copies()["j"] == 1


def test_a_client_clock_an_hour_off_changes_no_lease_decision(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """Hosts whose wall clocks are an hour ahead and behind: a live lease stays live for both
    (recover with their `now` takes nothing), and a lapsed one is taken whatever they think."""
    ahead = make(pg_server, pg_schema, tmp_path, clock_skew=3600, name="ahead")
    behind = make(pg_server, pg_schema, tmp_path, clock_skew=-3600, name="behind")
    ahead.enqueue({}, job_id="j")
    held = claim(ahead)
    for host in (ahead, behind):
        assert host.recover(stale_after=0, max_attempts=3, now=host.clock()) == []
        assert [view.state for view in host.claims(now=host.clock())] == [ClaimState.LIVE]
    assert ahead.renew(held)
    expire(ahead, "j")
    [item] = behind.recover(stale_after=3600, max_attempts=3, now=behind.clock())
    assert item.job_id == "j"


def test_a_forked_child_opens_a_session_of_its_own(queue: PostgresQueue) -> None:
    """The child's first statement opens its own session (another server process), and the
    parent's still works after the child is gone: the child never closed it."""
    parent = queue.session.backend_pid()

    def child(say: Say) -> None:
        say(str(queue.session.backend_pid()))

    assert int(in_dying_process(child)) != parent
    assert queue.session.backend_pid() == parent
    assert queue.counts().queued == 0


def test_an_unreachable_server_is_one_error_exiting_75(tmp_path: Path) -> None:
    """Nothing listens: QueueUnavailableError (exit 75, try again later) within the connect
    timeout, naming the queue and never a password."""
    queue = PostgresQueue(
        PgLocation("down", "host=127.0.0.1 port=9 user=lk dbname=lk connect_timeout=2"),
        spool=tmp_path / "spool",
    )
    started = time.monotonic()
    with pytest.raises(QueueUnavailableError) as caught:
        queue.check()
    assert time.monotonic() - started < 5
    assert caught.value.exit_code == ExitCode.INTERRUPTED
    assert "postgres queue down" in caught.value.message


def test_a_schema_older_or_newer_is_refused_not_migrated(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """No schema: check() names `lanekit db migrate`; a newer version: refused (exit 69),
    and migrate refuses to touch it too."""
    queue = PostgresQueue(PgLocation("s", pg_server.dsn, schema=pg_schema), spool=tmp_path)
    with pytest.raises(SchemaError, match="db migrate"):
        queue.check()
    assert queue.migrate() == (None, POSTGRES_QUEUE_SCHEMA)
    assert queue.migrate() == (POSTGRES_QUEUE_SCHEMA, POSTGRES_QUEUE_SCHEMA)
    queue.session.rows(f"UPDATE \"{pg_schema}\".meta SET value = '99' WHERE key = 'version'")
    with pytest.raises(SchemaError, match="newer") as caught:
        queue.check()
    assert caught.value.exit_code == ExitCode.UNAVAILABLE
    with pytest.raises(SchemaError, match="newer"):
        queue.migrate()


def test_the_lease_owner_is_this_host_and_process(queue: PostgresQueue) -> None:
    """The lease owner is this host, this pid and its start token."""
    queue.enqueue({}, job_id="j")
    claim(queue)
    [view] = queue.claims()
    assert view.info.pid == os.getpid() and view.info.host


def test_a_spool_others_may_write_is_refused(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The payloads' directory must be lanekit's alone: one others may write is refused
    (exit 69) with the chmod that fixes it."""
    from lanekit.errors import UnsafeStateError

    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    spool.chmod(0o777)
    queue = PostgresQueue(PgLocation("s", pg_server.dsn, schema=pg_schema), spool=spool)
    queue.migrate()
    with pytest.raises(UnsafeStateError, match="spool directory") as caught:
        queue.check()
    assert caught.value.hint is not None and "chmod 700" in caught.value.hint
