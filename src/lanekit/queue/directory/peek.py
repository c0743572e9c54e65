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
