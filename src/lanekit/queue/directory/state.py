"""What every part of the directory queue shares: where its directories are, its record
store, durability, the retry backoff, and today's done/ bucket.

The modules of this package (claim, settle, recover, enqueue, observe, verbs, purge) are
functions of a QueueState; lanekit.queue.directory.backend.Queue is the JobQueue that holds one.
"""

# ruff: noqa: PTH100, PTH102
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

from lanekit.queue.directory.fileio import listdir
from lanekit.queue.policy import DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX, backoff
from lanekit.state.clock import epoch
from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.recordstore import OpenRecord, RecordStore


class QueueState:
    """One queue directory's paths (as Path for callers, as str for the claim path), its
    record store and its policies. See lanekit.queue.directory.backend.Queue for the arguments."""

    def __init__(
        self,
        dir: Path,
        *,
        durable: bool = True,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        clock: Callable[[], float] = epoch,
        max_job_bytes: int = DEFAULT_MAX_JOB_BYTES,
    ) -> None:
        self.dir = Path(os.path.abspath(dir))
        self.clock = clock
        """Epoch seconds for ids, records, claim ages, retries and retention: this process's
        clock by default (lanekit.state.clock: the emulated domain's time in a job it started).
        Only tmp/'s clean-up goes by the real time (lanekit.queue.directory.recover.recover)."""
        self.durable = durable
        self.max_job_bytes = max_job_bytes
        """The largest job file: enqueue refuses a larger payload, a claim sends a larger file
        to failed/ by its fstat size, unread (the queue's `max_job_bytes`)."""
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.tmp = self.dir / "tmp"
        self.queue = self.dir / "queue"
        self.claimed = self.dir / "claimed"
        self.done = self.dir / "done"
        self.failed = self.dir / "failed"
        self.delayed = self.dir / "delayed"
        self.records = self.dir / "records"
        self.logs = self.dir / "logs"
        root = str(self.dir)
        self.root = root
        self.tmp_dir = root + "/tmp"
        self.queue_dir = root + "/queue"
        self.claimed_dir = root + "/claimed"
        self.done_root = root + "/done"
        self.failed_dir = root + "/failed"
        self.delayed_dir = root + "/delayed"
        self._day = ""
        self.day_dir = self.done
        """Today's bucket as a Path, once `done_bucket` set it (complete() returns paths
        inside it: a child of it costs less than parsing a new Path on every job)."""
        self._day_start = float("-inf")
        """Epoch second at which the UTC day of `_day` (today's done/ bucket) began."""

    def __repr__(self) -> str:
        return f"Queue({self.root!r}, durable={self.durable})"

    @functools.cached_property
    def store(self) -> RecordStore:
        """The queue's records/ (lanekit.queue.directory.recordstore), made on first use: counting
        a queue
        (`lanekit status`, benchmark (i)) reads no record, so it does not import them. Cached
        in the instance, so the claim path pays the lookup of a plain attribute."""
        from lanekit.queue.directory.recordstore import RecordStore

        return RecordStore(self.records, durable=self.durable, tmp_dir=self.tmp)

    @functools.cached_property
    def _tmp_suffix(self) -> Callable[[], str]:
        """lanekit.system.fsops.tmp_suffix, imported on first use (see `store`) and kept here: an
        import statement per name would cost each enqueue more than making the name."""
        from lanekit.system.fsops import tmp_suffix

        return tmp_suffix

    def tmp_name(self, kind: str) -> str:
        """A fresh hidden name in tmp/ (ids are left out: a long one would not fit)."""
        return f"{self.tmp_dir}/.{kind}.{self._tmp_suffix()}"

    def backoff(self, attempt: int) -> float:
        """Seconds a job waits in delayed/ after failing attempt number `attempt`."""
        return backoff(self.backoff_base, self.backoff_max, attempt)

    def done_days(self) -> list[str]:
        """The day buckets in done/, oldest first."""
        return sorted(
            name for name in listdir(self.done_root) if name[0] != "." and name[:1].isdigit()
        )

    def day_path(self, now: float) -> str:
        """done/<UTC day of `now`> (not created)."""
        return f"{self.done_root}/{time.strftime('%Y-%m-%d', time.gmtime(now))}"

    def done_bucket(self, now: float) -> str:
        """Today's done/ bucket, created on first use (once per day and process)."""
        if self._day_start <= now < self._day_start + 86400:
            return self._day
        directory = self.day_path(now)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        self._day = directory
        self.day_dir = Path(directory)
        self._day_start = now - now % 86400  # UTC days are 86400 s long in epoch time
        return directory


class ClaimLock:
    """The open claimed file whose flock marks the owner as alive (released once, idempotently),
    and the job's record, open since the claim read it (`record`: its settle appends through
    it, RecordStore.settle; None once closed, or when the claim has none open).

    The flock belongs to the open file description, not to the process or the name: every
    process that inherits the descriptor holds it too, and renames do not affect it. The
    record's descriptor is close-on-exec and never given to the job.
    """

    __slots__ = ("fd", "record")

    def __init__(self, fd: int, record: OpenRecord | None = None) -> None:
        self.fd = fd
        self.record = record

    @property
    def held(self) -> bool:
        """False once the claim was settled."""
        return self.fd >= 0

    def release(self) -> None:
        """Close the record, then the file (dropping the flock); later calls do nothing."""
        record, self.record = self.record, None
        if record is not None:
            record.close()
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
