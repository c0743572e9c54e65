"""What a run can tell about its queue from a few directory peeks, before loading lanekit.queue.

Most scheduled runs find nothing to do, and every run is a fresh interpreter: the empty-run
fast path (lanekit.run.entry) decides from these answers alone whether the full run is needed, and
the full run (lanekit.run.runner) asks the same questions so the two never disagree. Builtin modules
only (os, time): importing the queue machinery would cost every empty run its start-up.

The daily purge (retention, lanekit.queue's `Queue.purge`) is claimed per UTC day by creating
`logs/.purged-<UTC day>` in the queue directory: whichever run creates it first purges.
"""

# ruff: noqa: PTH110, PTH208
# (os and os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os
import time


def nothing_queued(queue_dir: str | os.PathLike[str]) -> bool:
    """True when queue/, delayed/ and claimed/ hold no job: nothing to run, retry or recover,
    so nothing would move. Any doubt (a directory missing or unreadable) says False, and the
    full path, which checks the queue first, reports it."""
    base = os.fspath(queue_dir)
    for name in ("queue", "delayed", "claimed"):
        try:
            with os.scandir(f"{base}/{name}") as entries:
                if any(not entry.name.startswith(".") for entry in entries):
                    return False
        except OSError:
            return False
    return True


def utc_day(epoch: float) -> str:
    """`YYYY-MM-DD` of `epoch` in UTC (done/ buckets and the daily purge count UTC days)."""
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def purge_stamp(queue_dir: str, day: str) -> str:
    """The file whose creation (O_EXCL) claims the day's purge of a queue: whichever run
    creates `logs/.purged-<UTC day>` first purges, every other run that day sees it exists.
    One stat per empty run is all the daily purge costs the fast path."""
    return f"{queue_dir}/logs/.purged-{day}"


def purge_due(queue_dir: str, now: float, keep_done: float) -> bool:
    """True when no run has purged the queue today yet and there may be something to purge:
    a done/ day bucket older than `keep_done`, or anything in failed/. One stat once the day's
    purge ran; before it, a listing of done/ (one entry per day) and a peek into failed/."""
    if os.path.exists(purge_stamp(queue_dir, utc_day(now))):
        return False
    cutoff = utc_day(now - keep_done)
    try:
        if any(name[:1].isdigit() and name < cutoff for name in os.listdir(f"{queue_dir}/done")):
            return True
        with os.scandir(f"{queue_dir}/failed") as entries:
            return any(not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False  # a missing directory: the full run reports it when it matters
