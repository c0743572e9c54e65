"""Job status records (records/<id>.json) and the re-execution guard.

One record file per job. A job whose record says `succeeded` is never run again, which is what
makes enqueueing the same id twice harmless.

The file is a short log: each line is a whole record, and the record is the last complete
line (one that ends in a newline). Every writer replaces the file atomically with a single
line, except the two lines each claim adds: its `running` line (`RecordStore.mark_running`: the
attempt it starts, on the descriptor the claim read the record through) and its settle's
(`RecordStore.settle`: complete, fail, release; on that same descriptor, kept open by the claim,
while the record's name still is that file). Both are appended, because creating a file is
what a job's record write cost (the inode: ~35 us on this machine's ext4, up to ~900 us in the
minutes after many deletions, docs/benchmarks.md; an append into the file's one block allocates
nothing). Neither appends to a file that would outgrow one block (FILE_LIMIT) or whose last
line was cut short: the file is replaced then (atomically: the `running` line stays until the
outcome replaces it), so a file holds at most a few attempts' lines. Reading:
- a last line without its newline is a write cut short (a crash mid-append) and is passed
  over when a complete line precedes it; alone, it is unreadable, as any torn record;
- a success is never rolled back by a later line: if an earlier line says `succeeded`, the
  record is that line (nothing is appended after a success; the guard refuses to run it);
- lines before the last complete one are otherwise not read.

Purging (`lanekit purge`, retention) removes old records, but not the guard: the ids of the
succeeded jobs whose records it removes go into a compact index, records/.guard/<UTC day>.ids
(one id per line, one file per day of purging), which `RecordStore.succeeded` consults when a
job has no record. Index files are dropped only once they are older than the queue's
`keep_done`, so a succeeded id stays refused for at least twice `keep_done` after it finished.

Reading a line is strict: a duplicate key or bytes after the JSON value make the record
unreadable (RecordError naming the file), never "last key wins". A torn write followed by a
newer one on the same line reads as `{"state":"succeeded",...}{"state":"running",...}`;
accepting it would roll a finished job back from the reading side, the one place the guard
cannot defend.

Carry-over (seed 003): each new record keeps `attempts` and `queued_at` from the previous one;
`state`, `error` and `updated_at` describe this event only; `lane` is kept when none is given.
"""

# ruff: noqa: PTH108, PTH208
# (str paths and os.* on purpose: records are read and written on the claim path)
from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import time
from dataclasses import dataclass
from enum import StrEnum
from json import JSONDecodeError, JSONDecoder
from json.decoder import WHITESPACE  # type: ignore[attr-defined]  # not in typeshed
from json.encoder import encode_basestring_ascii as _json_str
from json.scanner import make_scanner
from pathlib import Path

from lanekit import fsops
from lanekit.errors import LanekitError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
"""Version history: 1 - first version (schema_version, job_id, state, attempts, queued_at,
updated_at, lane, error)."""


GUARD_DIR = ".guard"
"""records/.guard/: the purge index of the re-execution guard (see the module docstring)."""


class IdCaseCollisionError(UsageError):
    """Two job ids that differ only in case name one file on a case-insensitive volume."""


class JobState(StrEnum):
    """A job's lifecycle state; also the directory it lives in (queued = queue/ or delayed/)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class RecordError(LanekitError):
    """A job record cannot be trusted: not strict JSON, or not a valid record."""


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # rare: find the key that came twice, to name it
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


MAX_INT_DIGITS = 4300
"""Python's default int_max_str_digits: a longer integer in a record is refused, worded here."""


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _int_unread(text: str) -> int:
    return 0


_strict = JSONDecoder(
    object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant, parse_int=_bounded_int
)
# typeshed's stub asks for a make_scanner; any object carrying a decoder's hooks will do.
_scan = make_scanner(_strict)  # type: ignore[arg-type]
"""One strict scanner for every parse (json.loads with hooks builds a decoder per call)."""
_check = JSONDecoder(
    object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant, parse_int=_int_unread
)
_scan_check = make_scanner(_check)  # type: ignore[arg-type]
"""The same strictness for validating JSON whose values nobody here reads (job payloads):
integers are not converted, so a 5,000-digit integer, which is valid JSON, is accepted."""
_space = WHITESPACE.match
"""JSON's whitespace, json's own compiled pattern; it matches everywhere, if only emptily."""


def _after_space(text: str, at: int) -> int:
    match = _space(text, at)
    return at if match is None else match.end()


class NestedTooDeepError(ValueError):
    """JSON nested deeper than the parser recurses: valid JSON, but lanekit will not read it."""


def strict_loads(data: bytes | str, *, values: bool = True) -> Any:
    """Parse JSON, rejecting duplicate keys, NaN/Infinity, non-UTF-8 bytes and trailing bytes.

    Raises ValueError (json.JSONDecodeError and UnicodeDecodeError are ValueErrors) with the
    reason. Whitespace after the value is allowed; anything else is "Extra data". Nesting too
    deep for the parser (it recurses) is a ValueError too, never a RecursionError. Integers
    longer than MAX_INT_DIGITS are refused, unless `values=False` (only validating: integers
    are then not converted and every one reads as 0).
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    # json.loads' own steps (BOM check, JSONDecoder.decode and raw_decode), without its
    # per-call decoder and wrappers: this parses every job file and record on the claim path.
    if text.startswith("\ufeff"):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value, end = (_scan if values else _scan_check)(text, _after_space(text, 0))
    except StopIteration as err:
        raise JSONDecodeError("Expecting value", text, err.value) from None
    except RecursionError:
        # The C scanner guards its recursion and unwinds cleanly; the depth it reaches depends
        # on the interpreter's recursion limit, so no exact figure is promised.
        raise NestedTooDeepError("nested too deeply (arrays or objects in each other)") from None
    end = _after_space(text, end)
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    return value


_iso_second: tuple[int, str] = (-1, "")
"""The last whole second iso_utc formatted: records written in one second share the prefix."""


def iso_utc(epoch: float) -> str:
    """`2026-07-26T12:00:00.123Z` (UTC, milliseconds)."""
    global _iso_second  # noqa: PLW0603 - a one-entry cache
    seconds = int(epoch)
    millis = int((epoch - seconds) * 1000)
    cached = _iso_second
    if cached[0] != seconds:
        cached = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
        _iso_second = cached
    return f"{cached[1]}.{millis:03d}Z"


_FIELDS = ("schema_version", "job_id", "state", "attempts", "queued_at", "updated_at")
_OPTIONAL = ("lane", "error")
_STATES: dict[object, JobState] = {state.value: state for state in JobState}
_SUCCEEDED_LINE = b'"succeeded"'
"""Found in every line that may say succeeded (a line with escapes still has the value so)."""

FILE_LIMIT = 4096
"""A settle appends its line only while the record file stays within this many bytes (one
block on APFS and ext4): past it, the file is replaced by the one line."""


@functools.cache
def _canonical() -> re.Pattern[str]:
    """The exact layout `Record.to_bytes` writes, when no string needs an escape. A record that
    matches it is one object with eight distinct keys and nothing but whitespace after it, so
    it reads the same as through the strict parser, in about half the time (one record is read
    per claim); every other record (other spacing or order, escapes, damage) goes through the
    parser. Compiled on the first read, not at import: `lanekit status` reads no record."""
    return re.compile(
        (
            r'\{"schema_version": ([1-9][0-9]{0,8}), "job_id": STR, "state": "([a-z]+)", '
            r'"attempts": (0|[1-9][0-9]{0,17}), "queued_at": STR, "updated_at": STR, '
            r'"lane": (?:null|STR), "error": (?:null|STR)\}[ \t\n\r]*'
        ).replace("STR", r'"([ !#-\[\]-~]*)"')  # a JSON string of printable ASCII, no escapes
    )


@dataclass(frozen=True, slots=True)
class Record:
    """The status of one job, as stored in records/<id>.json."""

    job_id: str
    state: JobState
    attempts: int
    """How many times the job has been started (claimed); a crash mid-run counts."""
    queued_at: str
    """When the job was first queued (ISO 8601 UTC); survives retries."""
    updated_at: str
    """When this record was written."""
    lane: str | None = None
    """The lane that last claimed the job (None until one does)."""
    error: str | None = None
    """Why the last attempt failed or was requeued; None after a success."""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in a fixed order."""
        return {
            "schema_version": self.schema_version,
            "job_id": self.job_id,
            "state": str(self.state),
            "attempts": self.attempts,
            "queued_at": self.queued_at,
            "updated_at": self.updated_at,
            "lane": self.lane,
            "error": self.error,
        }

    def to_bytes(self) -> bytes:
        """What is written to disk: one line of JSON, byte for byte what `json.dumps` makes of
        `to_dict()` (formatted here, on the claim path, without the encoder's generality)."""
        lane = "null" if self.lane is None else _json_str(self.lane)
        error = "null" if self.error is None else _json_str(self.error)
        return (
            f'{{"schema_version": {int(self.schema_version)}, '
            f'"job_id": {_json_str(self.job_id)}, "state": {_json_str(self.state)}, '
            f'"attempts": {int(self.attempts)}, "queued_at": {_json_str(self.queued_at)}, '
            f'"updated_at": {_json_str(self.updated_at)}, "lane": {lane}, "error": {error}}}\n'
        ).encode("ascii")

    @classmethod
    def from_dict(cls, data: object, source: str) -> Record:
        """Validate a parsed record; RecordError names `source` and the first problem."""
        if not isinstance(data, dict):
            raise RecordError(
                f"{source}: record is a JSON {type(data).__name__}, not an object",
                "remove or repair the record file",
            )
        missing = [key for key in _FIELDS if key not in data]
        if missing:
            raise RecordError(
                f"{source}: record lacks {', '.join(missing)}", "remove or repair the record file"
            )
        version = data["schema_version"]
        if type(version) is not int or version < 1:
            raise RecordError(
                f"{source}: schema_version must be a positive integer, got {version!r}",
                "remove or repair the record file",
            )
        if version > SCHEMA_VERSION:
            raise RecordError(
                f"{source}: record schema {version} is newer than this lanekit "
                f"(knows {SCHEMA_VERSION})",
                "upgrade lanekit",
            )
        for key in ("job_id", "queued_at", "updated_at"):
            if not isinstance(data[key], str):
                raise RecordError(
                    f"{source}: {key} must be a string, got {data[key]!r}",
                    "remove or repair the record file",
                )
        for key in _OPTIONAL:
            if data.get(key) is not None and not isinstance(data[key], str):
                raise RecordError(
                    f"{source}: {key} must be a string or null, got {data[key]!r}",
                    "remove or repair the record file",
                )
        attempts = data["attempts"]
        if type(attempts) is not int or attempts < 0:
            raise RecordError(
                f"{source}: attempts must be a non-negative integer, got {attempts!r}",
                "remove or repair the record file",
            )
        try:
            state = JobState(data["state"])
        except ValueError:
            allowed = "/".join(s.value for s in JobState)
            raise RecordError(
                f"{source}: state must be one of {allowed}, got {data['state']!r}",
                "remove or repair the record file",
            ) from None
        return cls(
            job_id=data["job_id"],
            state=state,
            attempts=attempts,
            queued_at=data["queued_at"],
            updated_at=data["updated_at"],
            lane=data.get("lane"),
            error=data.get("error"),
            schema_version=version,
        )

    @classmethod
    def from_bytes(cls, data: bytes, source: str) -> Record:
        """Parse a record file's bytes strictly (see the module docstring)."""
        match = _canonical().fullmatch(data.decode("ascii", "replace"))
        if match is not None:
            version, job_id, state, attempts, queued_at, updated_at, lane, error = match.groups()
            known = _STATES.get(state)
            if known is not None and int(version) <= SCHEMA_VERSION:
                return cls(
                    job_id, known, int(attempts), queued_at, updated_at, lane, error, int(version)
                )
        try:
            parsed = strict_loads(data)
        except ValueError as exc:
            raise RecordError(
                f"{source}: record is not strict JSON ({exc})",
                "remove or repair the record file; lanekit will not guess which value is right",
            ) from None
        return cls.from_dict(parsed, source)

    @classmethod
    def from_file(cls, data: bytes, source: str) -> Record:
        """The record a record file's bytes hold: its last complete line, unless an earlier
        line says succeeded (see the module docstring). A file of one line, the common case,
        is one from_bytes."""
        last = data.find(b"\n")
        if last < 0 or last == len(data) - 1 or not data[last:].strip():
            return cls.from_bytes(data, source)  # one line, trailing whitespace allowed
        head, _, tail = data.rpartition(b"\n")
        lines = [line for line in head.split(b"\n") if line.strip()]
        record = None
        if tail.strip():
            try:
                record = cls.from_bytes(tail, source)  # complete, just without its newline
            except RecordError:
                if not lines:
                    raise
        if record is None:
            record = cls.from_bytes(lines.pop(), source)
        if record.state is not JobState.SUCCEEDED and _SUCCEEDED_LINE in head:
            for line in reversed(lines):
                if _SUCCEEDED_LINE in line:
                    earlier = cls.from_bytes(line, source)
                    if earlier.state is JobState.SUCCEEDED:
                        return earlier
        return record

    def carry_over(self, prev: Record | None) -> Record:
        """This record with what survives from `prev`: attempts, queued_at, and lane if unset."""
        if prev is None:
            return self
        return Record(
            self.job_id,
            self.state,
            prev.attempts,
            prev.queued_at or self.queued_at,
            self.updated_at,
            self.lane if self.lane is not None else prev.lane,
            self.error,
            self.schema_version,
        )


_tmp_serial = itertools.count()
_pid = os.getpid()
_rng = int.from_bytes(os.urandom(8), "little") | 1


def _after_fork() -> None:
    """A forked child is another process: its own pid, and random names apart from its
    parent's (the serial may go on: the pid tells the two apart)."""
    global _pid, _rng  # noqa: PLW0603 - per-process constants, renewed in a fork's child
    _pid = os.getpid()
    _rng = int.from_bytes(os.urandom(8), "little") | 1


os.register_at_fork(after_in_child=_after_fork)


def tmp_suffix() -> str:
    """`<pid>.<serial>.<random>`: unique among this process's temp files, and unlike the names
    a SIGKILLed process with the same pid left behind (its serials also started at 0).

    No syscall per name (a claim and its settle make two): the pid is known since start (or
    the fork), the random part is a xorshift64 seeded from os.urandom once per process. The
    names need not be secret: tmp/ is 0700 and every temp file is created O_EXCL."""
    global _rng  # noqa: PLW0603 - see _after_fork
    x = _rng
    x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 7
    x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
    _rng = x
    return f"{_pid}.{next(_tmp_serial)}.{x & 0xFFFFFFFF:08x}"


@dataclass(slots=True)
class OpenRecord:
    """A record file a claim keeps open from its read until its settle (RecordStore.read_open):
    the descriptor (-1: no file, or one it may not write), the file's size, whether what was
    read ends in a whole line (an append may follow), and its inode (which file the name held:
    the settle appends through the descriptor only while the name still is that file)."""

    fd: int
    size: int
    whole: bool
    ino: int = 0

    def append(self, line: bytes, *, durable: bool) -> bool:
        """Append `line` on the descriptor if what it holds ends in a whole line and stays
        within FILE_LIMIT with it (fsynced if `durable`: the append is its own commit point);
        False, with nothing written, otherwise (no descriptor, a line cut short, too long)."""
        if self.fd < 0 or not self.whole or self.size + len(line) > FILE_LIMIT:
            return False
        fsops.write_all(self.fd, line)
        if durable:
            fsops.full_fsync(self.fd)
        self.size += len(line)
        return True

    def close(self) -> None:
        """Close the descriptor (once; later calls do nothing)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


RecordIdentity = tuple[int, int, int, int]
"""A record file's inode, size, mtime and ctime (ns): RecordStore.identity. The size is what
tells an append apart: ext4 takes file times from a clock that ticks every few milliseconds."""


class RecordStore:
    """records/<id>.json: read strictly, written atomically (durably unless `durable=False`).

    `tmp_dir` holds the temporary files of atomic writes (the queue passes its tmp/, on the same
    filesystem); by default they are dot-files in the records directory itself.

    `write` replaces a record; `stage` + `create` put one in place only where none exists, for
    writers that must never undo a newer state (enqueue: the record of an id that is running,
    or has succeeded, belongs to that run).
    """

    def __init__(self, dir: Path, *, durable: bool = True, tmp_dir: Path | None = None) -> None:
        self.dir = Path(dir)
        self.durable = durable
        self._dir = str(self.dir)
        self._tmp = str(tmp_dir) if tmp_dir is not None else self._dir

    @property
    def dir_path(self) -> str:
        """The records directory as a str (what fsops takes)."""
        return self._dir

    def path(self, job_id: str) -> Path:
        """Where the record of `job_id` lives."""
        return self.dir / f"{job_id}.json"

    def read(self, job_id: str) -> Record | None:
        """The record of `job_id`, or None if there is none. RecordError if it is unreadable."""
        return self.read_identified(job_id)[0]

    def identity(self, job_id: str) -> RecordIdentity | None:
        """Which file is the record of `job_id` now, and how long (None: there is none). Every
        write puts a new file in place or appends to it, so an unchanged identity means an
        unchanged record."""
        try:
            st = os.lstat(f"{self._dir}/{job_id}.json")
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read_identified(self, job_id: str) -> tuple[Record | None, RecordIdentity | None]:
        """read() and the identity of the file it read (see identity), from one fstat."""
        record, seen, held = self._read(job_id, append=False)
        held.close()
        return record, seen

    def read_open(self, job_id: str) -> tuple[Record | None, RecordIdentity | None, OpenRecord]:
        """read_identified(), with the file kept open for appending (a claim's: it adds its
        `running` line with `mark_running`, on the descriptor it read through). Close it."""
        return self._read(job_id, append=True)

    def _read(
        self, job_id: str, *, append: bool
    ) -> tuple[Record | None, RecordIdentity | None, OpenRecord]:
        path = f"{self._dir}/{job_id}.json"
        try:
            fd, st = fsops.open_regular_stat(path, append=append)
        except FileNotFoundError:
            return None, None, OpenRecord(-1, 0, whole=False)
        except fsops.NotRegularFileError as exc:
            raise RecordError(
                f"{path}: the record {exc.strerror}",
                f"move {path} out of the queue's records/ directory",
            ) from None
        except OSError as exc:
            if append:
                # Not writable (someone's chmod), a directory (EISDIR)...: read it as any
                # reader does, which says what it is; a `running` line then replaces it.
                record, seen, _ = self._read(job_id, append=False)
                return record, seen, OpenRecord(-1, 0, whole=False)
            raise RecordError(
                f"{path}: cannot read the record ({exc.strerror})",
                "check the permissions of the queue's records/ directory",
            ) from None
        held = OpenRecord(fd, st.st_size, whole=False, ino=st.st_ino)
        try:
            # One read: a regular file's read comes back short of the size+1 asked for only
            # at its end. Longer means it grew since the fstat: read on to the end.
            data = os.read(fd, st.st_size + 1)
            if len(data) > st.st_size:
                chunks = [data]
                while chunk := os.read(fd, 65536):
                    chunks.append(chunk)
                data = b"".join(chunks)
            record = self._parsed(Record.from_file(data, path), job_id, path)
        except OSError as exc:
            held.close()
            raise RecordError(
                f"{path}: cannot read the record ({exc.strerror})",
                "check the queue's filesystem (`lanekit doctor`)",
            ) from None
        except BaseException:
            held.close()
            raise
        held.whole = len(data) == st.st_size and data[-1:] == b"\n"
        return record, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), held

    @staticmethod
    def _parsed(record: Record, job_id: str, path: str) -> Record:
        """`record`, read from `path` for `job_id`, if it is that job's."""
        if record.job_id != job_id and record.job_id.casefold() == job_id.casefold():
            # A case-insensitive volume (the default APFS) opened the other id's file.
            raise IdCaseCollisionError(
                f"job id {job_id!r} differs from job {record.job_id!r} only in case, and this "
                f"volume ignores case: both are {path}",
                "give the new job an id that differs in more than case",
            )
        if record.job_id != job_id:
            raise RecordError(
                f"{path}: record belongs to job {record.job_id!r}, not {job_id!r}",
                "remove or repair the record file",
            )
        return record

    def mark_running(self, held: OpenRecord, record: Record) -> None:
        """Add a claim's `running` record (the attempt it starts, its lane): one line appended
        on the descriptor `read_open` read the file through, whose identity the claim has
        checked since (nobody else writes the record of a marked id); else, where there was no
        record, or the line would not fit in FILE_LIMIT or follow a whole line, the file is
        replaced. Not fsynced even on a durable queue: a power cut then only loses the count of
        the attempt it cut short (lanekit.queue.mark)."""
        if held.append(record.to_bytes(), durable=False):
            return
        held.close()  # the file it read is replaced: the settle goes by the name
        self.write(record, durable=False)

    def write(self, record: Record, *, durable: bool | None = None) -> None:
        """Replace the record of `record.job_id` atomically; `durable` overrides the store's
        setting for one write (a claim's `running` record, where it cannot be appended, is
        not fsynced)."""
        fsops.replace_file(
            f"{self._dir}/{record.job_id}.json",
            record.to_bytes(),
            tmp=f"{self._tmp}/.rec.{tmp_suffix()}",
            durable=self.durable if durable is None else durable,
        )

    def settle(self, record: Record, held: OpenRecord | None = None) -> None:
        """Write the record that settles a claim this process holds the running mark of
        (lanekit.queue.mark): appended to the record file (see the module docstring), else
        (the file would outgrow FILE_LIMIT, or ends in a line cut short) replacing it
        atomically, so that the claim's `running` line is there until the outcome is: cut
        short anywhere, the attempt still counts.

        `held`: the claim's record, open since its `running` line (mark_running). The line is
        appended through it while the record's name still is that file (one lstat: a hand's
        `lanekit retry` of a failed copy of the id may have replaced it meanwhile); else by
        the name, as without it."""
        line = record.to_bytes()
        if held is not None and held.fd >= 0 and self._still(held, record):
            if not held.append(line, durable=self.durable):
                self.write(record)  # a line cut short, or the block is full: replaced
            return
        if fsops.append_line(
            f"{self._dir}/{record.job_id}.json", line, limit=FILE_LIMIT, durable=self.durable
        ):
            return
        self.write(record)

    def _still(self, held: OpenRecord, record: Record) -> bool:
        """Whether the record's name is still the file `held` has open."""
        try:
            return os.lstat(f"{self._dir}/{record.job_id}.json").st_ino == held.ino
        except OSError:
            return False

    def stage(self, record: Record, *, durable: bool | None = None) -> str:
        """Write `record` to a fresh temp file for `create`; returns its path."""
        tmp = f"{self._tmp}/.rec.{tmp_suffix()}"
        fsops.write_new(
            tmp, record.to_bytes(), durable=self.durable if durable is None else durable
        )
        return tmp

    def create(self, staged: str, job_id: str, *, durable: bool | None = None) -> bool:
        """Move the staged record of `job_id` into place unless the job already has a record;
        True if it did. An existing record is left alone and the staged file removed: a
        no-replace rename decides, so a concurrent writer's record is never overwritten."""
        try:
            fsops.rename_noreplace(staged, f"{self._dir}/{job_id}.json")
        except FileExistsError:
            os.unlink(staged)
            return False
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staged)
            raise
        if self.durable if durable is None else durable:
            fsops.fsync_dir(self._dir)
        return True

    # -- the guard beyond purged records ---------------------------------------------------

    @property
    def guard_dir(self) -> Path:
        """records/.guard/: the ids of succeeded jobs whose records were purged."""
        return self.dir / GUARD_DIR

    def succeeded(self, job_id: str, record: Record | None) -> bool:
        """The re-execution guard: True when `record` (the job's, as read) says succeeded, or
        when there is no record and the purge index lists the id. The index is read only for
        a job without a record (one enqueued by a producer outside lanekit, or purged)."""
        if record is not None:
            return record.state is JobState.SUCCEEDED
        directory = f"{self._dir}/{GUARD_DIR}"
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return False
        needle = job_id.encode("ascii", "replace")
        for name in names:
            if not name.endswith(".ids") or name[0] == ".":
                continue
            try:
                with open(f"{directory}/{name}", "rb") as file:  # noqa: PTH123
                    if needle in file.read().split(b"\n"):
                        return True
            except FileNotFoundError:
                continue
        return False

    def remember_succeeded(self, job_ids: list[str], day: str) -> None:
        """Add `job_ids` to the index file of `day` (YYYY-MM-DD), atomically (the old file's
        ids plus these, sorted): call before their records are removed."""
        if not job_ids:
            return
        from lanekit.atomic import write_atomic  # purging only: off the fast path

        path = f"{self._dir}/{GUARD_DIR}/{day}.ids"
        try:
            with open(path, "rb") as file:  # noqa: PTH123
                known = set(file.read().decode("ascii", "replace").split())
        except FileNotFoundError:
            known = set()
        text = "".join(f"{job_id}\n" for job_id in sorted(known | set(job_ids)))
        # The temp file is .<day>.ids.<random>.tmp in .guard/ itself: succeeded() skips it.
        write_atomic(Path(path), text.encode("ascii"), durable=self.durable)

    def expire_guard(self, before_day: str) -> list[str]:
        """Remove index files of days before `before_day` (YYYY-MM-DD); their names."""
        directory = f"{self._dir}/{GUARD_DIR}"
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        gone = []
        for name in sorted(names):
            if name.endswith(".ids") and name[:-4] < before_day:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{directory}/{name}")
                    gone.append(name)
        return gone

    def remove(self, job_id: str) -> bool:
        """Delete the record of `job_id` (purging); False if there was none."""
        try:
            os.unlink(f"{self._dir}/{job_id}.json")
        except FileNotFoundError:
            return False
        return True

    def ids(self) -> list[str]:
        """Every job id that has a record (unordered)."""
        try:
            names = os.listdir(self._dir)
        except FileNotFoundError:
            return []
        return [name[:-5] for name in names if name.endswith(".json") and name[0] != "."]

    def succeeded_ids(self) -> set[str]:
        """Ids whose record says succeeded. Reads every record: for tools and tests, not runs.

        An unreadable record raises RecordError: it is not known to have succeeded.
        """
        result = set()
        for job_id in self.ids():
            record = self.read(job_id)
            if record is not None and record.state is JobState.SUCCEEDED:
                result.add(job_id)
        return result
