"""Retention: purge by keep_done / keep_failed with the re-execution guard intact, the runner's
once-a-day purge, and rotation of launchd's own stdout/stderr files between runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.queue.model import Dropped, DropReason, JobExistsError
from lanekit.run.entry import empty_run
from lanekit.run.lanelog import read_events
from lanekit.run.purgeday import purge_stamp, utc_day
from lanekit.run.runner import run_lane
from lanekit.state.snapshot import RunSpec

DAY = 86400.0
KEEP_DONE = 30 * DAY
KEEP_FAILED = 90 * DAY


def finished(queue: Queue, job_id: str, *, ok: bool = True) -> None:
    """Enqueue `job_id`, claim it and settle it: done/ when ok, else failed/."""
    queue.enqueue({"n": job_id}, job_id)
    claim = queue.claimer().claim()
    assert claim is not None
    assert claim.job_id == job_id
    if ok:
        queue.complete(claim)
    else:
        queue.fail(claim, "exit 1")


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A fresh queue under tmp_path."""
    q = Queue(tmp_path / "q", durable=False)
    q.ensure()
    return q


def test_purge_removes_old_jobs_and_records_but_the_guard_still_refuses_the_id(
    queue: Queue,
) -> None:
    """A succeeded job older than keep_done leaves done/ and records/, yet enqueueing its id
    again is refused and a producer's copy dropped into queue/ is skipped, not run."""
    finished(queue, "s1")
    now = time.time() + KEEP_DONE + 2 * DAY
    result = queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=now)
    assert result.done == ("s1",)
    assert queue.locate("s1") is None
    assert queue.store.read("s1") is None

    with pytest.raises(JobExistsError, match="already succeeded"):
        queue.enqueue({"n": "again"}, "s1")
    (queue.queue / "s1.json").write_text('{"n": "producer"}')
    dropped: list[Dropped] = []
    claimer = queue.claimer(on_drop=dropped.append)
    assert claimer.claim() is None
    assert [(d.job_id, d.reason) for d in dropped] == [("s1", DropReason.ALREADY_SUCCEEDED)]


def test_the_guard_index_expires_only_after_another_keep_done(queue: Queue) -> None:
    """The purge index keeps an id for keep_done after the purge; then it expires and the
    id may be used again."""
    finished(queue, "s1")
    first = time.time() + KEEP_DONE + 2 * DAY
    queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=first)
    soon = queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=first + KEEP_DONE - DAY)
    assert soon.guard_expired == ()
    with pytest.raises(JobExistsError):
        queue.enqueue({"n": 1}, "s1")
    late = queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=first + KEEP_DONE + DAY)
    assert len(late.guard_expired) == 1
    assert queue.enqueue({"n": 2}, "s1") == "s1"


def test_purge_keeps_young_jobs_and_goes_by_when_a_job_failed(queue: Queue) -> None:
    """Jobs younger than their retention stay; failed/ is purged by the failure time, with
    its .error and failed record; a dry run lists the same and removes nothing."""
    finished(queue, "d1")
    finished(queue, "f1", ok=False)
    now = time.time()
    assert queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=now).done == ()
    later = now + KEEP_FAILED + DAY
    dry = queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=later, dry_run=True)
    assert (dry.done, dry.failed) == (("d1",), ("f1",))
    assert (queue.failed / "f1.json").exists()
    real = queue.purge(keep_done=KEEP_DONE, keep_failed=KEEP_FAILED, now=later)
    assert (real.done, real.failed) == (("d1",), ("f1",))
    assert not (queue.failed / "f1.error").exists()
    assert queue.store.read("f1") is None
    assert queue.enqueue({"n": 1}, "f1") == "f1"  # a failed id may come back


def _spec(root: Path, **overrides: object) -> RunSpec:
    queue_dir = root / "q"
    Queue(queue_dir).ensure()
    fields: dict[str, object] = {
        "lane": "work",
        "label": "test.work",
        "queue_dir": queue_dir,
        "command": ("true",),
        "max_jobs": 10,
        "max_seconds": None,
        "max_attempts": 3,
        "stale_after": 3600.0,
        "exit_timeout": 5,
        "log_path": queue_dir / "logs" / "work.log",
        "durable": False,
        "stdout_path": queue_dir / "logs" / "work.out.log",
        "stderr_path": queue_dir / "logs" / "work.err.log",
    }
    fields.update(overrides)
    spec = RunSpec(**fields)  # type: ignore[arg-type]
    spec.write(root / "snap.json")
    return spec


def _old_success(queue: Queue, job_id: str) -> None:
    """A job that finished on 2001-01-01 (its done/ bucket and succeeded record)."""
    finished(queue, job_id)
    location = queue.locate(job_id)
    assert location is not None
    old = queue.done / "2001-01-01"
    old.mkdir()
    Path(location.where).rename(old / f"{job_id}.json")


def test_the_first_run_of_a_day_purges_and_later_runs_do_not(tmp_path: Path) -> None:
    """A run (fast path declined) purges an old done/ bucket once, logs `purged`, and leaves
    today's stamp; the next run takes the fast path and purges nothing."""
    spec = _spec(tmp_path)
    queue = Queue(spec.queue_dir)
    _old_success(queue, "old")
    argv = ["work", "--snapshot", str(tmp_path / "snap.json")]
    assert empty_run(argv) is None  # a purge is due: the full run takes over
    assert run_lane(spec, handle_signals=False).exit_code == 0
    purged = [e for e in read_events(spec.log_path) if e["event"] == "purged"]
    assert [e["done"] for e in purged] == ["1"]
    assert not (queue.done / "2001-01-01").exists()
    assert Path(purge_stamp(str(spec.queue_dir), utc_day(time.time()))).exists()
    with pytest.raises(JobExistsError):
        queue.enqueue({}, "old")

    _old_success(queue, "old2")
    assert empty_run(argv) == 0  # purged today already: fast path, nothing purged
    assert (queue.done / "2001-01-01" / "old2.json").exists()


def test_launchd_stdout_and_stderr_files_are_rotated_between_runs(tmp_path: Path) -> None:
    """StandardOutPath/StandardErrorPath past log_max_bytes are moved to .1 at the start of a
    run (full and fast path), so the next spawn, which launchd opens afresh, starts a new
    file; `log_keep` bounds the copies."""
    spec = _spec(tmp_path, log_max_bytes=100, log_keep=2)
    assert spec.stdout_path is not None
    assert spec.stderr_path is not None
    for path in (spec.stdout_path, spec.stderr_path):
        path.write_text("x" * 200)
    assert run_lane(spec, handle_signals=False).exit_code == 0
    for path in (spec.stdout_path, spec.stderr_path):
        assert Path(f"{path}.1").stat().st_size == 200
        assert not path.exists()
    spec.stdout_path.write_text("y" * 200)
    assert empty_run(["work", "--snapshot", str(tmp_path / "snap.json")]) == 0
    assert Path(f"{spec.stdout_path}.1").read_text() == "y" * 200
    assert Path(f"{spec.stdout_path}.2").read_text() == "x" * 200


def test_purge_command_json_dry_run_and_older_than(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit purge --older-than 1h --dry-run --json` lists what would go; without
    --dry-run it goes; a bad duration exits 2."""
    monkeypatch.chdir(tmp_path)
    queue = Queue(tmp_path / "q")
    queue.ensure()
    (tmp_path / "lanes.toml").write_text(
        f'[queues.q]\ndir = "{queue.dir}"\n\n[lanes.work]\nqueue = "q"\ncommand = ["/bin/true"]\n'
    )
    finished(queue, "f1", ok=False)
    old = time.time() - 2 * 3600
    os.utime(queue.failed / "f1.error", (old, old))
    result = CliRunner().invoke(app, ["purge", "--older-than", "1h", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["queues"][0]["failed"] == ["f1"]
    assert (queue.failed / "f1.json").exists()
    result = CliRunner().invoke(app, ["purge", "--older-than", "1h"])
    assert result.exit_code == 0
    assert "purged 0 done, 1 failed" in result.stdout
    assert queue.locate("f1") is None
    assert CliRunner().invoke(app, ["purge", "--older-than", "soon"]).exit_code == 2
    assert queue.store.read("f1") is None
