"""Job ids and claim owners, whatever backend keeps the jobs: the grammar of an id (a
security boundary: ids become file names in the directory queue), how a generated id sorts by
age, the owner tag `<hosttag>-<pid>-<start token>` of a process that claims, and how a job
file's name carries them (`<id>.json`, `<id>.<owner>.json`).

Builtin imports only (os, time): a single `lanekit enqueue` makes an id here, and its start-up
is a benchmark figure (lanekit.jobs.add). That is why Owner is a plain class with slots rather
than a frozen dataclass, and the error class is imported only when an id is refused."""

from __future__ import annotations

import os
import time

MAX_ID_LENGTH = 128
_ID_CHARS_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_ID_CHARS = frozenset(_ID_CHARS_TEXT)
_ID_HINT = (
    "ids become file names: use letters, digits, '.', '_' and '-' (at most 128), "
    "not starting with '.' and not ending in '.<8 hex>-<digits>-<digits>'"
)


def validate_job_id(job_id: str) -> str:
    """Return `job_id` if it is a safe file name, else raise UsageError saying why.

    Ids become file names in several directories, so this is a security boundary: no path
    separators, no `..`, no hidden files, no NUL, nothing longer than 128 characters.
    """
    problem = id_problem(job_id)
    if problem is not None:
        from lanekit.errors import UsageError

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


class Owner:
    """Who holds a claim: `<hosttag>-<pid>-<start token>`, the middle of a claimed file's name.
    Immutable, compared and hashed by value."""

    __slots__ = ("_host", "_pid", "_token")

    def __init__(self, host: str, pid: int, token: str) -> None:
        self._host = host
        self._pid = pid
        self._token = token

    @property
    def host(self) -> str:
        """The machine's tag (8 hex digits: lanekit.system.procinfo.hosttag)."""
        return self._host

    @property
    def pid(self) -> int:
        """The claiming process."""
        return self._pid

    @property
    def token(self) -> str:
        """The claiming process's start token (a reused pid has another)."""
        return self._token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Owner) and (other.host, other.pid, other.token) == (
            self._host,
            self._pid,
            self._token,
        )

    def __hash__(self) -> int:
        return hash((self._host, self._pid, self._token))

    def __repr__(self) -> str:
        return f"Owner(host={self._host!r}, pid={self._pid!r}, token={self._token!r})"

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
        from lanekit.system import procinfo

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


def is_job_name(name: str) -> bool:
    """A job file's name (`*.json`, not hidden): what every listing of a queue dir keeps."""
    return name.endswith(".json") and name[:1] != "."
