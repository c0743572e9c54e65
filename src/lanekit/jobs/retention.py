"""`lanekit purge`: each queue's retention (keep_done / keep_failed) applied now.

The purge itself is lanekit.queue's (`Queue.purge`, which keeps the re-execution guard); the
runner does the same once a UTC day. This module picks each queue of the selected lanes once,
with its own retention or an explicit `--older-than`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lanekit.config import LaneSpec
from lanekit.queue import open_queue
from lanekit.queue.model import Purged


@dataclass(frozen=True, slots=True)
class PurgeRow:
    """One queue purged (or, with dry_run, that would be)."""

    queue: str
    lanes: tuple[str, ...]
    keep_done: float
    keep_failed: float
    purged: Purged


def purge(
    lanes: Sequence[LaneSpec], *, older_than: float | None = None, dry_run: bool = False
) -> list[PurgeRow]:
    """Purge the queue of each lane once; `older_than` (seconds) replaces both retentions."""
    by_dir: dict[str, list[LaneSpec]] = {}
    for lane in lanes:
        by_dir.setdefault(str(lane.queue.dir), []).append(lane)
    rows = []
    for group in by_dir.values():
        spec = group[0].queue
        keep_done = spec.keep_done if older_than is None else older_than
        keep_failed = spec.keep_failed if older_than is None else older_than
        queue = open_queue(spec.dir, durable=spec.durable)
        if queue.missing() is not None:
            continue  # never applied (or never migrated): nothing to purge
        purged = queue.purge(keep_done=keep_done, keep_failed=keep_failed, dry_run=dry_run)
        rows.append(
            PurgeRow(spec.name, tuple(lane.name for lane in group), keep_done, keep_failed, purged)
        )
    return rows
