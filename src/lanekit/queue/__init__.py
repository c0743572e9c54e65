"""THE QUEUE SEAM: what a lane drains, whatever keeps it (design.md section 1).

`open_queue(location)` is the one way in: it picks the backend from the queue's location and
hands out a JobQueue (protocol.py). Nothing here is imported before it is asked for, so the
empty run's fast path (lanekit.run.entry) pays for none of it.

    protocol.py   JobQueue and JobClaimer: what runner, history, status, doctor, watch and
                  the CLI may ask of a queue
    model.py      the values moving jobs returns (Claim, Verdict, Settled, Moved, ...)
    observed.py   what observing a queue returns (ClaimState, ClaimView, JobLocation);
    counts.py     how many jobs are where (QueueCounts), what status shows
    records.py    a job's status record and its states (JobState)
    ids.py        job ids and claim owners; payload.py what a job is; policy.py retries
    directory/    the directory backend (design.md section 3): a queue is a directory
    memory/       the in-memory backend (`memory:NAME`), for unit tests
    postgres/     the PostgreSQL backend (`postgres:queue=NAME&...`, see its location.py):
                  several machines drain one queue
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from os import PathLike
    from pathlib import Path
    from typing import Any

    from lanekit.errors import QueueError
    from lanekit.queue.protocol import JobQueue
    from lanekit.queue.records import JobState

MEMORY = "memory:"
"""The scheme of an in-memory queue's location (`memory:NAME`)."""
POSTGRES = "postgres:"
"""The scheme of a PostgreSQL queue's location (lanekit.queue.postgres.location)."""


def open_queue(
    location: str | PathLike[str],
    *,
    durable: bool = True,
    clock: Callable[[], float] | None = None,
    max_job_bytes: int | None = None,
) -> JobQueue:
    """The queue at `location` (a queue spec's `dir`): `memory:NAME` is the process's in-memory
    queue of that name, `postgres:...` a queue on a PostgreSQL server, anything else a queue
    directory. `durable=False` skips fsyncs;
    `clock` is the epoch seconds it records by (default lanekit.state.clock.epoch);
    `max_job_bytes` its largest job (its `[queues.NAME] max_job_bytes`)."""
    from lanekit.state.clock import epoch
    from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

    clock = epoch if clock is None else clock
    limit = DEFAULT_MAX_JOB_BYTES if max_job_bytes is None else max_job_bytes
    text = str(location)
    if text.startswith(MEMORY):
        from lanekit.queue import memory

        return memory.named(text, clock=clock, max_job_bytes=limit)
    if text.startswith(POSTGRES):
        from lanekit.queue.postgres.backend import open_location

        return open_location(text, clock=clock, max_job_bytes=limit)
    from pathlib import Path

    from lanekit.queue.directory.backend import Queue

    return Queue(Path(location), durable=durable, clock=clock, max_job_bytes=limit)


def enqueue_into(
    location: str | PathLike[str],
    payload: Mapping[str, Any] | bytes | str,
    job_id: str | None = None,
    *,
    durable: bool = True,
    clock: Callable[[], float] | None = None,
    max_job_bytes: int | None = None,
    not_before: float | None = None,
) -> str:
    """`open_queue(location, ...).enqueue(payload, job_id, not_before=...)`, for one job: a
    queue directory adds it without a Queue object (lanekit.queue.directory.enqueue.add, the
    function Queue.enqueue runs; builtin imports only, for a single `lanekit enqueue`'s
    start-up: lanekit.jobs.add); any other backend is opened and asked."""
    directory = directory_of(location)
    if directory is None:
        return open_queue(
            location, durable=durable, clock=clock, max_job_bytes=max_job_bytes
        ).enqueue(payload, job_id, not_before=not_before)
    import os

    from lanekit.queue.directory.enqueue import add
    from lanekit.state.clock import epoch
    from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

    return add(
        os.path.abspath(directory),  # noqa: PTH100 - pathlib costs the start-up
        payload,
        job_id,
        durable=durable,
        clock=epoch if clock is None else clock,
        max_job_bytes=DEFAULT_MAX_JOB_BYTES if max_job_bytes is None else max_job_bytes,
        not_before=not_before,
    )


def directory_of(location: str | PathLike[str]) -> str | None:
    """The directory a queue at `location` keeps on this machine (its logs/ holds the lane
    logs and lane locks by default), or None for a queue kept elsewhere (memory, a server):
    its lanes then keep their locks beside their logs (lanekit.run.lanelock)."""
    text = str(location)
    return None if text.startswith((MEMORY, POSTGRES)) else text


def location_problem(location: str | PathLike[str]) -> QueueError | None:
    """Why a queue cannot live at `location` (a directory on a network or sync-engine
    volume), or None; asks nothing of the disk beyond reading it (`validate`, `apply`)."""
    if directory_of(location) is None:
        return None
    from lanekit.queue.directory.safety import location_error

    return location_error(location)


def places(location: str | PathLike[str]) -> list[Path]:
    """The directories a queue at `location` keeps on this machine, its own first, for the
    checks of volume, ownership and mode (lanekit.doctor); none for a queue kept elsewhere."""
    directory = directory_of(location)
    if directory is None:
        return []
    from pathlib import Path

    from lanekit.queue.directory.layout import SUBDIRS

    return [Path(directory), *(Path(directory, name) for name in SUBDIRS)]


def job_places(location: str | PathLike[str]) -> list[Path]:
    """Of those, where it keeps jobs and records (not the lanes' logs/): a lane's log must
    not be inside one (lanes.toml validation)."""
    directory = directory_of(location)
    if directory is None:
        return []
    from pathlib import Path

    from lanekit.queue.directory.layout import MOVED_THROUGH

    return [Path(directory, name) for name in MOVED_THROUGH]


def own_files(location: str | PathLike[str]) -> list[Path]:
    """The files a queue at `location` keeps in its directory itself, beside its directories
    (the stamp of its last passed check: lanekit.queue.directory.safety.check_root), which
    `uninstall --delete-queues` removes with them; none for a queue kept elsewhere."""
    directory = directory_of(location)
    if directory is None:
        return []
    from pathlib import Path

    from lanekit.queue.directory.layout import CHECK_STAMP

    return [Path(directory, CHECK_STAMP)]


def holding(location: str | PathLike[str], state: JobState) -> str:
    """Where a queue at `location` keeps the jobs in `state`, for messages (a directory of
    it: queue/ for queued, though delayed/ holds some too; `memory:NAME/<state>`; `postgres
    queue NAME (<state>)`)."""
    directory = directory_of(location)
    if directory is None and str(location).startswith(POSTGRES):
        from lanekit.queue.postgres.location import parse

        return f"postgres queue {parse(str(location)).queue} ({state})"
    if directory is None:
        return f"{location}/{state}"
    from lanekit.queue.directory.layout import STATE_DIRS

    return f"{directory}/{STATE_DIRS[state]}"


def ready_dir(location: str | PathLike[str]) -> Path | None:
    """The directory where a queue at `location` keeps the jobs ready to run, which a service
    manager can watch to start a lane as work arrives (launchd's QueueDirectories); None for
    a backend that keeps them in no directory."""
    directory = directory_of(location)
    if directory is None:
        return None
    from pathlib import Path

    from lanekit.queue.directory.layout import STATE_DIRS
    from lanekit.queue.records import JobState

    return Path(directory, STATE_DIRS[JobState.QUEUED])


def nothing_queued(location: str | PathLike[str]) -> bool:
    """True when the queue holds nothing to run, retry or recover, from a peek that loads
    no queue machinery (the empty run's fast path, lanekit.run.entry). Any doubt says False:
    the full run asks the queue itself (always, for a backend that cannot peek so cheaply)."""
    directory = directory_of(location)
    if directory is None:
        return False
    from lanekit.queue.directory.peek import nothing_queued as peek

    return peek(directory)


def job_ids(location: str | PathLike[str], states: tuple[str, ...], prefix: str = "") -> list[str]:
    """The ids starting with `prefix` of the queue's jobs in `states` ("queued", "delayed",
    "running", "failed", or "any": every job it has a file or a record of), from a listing
    that loads no queue machinery (shell completion of job ids: lanekit.jobs.complete). None
    for a queue kept elsewhere than a directory (completion offers nothing there)."""
    directory = directory_of(location)
    if directory is None:
        return []
    from lanekit.queue.directory.peek import job_ids as listed

    return listed(directory, states, prefix)


def purgeable(location: str | PathLike[str], now: float, keep_done: float) -> bool:
    """True when the queue may hold finished jobs past `keep_done`, or failed ones: the daily
    purge is worth loading the queue for (a peek, as for nothing_queued). A postgres queue
    always may (its runs purge it once a day on each machine); a memory queue never is."""
    if str(location).startswith(POSTGRES):
        return True  # a server cannot be peeked at: its purge is one statement, once a day
    directory = directory_of(location)
    if directory is None:
        return False
    from lanekit.queue.directory.peek import purgeable as peek

    return peek(directory, now, keep_done)
