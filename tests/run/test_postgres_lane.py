"""`lanekit run` on a lane whose queue is on a real PostgreSQL server: the job gets its payload
as a file ({job} and LANEKIT_JOB_FILE, in a 0700 spool, removed after), its watcher renews the
lease and kills the job at once when the lease is lost (the settle is then `fenced` in the lane
log) or when no renew succeeds before the self-fence deadline; a server that is down exits 75
with the job still queued."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanekit.queue.model import Verdict
from lanekit.queue.records import JobState
from lanekit.run.lanelog import read_events
from pglane import CONFIG, lanekit, queue_of, setup
from pgserver import PgServer


def events(tmp_path: Path) -> list[dict[str, str]]:
    log = Path(os.environ["LANEKIT_STATE_DIR"]) / "queues" / "shared" / "logs" / "publish.log"
    return [dict(event) for event in read_events(log)]


def test_a_postgres_lane_runs_its_jobs_from_a_spooled_file(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = setup(pg_server, pg_schema, tmp_path)
    for n in range(3):
        done = lanekit(
            "enqueue", "publish", "-", "--id", f"j{n}", "-c", str(config), stdin=f'{{"n": {n}}}'
        )
        assert (done.returncode, done.stdout) == (0, f"j{n}\n"), done.stderr
    run = lanekit("run", "publish")  # as launchd runs it: from the snapshot apply installed
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["job"] for line in lines] == [{"n": 0}, {"n": 1}, {"n": 2}]
    spool = Path(lines[0]["path"]).parent
    assert {line["dir_mode"] for line in lines} == {"0o700"}
    assert str(spool).startswith(os.environ["LANEKIT_STATE_DIR"])
    assert list(spool.iterdir()) == []  # each payload removed after its job
    queue = queue_of(pg_server, pg_schema, tmp_path)
    assert queue.counts().done == 3
    assert [item.outcome for item in queue.attempts("j0")] == ["succeeded"]
    assert [event["event"] for event in events(tmp_path)].count("done") == 3


def test_a_lost_lease_kills_the_job_at_once_and_the_settle_is_fenced(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """Another run takes the job over (its token moves on) while it runs: the watcher's next
    renew finds the lease lost and kills the job within a renew period; the runner's settle
    changes nothing and the lane log says `fenced`."""
    config = setup(pg_server, pg_schema, tmp_path, lease=5)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"sleep": 60}, job_id="long")
    started = time.monotonic()
    runner = subprocess.Popen(
        [sys.executable, "-m", "lanekit", "run", "publish", "-c", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )
    while not (tmp_path / "out.jsonl").exists():
        assert time.monotonic() - started < 30
        time.sleep(0.05)
    queue.session.rows(
        f'UPDATE "{pg_schema}".jobs SET token = token + 1000 WHERE id = %s', ("long",)
    )
    stolen = time.monotonic()
    runner.wait(timeout=60)
    assert time.monotonic() - stolen < 5  # one renew period (1 s) and the kill, not 60 s
    names = [(event["event"], event.get("reason")) for event in events(tmp_path)]
    assert ("fenced", None) in names
    assert queue.locate("long").state is JobState.RUNNING  # type: ignore[union-attr]


def test_no_renew_before_the_deadline_stops_the_job_before_its_lease_lapses(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The watcher cannot reach the server (its role may no longer log in; the runner's own
    session stays open): the self-fence kills the job at lease - margin after the claim, by
    the watcher's own clock, before the server's lease lapses; the job goes back unspent, and
    the run, cut off, claims nothing more (exit 75)."""
    config = setup(pg_server, pg_schema, tmp_path, lease=5)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"sleep": 60}, job_id="cut-off")
    runner = subprocess.Popen(
        [sys.executable, "-m", "lanekit", "run", "publish", "-c", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = time.monotonic()
        while not (tmp_path / "out.jsonl").exists():
            assert time.monotonic() - started < 30
            time.sleep(0.05)
        pg_server.admin("ALTER ROLE lk NOLOGIN")
        runner.wait(timeout=60)
    finally:
        pg_server.admin("ALTER ROLE lk LOGIN")
    elapsed = time.monotonic() - started
    assert elapsed < 5  # killed at lease - margin (4 s), not after the job's 60 s
    assert runner.returncode == 75  # cut off from the server: the run claims nothing more
    reasons = [event.get("reason") for event in events(tmp_path) if event["event"] == "requeued"]
    assert reasons == ["lease-lost"]
    view = queue.job("cut-off")
    assert view is not None and view.state is JobState.QUEUED
    assert view.record is not None and view.record.attempts == 0


def test_a_server_that_is_down_exits_75_and_loses_no_job(tmp_path: Path) -> None:
    config = tmp_path / "lanes.toml"
    config.write_text(
        CONFIG.format(
            dsn="host=127.0.0.1 port=9 user=lk dbname=lk",
            schema="lanekit",
            lease=30,
            python=sys.executable,
            script=tmp_path / "job.py",
            out=tmp_path / "out.jsonl",
        )
    )
    run = lanekit("run", "publish", "-c", str(config))
    assert run.returncode == 75
    assert run.stderr.startswith("error: postgres queue shared")
    assert len(run.stderr.strip().splitlines()) == 2  # the error and its hint, no traceback


@pytest.fixture(autouse=True)
def _needs_state_dir() -> None:
    assert os.environ.get("LANEKIT_STATE_DIR")


def test_a_job_that_ends_after_its_runner_died_is_settled_by_its_outcome_anywhere(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The runner is SIGKILLed mid-job; its watcher sees the job to its end and keeps the
    outcome in the claim, so the run that recovers the lapsed lease (on any machine) settles
    the job as succeeded by it, never running it again."""
    import signal

    setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"sleep": 1}, job_id="ends")
    runner = subprocess.Popen([sys.executable, "-m", "lanekit", "run", "publish"])
    started = time.monotonic()
    while not (tmp_path / "out.jsonl").exists():
        assert time.monotonic() - started < 30
        time.sleep(0.05)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    table = f'"{pg_schema}".jobs'
    while not queue.session.rows(f"SELECT 1 FROM {table} WHERE outcome IS NOT NULL"):
        assert time.monotonic() - started < 30
        time.sleep(0.1)
    queue.session.rows(f"UPDATE {table} SET lease_expires = now() - interval '1 s'")
    [item] = queue.recover(stale_after=0, max_attempts=3)
    assert (item.state, item.exit) == (JobState.SUCCEEDED, 0)
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1


def test_a_run_purges_a_postgres_queue_once_a_day(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """The first run of the UTC day on a machine purges finished jobs past keep_done (30 d
    by default); the guard outlives them; the day's stamp lives beside the lane log."""
    setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({}, job_id="old")
    queue.settle(queue.claimer().claim(), Verdict.succeeded())  # type: ignore[arg-type]
    table = f'"{pg_schema}".jobs'
    queue.session.rows(f"UPDATE {table} SET finished_at = now() - interval '40 days'")
    assert lanekit("run", "publish").returncode == 0
    assert queue.job("old") is None and queue.succeeded("old")
    purged = [event for event in events(tmp_path) if event["event"] == "purged"]
    assert [event["done"] for event in purged] == ["1"]
    assert lanekit("run", "publish").returncode == 0  # the day's purge is done: not again
    assert len([event for event in events(tmp_path) if event["event"] == "purged"]) == 1


UNTIED = (
    "import sys, lanekit.run.watcher as watcher; watcher.TIE = False; "
    "from lanekit.__main__ import main; main(sys.argv[1:])"
)
"""The control's runner: leased jobs not tied to their watcher (lanekit.run.watcher.TIE)."""


def _ended(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet (it runs nothing)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("kill", ["runner+watcher", "runner+watcher+guard", "control"], ids=str)
def test_a_job_never_outlives_its_watcher(
    pg_server: PgServer, pg_schema: str, tmp_path: Path, kill: str
) -> None:
    """The runner and the job's watcher are SIGKILLed together mid-job: nothing renews the
    lease or self-fences any more, so the job, and the child it started in its process group,
    must be gone within a second (the guard kills the group at the watcher's death), long
    before the lease lapses and another host runs the job again. With the guard killed too,
    Linux's parent-death signal still kills the job's leader (its child, which the kernel
    does not signal, is what the guard is for). The control (jobs not tied) shows both
    outliving their watcher, which is how two copies ran at once across hosts."""
    import signal
    import sys

    import psutil

    if kill == "runner+watcher+guard" and not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's (README, 'Several machines, one queue')")
    setup(pg_server, pg_schema, tmp_path)
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({"sleep": 60, "child": True}, job_id="long")
    argv = ["-m", "lanekit"] if kill != "control" else ["-c", UNTIED]
    runner = subprocess.Popen([sys.executable, *argv, "run", "publish"])
    out = tmp_path / "out.jsonl"
    started = time.monotonic()
    while not out.exists() or not out.read_text().endswith("\n"):
        assert time.monotonic() - started < 30
        time.sleep(0.05)
    line = json.loads(out.read_text())
    job, child = int(line["pid"]), int(line["child"])
    watcher = psutil.Process(job).ppid()
    guards = [p for p in psutil.Process(watcher).children() if p.pid != job]
    try:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        os.kill(watcher, signal.SIGKILL)
        if kill == "runner+watcher+guard":
            [guard] = guards
            guard.kill()
        killed = time.monotonic()
        while time.monotonic() - killed < 1.0 and not (_ended(job) and _ended(child)):
            time.sleep(0.02)
        if kill == "control":
            assert guards == []
            assert not _ended(job) and not _ended(child)
        elif kill == "runner+watcher":
            assert _ended(job) and _ended(child)
        else:
            assert _ended(job)
            assert not _ended(child)  # the kernel signals the leader only
    finally:
        for pid in (job, child):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
