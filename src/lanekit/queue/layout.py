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

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from lanekit.errors import UsageError
from lanekit.system import procinfo

SUBDIRS = ("tmp", "queue", "claimed", "done", "failed", "delayed", "records", "logs")
"""Every directory of a queue; check() refuses the queue unless all are usable."""
MOVED_THROUGH = ("tmp", "queue", "claimed", "delayed", "done", "failed", "records")
"""The directories jobs and records are renamed between: the probe rename visits each."""

MAX_ID_LENGTH = 128
_ID_CHARS_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_ID_CHARS = frozenset(_ID_CHARS_TEXT)
_ID_HINT = (
    "ids become file names: use letters, digits, '.', '_' and '-' (at most 128), "
    "not starting with '.' and not ending in '.<8 hex>-<digits>-<digits>'"
)
TMP_PREFIXES = (".probe-", ".rec.", ".job.", ".error.", ".cancel.", ".mark.")
"""Names lanekit gives its temp files in tmp/ (see QueueState.tmp_name, RecordStore.write,
check)."""


def validate_job_id(job_id: str) -> str:
    """Return `job_id` if it is a safe file name, else raise UsageError saying why.

    Ids become file names in several directories, so this is a security boundary: no path
    separators, no `..`, no hidden files, no NUL, nothing longer than 128 characters.
    """
    problem = id_problem(job_id)
    if problem is not None:
        raise UsageError(f"job id {job_id!r} {problem}", _ID_HINT)
    return job_id


def id_problem(job_id: str) -> str | None:
    """Why `job_id` is no id lanekit accepts, or None when it is one."""
    if 0 < len(job_id) <= MAX_ID_LENGTH and job_id[0] != "." and not job_id.strip(_ID_CHARS_TEXT):
        # The common case, in one pass: stripping the id's characters leaves nothing. Generated
        # ids have no dot, so the owner-shape test below costs them nothing.
        return None if "." not in job_id else owner_tail_problem(job_id)
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


def owner_tail_problem(job_id: str) -> str | None:
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


def id_time(job_id: str) -> float | None:
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


_own: str | None = None


def _forget_owner() -> None:
    global _own  # noqa: PLW0603 - see own_owner
    _own = None


os.register_at_fork(after_in_child=_forget_owner)


def own_owner() -> str:
    """This process's owner tag, computed once (and again in a forked child, which is a
    different owner: no getpid per claim)."""
    global _own  # noqa: PLW0603 - a per-process constant, computed lazily
    if _own is None:
        pid = os.getpid()
        _own = f"{procinfo.hosttag()}-{pid}-{procinfo.self_token()}"
    return _own


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


def owned_id(name: str) -> str:
    """The job id of `<id>.json` or of a second copy kept as `<id>.<owner>.json`."""
    parsed = split_owned_name(name)
    return name[:-5] if parsed is None else parsed[0]


def job_id_of(name: str) -> str:
    """The id of the job in a file named `name`: `<id>.json`, or `<id>.<owner>.json` (ids may
    contain dots, `2026-09-17.report`); a file named otherwise is its own id."""
    return owned_id(name) if is_job_name(name) else name


def queued_name(job_id: str) -> str:
    """queue/<id>.json (also the name in failed/ and a done/ bucket)."""
    return f"{job_id}.json"


def claimed_name(job_id: str, owner: str) -> str:
    """claimed/<id>.<owner>.json: the claim and its owner are one rename."""
    return f"{job_id}.{owner}.json"


def delayed_name(job_id: str, not_before: int) -> str:
    """delayed/<id>.<not-before epoch>.json: a retry waiting out its backoff."""
    return f"{job_id}.{not_before}.json"


def error_name(job_file: str) -> str:
    """failed/<name>.json -> failed/<name>.error: why the job beside it failed."""
    return job_file[:-5] + ".error"


def is_job_name(name: str) -> bool:
    """A job file's name (`*.json`, not hidden): what every listing of a queue dir keeps."""
    return name.endswith(".json") and name[:1] != "."


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


@dataclass(frozen=True, slots=True)
class Mark:
    """What a previous version's running mark (a symlink) says: who holds the claim, which
    attempt it is, for which lane."""

    owner: str
    attempt: int
    lane: str | None = None

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
