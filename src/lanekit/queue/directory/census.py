"""Counting a directory queue: how many jobs each directory holds, how long the longest
waiting one has waited, and every claim with its owner and age (`lanekit status`, doctor;
the values are lanekit.queue.counts's). From directory listings alone, and a stat where an
age needs one, so it stays cheap at 100k jobs; no record is read and no claim classified, so
counting imports neither lanekit.queue.records nor lanekit.queue.directory.observe's classes
(benchmark (i))."""

# ruff: noqa: PTH116
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import heapq
import os
from pathlib import Path

from lanekit.queue.counts import ClaimInfo, QueueCounts
from lanekit.queue.directory.fileio import job_names
from lanekit.queue.ids import id_time, split_owned_name
from lanekit.system import procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState


def counts(q: QueueState, now: float | None = None) -> QueueCounts:
    """How many jobs are in each directory, and the oldest queued job and claim."""
    now = q.clock() if now is None else now
    queued = job_names(q.queue_dir)
    oldest = _longest_waiting(q, queued)
    claims = list_claims(q, now=now, check_owners=False)
    done = sum(len(job_names(f"{q.done_root}/{day}")) for day in q.done_days())
    return QueueCounts(
        queued=len(queued),
        delayed=len(job_names(q.delayed_dir)),
        claimed=len(claims),
        done=done,
        failed=len(job_names(q.failed_dir)),
        oldest_queued_age=None if oldest is None else max(now - oldest, 0.0),
        oldest_claim_age=max((c.age for c in claims), default=None),
    )


def _longest_waiting(q: QueueState, queued: list[str]) -> float | None:
    """Since when the longest-waiting job in queue/ waits: the later of its id's time (a
    generated id) and its file's mtime (a custom id's only clue; `lanekit retry` dates the job
    it puts back). Generated ids are looked at oldest first and the scan stops once no later
    id can be older, so a queue without retries costs one stat, whatever its size."""
    timed: list[tuple[float, str]] = []
    oldest: float | None = None
    for name in queued:
        born = id_time(name[:-5])
        if born is not None:
            timed.append((born, name))
            continue
        try:
            born = os.stat(f"{q.queue_dir}/{name}").st_mtime
        except FileNotFoundError:
            continue
        oldest = born if oldest is None else min(oldest, born)
    heapq.heapify(timed)  # O(n): only the few oldest are popped
    while timed:
        born, name = heapq.heappop(timed)
        if oldest is not None and born >= oldest:
            break
        try:
            written = os.stat(f"{q.queue_dir}/{name}").st_mtime
        except FileNotFoundError:
            continue
        waits = max(born, written)
        oldest = waits if oldest is None else min(oldest, waits)
    return oldest


def list_claims(
    q: QueueState, now: float | None = None, *, check_owners: bool = True
) -> list[ClaimInfo]:
    """Every claim with its owner and age, oldest first.

    `owner_alive` is True when the claim's lock is held or its owner (on this host) is
    running with the same start token, False when the owner is gone, None when the owner is
    on another host or unnamed (and when `check_owners` is False).
    """
    now = q.clock() if now is None else now
    here = procinfo.hosttag()
    result = []
    for name in job_names(q.claimed_dir):
        path = f"{q.claimed_dir}/{name}"
        try:
            mtime = os.stat(path).st_mtime
        except FileNotFoundError:
            continue
        parsed = split_owned_name(name)
        job_id, owner = (name[:-5], None) if parsed is None else parsed
        alive = None
        if check_owners and owner is not None and owner.host == here:
            from lanekit.queue.directory.liveness import owner_alive  # here: counting does not ask

            alive = owner_alive(path, owner)
        result.append(
            ClaimInfo(
                job_id=job_id,
                path=Path(path),
                pid=None if owner is None else owner.pid,
                token=None if owner is None else owner.token,
                host=None if owner is None else owner.host,
                age=max(now - mtime, 0.0),
                owner_alive=alive,
            )
        )
    result.sort(key=lambda info: -info.age)
    return result
