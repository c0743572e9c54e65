"""The directory queue (design.md section 3): exactly-once claims by one atomic rename.

Layout under the queue directory, all on one local filesystem:

    tmp/      writers build files here, then rename them into place
    queue/    <id>.json, ready to run; generated ids start with the UTC time in ns (sort = age)
    claimed/  <id>.<owner>.json, owner = <hosttag>-<pid>-<start token>: claim and owner are one
              rename, and the owner holds a flock on the file while the job runs
    delayed/  <id>.<not-before epoch>.json, retries waiting out their backoff
    done/     <YYYY-MM-DD>/<id>.json (UTC day buckets, so no directory grows without bound)
    failed/   <id>.json plus <id>.error (why)
    records/  <id>.json status records (lanekit.records), the re-execution guard
    logs/     lane logs (written by the runner)

Every move is a no-replace rename (lanekit.fsops): a collision is an error, never an overwrite.
In done/ and failed/ a second copy of an id keeps its claimed name (<id>.<owner>.json) next to
the first; in queue/ and delayed/ it goes to failed/ as a duplicate. No job file is deleted.

Producers in any language can enqueue without lanekit: write tmp/<anything>, then rename it to
queue/<id>.json. The claimer creates the record of such a job when it claims it.

The claim path uses `os` with `str` paths and imports nothing heavy; `lanekit run` on an empty
queue is a benchmark figure.
"""

# ruff: noqa: PTH100, PTH102, PTH103, PTH106, PTH108, PTH110, PTH115, PTH116, PTH119, PTH120, PTH208
# (str paths and os.* on purpose: this is the claim path, see the docstring)
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from lanekit import fsops, procinfo, watcher
from lanekit.errors import QueueError, UsageError
from lanekit.owned import make_private_dirs
from lanekit.quoting import cmdline
from lanekit.records import (
    JobState,
    NestedTooDeepError,
    Record,
    RecordError,
    RecordStore,
    iso_utc,
    strict_loads,
    tmp_suffix,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import Any

SUBDIRS = ("tmp", "queue", "claimed", "done", "failed", "delayed", "records", "logs")
"""Every directory of a queue; check() refuses the queue unless all are usable."""
_MOVED_THROUGH = ("tmp", "queue", "claimed", "delayed", "done", "failed", "records")
"""The directories jobs and records are renamed between: the probe rename visits each."""

MAX_ID_LENGTH = 128
_ID_CHARS_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_ID_CHARS = frozenset(_ID_CHARS_TEXT)
_ID_HINT = (
    "ids become file names: use letters, digits, '.', '_' and '-' (at most 128), "
    "not starting with '.' and not ending in '.<8 hex>-<digits>-<digits>'"
)

DEFAULT_BACKOFF_BASE = 30.0
DEFAULT_BACKOFF_MAX = 3600.0

_MISS_LIMIT = 4
"""Consecutive lost races after which a claimer jumps to a random place in its listing."""
_SPREAD_PER_CLAIM = 32
"""With claims in progress, a claimer starts at a random offset among the oldest 32 x (claims in
progress + 1) jobs (at least 64), so runners that drain together spread apart. With none it is
alone and starts at the oldest job: a lone lane never leaves old jobs waiting behind new ones."""
_SPREAD_MIN = 64
_HOP = 64
"""After a lost race, jump ahead by up to 64 x 2^misses: out of the winner's trail, not into it."""
_FIRST_WINDOW = 1024
"""A claimer's first listing keeps only the oldest this many names (one run usually takes a few
jobs: selecting them is O(n), sorting 100k names would cost more than listing them)."""

_NO_EXCL_ERRNOS = frozenset({errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM})
"""What a no-replace rename fails with where the volume has neither RENAME_EXCL nor links."""
_TMP_PREFIXES = (".probe-", ".rec.", ".job.", ".error.")
"""Names lanekit gives its temp files in tmp/ (see _tmp_name, RecordStore.write, check)."""
_TMP_MAX_AGE = 3600.0
_checked_roots: set[str] = set()
"""Queue directories that passed check() in this process (the runner checks on every run)."""


class JobExistsError(UsageError):
    """An id given to enqueue is already in the queue (or already succeeded)."""


class RecordNotWrittenError(QueueError):
    """A settled job's final record could not be written; its file was moved all the same.

    Raised by complete() and fail() (and release() out of attempts) after the move: the job is
    finished, `moved_to` is where it went (done/ or failed/), `state` what the record should
    have said (SUCCEEDED or FAILED); the record itself may still say `running`.
    """

    def __init__(self, message: str, hint: str, *, state: JobState, moved_to: Path) -> None:
        super().__init__(message, hint)
        self.state = state
        self.moved_to = moved_to


def validate_job_id(job_id: str) -> str:
    """Return `job_id` if it is a safe file name, else raise UsageError saying why.

    Ids become file names in several directories, so this is a security boundary: no path
    separators, no `..`, no hidden files, no NUL, nothing longer than 128 characters.
    """
    problem = _id_problem(job_id)
    if problem is not None:
        raise UsageError(f"job id {job_id!r} {problem}", _ID_HINT)
    return job_id


def _id_problem(job_id: str) -> str | None:
    if 0 < len(job_id) <= MAX_ID_LENGTH and job_id[0] != "." and not job_id.strip(_ID_CHARS_TEXT):
        # The common case, in one pass: stripping the id's characters leaves nothing. Generated
        # ids have no dot, so the owner-shape test below costs them nothing.
        return None if "." not in job_id else _owner_tail_problem(job_id)
    if not job_id:
        return "is empty"
    if len(job_id) > MAX_ID_LENGTH:
        return f"is {len(job_id)} characters long (at most {MAX_ID_LENGTH})"
    if job_id[0] == ".":
        return "starts with '.'"
    if not set(job_id) <= _ID_CHARS:
        bad = next(char for char in job_id if char not in _ID_CHARS)
        return f"contains {bad!r}"
    return None


def _owner_tail_problem(job_id: str) -> str | None:
    """done/ and failed/ hold `<id>.json` and, for a second copy, `<id>.<owner>.json`: an id
    whose last dot-part has an owner's shape would read as another id plus an owner."""
    tail = job_id.rpartition(".")[2]
    if Owner.parse(tail) is None:
        return None
    return (
        f"ends in '.{tail}', the shape lanekit gives a claim's owner "
        "(<8 hex digits>-<pid>-<start token>) in file names"
    )


def new_job_id(now_ns: int | None = None) -> str:
    """`<UTC ns, 20 digits>-<pid, 7 digits>-<8 random hex>`: unique, and sorts by age."""
    ns = time.time_ns() if now_ns is None else now_ns
    return f"{ns:020d}-{os.getpid():07d}-{os.urandom(4).hex()}"


def _id_time(job_id: str) -> float | None:
    """The enqueue time encoded in a generated id (epoch seconds), or None for a custom id."""
    if len(job_id) > 20 and job_id[20] == "-" and job_id[:20].isdigit():
        return int(job_id[:20]) / 1e9
    return None


@dataclass(frozen=True, slots=True)
class Owner:
    """Who holds a claim: `<hosttag>-<pid>-<start token>`, the middle of a claimed file's name."""

    host: str
    pid: int
    token: str

    def __str__(self) -> str:
        return f"{self.host}-{self.pid}-{self.token}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        """The owner spelled by `text`, or None if it is not one."""
        parts = text.split("-")
        if len(parts) != 3:
            return None
        host, pid, token = parts
        if len(host) != 8 or not all(c in "0123456789abcdef" for c in host):
            return None
        if not (pid.isdigit() and token.isdigit()):
            return None
        return cls(host, int(pid), token)


_own: tuple[int, str] | None = None


def own_owner() -> str:
    """This process's owner tag (recomputed after fork: the child is a different owner)."""
    global _own  # noqa: PLW0603 - a per-process constant, computed lazily
    pid = os.getpid()
    if _own is None or _own[0] != pid:
        _own = (pid, f"{procinfo.hosttag()}-{pid}-{procinfo.self_token()}")
    return _own[1]


def split_owned_name(name: str) -> tuple[str, Owner] | None:
    """`<id>.<owner>.json` -> (id, owner); None if the name carries no owner.

    Ids may contain dots, so the owner is taken from the right.
    """
    if not name.endswith(".json"):
        return None
    job_id, dot, owner_text = name[:-5].rpartition(".")
    if not dot or not job_id:
        return None
    owner = Owner.parse(owner_text)
    return None if owner is None else (job_id, owner)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def payload_problem(data: bytes) -> str | None:
    """Why `data` is not a job payload (a JSON object), or None when it is one."""
    try:
        value = strict_loads(data, values=False)
    except NestedTooDeepError:
        return "valid JSON nested too deeply for lanekit to check (arrays or objects in each other)"
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    if not isinstance(value, dict):
        return f"a JSON {_json_kind(value)}, not an object"
    return None


def _payload_bytes(payload: Mapping[str, Any] | bytes | str) -> bytes:
    if isinstance(payload, bytes | str):
        data = payload.encode("utf-8") if isinstance(payload, str) else payload
        problem = payload_problem(data)
        if problem is not None:
            raise UsageError(
                f"job payload is {problem}", 'a job is one JSON object, e.g. {"file": "a.txt"}'
            )
        return data
    import json

    try:
        return json.dumps(dict(payload), allow_nan=False).encode("utf-8") + b"\n"
    except RecursionError:
        raise UsageError(
            "job payload is nested too deeply to be written as JSON",
            "flatten the payload: a job is one JSON object of modest depth",
        ) from None
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"job payload cannot be written as JSON ({exc})",
            "use only str, int, float, bool, None, lists and dicts with str keys",
        ) from None


class ClaimLock:
    """The open claimed file whose flock marks the owner as alive (released once, idempotently).

    The flock belongs to the open file description, not to the process or the name: every
    process that inherits the descriptor holds it too, and renames do not affect it.
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @property
    def held(self) -> bool:
        """False once the claim was settled."""
        return self.fd >= 0

    def release(self) -> None:
        """Close the file (dropping the flock); later calls do nothing."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class Claim:
    """A job this process owns: claimed/<id>.<owner>.json, flocked until settled."""

    job_id: str
    path: Path
    """The claimed file; the job's command gets this path."""
    attempt: int
    """1 on the first run, counting every start (a crash mid-run counts too)."""
    owner: str
    record: Record
    """The `running` record written at claim."""
    lock: ClaimLock = field(repr=False, compare=False)
    file: str = field(default="", repr=False, compare=False)
    """`path` as a str (what the queue renames; empty: use str(path))."""

    @property
    def held(self) -> bool:
        """True until complete/fail/release settled the claim."""
        return self.lock.held

    @property
    def lock_fd(self) -> int:
        """The descriptor holding the claim's flock (-1 once settled); not inheritable.

        Give it to the job's process (`subprocess.Popen(..., pass_fds=(claim.lock_fd,))` makes
        it inheritable in the child only) and the claim stays locked for as long as the job
        runs, even if this process is SIGKILLed: recover() takes only claims whose lock nobody
        holds. A process that keeps it after the claim was settled (a daemon the job started)
        keeps the job file locked; claim() then passes over that file instead of waiting."""
        return self.lock.fd


class DropReason(StrEnum):
    """Why a claimed file was settled without running (see Dropped)."""

    CORRUPT = "corrupt"
    """Not JSON, or not a JSON object."""
    INVALID_ID = "invalid-id"
    """A producer named the file with an id lanekit would have refused."""
    RECORD_UNREADABLE = "record-unreadable"
    """The record cannot be trusted, so the guard cannot say whether the job already ran."""
    ALREADY_SUCCEEDED = "already-succeeded"
    """The re-execution guard: the record says succeeded."""
    DUPLICATE = "duplicate"
    """Another copy of the same id is running right now."""
    UNREADABLE = "unreadable"
    """Not a regular file (a symlink, directory, FIFO...), or one lanekit may not read: it can
    never run, so it goes to failed/ instead of blocking the lane."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A job claim() took out of queue/ but did not hand out; reported through `on_drop`."""

    job_id: str
    reason: DropReason
    detail: str
    destination: Path
    """Where the file went: done/ for already-succeeded, failed/ (+ .error) otherwise."""

    @property
    def state(self) -> JobState:
        """SUCCEEDED for already-succeeded (log `skipped`), FAILED otherwise (log `failed`)."""
        if self.reason is DropReason.ALREADY_SUCCEEDED:
            return JobState.SUCCEEDED
        return JobState.FAILED


class RecoverReason(StrEnum):
    """Why recover() took a claim away from its owner."""

    OWNER_DEAD = "owner-dead"
    PID_REUSED = "pid-reused"
    STALE = "stale"
    """Owner on another host (or unnamed) and the claim is older than stale_after."""


@dataclass(frozen=True, slots=True)
class Recovered:
    """One claim recover() moved (or, with dry_run, would move)."""

    job_id: str
    reason: RecoverReason
    destination: Path
    state: JobState
    """QUEUED (back in queue/), FAILED (out of attempts, or its record already said failed) or
    SUCCEEDED (its record already said so). A record that already said so means the owner died
    between recording the outcome and moving the file; the move is finished, the job not rerun."""
    owner: str
    attempts: int
    exit: int | None = None
    """The exit status the job's watcher recorded: the job finished after its owner died and
    was settled by it (None: it did not finish, and goes back to run again)."""


def location_error(root: str | os.PathLike[str]) -> QueueError | None:
    """The refusal for a queue directory inside a sync engine's folder or on a network
    filesystem, where rename is not atomic or not local; None when the place is fine. Works
    before the directory exists (it judges the nearest existing parent), so `validate` and
    `apply` refuse the same queues before anything is created (lanekit.preflight)."""
    root = os.fspath(root)
    real = os.path.realpath(root)
    where = fsops.sync_folder(real)
    if where is not None:
        return QueueError(
            f"{root}: inside {where}; a sync engine moves and re-creates files behind the "
            "queue's back, so claims are not atomic there",
            "put the queue in a local folder outside any synced folder",
        )
    existing = real
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    problem = fsops.mount_problem(existing)
    if problem is not None:
        return QueueError(
            f"{root}: {problem}; rename there is not atomic or not local",
            "put the queue on a local disk",
        )
    return None


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """How many jobs are where, for status and doctor."""

    queued: int
    delayed: int
    claimed: int
    done: int
    failed: int
    oldest_queued_age: float | None
    """Seconds since the oldest job in queue/ was enqueued (None when queue/ is empty)."""
    oldest_claim_age: float | None
    """Seconds since the oldest current claim was taken (None when nothing is claimed)."""


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """One file in claimed/ and what is known about its owner."""

    job_id: str
    path: Path
    pid: int | None
    token: str | None
    host: str | None
    age: float
    """Seconds since the claim was taken."""
    owner_alive: bool | None
    """True/False for owners on this host; None when it cannot be checked (another host)."""


@dataclass(frozen=True, slots=True)
class JobLocation:
    """Where a job's file is, and the state that follows from the directory."""

    job_id: str
    state: JobState
    path: Path


@dataclass(frozen=True, slots=True)
class Moved:
    """One job an operator verb (retry, requeue, cancel) moved, or with dry_run would move."""

    job_id: str
    source: Path
    destination: Path
    state: JobState
    """The job's state once moved: QUEUED (retry, requeue) or FAILED (cancel)."""


@dataclass(frozen=True, slots=True)
class Purged:
    """What `Queue.purge` removed (or, with dry_run, would remove)."""

    done: tuple[str, ...]
    """Ids of finished jobs removed from done/."""
    failed: tuple[str, ...]
    """Ids of failed jobs removed from failed/."""
    guard_expired: tuple[str, ...]
    """Guard index files (records/.guard/<day>.ids) that expired."""
    dry_run: bool = False


def _owned_id(name: str) -> str:
    """The job id of `<id>.json` or of a second copy kept as `<id>.<owner>.json`."""
    parsed = split_owned_name(name)
    return name[:-5] if parsed is None else parsed[0]


CANCELLED = "cancelled"
"""The reason `lanekit cancel` records (the record's error and the job's .error)."""
_VERB_HINT = "`lanekit job` shows where the job is now"


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text("utf-8", "replace")
    except FileNotFoundError:
        return None


class Queue:
    """A directory queue (see the module docstring).

    `durable=False` skips fsyncs (a power loss may then lose recent jobs and records; a process
    crash never does). Retries wait `backoff_base * 2**(attempt-1)` seconds in delayed/, capped
    at `backoff_max`; a base of 0 sends them straight back to queue/.
    """

    def __init__(
        self,
        dir: Path,
        *,
        durable: bool = True,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
    ) -> None:
        self.dir = Path(os.path.abspath(dir))
        self.durable = durable
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
        self.store = RecordStore(self.records, durable=durable, tmp_dir=self.tmp)
        root = str(self.dir)
        self._root = root
        self._tmp = root + "/tmp"
        self._queue = root + "/queue"
        self._claimed = root + "/claimed"
        self._done = root + "/done"
        self._failed = root + "/failed"
        self._delayed = root + "/delayed"
        self._day = ""
        self._day_dir = self.done
        """`_day` as a Path, once `_done_dir` set it (complete() returns paths inside it)."""
        self._day_start = float("-inf")
        """Epoch second at which the UTC day of `_day` (today's done/ bucket) began."""

    def __repr__(self) -> str:
        return f"Queue({self._root!r}, durable={self.durable})"

    # -- setup and safety -------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the directories that are missing (mode 0700 whatever the umask, parents
        included), then check() them all."""
        try:
            make_private_dirs(self._root)
            for name in SUBDIRS:
                make_private_dirs(f"{self._root}/{name}", parents=False)
        except OSError as exc:
            raise QueueError(
                f"{exc.filename or self._root}: cannot create the queue directory ({exc.strerror})",
                "check that the parent directory exists and is writable",
            ) from None
        _checked_roots.discard(self._root)
        self.check()

    def check(self) -> None:
        """Refuse (QueueError, exit 69) a queue whose directories could break exactly-once.

        All directories must exist, be real directories (not symlinks), belong to us and not be
        writable by group or others, sit on one local filesystem (same st_dev, and a probe file
        renamed through each of them), and not be inside a network or sync-engine folder.
        A queue that passed is not checked again in the same process.
        """
        if self._root in _checked_roots:
            return
        root = self._root
        try:
            root_stat = os.stat(root)
        except FileNotFoundError:
            raise QueueError(
                f"{root}: queue directory does not exist",
                "create it with `lanekit apply` (it creates the queue directories), "
                "or fix the queue's dir in lanes.toml",
            ) from None
        except OSError as exc:
            raise QueueError(
                f"{root}: queue directory is unusable ({exc.strerror})",
                "check its permissions",
            ) from None
        if not stat.S_ISDIR(root_stat.st_mode):
            raise QueueError(f"{root}: not a directory", "point the queue's dir at a directory")
        _check_access(root, root_stat)
        refusal = location_error(root)
        if refusal is not None:
            raise refusal
        for name in SUBDIRS:
            path = f"{root}/{name}"
            try:
                sub = os.lstat(path)
            except FileNotFoundError:
                raise QueueError(
                    f"{path}: queue directory is missing",
                    "create the queue directories with `lanekit apply` (or `Queue.ensure()`)",
                ) from None
            if stat.S_ISLNK(sub.st_mode):
                target = os.readlink(path)
                try:
                    elsewhere = os.stat(path).st_dev != root_stat.st_dev
                except OSError:
                    elsewhere = False
                why = (
                    f"on a different filesystem from {root}; a rename between them is a copy, "
                    "not an atomic move"
                    if elsewhere
                    else f"queue directories must be real directories inside {root}"
                )
                raise QueueError(
                    f"{path}: is a symlink to {target}, {why}",
                    "replace the symlink with a directory: "
                    f"{cmdline('rm', path)} && {cmdline('mkdir', '-m', '700', path)}",
                )
            if not stat.S_ISDIR(sub.st_mode):
                raise QueueError(
                    f"{path}: not a directory", f"move it away and create a directory: {path}"
                )
            _check_access(path, sub)
            if sub.st_dev != root_stat.st_dev:
                raise QueueError(
                    f"{path}: on a different filesystem from {root}; a rename between them is "
                    "a copy, not an atomic move",
                    "keep every queue directory on the queue's own filesystem (no mounts inside)",
                )
        self._probe_renames()
        _checked_roots.add(root)

    def _probe_renames(self) -> None:
        """Rename a probe file through every directory: catches bind mounts st_dev cannot see."""
        name = f".probe-{os.getpid()}-{os.urandom(4).hex()}"
        here = f"{self._tmp}/{name}"
        try:
            fsops.write_new(here, b"", durable=False)
        except OSError as exc:
            raise QueueError(
                f"{self._tmp}: cannot create a file ({exc.strerror})",
                f"check that {self._tmp} is writable",
            ) from None
        try:
            for target in (*_MOVED_THROUGH[1:], "tmp"):
                there = f"{self._root}/{target}/{name}"
                try:
                    # The rename claims rely on (no-replace), not plain rename(2): exFAT/FAT
                    # volumes pass a plain rename but have neither RENAME_EXCL nor hard links,
                    # so every claim would fail later with a misleading error.
                    fsops.rename_noreplace(here, there)
                except OSError as exc:
                    if exc.errno in _NO_EXCL_ERRNOS:
                        raise QueueError(
                            f"{self._root}: this volume cannot rename without replacing "
                            f"({exc.strerror}): no RENAME_EXCL and no hard links, as on exFAT "
                            "or FAT, so no job could be claimed safely",
                            "put the queue on an APFS or HFS+ volume (`lanekit doctor` reports "
                            "volume.no-rename-excl)",
                        ) from None
                    raise QueueError(
                        f"{os.path.dirname(there)}: a rename from {os.path.dirname(here)} fails "
                        f"({exc.strerror})",
                        "keep every queue directory on one local filesystem, writable by you",
                    ) from None
                here = there
        finally:
            with contextlib.suppress(OSError):
                os.unlink(here)

    # -- producing -------------------------------------------------------------------------

    def enqueue(self, payload: Mapping[str, Any] | bytes | str, job_id: str | None = None) -> str:
        """Add a job; returns its id. The payload must be a JSON object (UsageError otherwise).

        Written to tmp/, fsynced, renamed without replacing into queue/<id>.json, directory
        fsynced (no fsyncs when durable=False). A given id must pass validate_job_id and must
        not be anywhere in the queue already; an id whose record says succeeded is refused too
        (JobExistsError), because the guard would only skip it.

        Those checks only make the usual refusals explicit: a listing can miss a file that is
        being renamed. What holds under races is that enqueue never replaces anything: the job
        enters queue/ by a no-replace rename, and its `queued` record is created only where the
        id has none. A record that exists belongs to the id's earlier life (a claim about to
        finish, a success, an attempt count) and stays; the claimer's guard then decides.
        """
        self.check()
        data = _payload_bytes(payload)
        if job_id is None:
            job_id = new_job_id()
        else:
            validate_job_id(job_id)
            self._refuse_existing(job_id)
        with _io("enqueue"):
            self._write_job(job_id, data)
        return job_id

    def _write_job(self, job_id: str, data: bytes) -> None:
        stamp = iso_utc(time.time())
        job_tmp = self._tmp_name("job")
        fsops.write_new(job_tmp, data, durable=self.durable)
        tmp: str | None = job_tmp
        staged: str | None = None
        target = f"{self._queue}/{job_id}.json"
        try:
            # Staged before the job is visible: a full disk then queues nothing. Moving it into
            # records/ later is a rename, which needs no free space.
            staged = self.store.stage(Record(job_id, JobState.QUEUED, 0, stamp, stamp))
            try:
                fsops.rename_noreplace(job_tmp, target)
            except FileExistsError:
                raise JobExistsError(
                    f"job {job_id} is already queued ({target})", "give the new job another id"
                ) from None
            tmp = None
            if self.durable:
                fsops.fsync_dir(self._queue)
            # create() owns the staged file from here on (it removes it unless it moved it).
            staged_record, staged = staged, None
            try:
                self.store.create(staged_record, job_id)
            except OSError as exc:
                raise QueueError(
                    f"{exc.filename or self.store.path(job_id)}: job {job_id} is queued, but "
                    f"its record cannot be created ({exc.strerror or exc})",
                    "the job will run (its first claim writes the record); check the queue's "
                    "records/ directory (`lanekit doctor`)",
                ) from exc
        finally:
            for leftover in (tmp, staged):
                if leftover is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(leftover)

    def _refuse_existing(self, job_id: str) -> None:
        hint = "give the new job another id"
        for path, what in (
            (f"{self._queue}/{job_id}.json", "is already queued"),
            (f"{self._failed}/{job_id}.json", "already failed"),
        ):
            if os.path.lexists(path):
                raise JobExistsError(f"job {job_id} {what} ({path})", hint)
        for directory, what in ((self._claimed, "is running"), (self._delayed, "awaits a retry")):
            for name in _listdir(directory):
                if name.endswith(".json") and name[:-5].rpartition(".")[0] == job_id:
                    raise JobExistsError(f"job {job_id} {what} ({directory}/{name})", hint)
        record = self.store.read(job_id)
        proof: Path | str | None
        if record is not None and record.state is JobState.SUCCEEDED:
            proof = self.store.path(job_id)
        elif self.store.succeeded(job_id, record):  # no record: the purge index knows it
            proof = self.store.guard_dir
        else:
            proof = self._done_file(job_id)
        if proof is not None:
            raise JobExistsError(
                f"job {job_id} already succeeded ({proof})",
                "lanekit never runs a succeeded id again: give the new job another id",
            )

    def _tmp_name(self, kind: str) -> str:
        """A fresh hidden name in tmp/ (ids are left out: a long one would not fit)."""
        return f"{self._tmp}/.{kind}.{tmp_suffix()}"

    # -- consuming -------------------------------------------------------------------------

    def claimer(
        self, *, lane: str | None = None, on_drop: Callable[[Dropped], None] | None = None
    ) -> Claimer:
        """A claimer for this process (see Claimer). Checks the queue first."""
        self.check()
        return Claimer(self, lane=lane, on_drop=on_drop)

    def complete(self, claim: Claim) -> Path:
        """The job succeeded: record it, move it to done/<UTC day>/, drop the lock.

        If the record cannot be written the job still moves to done/, then
        RecordNotWrittenError (see `_settle`)."""
        self._require_held(claim)
        try:
            now = time.time()
            running = claim.record
            job_id = claim.job_id
            record = Record(
                job_id,
                JobState.SUCCEEDED,
                running.attempts,
                running.queued_at,
                iso_utc(now),
                running.lane,
            )
            unwritten = self._record_outcome(record)
            day = self._done_dir(now)
            target = self._to_terminal(claim.file or str(claim.path), day, job_id)
            if unwritten is not None:
                raise self._not_recorded(record, unwritten, target) from unwritten
            # A child of the bucket's Path costs less than parsing a new Path (on every job).
            return self._day_dir / target[len(day) + 1 :]
        except OSError as exc:
            raise _queue_error(exc, "complete the job") from exc
        finally:
            claim.lock.release()

    def fail(self, claim: Claim, error: str) -> Path:
        """The job failed for good: record it, move it to failed/ with <id>.error, drop the lock.

        If the record cannot be written the job still moves to failed/, then
        RecordNotWrittenError."""
        self._require_held(claim)
        try:
            with _io("fail the job"):
                return Path(self._fail_claimed(claim, error or "failed without a message"))
        finally:
            claim.lock.release()

    def release(
        self,
        claim: Claim,
        *,
        max_attempts: int,
        error: str = "",
        count_attempt: bool = True,
        delay: bool = True,
    ) -> Path:
        """Give the job back: to delayed/ (backoff), queue/ (no delay), or failed/ when out of
        attempts. `count_attempt=False, delay=False` is for a run stopped by a signal: the job
        did not fail, so it neither spends an attempt nor waits."""
        self._require_held(claim)
        try:
            with _io("release the job"):
                return Path(self._release(claim, max_attempts, error, count_attempt, delay))
        finally:
            claim.lock.release()

    def _release(
        self, claim: Claim, max_attempts: int, error: str, count_attempt: bool, delay: bool
    ) -> str:
        attempts = claim.record.attempts
        if count_attempt and attempts >= max_attempts:
            return self._fail_claimed(claim, _gave_up(error or "released", attempts))
        if not count_attempt:
            attempts = max(attempts - 1, 0)
        now = time.time()
        wait = self.backoff(claim.record.attempts) if delay else 0.0
        record = Record(
            claim.job_id,
            JobState.QUEUED,
            attempts,
            claim.record.queued_at,
            iso_utc(now),
            lane=claim.record.lane,
            error=error or None,
        )
        self.store.write(record)
        if wait > 0:
            not_before = int(now + wait + 0.999)
            target = f"{self._delayed}/{claim.job_id}.{not_before}.json"
        else:
            target = f"{self._queue}/{claim.job_id}.json"
        src = str(claim.path)
        try:
            fsops.rename_noreplace(src, target)
        except FileExistsError:
            return self._duplicate_to_failed(src, claim.job_id, target)
        return target

    def backoff(self, attempt: int) -> float:
        """Seconds a job waits in delayed/ after failing attempt number `attempt`."""
        if self.backoff_base <= 0:
            return 0.0
        return float(min(self.backoff_base * 2 ** max(attempt - 1, 0), self.backoff_max))

    def promote_due(self, now: float | None = None) -> list[str]:
        """Move retries whose not-before time has come from delayed/ to queue/; their ids."""
        with _io("move due retries back to queue/"):
            return self._promote_due(time.time() if now is None else now)

    def _promote_due(self, now: float) -> list[str]:
        promoted = []
        for name in _listdir(self._delayed):
            if name[0] == "." or not name.endswith(".json"):
                continue
            job_id, dot, not_before = name[:-5].rpartition(".")
            if not dot or not not_before.isdigit() or int(not_before) > now:
                continue
            src = f"{self._delayed}/{name}"
            try:
                fsops.rename_noreplace(src, f"{self._queue}/{job_id}.json")
            except FileNotFoundError:
                continue  # another runner promoted it
            except FileExistsError:
                self._duplicate_to_failed(src, job_id, f"{self._queue}/{job_id}.json")
                continue
            promoted.append(job_id)
        return promoted

    # -- recovery ------------------------------------------------------------------------

    def recover(
        self,
        *,
        stale_after: float,
        max_attempts: int,
        dry_run: bool = False,
        now: float | None = None,
    ) -> list[Recovered]:
        """Give back claims whose owner is gone; safe to run from many processes at once.

        On this host a claim is recovered when nobody holds its lock and its owner pid is dead
        or runs another process (start token differs). For owners on another host (or files
        without an owner) only age counts: older than `stale_after` seconds. The job goes back
        to queue/ (attempt counted at claim), to failed/ when its attempts are spent, or where
        its record says it ended: done/ for succeeded, failed/ for failed (the owner died
        between recording the outcome and moving the file; the record is kept). Each candidate
        is locked and re-checked with stat before the move, and the move is a rename, so two
        recoverers never both act. `dry_run` reports what would move and moves nothing.
        """
        self.check()
        now = time.time() if now is None else now
        results = []
        with _io("recover claims"):
            if not dry_run:
                self._sweep_tmp(now)
                self._sweep_statuses()
            for name in _listdir(self._claimed):
                if name[0] == "." or not name.endswith(".json"):
                    continue
                item = self._recover_one(name, stale_after, max_attempts, dry_run, now)
                if item is not None:
                    results.append(item)
        return results

    def _sweep_tmp(self, now: float) -> None:
        """Remove our own temp files (probe, record, job, .error) that a killed process left in
        tmp/ over an hour ago. Producers' files there are not ours and are left alone."""
        for name in _listdir(self._tmp):
            if not name.startswith(_TMP_PREFIXES):
                continue
            path = f"{self._tmp}/{name}"
            with contextlib.suppress(FileNotFoundError):
                if now - os.lstat(path).st_mtime > _TMP_MAX_AGE:
                    os.unlink(path)

    def _recover_one(
        self, name: str, stale_after: float, max_attempts: int, dry_run: bool, now: float
    ) -> Recovered | None:
        path = f"{self._claimed}/{name}"
        parsed = split_owned_name(name)
        job_id, owner = (name[:-5], None) if parsed is None else parsed
        try:
            fd = fsops.open_regular(path)
        except FileNotFoundError:
            return None
        except (fsops.NotRegularFileError, PermissionError) as exc:
            return self._recover_bad_file(path, job_id, owner, exc, stale_after, dry_run, now)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # its owner (or another recoverer) holds it
            if owner is not None and owner.host == procinfo.hosttag():
                gone = _local_owner_gone(owner)
                if gone is None:
                    return None
                reason = gone
            else:
                if now - os.fstat(fd).st_mtime <= stale_after:
                    return None
                reason = RecoverReason.STALE
            # A listing can repeat or miss names during renames: act only if this name still
            # is the file we locked.
            try:
                current = os.stat(path)
            except FileNotFoundError:
                return None
            locked = os.fstat(fd)
            if (current.st_ino, current.st_dev) != (locked.st_ino, locked.st_dev):
                return None
            return self._give_back(
                path=path,
                job_id=job_id,
                owner=owner,
                reason=reason,
                max_attempts=max_attempts,
                dry_run=dry_run,
                now=now,
            )
        finally:
            os.close(fd)

    def _recover_bad_file(  # noqa: PLR0917 - private, called once, with recover's own values
        self,
        path: str,
        job_id: str,
        owner: Owner | None,
        exc: OSError,
        stale_after: float,
        dry_run: bool,
        now: float,
    ) -> Recovered | None:
        """A claimed name that is no regular file, or one we may not read (it cannot be locked
        or run): once its owner is gone, to failed/ with the reason. A live owner is a claimer
        about to do exactly that itself."""
        if owner is not None and owner.host == procinfo.hosttag():
            gone = _local_owner_gone(owner)
            if gone is None:
                return None
            reason = gone
        else:
            try:
                if now - os.lstat(path).st_mtime <= stale_after:
                    return None
            except FileNotFoundError:
                return None
            reason = RecoverReason.STALE
        destination = f"{self._failed}/{job_id}.json"
        owner_text = "" if owner is None else str(owner)
        if not dry_run:
            try:
                destination = self._to_failed(path, job_id, f"job file {exc.strerror}")
            except FileNotFoundError:
                return None  # another recoverer moved it first
        return Recovered(job_id, reason, Path(destination), JobState.FAILED, owner_text, 0)

    def _give_back(
        self,
        *,
        path: str,
        job_id: str,
        owner: Owner | None,
        reason: RecoverReason,
        max_attempts: int,
        dry_run: bool,
        now: float,
    ) -> Recovered | None:
        owner_text = "" if owner is None else str(owner)
        why = {
            RecoverReason.OWNER_DEAD: f"owner {owner_text} died",
            RecoverReason.PID_REUSED: f"owner {owner_text} died (its pid now runs another process)",
            RecoverReason.STALE: f"claim by {owner_text or 'an unknown owner'} went stale",
        }[reason]
        prev: Record | None = None
        unreadable: str | None = None
        try:
            prev = self.store.read(job_id)
        except RecordError as exc:
            unreadable = exc.message
        attempts = 0 if prev is None else prev.attempts
        # A settled record means the owner died between recording the outcome and moving the
        # file: finish the move and keep the record, never run the job again.
        settled = prev is not None and prev.state in {JobState.SUCCEEDED, JobState.FAILED}
        status = watcher.status_path(path)
        outcome = None if settled or unreadable is not None else watcher.read_outcome(status)
        if outcome is not None:
            return self._settle_finished(
                path=path,
                job_id=job_id,
                owner_text=owner_text,
                reason=reason,
                prev=prev,
                outcome=outcome,
                max_attempts=max_attempts,
                dry_run=dry_run,
                now=now,
            )
        if unreadable is not None:
            state, destination = JobState.FAILED, f"{self._failed}/{job_id}.json"
        elif prev is not None and prev.state is JobState.SUCCEEDED:
            state, destination = JobState.SUCCEEDED, f"{self._day_path(now)}/{job_id}.json"
        elif settled or attempts >= max_attempts:
            state, destination = JobState.FAILED, f"{self._failed}/{job_id}.json"
        else:
            state, destination = JobState.QUEUED, f"{self._queue}/{job_id}.json"
        if dry_run:
            return Recovered(job_id, reason, Path(destination), state, owner_text, attempts)
        try:
            if state is JobState.SUCCEEDED:
                destination = self._to_done(path, job_id, now)
            elif state is JobState.FAILED:
                if unreadable is not None:
                    error = f"record unreadable: {unreadable}"
                elif settled and prev is not None:
                    error = prev.error or f"failed ({why} before moving it to failed/)"
                else:
                    error = f"{why}; gave up after {attempts} attempts"
                destination = self._to_failed(path, job_id, error)
                if unreadable is None and not settled:
                    self._write_failed_record(job_id, prev, error, now)
            else:
                try:
                    fsops.rename_noreplace(path, destination)
                except FileExistsError:
                    destination = self._duplicate_to_failed(path, job_id, destination)
                    state = JobState.FAILED
                else:
                    record = Record(
                        job_id, JobState.QUEUED, attempts, iso_utc(now), iso_utc(now), error=why
                    )
                    self.store.write(record.carry_over(prev))
        except FileNotFoundError:
            return None  # another recoverer moved it first
        return Recovered(job_id, reason, Path(destination), state, owner_text, attempts)

    def _settle_finished(
        self,
        *,
        path: str,
        job_id: str,
        owner_text: str,
        reason: RecoverReason,
        prev: Record | None,
        outcome: watcher.Outcome,
        max_attempts: int,
        dry_run: bool,
        now: float,
    ) -> Recovered | None:
        """A claim whose job finished after its owner died: settle it by the exit status its
        watcher recorded, exactly as the owner would have (0 -> done/; stopped -> queue/
        unspent; another failure -> retry with backoff, or failed/ when out of attempts),
        never run it again. The record is written before the move (see `_settle`), the status
        removed after it."""
        attempts = 0 if prev is None else prev.attempts
        stamp = iso_utc(now)
        error = watcher.describe(outcome)
        if outcome.exit == 0:
            state, destination = JobState.SUCCEEDED, f"{self._day_path(now)}/{job_id}.json"
        elif outcome.stopped:
            state, destination = JobState.QUEUED, f"{self._queue}/{job_id}.json"
        elif attempts >= max_attempts:
            state, destination = JobState.FAILED, f"{self._failed}/{job_id}.json"
        else:
            wait = self.backoff(attempts)
            target = f"{self._delayed}/{job_id}.{int(now + wait + 0.999)}.json"
            state, destination = (
                JobState.QUEUED,
                target if wait > 0 else f"{self._queue}/{job_id}.json",
            )
        result = Recovered(
            job_id, reason, Path(destination), state, owner_text, attempts, outcome.exit
        )
        if dry_run:
            return result
        try:
            if state is JobState.SUCCEEDED:
                record = Record(job_id, JobState.SUCCEEDED, 0, stamp, stamp)
                unwritten = self._record_outcome(record.carry_over(prev))
                destination = self._to_done(path, job_id, now)
                if unwritten is not None:
                    raise self._not_recorded(record, unwritten, destination) from unwritten
            elif state is JobState.FAILED:
                error = _gave_up(error, attempts)
                failed = Record(job_id, JobState.FAILED, 0, stamp, stamp, error=error)
                unwritten = self._record_outcome(failed.carry_over(prev))
                destination = self._to_failed(path, job_id, error)
                if unwritten is not None:
                    raise self._not_recorded(failed, unwritten, destination) from unwritten
            else:
                spent = attempts if not outcome.stopped else max(attempts - 1, 0)
                lane = None if prev is None else prev.lane
                queued_at = stamp if prev is None or not prev.queued_at else prev.queued_at
                self.store.write(
                    Record(job_id, JobState.QUEUED, spent, queued_at, stamp, lane, error)
                )
                try:
                    fsops.rename_noreplace(path, destination)
                except FileExistsError:
                    destination = self._duplicate_to_failed(path, job_id, destination)
                    state = JobState.FAILED
        except FileNotFoundError:
            return None  # another recoverer moved it first
        with contextlib.suppress(OSError):
            os.unlink(watcher.status_path(path))
        return Recovered(
            job_id, reason, Path(destination), state, owner_text, attempts, outcome.exit
        )

    def _sweep_statuses(self) -> None:
        """Remove status files whose claim is gone (a settle cut short between moving the job
        and removing its status). A watcher writes its status while its claim is in place, and
        a claim never comes back under the same name once moved, so this cannot race one."""
        for name in _listdir(self._claimed):
            if name[0] != "." or not name.endswith(".status"):
                continue
            claim = f"{self._claimed}/{name[1:-7]}.json"
            if not os.path.lexists(claim):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self._claimed}/{name}")

    # -- observing -------------------------------------------------------------------------

    def counts(self, now: float | None = None) -> QueueCounts:
        """How many jobs are in each directory, and the oldest queued job and claim."""
        now = time.time() if now is None else now
        queued = _job_names(self._queue)
        oldest: float | None = None
        for name in queued:
            born = _id_time(name[:-5])
            if born is None:
                try:
                    born = os.stat(f"{self._queue}/{name}").st_mtime
                except FileNotFoundError:
                    continue
            oldest = born if oldest is None else min(oldest, born)
        claims = self.list_claims(now=now, check_owners=False)
        done = sum(len(_job_names(f"{self._done}/{day}")) for day in self._done_days())
        return QueueCounts(
            queued=len(queued),
            delayed=len(_job_names(self._delayed)),
            claimed=len(claims),
            done=done,
            failed=len(_job_names(self._failed)),
            oldest_queued_age=None if oldest is None else max(now - oldest, 0.0),
            oldest_claim_age=max((c.age for c in claims), default=None),
        )

    def list_claims(
        self, now: float | None = None, *, check_owners: bool = True
    ) -> list[ClaimInfo]:
        """Every claim with its owner and age, oldest first.

        `owner_alive` is True when the claim's lock is held or its owner (on this host) is
        running with the same start token, False when the owner is gone, None when the owner is
        on another host or unnamed (and when `check_owners` is False).
        """
        now = time.time() if now is None else now
        here = procinfo.hosttag()
        result = []
        for name in _job_names(self._claimed):
            path = f"{self._claimed}/{name}"
            try:
                mtime = os.stat(path).st_mtime
            except FileNotFoundError:
                continue
            parsed = split_owned_name(name)
            job_id, owner = (name[:-5], None) if parsed is None else parsed
            alive = None
            if check_owners and owner is not None and owner.host == here:
                alive = _owner_alive(path, owner)
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

    def listing(self, state: JobState | None = None) -> dict[str, tuple[JobState, str, str | None]]:
        """Every job file as id -> (state, directory, file name or None for `<id>.json`).

        Built from directory listings alone (no file is opened or stat'ed, and entries of one
        directory share one value tuple), so it stays cheap at 100k jobs. `state` limits it to
        that state's directories (queued = queue/ and delayed/). When one id has files in
        several places (a duplicate), the live one wins: claimed/ over queue/ and delayed/ over
        failed/ over done/.
        """
        found: dict[str, tuple[JobState, str, str | None]] = {}

        def add(directory: str, job_state: JobState, *, owned: bool) -> None:
            stems = [n[:-5] for n in _listdir(directory) if n[0] != "." and n.endswith(".json")]
            found.update(dict.fromkeys(stems, (job_state, directory, None)))
            if not owned:
                return
            for stem in [stem for stem in stems if "." in stem]:  # generated ids have no dots
                parsed = split_owned_name(stem + ".json")
                if parsed is not None:
                    del found[stem]
                    found[parsed[0]] = (job_state, directory, stem + ".json")

        if state is None or state is JobState.SUCCEEDED:
            for day in self._done_days():
                add(f"{self._done}/{day}", JobState.SUCCEEDED, owned=True)
        if state is None or state is JobState.FAILED:
            add(self._failed, JobState.FAILED, owned=True)
        if state is None or state is JobState.QUEUED:
            for name in _job_names(self._delayed):
                job_id = name[:-5].rpartition(".")[0] or name[:-5]
                found[job_id] = (JobState.QUEUED, self._delayed, name)
            add(self._queue, JobState.QUEUED, owned=False)
        if state is None or state is JobState.RUNNING:
            add(self._claimed, JobState.RUNNING, owned=True)
        return found

    def locate(self, job_id: str) -> JobLocation | None:
        """Where the job's file is now, or None if it is nowhere. done/ is searched in the day
        its record says it finished first, then newest day first."""
        validate_job_id(job_id)
        for directory, job_state in (
            (self._queue, JobState.QUEUED),
            (self._failed, JobState.FAILED),
        ):
            path = f"{directory}/{job_id}.json"
            if os.path.lexists(path):
                return JobLocation(job_id, job_state, Path(path))
        for directory, job_state in (
            (self._claimed, JobState.RUNNING),
            (self._delayed, JobState.QUEUED),
        ):
            for name in _job_names(directory):
                if name[:-5].rpartition(".")[0] == job_id:
                    return JobLocation(job_id, job_state, Path(f"{directory}/{name}"))
        try:
            record = self.store.read(job_id)
        except RecordError:
            record = None
        days = self._done_days()[::-1]
        if record is not None and record.updated_at[:10] in days:
            days.insert(0, record.updated_at[:10])
        for day in days:
            path = f"{self._done}/{day}/{job_id}.json"
            if os.path.lexists(path):
                return JobLocation(job_id, JobState.SUCCEEDED, Path(path))
        return None

    def error_text(self, location: JobLocation) -> str | None:
        """The .error file next to a failed job, or None."""
        if location.state is not JobState.FAILED:
            return None
        try:
            fd = fsops.open_regular(str(location.path)[:-5] + ".error")
        except (FileNotFoundError, fsops.NotRegularFileError):
            return None
        try:
            return _read_all(fd, os.fstat(fd).st_size).decode("utf-8", "replace")
        finally:
            os.close(fd)

    # -- operator verbs: retry, requeue, cancel ----------------------------------------------

    def retry(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A failed job back into queue/ with all its attempts again (`lanekit retry`).

        The record is rewritten first (queued, attempts 0, the reason it failed kept in its
        `error` as `retried by hand; it had failed: ...`), then the job file moves by a
        no-replace rename and its `.error` is removed. A job that is not in failed/ under its
        own name is a UsageError and nothing changes; so is one whose record says succeeded
        (the guard would only skip it)."""
        validate_job_id(job_id)
        self.check()
        src = f"{self._failed}/{job_id}.json"
        target = f"{self._queue}/{job_id}.json"
        if not os.path.lexists(src):
            raise self._not_there(job_id, "failed", "only a failed job can be retried")
        prev = self.store.read(job_id)
        if self.store.succeeded(job_id, prev):
            raise JobExistsError(
                f"job {job_id} already succeeded ({self.store.path(job_id)}); not retried",
                "lanekit never runs a succeeded id again: enqueue the work under a new id",
            )
        if os.path.lexists(target):
            raise JobExistsError(f"job {job_id} is already queued ({target})", _VERB_HINT)
        moved = Moved(job_id, Path(src), Path(target), JobState.QUEUED)
        if dry_run:
            return moved
        now = time.time() if now is None else now
        error_file = src[:-5] + ".error"
        reason = (prev.error if prev is not None else None) or _read_text(error_file)
        stamp = iso_utc(now)
        record = Record(
            job_id,
            JobState.QUEUED,
            0,
            prev.queued_at if prev is not None else stamp,
            stamp,
            prev.lane if prev is not None else None,
            "retried by hand; it had failed: " + (reason or "(no reason recorded)").strip(),
        )
        with _io("retry the job"):
            self.store.write(record)
            try:
                fsops.rename_noreplace(src, target)
            except (FileExistsError, FileNotFoundError):
                if prev is not None:
                    self.store.write(prev)
                raise JobExistsError(
                    f"job {job_id} moved while it was being retried; nothing changed",
                    _VERB_HINT,
                ) from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(error_file)
            if self.durable:
                fsops.fsync_dir(self._queue)
        return moved

    def failed_ids(self) -> list[str]:
        """Ids of the jobs in failed/ under their own name, oldest first (`retry --failed`)."""
        return sorted(name[:-5] for name in _job_names(self._failed) if "." not in name[:-5])

    def requeue(self, job_id: str, *, dry_run: bool = False) -> Moved:
        """A job waiting out its retry backoff in delayed/: into queue/ now (`lanekit
        requeue`). Its record is unchanged (the attempts it spent still count)."""
        validate_job_id(job_id)
        self.check()
        src = self._delayed_file(job_id)
        if src is None:
            raise self._not_there(job_id, "delayed", "only a job awaiting a retry can be requeued")
        target = f"{self._queue}/{job_id}.json"
        moved = Moved(job_id, Path(src), Path(target), JobState.QUEUED)
        if dry_run:
            return moved
        with _io("requeue the job"):
            try:
                fsops.rename_noreplace(src, target)
            except FileNotFoundError:
                raise JobExistsError(
                    f"job {job_id} left delayed/ meanwhile (its retry came due); nothing changed",
                    _VERB_HINT,
                ) from None
            except FileExistsError:
                raise JobExistsError(
                    f"job {job_id} is already queued ({target})", _VERB_HINT
                ) from None
            if self.durable:
                fsops.fsync_dir(self._queue)
        return moved

    def cancel(self, job_id: str, *, dry_run: bool = False, now: float | None = None) -> Moved:
        """A queued or delayed job to failed/ with reason `cancelled` (`lanekit cancel`).

        The move is one rename out of queue/ or delayed/, so it races fairly with a claimer:
        if a runner took the job first, it is running and the cancel is refused (UsageError),
        as for a job that is running already. A running job is never touched here."""
        validate_job_id(job_id)
        self.check()
        src = f"{self._queue}/{job_id}.json"
        if not os.path.lexists(src):
            src = self._delayed_file(job_id) or ""
        if not src:
            location = self.locate(job_id)
            if location is not None and location.state is JobState.RUNNING:
                raise self._running(job_id, location.path)
            raise self._not_there(job_id, "queued", "only a queued or delayed job can be cancelled")
        moved = Moved(job_id, Path(src), Path(f"{self._failed}/{job_id}.json"), JobState.FAILED)
        if dry_run:
            return moved
        now = time.time() if now is None else now
        with _io("cancel the job"):
            try:
                target = self._to_failed(src, job_id, CANCELLED)
            except FileNotFoundError:
                location = self.locate(job_id)
                raise self._running(
                    job_id, location.path if location is not None else self.claimed
                ) from None
            prev: Record | None
            try:
                prev = self.store.read(job_id)
            except RecordError:
                prev = None
            self._write_failed_record(job_id, prev, CANCELLED, now)
        return Moved(job_id, Path(src), Path(target), JobState.FAILED)

    # -- retention ----------------------------------------------------------------------

    def purge(
        self,
        *,
        keep_done: float,
        keep_failed: float,
        dry_run: bool = False,
        now: float | None = None,
    ) -> Purged:
        """Remove finished jobs older than `keep_done` and failed ones older than
        `keep_failed` (seconds), with their records and .error files (`lanekit purge`, and
        the runner once a day).

        done/ goes by whole UTC day buckets: a bucket is purged once its whole day is older
        than `keep_done` (only those buckets are listed). The guard outlives the purge: the
        ids of succeeded jobs go into records/.guard/ (RecordStore.remember_succeeded)
        before their records are removed, and index files older than `keep_done` expire, so
        a succeeded id is refused for at least `keep_done` after it finished. failed/ goes by
        the time the job failed (its .error's mtime). Nothing else is touched: queue/,
        delayed/ and claimed/ are live."""
        self.check()
        now = time.time() if now is None else now
        done_cut = time.strftime("%Y-%m-%d", time.gmtime(now - keep_done))
        done: list[str] = []
        failed: list[str] = []
        with _io("purge old jobs"):
            for day in self._done_days():
                if day >= done_cut:
                    break
                done.extend(self._purge_day(day, dry_run, now))
            failed = self._purge_failed(now - keep_failed, dry_run)
            expired = [] if dry_run else self.store.expire_guard(done_cut)
        return Purged(tuple(done), tuple(failed), tuple(expired), dry_run)

    def _purge_day(self, day: str, dry_run: bool, now: float) -> list[str]:
        directory = f"{self._done}/{day}"
        names = _job_names(directory)
        ids = [_owned_id(name) for name in names]
        if dry_run:
            return ids
        succeeded = []
        for job_id in ids:
            try:
                record = self.store.read(job_id)
            except RecordError:
                record = None  # unreadable: kept for inspection, its job file still goes
            if record is not None and record.state is JobState.SUCCEEDED:
                succeeded.append(job_id)
        # The ids first: from here on the guard holds whether or not the record exists.
        self.store.remember_succeeded(succeeded, time.strftime("%Y-%m-%d", time.gmtime(now)))
        for job_id in succeeded:
            self.store.remove(job_id)
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{directory}/{name}")
        with contextlib.suppress(OSError):  # not empty: someone put something there
            os.rmdir(directory)
        return ids

    def _purge_failed(self, cutoff: float, dry_run: bool) -> list[str]:
        purged = []
        for name in _job_names(self._failed):
            path = f"{self._failed}/{name}"
            error = path[:-5] + ".error"
            try:
                failed_at = os.stat(error).st_mtime
            except FileNotFoundError:
                try:
                    failed_at = os.stat(path).st_mtime
                except FileNotFoundError:
                    continue
            if failed_at >= cutoff:
                continue
            job_id = _owned_id(name)
            purged.append(job_id)
            if dry_run:
                continue
            try:
                record = self.store.read(job_id)
            except RecordError:
                record = None
            if record is not None and record.state is JobState.FAILED:
                self.store.remove(job_id)
            for leftover in (path, error):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
        return purged

    def _delayed_file(self, job_id: str) -> str | None:
        for name in _job_names(self._delayed):
            if name[:-5].rpartition(".")[0] == job_id:
                return f"{self._delayed}/{name}"
        return None

    def _not_there(self, job_id: str, where: str, why: str) -> UsageError:
        location = self.locate(job_id)
        now = "is nowhere in this queue" if location is None else f"is {location.state}"
        return UsageError(
            f"job {job_id} {now} ({self.dir}), not {where}: {why}; nothing changed",
            "`lanekit job` shows where a job is",
        )

    def _running(self, job_id: str, path: Path) -> UsageError:
        return UsageError(
            f"job {job_id} is running ({path}): not cancelled",
            "let the run finish (a failed job can then be retried or left in failed/)",
        )

    # -- internals -----------------------------------------------------------------------

    def _require_held(self, claim: Claim) -> None:
        if claim.lock.fd < 0:
            raise QueueError(
                f"{claim.path}: claim of job {claim.job_id} was already settled",
                "settle each claim once (complete, fail or release)",
            )

    def _done_file(self, job_id: str) -> str | None:
        """done/<day>/<id>.json, newest day first, or None. A job's file reaches done/ only once
        it succeeded, and the move is a rename (it needs no free space), so this is the proof
        that survives a success whose record could not be written (disk full): the guard asks
        it wherever the record does not already say succeeded."""
        for day in reversed(self._done_days()):
            path = f"{self._done}/{day}/{job_id}.json"
            if os.path.lexists(path):
                return path
        return None

    def _done_days(self) -> list[str]:
        return sorted(
            name for name in _listdir(self._done) if name[0] != "." and name[:1].isdigit()
        )

    def _day_path(self, now: float) -> str:
        return f"{self._done}/{time.strftime('%Y-%m-%d', time.gmtime(now))}"

    def _done_dir(self, now: float) -> str:
        """Today's done/ bucket, created on first use (once per day and process)."""
        if self._day_start <= now < self._day_start + 86400:
            return self._day
        directory = self._day_path(now)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        self._day = directory
        self._day_dir = Path(directory)
        self._day_start = now - now % 86400  # UTC days are 86400 s long in epoch time
        return directory

    def _to_terminal(self, src: str, directory: str, job_id: str) -> str:
        """Move into done/ or failed/: <id>.json, or the unique claimed name if that is taken."""
        target = f"{directory}/{job_id}.json"
        try:
            _rename_into(src, target)
        except FileExistsError:
            target = f"{directory}/{os.path.basename(src)}"
            try:
                _rename_into(src, target)
            except FileExistsError:
                raise QueueError(
                    f"{target}: already exists; {src} was left where it is",
                    "two copies of one job under one owner: inspect both files",
                ) from None
        return target

    def _to_done(self, src: str, job_id: str, now: float) -> str:
        return self._to_terminal(src, self._done_dir(now), job_id)

    def _to_failed(self, src: str, job_id: str, error: str) -> str:
        target = self._to_terminal(src, self._failed, job_id)
        text = error.rstrip("\n") + "\n"
        fsops.replace_file(
            target[:-5] + ".error",
            text.encode("utf-8", "replace"),
            tmp=self._tmp_name("error"),
            durable=self.durable,
        )
        return target

    def _write_failed_record(
        self, job_id: str, prev: Record | None, error: str, now: float
    ) -> None:
        stamp = iso_utc(now)
        record = Record(job_id, JobState.FAILED, 0, stamp, stamp, error=error)
        self.store.write(record.carry_over(prev))

    def _fail_claimed(self, claim: Claim, error: str) -> str:
        stamp = iso_utc(time.time())
        record = Record(claim.job_id, JobState.FAILED, 0, stamp, stamp, error=error)
        return self._settle(
            record.carry_over(claim.record),
            lambda: self._to_failed(claim.file or str(claim.path), claim.job_id, error),
        )

    def _settle(self, record: Record, move: Callable[[], str]) -> str:
        """Write a finished job's record, then `move` its file out of claimed/ (to done/ or
        failed/); returns where it went.

        The record goes first: if the process dies between the two, recover() reads the record
        and finishes the move instead of running the job again. If the record cannot be written
        (disk full, EIO), the file is moved all the same (a rename needs no free space): left in
        claimed/ with its `running` record, it would be recovered to queue/ and run again. The
        missing record is then a RecordNotWrittenError (a QueueError: the run exits 69), naming
        the record that may still say `running` and where the job went.
        (complete() does the same steps inline: it is on every job's path.)
        """
        unwritten = self._record_outcome(record)
        target = move()
        if unwritten is not None:
            raise self._not_recorded(record, unwritten, target) from unwritten
        return target

    def _record_outcome(self, record: Record) -> OSError | None:
        """Write a settling record; the OSError if it could not be written (see `_settle`)."""
        try:
            self.store.write(record)
        except OSError as exc:
            return exc
        return None

    def _not_recorded(self, record: Record, exc: OSError, target: str) -> RecordNotWrittenError:
        return RecordNotWrittenError(
            f"{self.store.path(record.job_id)}: cannot record that job {record.job_id} "
            f"{record.state} ({exc.strerror or exc}); the job was moved to {target}, "
            "its record may still say running",
            "free space (or fix permissions) in the queue's filesystem "
            "(`lanekit doctor`); the job is finished and will not be recovered",
            state=record.state,
            moved_to=Path(target),
        )

    def _duplicate_to_failed(self, src: str, job_id: str, taken: str) -> str:
        """A live copy of this id already sits at `taken`: park ours in failed/, explained."""
        return self._to_failed(
            src, job_id, f"duplicate: another copy of job {job_id} is already at {taken}"
        )


def _gave_up(error: str, attempts: int) -> str:
    """The reason of a job out of attempts: its last failure, said so on the first line (the
    lines after it are the job's stderr tail)."""
    head, newline, tail = error.partition("\n")
    return f"{head}; gave up after {attempts} attempts{newline}{tail}"


def _check_access(path: str, st: os.stat_result) -> None:
    uid = os.geteuid()
    if st.st_uid != uid:
        raise QueueError(
            f"{path}: owned by uid {st.st_uid}, not by you (uid {uid}); its owner could "
            "take or replace jobs",
            f"use a queue directory you own, or: {cmdline('chown', uid, path)}",
        )
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable:
        who = (
            "group and others"
            if writable == stat.S_IWGRP | stat.S_IWOTH
            else ("its group" if writable == stat.S_IWGRP else "others")
        )
        raise QueueError(
            f"{path}: writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}); someone else "
            "could add, take or replace jobs",
            cmdline("chmod", "go-w", path),
        )


def _rename_into(src: str, target: str) -> None:
    """rename_noreplace, re-creating the target's directory if someone cleaned it away (a
    done/ day bucket) while the source is still there."""
    try:
        fsops.rename_noreplace(src, target)
    except FileNotFoundError:
        if not os.path.lexists(src):
            raise
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        fsops.rename_noreplace(src, target)


@contextlib.contextmanager
def _io(action: str) -> Iterator[None]:
    """OSErrors (disk full, permissions) become QueueError naming the file: exit 69, no trace."""
    try:
        yield
    except OSError as exc:
        raise _queue_error(exc, action) from exc


def _queue_error(exc: OSError, action: str) -> QueueError:
    """The QueueError for an OSError while trying to `action` (see `_io`)."""
    return QueueError(
        f"{exc.filename or 'queue'}: cannot {action} ({exc.strerror or exc})",
        "check free space and permissions in the queue directory (`lanekit doctor`)",
    )


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def _job_names(directory: str) -> list[str]:
    return [n for n in _listdir(directory) if n.endswith(".json") and n[0] != "."]


def _owner_alive(path: str, owner: Owner) -> bool | None:
    try:
        fd = fsops.open_regular(path)
    except FileNotFoundError:
        return None
    except (fsops.NotRegularFileError, PermissionError):
        # Nothing can lock such a file: only the owner's process says whether it is alive.
        return procinfo.liveness(owner.pid, owner.token) in {
            procinfo.Liveness.ALIVE,
            procinfo.Liveness.UNKNOWN,
        }
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return procinfo.liveness(owner.pid, owner.token) in {
            procinfo.Liveness.ALIVE,
            procinfo.Liveness.UNKNOWN,
        }
    finally:
        os.close(fd)


class _LostRaceError(Exception):
    """Internal: the rename lost the race (or the name cannot be ours): try another job."""


class Claimer:
    """Claims jobs for one process, oldest first, without herding at the head of the queue.

    Each claimer lists queue/ once, sorts by name (= age for generated ids), and walks forward
    from its start, wrapping around. Alone (no claim in progress in claimed/ when it lists) it
    starts at the oldest job; otherwise at its own random offset near the head (among the
    oldest 64, wider the more claims are in progress). Claimers that list at the same instant
    all see no claim in progress and meet at the head: their first lost race spreads them.
    A lost race (ENOENT) is silent; it jumps ahead by a growing random stride (anywhere, after
    `_MISS_LIMIT` losses in a row), and lists again only after a full pass or once it lost
    more races than it won on this listing. Never one listing per claim: with 100k queued
    files a listing costs tens of milliseconds, and runners that all re-list and go for the
    head collapse throughput (design.md section 3).

    claim() hands out only jobs that can run. Files that cannot (corrupt, invalid id, record
    unreadable, already succeeded, a duplicate of a running id) are settled on the spot and
    reported to `on_drop`, so the runner can log `failed reason=corrupt` or
    `skipped reason=already-succeeded`.
    """

    def __init__(
        self,
        queue: Queue,
        *,
        lane: str | None = None,
        on_drop: Callable[[Dropped], None] | None = None,
    ) -> None:
        self.queue = queue
        self.lane = lane
        self.on_drop = on_drop
        self._names: list[str] = []
        self._pos = 0
        self._left = 0
        self._misses = 0
        self._lost = 0
        self._won = 0
        self._first = True
        self._skip: set[str] = set()
        self._rng = int.from_bytes(os.urandom(8), "little") | 1

    def _random(self, bound: int) -> int:
        # xorshift64: no `random` import on the claim path, and no syscall per draw
        x = self._rng
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        self._rng = x
        return x % bound if bound > 1 else 0

    def claim(self) -> Claim | None:
        """The next job this process owns, or None when queue/ has nothing left to claim."""
        while True:
            if self._left <= 0 and not self._relist():
                return None
            name = self._names[self._pos]
            try:
                taken = self._take(name)
            except _LostRaceError:
                self._lost_here()
                continue
            self._misses = 0
            self._won += 1
            self._pos = (self._pos + 1) % len(self._names)
            self._left -= 1
            if isinstance(taken, Claim):
                return taken
            if self.on_drop is not None:
                self.on_drop(taken)

    def _lost_here(self) -> None:
        """After a lost race: hop ahead, further each time; after a few misses in a row go
        somewhere random in the listing; list again once it loses more than it wins there."""
        self._misses += 1
        self._lost += 1
        self._left -= 1
        size = len(self._names)
        if self._lost > max(_MISS_LIMIT, self._won):
            self._left = 0  # more losses than wins: the listing is mostly stale
        elif self._misses >= _MISS_LIMIT:
            self._misses = 0
            self._pos = self._random(size)
        else:
            self._pos = (self._pos + 1 + self._random(_HOP << (self._misses - 1))) % size

    def _relist(self) -> bool:
        self.queue.promote_due()
        listed = _listdir(self.queue._queue)
        names: list[str] = []
        if self._first and len(listed) > 4 * _FIRST_WINDOW:
            import heapq

            names = self._jobs_among(heapq.nsmallest(_FIRST_WINDOW, listed))
        if not names:  # not windowed, or the window held only hidden or foreign files
            listed.sort()
            names = self._jobs_among(listed)
        self._first = False
        self._names = names
        self._misses = self._lost = self._won = 0
        if not names:
            self._left = 0
            return False
        busy = len(_listdir(self.queue._claimed))
        if busy:
            spread = max(_SPREAD_MIN, _SPREAD_PER_CLAIM * (busy + 1))
            self._pos = self._random(min(len(names), spread))
        else:
            self._pos = 0  # alone: oldest first (issue 12 item 7)
        self._left = len(names)
        return True

    def _jobs_among(self, listed: list[str]) -> list[str]:
        """The job files among `listed` names (kept in order), minus those this claimer skips."""
        skip = self._skip
        return [n for n in listed if n.endswith(".json") and n[0] != "." and n not in skip]

    def _take(self, name: str) -> Claim | Dropped:
        queue = self.queue
        job_id = name[:-5]
        src = f"{queue._queue}/{name}"
        owner = own_owner()
        claimed_name = f"{job_id}.{owner}.json"
        path = f"{queue._claimed}/{claimed_name}"
        try:
            fsops.rename_noreplace(src, path)
        except FileNotFoundError:
            raise _LostRaceError from None
        except FileExistsError:
            self._skip.add(name)  # this process already holds a claim on that id
            raise _LostRaceError from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                return self._refuse_unclaimable(src, job_id, name)
            raise QueueError(
                f"{src}: cannot claim ({exc.strerror})",
                f"check that {queue._queue} and {queue._claimed} are writable (`lanekit doctor`)",
            ) from None
        try:
            # Regular files only, checked on the descriptor before anything else: a symlink is
            # never followed, a FIFO never waited on (see fsops.open_regular).
            fd = fsops.open_regular(path)
        except (fsops.NotRegularFileError, PermissionError) as exc:
            return self._refuse_file(job_id, path, f"job file {exc.strerror}")
        except OSError as exc:
            with contextlib.suppress(OSError):
                fsops.rename_noreplace(path, src)
            raise QueueError(
                f"{path}: cannot open the claimed job ({exc.strerror})",
                f"check the permissions of the files in {queue._queue}",
            ) from None
        lock = ClaimLock(fd)
        try:
            try:
                # Never blocking: a process left over from an earlier attempt (the job, or a
                # daemon it started, inherited the lock) can hold it for any length of time.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.release()
                return self._pass_over(name, src, path, job_id)
            st = os.fstat(fd)
            # The claim's age starts now (rename keeps the old mtime). Best effort: a file we
            # may not touch keeps its mtime as the age.
            try:  # noqa: SIM105 - contextlib.suppress costs more than the rest of this line
                os.utime(fd)
            except OSError:
                pass
            return self._admit(
                job_id=job_id,
                path=path,
                claimed_name=claimed_name,
                owner=owner,
                lock=lock,
                data=_read_all(fd, st.st_size),
                written=st.st_mtime,
            )
        except BaseException as exc:
            if lock.held:
                # Never strand a claim on an unexpected error: put the job back.
                with contextlib.suppress(OSError):
                    fsops.rename_noreplace(path, src)
                lock.release()
            if isinstance(exc, OSError):
                raise QueueError(
                    f"{exc.filename or path}: cannot claim job {job_id} ({exc.strerror or exc})",
                    "check free space and permissions in the queue directory (`lanekit doctor`)",
                ) from exc
            raise

    def _pass_over(self, name: str, src: str, path: str, job_id: str) -> Dropped:
        """The file's lock is held by someone else: put it back in queue/ and skip it in this
        claimer, silently, like a lost race (a recoverer holding it for an instant is one
        too). If a copy of the id took its place in queue/ meanwhile, ours is the duplicate."""
        self._skip.add(name)
        try:
            fsops.rename_noreplace(path, src)
        except FileExistsError:
            detail = f"duplicate: another copy of job {job_id} is already at {src}"
            target = self.queue._to_failed(path, job_id, detail)
            return Dropped(job_id, DropReason.DUPLICATE, detail, Path(target))
        raise _LostRaceError

    def _admit(
        self,
        *,
        job_id: str,
        path: str,
        claimed_name: str,
        owner: str,
        lock: ClaimLock,
        data: bytes,
        written: float,
    ) -> Claim | Dropped:
        queue = self.queue
        now = time.time()
        problem = _id_problem(job_id)
        if problem is not None:
            detail = f"job id {job_id!r} {problem}"
            return self._drop(
                job_id, path, lock, DropReason.INVALID_ID, detail=detail, prev=None, now=now
            )
        try:
            prev = queue.store.read(job_id)
        except RecordError as exc:
            return self._drop(
                job_id,
                path,
                lock,
                DropReason.RECORD_UNREADABLE,
                detail=exc.message,
                prev=None,
                now=now,
            )
        if prev is None and queue.store.succeeded(job_id, prev):
            detail = f"job {job_id} succeeded before its record was purged (records/.guard/)"
            return self._drop(
                job_id, path, lock, DropReason.ALREADY_SUCCEEDED, detail=detail, prev=prev, now=now
            )
        if prev is not None and prev.state is JobState.SUCCEEDED:
            detail = f"record {queue.store.path(job_id)} says succeeded"
            return self._drop(
                job_id, path, lock, DropReason.ALREADY_SUCCEEDED, detail=detail, prev=prev, now=now
            )
        if prev is None or prev.state is JobState.RUNNING:
            # No record, or one a settle could not finish (see Queue._done_file): done/ decides.
            # Never on the common path, where the record says queued.
            done = queue._done_file(job_id)
            if done is not None:
                detail = f"{done} shows it succeeded"
                return self._drop(
                    job_id,
                    path,
                    lock,
                    DropReason.ALREADY_SUCCEEDED,
                    detail=detail,
                    prev=prev,
                    now=now,
                )
        payload = payload_problem(data)
        if payload is not None:
            detail = f"job file is {payload}"
            return self._drop(
                job_id, path, lock, DropReason.CORRUPT, detail=detail, prev=prev, now=now
            )
        if prev is not None and prev.state is JobState.FAILED:
            # A failed record is the end of the id's earlier life (a failed job's file is in
            # failed/, so this copy was enqueued again): a new life, with all its attempts.
            prev = None
        if prev is not None and prev.state is JobState.RUNNING:
            other = self._other_claim(job_id, claimed_name)
            if other is not None:
                detail = f"another copy of job {job_id} is running ({other})"
                return self._drop(
                    job_id, path, lock, DropReason.DUPLICATE, detail=detail, prev=prev, now=now
                )
        # The record with what carries over from the previous one (records.Record.carry_over),
        # built in one step: this runs for every job.
        lane = self.lane
        if prev is None or not prev.queued_at:
            born = _id_time(job_id)
            queued_at = iso_utc(written if born is None else born)
        else:
            queued_at = prev.queued_at
        if prev is not None:
            if lane is None:
                lane = prev.lane
            attempts = prev.attempts + 1
        else:
            attempts = 1
        record = Record(job_id, JobState.RUNNING, attempts, queued_at, iso_utc(now), lane)
        # Not fsynced even on a durable queue: losing it to a power cut only loses the count
        # of the attempt that was cut short; the settling record that follows is durable.
        queue.store.write(record, durable=False)
        return Claim(job_id, queue.claimed / claimed_name, attempts, owner, record, lock, path)

    def _other_claim(self, job_id: str, ours: str) -> str | None:
        for name in _job_names(self.queue._claimed):
            if name != ours and name[:-5].rpartition(".")[0] == job_id:
                return f"{self.queue._claimed}/{name}"
        return None

    def _drop(
        self,
        job_id: str,
        path: str,
        lock: ClaimLock,
        reason: DropReason,
        *,
        detail: str,
        prev: Record | None,
        now: float,
    ) -> Dropped:
        queue = self.queue
        try:
            if reason is DropReason.ALREADY_SUCCEEDED:
                # Kept under its claimed name: done/ already holds the run that succeeded.
                target = f"{queue._done_dir(now)}/{os.path.basename(path)}"
                _rename_into(path, target)
                if prev is None or prev.state is not JobState.SUCCEEDED:
                    # Finish what the success could not write (best effort: done/ stays proof).
                    stamp = iso_utc(now)
                    done = Record(job_id, JobState.SUCCEEDED, 0, stamp, stamp)
                    with contextlib.suppress(OSError):
                        queue.store.write(done.carry_over(prev))
            else:
                # Only a corrupt job's record is ours to change: a duplicate's belongs to the
                # copy that runs, an unreadable one stays for inspection, an invalid id has none.
                if reason is DropReason.CORRUPT:
                    queue._write_failed_record(job_id, prev, detail, now)
                # An id with an owner's tail is renamed on its way (`~` is in no id): under its
                # own name it would read as another id in failed/ (see _owner_tail_problem).
                name = (
                    f"{job_id[:160]}~{os.urandom(4).hex()}"
                    if reason is DropReason.INVALID_ID and _owner_tail_problem(job_id)
                    else job_id
                )
                target = queue._to_failed(path, name, detail)
        finally:
            lock.release()
        return Dropped(job_id, reason, detail, Path(target))

    def _refuse_file(self, job_id: str, path: str, detail: str) -> Dropped:
        """A claimed name that is no job file (or not one lanekit may read): to failed/ with
        the reason. Its record says failed unless it says succeeded (the guard stays) or cannot
        be read (kept for inspection); an invalid id has no record to write."""
        queue = self.queue
        now = time.time()
        if _id_problem(job_id) is None:
            try:
                prev = queue.store.read(job_id)
            except RecordError:
                pass
            else:
                if prev is None or prev.state is not JobState.SUCCEEDED:
                    with contextlib.suppress(OSError):
                        queue._write_failed_record(job_id, prev, detail, now)
        target = queue._to_failed(path, job_id, detail)
        return Dropped(job_id, DropReason.UNREADABLE, detail, Path(target))

    def _refuse_unclaimable(self, src: str, job_id: str, name: str) -> Dropped:
        """A name too long to carry an owner: straight to failed/ (a rename, so one mover wins),
        under a shortened name so that its .error fits beside it."""
        short = f"{job_id[:160]}~{os.urandom(4).hex()}"
        detail = (
            f"job id is too long to claim ({len(job_id)} characters, at most {MAX_ID_LENGTH}); "
            f"the file was {name}"
        )
        try:
            target = self.queue._to_failed(src, short, detail)
        except FileNotFoundError:
            raise _LostRaceError from None
        self._skip.add(name)
        return Dropped(job_id, DropReason.INVALID_ID, detail, Path(target))


def _read_all(fd: int, size: int) -> bytes:
    """The whole file: `size` (from fstat) sizes the first read, reads go on until EOF."""
    data = os.read(fd, size + 1)
    if not data:
        return data
    chunks = [data]
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return data if len(chunks) == 1 else b"".join(chunks)


def _local_owner_gone(owner: Owner) -> RecoverReason | None:
    """Why a claim's owner on this host is gone (dead, or its pid reused), or None while it may
    still be alive (alive, or not knowable: never recover on a guess)."""
    alive = procinfo.liveness(owner.pid, owner.token)
    if alive in {procinfo.Liveness.ALIVE, procinfo.Liveness.UNKNOWN}:
        return None
    return RecoverReason.OWNER_DEAD if alive is procinfo.Liveness.DEAD else RecoverReason.PID_REUSED
