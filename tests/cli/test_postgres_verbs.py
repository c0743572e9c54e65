"""Every queue command on a lane whose queue is on a real PostgreSQL server: status (counts in
one query), jobs, job (every attempt with its host and outcome), retry, requeue, cancel (and
`--stop` through the database), purge."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from lanekit.queue.model import Verdict
from lanekit.queue.records import JobState
from pglane import lanekit, queue_of, setup
from pgserver import PgServer


def test_status_jobs_and_job_on_a_postgres_lane(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"n": 1}, job_id="broke")
    queue.enqueue({"n": 2}, job_id="waits")
    queue.settle(queue.claimer(lane="publish").claim(), Verdict.failed("exit 3", 1))  # type: ignore[arg-type]
    status = lanekit("status", "--json")
    assert status.returncode == 0, status.stderr
    [lane] = json.loads(status.stdout)["lanes"]
    assert (lane["queue"]["queued"], lane["queue"]["failed"]) == (1, 1)
    jobs = lanekit("jobs", "publish", "--json", "-c", str(config))
    assert [item["job_id"] for item in json.loads(jobs.stdout)["items"]] == ["waits", "broke"]
    job = lanekit("job", "publish", "broke", "-c", str(config))
    assert job.returncode == 0
    assert f"#1 failed    {socket.gethostname()} pid" in job.stdout
    detail = json.loads(lanekit("job", "publish", "broke", "--json", "-c", str(config)).stdout)
    assert [item["outcome"] for item in detail["attempt_history"]] == ["failed"]


def test_status_shows_the_leases_by_host_and_the_expired_ones(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """status counts a postgres queue's running jobs by the host holding their lease, and how
    many of those leases lapsed (the server's clock), in text and in --json as documented."""
    from test_json_contracts import STATUS_LEASE_KEYS, contracts, problems

    setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    [lane] = json.loads(lanekit("status", "--json").stdout)["lanes"]
    assert lane["queue"]["leases"] == []
    for n in range(4):
        queue.enqueue({"n": n}, job_id=f"j{n}")
    claimer = queue.claimer(lane="publish")
    for _ in range(3):
        assert claimer.claim() is not None
    # One of them held by another machine whose lease lapsed (it was cut off, or is gone).
    queue.session.rows(
        f"UPDATE \"{pg_schema}\".jobs SET lease_host = 'zz-laptop', "
        "lease_expires = now() - interval '1 second' WHERE id = 'j0'"
    )
    status = lanekit("status", "--json")
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    [lane] = document["lanes"]
    here = socket.gethostname()
    expected = sorted(
        [
            {"host": here, "running": 2, "expired": 0},
            {"host": "zz-laptop", "running": 1, "expired": 1},
        ],
        key=lambda held: str(held["host"]),
    )
    assert lane["queue"]["leases"] == expected  # by host name
    found, paths = problems(contracts()["status"], document)
    assert not found and paths >= STATUS_LEASE_KEYS
    shown = {here: f"{here} 2", "zz-laptop": "zz-laptop 1 (1 expired: the next run recovers it)"}
    text = " ".join(lanekit("status").stdout.split())
    assert "leases: " + ", ".join(shown[str(held["host"])] for held in expected) in text


def test_retry_requeue_cancel_and_purge_on_a_postgres_lane(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.backoff_base = 3600  # a failed attempt waits an hour: delayed
    queue.enqueue({}, job_id="broke")
    queue.enqueue({}, job_id="later")
    queue.enqueue({}, job_id="never")
    queue.settle(queue.claimer().claim(), Verdict.failed("exit 3", 1))  # type: ignore[arg-type]
    queue.settle(queue.claimer().claim(), Verdict.failed("exit 1", 3))  # type: ignore[arg-type]
    assert queue.counts().delayed == 1
    c = ["-c", str(config)]
    assert lanekit("retry", "broke", *c).returncode == 0
    assert lanekit("requeue", "later", *c).returncode == 0
    assert lanekit("cancel", "never", *c).returncode == 0
    assert queue.locate("broke").state is JobState.QUEUED  # type: ignore[union-attr]
    assert queue.counts().delayed == 0
    assert queue.job("never").error == "cancelled\n"  # type: ignore[union-attr]
    refused = lanekit("cancel", "never", *c)
    assert refused.returncode == 2 and "not queued (failed)" in refused.stderr
    time.sleep(1.1)
    purged = lanekit("purge", "--older-than", "1s", "--json", *c)
    assert purged.returncode == 0, purged.stderr
    [row] = json.loads(purged.stdout)["queues"]
    assert row["failed"] == ["never"]


def test_cancel_stop_reaches_a_running_job_through_the_database(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The request is a column: the job's watcher, on whichever host, sees it at its next
    renew and stops the job, which then fails as cancelled."""
    import subprocess
    import sys

    config = setup(pg_server, pg_schema, tmp_path, lease=5)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"sleep": 60}, job_id="long")
    runner = subprocess.Popen([sys.executable, "-m", "lanekit", "run", "publish"])
    started = time.monotonic()
    while not (tmp_path / "out.jsonl").exists():
        assert time.monotonic() - started < 30
        time.sleep(0.05)
    stop = lanekit("cancel", "long", "--stop", "-c", str(config))
    assert stop.returncode == 0, stop.stderr
    runner.wait(timeout=30)
    assert time.monotonic() - started < 15
    view = queue.job("long")
    assert view is not None and view.state is JobState.FAILED and view.error == "cancelled\n"


def test_apply_installs_a_postgres_lane_while_its_server_is_out_of_reach(tmp_path: Path) -> None:
    """A laptop offline still installs its lanes; their runs exit 75 until the server answers
    (doctor's queue.db-unreachable says so). An unmigrated schema is refused, though."""
    config = tmp_path / "lanes.toml"
    config.write_text(
        '[queues.shared]\nbackend = "postgres"\n'
        'dsn = "host=127.0.0.1 port=9 user=lk dbname=lk"\n\n'
        '[lanes.publish]\nqueue = "shared"\ncommand = ["/bin/cat", "{job}"]\nevery = "5m"\n'
    )
    applied = lanekit("apply", "-c", str(config))
    assert applied.returncode == 0, applied.stderr
    assert lanekit("run", "publish").returncode == 75


def test_apply_refuses_a_schema_not_migrated(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = tmp_path / "lanes.toml"
    config.write_text(
        f'[queues.shared]\nbackend = "postgres"\ndsn = "{pg_server.dsn}"\n'
        f'schema = "{pg_schema}"\n\n'
        '[lanes.publish]\nqueue = "shared"\ncommand = ["/bin/cat", "{job}"]\nevery = "5m"\n'
    )
    applied = lanekit("apply", "-c", str(config))
    assert applied.returncode == 1  # apply's own: a lane it could not install
    assert "lanekit db migrate shared" in applied.stderr
