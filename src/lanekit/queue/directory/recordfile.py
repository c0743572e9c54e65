"""A new record's file: staged in tmp/, then moved into records/ without replacing (link +
unlink, lanekit.system.fsops.publish_new), so a record that exists is never overwritten
(enqueue's `queued` record; RecordStore.stage and create come here too). Builtin imports only:
a single `lanekit enqueue` writes one (lanekit.jobs.add)."""

# ruff: noqa: PTH108
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import os

from lanekit.system import fsops


def stage_record(tmp_dir: str, line: bytes, *, durable: bool) -> str:
    """Write a record's `line` to a fresh temp file in `tmp_dir` for `create_record`; returns
    its path."""
    tmp = f"{tmp_dir}/.rec.{fsops.tmp_suffix()}"
    fsops.write_new(tmp, line, durable=durable)
    return tmp


def create_record(records_dir: str, staged: str, job_id: str, *, durable: bool) -> bool:
    """Move the staged record of `job_id` into `records_dir` unless the job already has a
    record; True if it did. An existing record is left alone and the staged file removed:
    link(2), which never replaces, decides, so a concurrent writer's record is never
    overwritten."""
    try:
        fsops.publish_new(staged, f"{records_dir}/{job_id}.json")
    except FileExistsError:
        os.unlink(staged)
        return False
    except BaseException:
        try:  # noqa: SIM105 - contextlib would cost a single enqueue's start-up
            os.unlink(staged)
        except OSError:
            pass
        raise
    if durable:
        fsops.fsync_dir(records_dir)
    return True
