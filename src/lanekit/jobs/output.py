"""A job's output, as its queue keeps it (JobQueue.output_path; written by the job's watcher:
lanekit.run.joboutput): for `lanekit job LANE ID [--output]` and the timeline's job trace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.protocol import JobQueue

READ_LIMIT = 16 * 1024 * 1024
"""The most of an output file read at once (a job has at most its attempts' 256 KiB each)."""


@dataclass(frozen=True, slots=True)
class JobOutput:
    """A job's output file and what it holds."""

    path: Path
    text: str
    """Its bytes as text (UTF-8; other bytes shown as \\x escapes)."""


def output_file(queue: JobQueue, job_id: str) -> Path | None:
    """The job's output file when it exists (a regular file: nothing else is read)."""
    where = queue.output_path(job_id)
    if where is None:
        return None
    path = Path(where)
    return path if path.is_file() and not path.is_symlink() else None


def job_output(queue: JobQueue, job_id: str) -> JobOutput | None:
    """The job's output, or None when none is kept (it has not run, or its queue keeps none)."""
    from lanekit.system.owned import read_regular

    path = output_file(queue, job_id)
    if path is None:
        return None
    try:
        read = read_regular(path, "job output")
    except OSError:
        return None
    if read is None:
        return None
    data = read[0][:READ_LIMIT]
    return JobOutput(path, data.decode("utf-8", "backslashreplace"))
