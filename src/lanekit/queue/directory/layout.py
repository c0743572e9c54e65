"""The directory queue's layout: its directories, job ids, claim owners, and the one grammar
of its file names (`<id>.json`, `<id>.<owner>.json`, `<id>.<not-before>.json`, and the
running mark `claimed/.<id>.running`; the previous version's marks were symlinks to
`<owner>.<attempt>[/<lane>]`).

Every module that needs to know what a name in a queue directory means asks this one
(history, entry and the checks included); nobody else parses names.

The running mark (see `mark_name`) is how a claim creates no file: a claim is the rename into
claimed/<id>.<owner>.json (the owner, for liveness), then a hard link of that file at a name
fixed per id, then the attempt's `running` line appended to the job's record. link(2) never
replaces: a second copy of a running id collides with the first one's mark (EEXIST) and is
refused, exactly and without listing claimed/ (a listing can miss a name renamed while it
reads); its holder is found by inode only then. A link allocates no inode, where a symlink (the
previous version's mark, which carried the attempt) pays for one like any file creation. The
attempt cannot ride in the claimed file's name: it is known only once the record has been read,
and the record may be read only after the claim rename (read before it, a copy that succeeded in
between would look queued); a second rename to put it there would cost what the mark costs and
still leave the copies to a listing. The mark is created after the job's record was read, the
`running` line after the mark and before the job runs; both are undone by whoever settles the
claim (runner or recoverer, holding its flock), which appends the settling record and removes
the mark before moving the file. So a claim whose record does not end in its `running` line
never started. Claims left by earlier versions have a symlink mark counting the attempt, or no
mark and a `running` record: both are read.
"""

# Builtin imports only (through lanekit.queue.ids): a single `lanekit enqueue` checks its queue
# with these names (lanekit.queue.directory.safety), and its start-up is a benchmark figure;
# that is why Mark is a plain class with slots rather than a frozen dataclass.
from __future__ import annotations

from lanekit.queue.ids import Owner

SUBDIRS = ("tmp", "queue", "claimed", "done", "failed", "delayed", "records", "logs")
"""Every directory of a queue; check() refuses the queue unless all are usable."""
MOVED_THROUGH = ("tmp", "queue", "claimed", "delayed", "done", "failed", "records")
"""The directories jobs and records are renamed between: the probe rename visits each."""

PUBLISHED_INTO = ("queue", "delayed", "records")
"""Where a new file gets its name by a link from tmp/ (a job, a job waiting for its time, a
record: lanekit.system.fsops.publish_new): the probe links into each."""
CHECK_STAMP = ".queue-check"
"""The queue's own file (in its directory) keeping the verdict of the last probe that passed,
and what it depends on (lanekit.queue.directory.safety.check_root)."""

STATE_DIRS = {"queued": "queue", "running": "claimed", "succeeded": "done", "failed": "failed"}
"""The directory of the jobs in each state (JobState values; queued: queue/, though a retry
waiting out its backoff is in delayed/)."""
TMP_PREFIXES = (".probe-", ".rec.", ".job.", ".error.", ".cancel.", ".mark.")
"""Names lanekit gives its temp files in tmp/ (see QueueState.tmp_name, RecordStore.write,
check)."""


def queued_name(job_id: str) -> str:
    """queue/<id>.json (also the name in failed/ and a done/ bucket)."""
    return f"{job_id}.json"


def claimed_name(job_id: str, owner: str) -> str:
    """claimed/<id>.<owner>.json: the claim and its owner are one rename."""
    return f"{job_id}.{owner}.json"


OUTPUT_DIR = "logs/output"
"""Where a queue keeps its jobs' output files (inside logs/, which every queue has)."""


def output_name(job_id: str) -> str:
    """logs/output/<id>.log: the job's output, attempt by attempt (lanekit.run.joboutput)."""
    return f"{OUTPUT_DIR}/{job_id}.log"


def delayed_name(job_id: str, not_before: int) -> str:
    """delayed/<id>.<not-before epoch>.json: a retry waiting out its backoff."""
    return f"{job_id}.{not_before}.json"


def error_name(job_file: str) -> str:
    """failed/<name>.json -> failed/<name>.error: why the job beside it failed."""
    return job_file[:-5] + ".error"


def stem_id(name: str) -> str:
    """The id in claimed/ or delayed/ names (`<id>.<tail>.json`), where the tail is the owner
    or the not-before time; `<id>` itself when there is no tail."""
    stem = name[:-5]
    return stem.rpartition(".")[0] or stem


def has_id(name: str, job_id: str) -> bool:
    """Whether a claimed/ or delayed/ name `<id>.<tail>.json` is one of `job_id`."""
    return name.endswith(".json") and name[:-5].rpartition(".")[0] == job_id


def delayed_until(name: str) -> tuple[str, int] | None:
    """delayed/<id>.<not-before>.json -> (id, not-before epoch); None for any other name."""
    if name[:1] == "." or not name.endswith(".json"):
        return None
    job_id, dot, not_before = name[:-5].rpartition(".")
    if not dot or not job_id or not not_before.isdigit():
        return None
    return job_id, int(not_before)


MARK_SUFFIX = ".running"


def mark_name(job_id: str) -> str:
    """claimed/.<id>.running: the running mark of `job_id` (hidden from every job listing,
    like a watcher's status; see the module docstring)."""
    return f".{job_id}{MARK_SUFFIX}"


def mark_text(owner: str, attempt: int, lane: str | None) -> str:
    """The previous version's mark target: `<owner>.<attempt>`, then `/<lane>` for a claim made
    by a lane (lane names have no `/`). Still read (Mark.parse), no longer written."""
    return f"{owner}.{attempt}" if lane is None else f"{owner}.{attempt}/{lane}"


class Mark:
    """What a previous version's running mark (a symlink) says: who holds the claim, which
    attempt it is, for which lane. Immutable, compared and hashed by value."""

    __slots__ = ("_attempt", "_lane", "_owner")

    def __init__(self, owner: str, attempt: int, lane: str | None = None) -> None:
        self._owner = owner
        self._attempt = attempt
        self._lane = lane

    @property
    def owner(self) -> str:
        """The claim's owner tag (lanekit.queue.ids.Owner)."""
        return self._owner

    @property
    def attempt(self) -> int:
        """Which attempt of the job the claim is."""
        return self._attempt

    @property
    def lane(self) -> str | None:
        """The lane that made the claim (None: made by hand)."""
        return self._lane

    def _key(self) -> tuple[str, int, str | None]:
        return (self._owner, self._attempt, self._lane)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mark) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Mark(owner={self._owner!r}, attempt={self._attempt!r}, lane={self._lane!r})"

    @classmethod
    def parse(cls, text: str) -> Mark | None:
        """The mark spelled by `text`, or None if it is not one."""
        head, slash, lane = text.partition("/")
        owner, dot, attempt = head.rpartition(".")
        if not dot or not attempt.isdigit() or Owner.parse(owner) is None:
            return None
        if slash and not lane:
            return None
        return cls(owner, int(attempt), lane or None)

    def claim_name(self, job_id: str) -> str:
        """The name in claimed/ of the claim this mark belongs to."""
        return claimed_name(job_id, self.owner)


def mark_id(name: str) -> str | None:
    """The job id of a running mark's name in claimed/ (`.<id>.running`), else None."""
    if name[:1] != "." or not name.endswith(MARK_SUFFIX) or len(name) <= 1 + len(MARK_SUFFIX):
        return None
    return name[1 : -len(MARK_SUFFIX)]
