"""What a run can tell about a queue directory from a few peeks, before loading the queue.

Most scheduled runs find nothing to do, and every run is a fresh interpreter: the empty-run
fast path (lanekit.run.entry) decides from these answers alone whether the full run is needed,
and the full run (lanekit.run.runner) asks the same questions so the two never disagree. Both
ask through lanekit.queue (nothing_queued, purgeable), which imports only this module for a
directory. Builtin modules only (os, time): importing the queue machinery would cost every
empty run its start-up.
"""

# ruff: noqa: PTH208
# (os and os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os
import time


def nothing_queued(queue_dir: str) -> bool:
    """True when queue/, delayed/ and claimed/ hold no job: nothing to run, retry or recover,
    so nothing would move. Any doubt (a directory missing or unreadable) says False, and the
    full path, which checks the queue first, reports it."""
    for name in ("queue", "delayed", "claimed"):
        try:
            with os.scandir(f"{queue_dir}/{name}") as entries:
                if any(not entry.name.startswith(".") for entry in entries):
                    return False
        except OSError:
            return False
    return True


def purgeable(queue_dir: str, now: float, keep_done: float) -> bool:
    """True when there may be something to purge: a done/ day bucket (UTC days) older than
    `keep_done`, or anything in failed/. A listing of done/ (one entry per day) and a peek
    into failed/."""
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(now - keep_done))
    try:
        if any(name[:1].isdigit() and name < cutoff for name in os.listdir(f"{queue_dir}/done")):
            return True
        with os.scandir(f"{queue_dir}/failed") as entries:
            return any(not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False  # a missing directory: the full run reports it when it matters


WHERE = {
    "queued": ("queue",),
    "delayed": ("delayed",),
    "running": ("claimed",),
    "failed": ("failed",),
    "any": ("queue", "delayed", "claimed", "failed", "records"),
}
"""The directories holding the ids of jobs in each state `job_ids` is asked for (`any`: every
job with a file or a record; finished jobs are known by their records, done/'s day buckets are
not listed)."""


def job_ids(queue_dir: str, states: tuple[str, ...], prefix: str = "") -> list[str]:
    """The ids, starting with `prefix`, of the jobs in `states` (keys of WHERE), sorted, from
    one listing of each directory (shell completion: a name renamed during the listing may be
    missed, which only leaves it out of the suggestions). Names are read by the queue's one
    grammar (lanekit.queue.directory.layout); a directory missing or unreadable adds none."""
    from lanekit.queue.directory.layout import delayed_until
    from lanekit.queue.ids import is_job_name, job_id_of

    found: set[str] = set()
    for directory in {name for state in states for name in WHERE.get(state, ())}:
        try:
            names = os.listdir(f"{queue_dir}/{directory}")
        except OSError:
            continue
        for name in names:
            if not is_job_name(name):
                continue
            delayed = delayed_until(name) if directory == "delayed" else None
            job_id = delayed[0] if delayed is not None else job_id_of(name)
            if job_id.startswith(prefix):
                found.add(job_id)
    return sorted(found)
