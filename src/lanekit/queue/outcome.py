"""A job's outcome as the queue reads it: the hidden files beside a claimed job (its status,
its cancel request, the note that it started), how it ended (Outcome), and what still runs it
once its watcher is gone (job_copies).

The run's job watcher (lanekit.run.watcher) writes these files; a queue backend reads them to
settle or recover a claim (lanekit.queue.directory.recover, lanekit.queue.memory). They live
here, below both, so the queue never imports the run.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from lanekit.state.schemas import JOB_STATUS_SCHEMA
from lanekit.system.processes import group_alive, signal_group

JOB_FILE = "LANEKIT_JOB_FILE"
"""The variable naming a job's claimed file in its environment (lanekit.run.jobenv sets it):
what finds a copy of the job that left its process group."""

TAIL_BYTES = 4096
TAIL_LINES = 20
"""The stderr tail kept for the record and the .error: at most 20 lines and 4 KiB."""
CANCELLED = "cancelled"
"""The reason a job stopped by `lanekit cancel --stop` is failed with (as lanekit.queue's)."""


def status_path(claim_file: str) -> str:
    """claimed/.<claim name>.status for claimed/<claim name>: next to the claim, hidden from
    every listing of jobs (and from the empty-queue fast path's look at claimed/)."""
    head, _, name = claim_file.rpartition("/")
    return f"{head}/.{name[:-5]}.status"


def cancel_path(claim_file: str) -> str:
    """claimed/.<claim name>.cancel: the request `lanekit cancel --stop` leaves for the watcher
    of claimed/<claim name> (hidden like the status)."""
    head, _, name = claim_file.rpartition("/")
    return f"{head}/.{name[:-5]}.cancel"


def started_path(claim_file: str) -> str:
    """claimed/.<claim name>.started: the note the watcher writes when it starts the job (its
    process group), which becomes the status when the job ends (hidden like the status)."""
    head, _, name = claim_file.rpartition("/")
    return f"{head}/.{name[:-5]}.started"


def cancel_beside(status: str) -> str:
    """The cancel request beside a status file (its claim's)."""
    return status[: -len(".status")] + ".cancel"


def started_beside(status: str) -> str:
    """The .started note beside a status file (its claim's)."""
    return status[: -len(".status")] + ".started"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a job ended, as its watcher recorded it."""

    exit: int
    """The leader's exit code, or -N when signal N killed it."""
    stopped: bool = False
    """A stop from the runner reached the leader while it was alive."""
    timed_out: bool = False
    """The lane's timeout ended it."""
    duration: float = 0.0
    stderr: str = ""
    """The last lines of its stderr (TAIL_LINES / TAIL_BYTES at most)."""
    limit: float | None = None
    """The lane's timeout the job ran under (None: no limit)."""
    cancelled: bool = False
    """A cancel request (`lanekit cancel --stop`) reached the leader while it was alive."""
    lease_lost: bool = False
    """The claim's lease was lost, or about to lapse unrenewed: the watcher killed the job
    (the self-fence) so that it never runs beside a copy another run may start."""

    def to_bytes(self) -> bytes:
        """One line of JSON (the status file)."""
        import json

        return (
            json.dumps(
                {
                    "v": JOB_STATUS_SCHEMA,
                    "exit": self.exit,
                    "stopped": self.stopped,
                    "timed_out": self.timed_out,
                    "duration": round(self.duration, 3),
                    "stderr": self.stderr,
                    "limit": self.limit,
                    "cancelled": self.cancelled,
                    "lease_lost": self.lease_lost,
                }
            ).encode("utf-8")
            + b"\n"
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Outcome | None:
        """The outcome in a status file, or None when it is not one this lanekit wrote (a
        torn or foreign file is no evidence: the job is then treated as not finished)."""
        from lanekit.system.strictjson import strict_loads

        try:
            value = strict_loads(data)
        except ValueError:
            return None
        if not isinstance(value, dict) or value.get("v") != JOB_STATUS_SCHEMA:
            return None
        code, stderr = value.get("exit"), value.get("stderr", "")
        duration, limit = value.get("duration", 0.0), value.get("limit")
        flags = (
            value.get("stopped", False),
            value.get("timed_out", False),
            value.get("cancelled", False),
            value.get("lease_lost", False),
        )
        if type(code) is not int or not isinstance(stderr, str):
            return None
        if not all(isinstance(flag, bool) for flag in flags):
            return None
        for number in (duration, limit):
            if number is not None and (
                not isinstance(number, int | float) or isinstance(number, bool)
            ):
                return None
        return cls(
            code,
            flags[0],
            flags[1],
            float(duration or 0.0),
            stderr,
            None if limit is None else float(limit),
            flags[2],
            flags[3],
        )


def read_outcome(path: str) -> Outcome | None:
    """The status file at `path`, or None when there is none (or it is not a status)."""
    from lanekit.system.fsops import NotRegularFileError, open_regular

    try:
        fd = open_regular(path)
    except (FileNotFoundError, NotRegularFileError):
        return None
    try:
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    return Outcome.from_bytes(data)


def describe(outcome: Outcome) -> str:
    """The failure's reason for the record and the .error: `exit 3`, `killed by signal 9`,
    `timed out after 30m`, `cancelled`, with the stderr tail on the lines after it."""
    from lanekit.schedule import format_duration

    if outcome.cancelled:
        head = CANCELLED
    elif outcome.timed_out and outcome.limit is not None:
        head = f"timed out after {format_duration(outcome.limit)}"
    elif outcome.exit >= 0:
        head = f"exit {outcome.exit}"
    else:
        head = f"killed by signal {-outcome.exit}"
    return head if not outcome.stderr else f"{head}\n{outcome.stderr.rstrip(chr(10))}"


def tail(data: bytes) -> str:
    """The last TAIL_LINES lines of `data`, at most TAIL_BYTES, as text."""
    data = data[-TAIL_BYTES:]
    lines = data.rstrip(b"\n").split(b"\n")[-TAIL_LINES:]
    return b"\n".join(lines).decode("utf-8", "replace")


# --- a job's copies ----------------------------------------------------------------------

COPIES_KEEP_CLAIM = True
"""Whether a live copy of a job keeps its claim. The chaos run's control (scripts/chaos.py
--unprotected) switches it off to show the overlaps it prevents; nothing else changes it."""


@dataclass(frozen=True, slots=True)
class Copies:
    """The processes still running a claim's job once its watcher is gone."""

    group: int | None
    """The job's process group (its leader's pid, from the watcher's .started note) while a
    member of it runs (zombies aside): the leader and what it started within the group."""
    pids: tuple[int, ...]
    """This user's processes whose environment names the claim (jobenv.JOB_FILE): what left
    the group (setsid, a daemon) too."""

    def __bool__(self) -> bool:
        return self.group is not None or bool(self.pids)

    def signal(self, sig: int) -> None:
        """Send `sig` to every copy (gone ones are passed over)."""
        if self.group is not None:
            signal_group(self.group, sig)
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def job_copies(claim_file: str) -> Copies:
    """What still runs the job of the claim at `claim_file`. A job runs in a process group and
    session of its own and never holds the claim's lock, so once its runner and watcher are
    both dead (one `pkill -9 -f 'lanekit run'` kills both) this is how its copies are found:
    by the process group its watcher noted when it started it, and by the claim its
    environment names, which survives setsid, closed descriptors and a forked daemon. What
    neither finds: a process that left the group and exec'd with a new environment, or, on
    macOS, left the group running one of Apple's restricted binaries (/bin/sh, /bin/sleep...),
    whose environment the kernel withholds from other processes (README, "What is promised").
    Reads every process's environment (psutil): a few ms, on rare paths only."""
    if not COPIES_KEEP_CLAIM:
        return Copies(None, ())
    from lanekit.system.procinfo import job_processes

    noted = _noted_group(started_path(claim_file))
    members, carriers = job_processes(JOB_FILE, claim_file, noted)
    return Copies(noted if members else None, tuple(carriers))


def _noted_group(path: str) -> int | None:
    """The process group in a .started note while the group exists (perhaps only as
    zombies: job_processes looks at its members), else None."""
    from lanekit.system.fsops import NotRegularFileError, open_regular

    try:
        fd = open_regular(path)
    except (FileNotFoundError, NotRegularFileError, PermissionError):
        return None
    try:
        data = os.read(fd, 64)
    finally:
        os.close(fd)
    if not data.startswith(STARTED_NOTE) or not data.endswith(b"\n"):
        return None  # a status by now, or torn: no group to wait for
    digits = data[len(STARTED_NOTE) : -1]
    if not digits.isdigit() or int(digits) <= 1:
        return None
    return int(digits) if group_alive(int(digits)) else None


STARTED_NOTE = b"started pgid="
"""The .started note's one line: `started pgid=<the job's pid>`."""
