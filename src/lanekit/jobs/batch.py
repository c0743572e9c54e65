"""`lanekit enqueue LANE --jsonl FILE|-`: many jobs in one process, one job per line.

A loop of `lanekit enqueue` pays an interpreter start per job; here the queue is opened once
and each line costs one enqueue (benchmark figure (f)). Each line stands alone: a good line is
enqueued (atomically, as a single enqueue is), a bad one is reported with its line number and
enqueues nothing, and the lines after it are still read. An id comes from the line's own field
named by `--id-field` when given and present; otherwise it is generated. When a job may first
run comes the same way: the line's `--at-field` (a TIME) or `--delay-field` (a DURATION) when
given and present, else `--at` / `--delay` for every line (lanekit.jobs.when), else at once. A
line longer than the queue's max_job_bytes is a bad line, read through without being held whole.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from lanekit.errors import ExitCode, LanekitError, UsageError

if TYPE_CHECKING:
    from lanekit.queue.protocol import JobQueue
    from lanekit.state.clock import Clock


@dataclass(frozen=True, slots=True)
class Timing:
    """When the jobs of a batch may first run: each line's `at_field` (a TIME) or
    `delay_field` (a DURATION) where present, else `not_before` (epoch seconds; None: at once),
    on `clock` (lanekit.jobs.when)."""

    clock: Clock
    not_before: float | None = None
    at_field: str | None = None
    delay_field: str | None = None


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that was not enqueued, and why."""

    line: int
    """1-based line number in the input."""
    message: str
    hint: str


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line over the queue's max_job_bytes: only its size, its bytes were read through."""

    size: int


@dataclass(frozen=True, slots=True)
class Batch:
    """What `enqueue --jsonl` did, line by line."""

    source: str
    """The input as messages name it (the file, or `stdin`)."""
    enqueued: tuple[tuple[int, str], ...]
    """(line number, job id) of every line enqueued, in input order."""
    bad: tuple[BadLine, ...]
    stopped: LanekitError | None = None
    """The queue became unusable (disk full, permissions): no line after `enqueued` was read."""

    @property
    def exit_code(self) -> ExitCode:
        """OK when every line was enqueued; FAILURE (1) when some lines were bad (the others
        are enqueued); the queue error's own code when it stopped the batch."""
        if self.stopped is not None:
            return self.stopped.exit_code
        return ExitCode.FAILURE if self.bad else ExitCode.OK


def enqueue_jsonl(
    queue: JobQueue,
    source: str,
    *,
    id_field: str | None = None,
    stdin: BinaryIO | None = None,
    timing: Timing | None = None,
) -> Batch:
    """Enqueue every line of FILE (or stdin for `-`). UsageError (exit 2, nothing enqueued)
    when the input cannot be opened."""
    limit = queue.max_job_bytes
    if source == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        lines = bounded_lines(stream, limit)
        return enqueue_lines(queue, lines, source="stdin", id_field=id_field, timing=timing)
    try:
        handle = Path(source).open("rb")  # noqa: SIM115 - closed below, after the lines are read
    except FileNotFoundError:
        raise UsageError(
            f"{source}: no such file", "give a JSON-lines file, or - to read the jobs from stdin"
        ) from None
    except OSError as exc:
        raise UsageError(f"{source}: cannot read ({exc.strerror})", "check the path") from None
    with handle:
        lines = bounded_lines(handle, limit)
        return enqueue_lines(queue, lines, source=source, id_field=id_field, timing=timing)


def bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes | LongLine]:
    """The lines of `stream`, none holding more than `limit` + 2 bytes in memory: a longer
    line (its job would be over max_job_bytes anyway) is read through in pieces and comes
    out as its LongLine, so a 100 MB line costs no 100 MB."""
    while line := stream.readline(limit + 2):
        if line.endswith(b"\n") or len(line) < limit + 2:
            yield line  # whole: at most limit + 1 bytes of job, enqueue judges it exactly
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = stream.readline(1 << 16)
            if not line:
                break
            size += len(line)
        yield LongLine(size - 1 if line.endswith(b"\n") else size)  # the job's, not its newline


def enqueue_lines(
    queue: JobQueue,
    lines: Iterable[bytes | LongLine],
    *,
    source: str,
    id_field: str | None = None,
    timing: Timing | None = None,
) -> Batch:
    """Enqueue each non-blank line (one JSON object each)."""
    from lanekit.queue.payload import too_large

    enqueued: list[tuple[int, str]] = []
    bad: list[BadLine] = []
    queue.check()  # an unusable queue is one error before any line is read
    for number, data in _numbered(lines):
        if isinstance(data, LongLine):
            refusal = too_large(data.size, queue.max_job_bytes)
            bad.append(BadLine(number, refusal.message, refusal.hint))
            continue
        try:
            fields = _fields(data, id_field, timing)
            job_id = _line_id(fields, id_field)
            when = _line_time(fields, timing)
            enqueued.append((number, queue.enqueue(data, job_id, not_before=when)))
        except UsageError as exc:  # this line's fault: report it, go on
            bad.append(BadLine(number, exc.message, exc.hint))
        except LanekitError as exc:  # the queue's: stop, keep what was done
            return Batch(source, tuple(enqueued), tuple(bad), exc)
    return Batch(source, tuple(enqueued), tuple(bad))


def _numbered(lines: Iterable[bytes | LongLine]) -> Iterator[tuple[int, bytes | LongLine]]:
    for number, raw in enumerate(lines, start=1):
        data = raw if isinstance(raw, LongLine) else raw.strip()
        if data:
            yield number, data


def _fields(data: bytes, id_field: str | None, timing: Timing | None) -> dict[str, object]:
    """The line's JSON object, when a field of it is asked for and it is one ({} otherwise:
    enqueue explains what is wrong with the line)."""
    if id_field is None and (timing is None or timing.at_field is timing.delay_field is None):
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _line_time(fields: dict[str, object], timing: Timing | None) -> float | None:
    """When the line's job may first run (see Timing)."""
    if timing is None:
        return None
    from lanekit.jobs.when import parse_at, parse_delay

    for name, parse in ((timing.at_field, parse_at), (timing.delay_field, parse_delay)):
        if name is None or name not in fields:
            continue
        value = fields[name]
        if not isinstance(value, str):
            raise UsageError(
                f'"{name}" is {type(value).__name__}, not a string',
                f'give "{name}" as a string, or leave it out',
            )
        return parse(value, timing.clock, what=f'"{name}"')
    return timing.not_before


def _line_id(fields: dict[str, object], id_field: str | None) -> str | None:
    """The job id the line names in `id_field`, or None (generated)."""
    if id_field is None or id_field not in fields:
        return None
    job_id = fields[id_field]
    if not isinstance(job_id, str):
        raise UsageError(
            f'"{id_field}" is {type(job_id).__name__}, not a string',
            f'give "{id_field}" as a string id, or leave it out for a generated id',
        )
    return job_id
