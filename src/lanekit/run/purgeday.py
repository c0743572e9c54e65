"""The daily purge's claim: one run a UTC day purges each queue (retention,
JobQueue.purge). It is claimed by creating `logs/.purged-<UTC day>` beside the lane logs:
whichever run creates it first purges. Builtin modules only (os, time): the empty run's fast
path (lanekit.run.entry) asks purge_due on every run.
"""

# ruff: noqa: PTH110
# (os and os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os
import time


def utc_day(epoch: float) -> str:
    """`YYYY-MM-DD` of `epoch` in UTC (the daily purge counts UTC days)."""
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def purge_stamp(queue_dir: str, day: str, log_path: str | None = None) -> str:
    """The file whose creation (O_EXCL) claims the day's purge of a queue: whichever run
    creates `logs/.purged-<UTC day>` first purges, every other run that day sees it exists.
    One stat per empty run is all the daily purge costs the fast path. A queue with no
    directory here (a server's) keeps it beside the lane log `log_path`: one purge a day per
    machine, each safe beside the others' (lanekit.queue.postgres)."""
    from lanekit.queue import directory_of

    if log_path is not None and directory_of(queue_dir) is None:
        return f"{os.path.dirname(log_path)}/.purged-{day}"  # noqa: PTH120 - a str path
    return f"{queue_dir}/logs/.purged-{day}"


def purge_due(queue_dir: str, now: float, keep_done: float, log_path: str | None = None) -> bool:
    """True when no run has purged the queue today yet and there may be something to purge
    (lanekit.queue.purgeable). One stat once the day's purge ran."""
    if os.path.exists(purge_stamp(queue_dir, utc_day(now), log_path)):
        return False
    from lanekit.queue import purgeable

    return purgeable(queue_dir, now, keep_done)
