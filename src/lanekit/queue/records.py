"""Job status records (records/<id>.json): the Record, its states, and how its bytes read.

One record file per job (lanekit.queue.directory.recordstore reads and writes them, and keeps the
re-execution guard). A job whose record says `succeeded` is never run again, which is what
makes enqueueing the same id twice harmless.

The file is a short log: each line is a whole record, and the record is the last complete
line (one that ends in a newline). Reading (`Record.from_file`):
- a last line without its newline is a write cut short (a crash mid-append) and is passed
  over when a complete line precedes it; alone, it is unreadable, as any torn record;
- a success is never rolled back by a later line: if an earlier line says `succeeded`, the
  record is that line (nothing is appended after a success; the guard refuses to run it);
- lines before the last complete one are otherwise not read.

Reading a line is strict (lanekit.system.strictjson): a duplicate key or bytes after the JSON value
make the record unreadable (RecordError naming the file), never "last key wins". A torn write
followed by a newer one on the same line reads as `{"state":"succeeded",...}{"state":"running",
...}`; accepting it would roll a finished job back from the reading side, the one place the
guard cannot defend.

Carry-over (seed 003): each new record keeps `attempts` and `queued_at` from the previous one;
`state`, `error` and `updated_at` describe this event only; `lane` is kept when none is given.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum

from lanekit.errors import LanekitError
from lanekit.queue.recordline import record_line
from lanekit.state.schemas import RECORD_SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class JobState(StrEnum):
    """A job's lifecycle state; also the directory it lives in (queued = queue/ or delayed/)."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class ListedState(StrEnum):
    """What `lanekit jobs --state` filters on: a record's state, with the queued jobs that wait
    for their time (a retry's backoff, `enqueue --at`) apart as `delayed`."""

    QUEUED = "queued"
    DELAYED = "delayed"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    def page_filter(self) -> tuple[JobState, bool | None]:
        """The (state, delayed) JobQueue.page filters on for this choice."""
        if self is ListedState.DELAYED:
            return JobState.QUEUED, True
        if self is ListedState.QUEUED:
            return JobState.QUEUED, False
        return JobState(self.value), None


class RecordError(LanekitError):
    """A job record cannot be trusted: not strict JSON, or not a valid record."""


_FIELDS = ("schema_version", "job_id", "state", "attempts", "queued_at", "updated_at")
_OPTIONAL = ("lane", "error")
_STATES: dict[object, JobState] = {state.value: state for state in JobState}
_SUCCEEDED_LINE = b'"succeeded"'
"""Found in every line that may say succeeded (a line with escapes still has the value so)."""


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
    schema_version: int = RECORD_SCHEMA

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
        return record_line(
            self.job_id,
            self.state,
            self.attempts,
            self.queued_at,
            self.updated_at,
            self.lane,
            self.error,
            self.schema_version,
        )

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
        if version > RECORD_SCHEMA:
            raise RecordError(
                f"{source}: record schema {version} is newer than this lanekit "
                f"(knows {RECORD_SCHEMA})",
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
            if known is not None and int(version) <= RECORD_SCHEMA:
                return cls(
                    job_id, known, int(attempts), queued_at, updated_at, lane, error, int(version)
                )
        # Off the common path (and out of what a command's option completion imports).
        from lanekit.system.strictjson import strict_loads

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
