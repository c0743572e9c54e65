"""`lanekit recover`: the dead claims of each selected lane's queue given back now.

The recovery itself is lanekit.queue's (`Queue.recover`: back to queue/, to failed/ when out of
attempts, or settled by the exit status a finished job's watcher recorded); every run does it
first. This module picks each queue of the selected lanes once, with the settings of the first
lane that drains it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lanekit.config import LaneSpec
from lanekit.queue import open_queue
from lanekit.queue.model import Recovered


@dataclass(frozen=True, slots=True)
class RecoverRow:
    """One claim recover gave back (or would give back), with the lane whose settings ruled."""

    lane: str
    queue: str
    item: Recovered


def recover_lanes(lanes: Sequence[LaneSpec], *, dry_run: bool) -> list[RecoverRow]:
    """Recover the dead claims of each lane's queue (once per queue, with the settings of the
    first lane that uses it)."""
    rows: list[RecoverRow] = []
    seen: set[Path] = set()
    for lane in lanes:
        if lane.queue.dir in seen:
            continue
        seen.add(lane.queue.dir)
        queue = open_queue(lane.queue.dir, durable=lane.queue.durable)
        found = queue.recover(
            stale_after=lane.stale_after, max_attempts=lane.max_attempts, dry_run=dry_run
        )
        rows.extend(RecoverRow(lane.name, lane.queue.name, item) for item in found)
    return rows
