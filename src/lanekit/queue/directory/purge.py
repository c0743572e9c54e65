"""Retention: removing finished and failed jobs past `keep_done` / `keep_failed`, with their
records, while the re-execution guard outlives them (records/.guard/)."""

# ruff: noqa: PTH106, PTH108, PTH116
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import os
import time

from lanekit.queue.directory.fileio import io_errors, job_names
from lanekit.queue.directory.layout import error_name, output_name
from lanekit.queue.directory.safety import check
from lanekit.queue.ids import owned_id
from lanekit.queue.model import Purged
from lanekit.queue.records import JobState, RecordError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState


def purge(
    q: QueueState,
    *,
    keep_done: float,
    keep_failed: float,
    dry_run: bool = False,
    now: float | None = None,
) -> Purged:
    """Remove finished jobs older than `keep_done` and failed ones older than
    `keep_failed` (seconds), with their records, .error files and output files (`lanekit purge`, and
    the runner once a day).

    done/ goes by whole UTC day buckets: a bucket is purged once its whole day is older
    than `keep_done` (only those buckets are listed). The guard outlives the purge: the
    ids of succeeded jobs go into records/.guard/ (RecordStore.remember_succeeded)
    before their records are removed, and index files older than `keep_done` expire, so
    a succeeded id is refused for at least `keep_done` after it finished. failed/ goes by
    the time the job failed (its .error's mtime). Nothing else is touched: queue/,
    delayed/ and claimed/ are live."""
    check(q)
    now = q.clock() if now is None else now
    done_cut = time.strftime("%Y-%m-%d", time.gmtime(now - keep_done))
    done: list[str] = []
    failed: list[str] = []
    with io_errors("purge old jobs"):
        for day in q.done_days():
            if day >= done_cut:
                break
            done.extend(purge_day(q, day, dry_run, now))
        failed = purge_failed(q, now - keep_failed, dry_run)
        expired = [] if dry_run else q.store.expire_guard(done_cut)
        if not dry_run:
            for job_id in (*done, *failed):  # their output goes with them
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{q.root}/{output_name(job_id)}")
    return Purged(tuple(done), tuple(failed), tuple(expired), dry_run)


def purge_day(q: QueueState, day: str, dry_run: bool, now: float) -> list[str]:
    directory = f"{q.done_root}/{day}"
    names = job_names(directory)
    ids = [owned_id(name) for name in names]
    if dry_run:
        return ids
    succeeded = []
    for job_id in ids:
        try:
            record = q.store.read(job_id)
        except RecordError:
            record = None  # unreadable: kept for inspection, its job file still goes
        if record is not None and record.state is JobState.SUCCEEDED:
            succeeded.append(job_id)
    # The ids first: from here on the guard holds whether or not the record exists.
    q.store.remember_succeeded(succeeded, time.strftime("%Y-%m-%d", time.gmtime(now)))
    for job_id in succeeded:
        q.store.remove(job_id)
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{directory}/{name}")
    with contextlib.suppress(OSError):  # not empty: someone put something there
        os.rmdir(directory)
    return ids


def purge_failed(q: QueueState, cutoff: float, dry_run: bool) -> list[str]:
    purged = []
    for name in job_names(q.failed_dir):
        path = f"{q.failed_dir}/{name}"
        error = error_name(path)
        try:
            failed_at = os.stat(error).st_mtime
        except FileNotFoundError:
            try:
                failed_at = os.stat(path).st_mtime
            except FileNotFoundError:
                continue
        if failed_at >= cutoff:
            continue
        job_id = owned_id(name)
        purged.append(job_id)
        if dry_run:
            continue
        try:
            record = q.store.read(job_id)
        except RecordError:
            record = None
        if record is not None and record.state is JobState.FAILED:
            q.store.remove(job_id)
        for leftover in (path, error):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
    return purged
