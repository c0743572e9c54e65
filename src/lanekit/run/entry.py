"""The process launchd starts for a lane, and its fast path: a run that finds nothing queued.

Most scheduled runs find the queue empty, and every run is a fresh interpreter, so start-up is
most of what an empty run costs (benchmark figure (c): `lanekit run` on an empty queue vs
`python -c pass`). This module and what it imports (lanekit.run.lanelock, lanelog, purgeday,
args, the queue's peek through lanekit.queue, lanekit.state.snapshot_schema) use only builtin
modules. The snapshot is read by the one snapshot reader
(lanekit.state.snapshot_schema.read_snapshot), which decodes without importing json (json
pulls in re and compiles its patterns), and the path stays clear of dataclasses
(which imports inspect, ast and dis), pathlib, enum, signal and lanekit.errors: together they
cost several times `python -c pass`.

The fast path only handles the case it can vouch for: `LANE --snapshot PATH`, a snapshot that
reads cleanly with every field present, a lane with a queue (a plain lane's every fire runs its
command), and nothing in queue/, delayed/ or claimed/. Then it
does what the full run would do for an empty queue: rotate the lane log (and launchd's
stdout/stderr files: launchd reopens them at each spawn, so a rename here only affects the
next run), take the lane lock (held: `skipped reason=lane-busy`, exit 0), log `start` and
`finish reason=empty` (doctor's missed-run check reads them), exit 0. The first run of a UTC
day goes to the full path too, which purges the queue (retention, JobQueue.purge).
Everything else, including every error, goes to lanekit.run.runner.main, which does the whole run
and reports problems its usual way. The runner shares the pieces above, never this module:
imports between the two go one way.

No stop-signal handlers are installed on this path: nothing is claimed, so a SIGTERM that ends
the process early leaves nothing to restore (the kernel drops the lane lock).
"""

from __future__ import annotations

import os
import sys
import time

from lanekit.queue import nothing_queued
from lanekit.run.args import split_args
from lanekit.run.lanelock import lock_file, try_lock
from lanekit.run.lanelog import EventName, LaneLog, Reason, log_finish, log_warner, rotate_if_needed
from lanekit.run.purgeday import purge_due
from lanekit.state.clock import epoch
from lanekit.state.snapshot_schema import read_snapshot

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeGuard


def main(argv: Sequence[str]) -> int:
    """`lanekit run LANE [--snapshot PATH]`: the empty run here, any other in the runner. A run
    started by hand on the emulated domain (no offset in its environment) goes by the domain's
    clock, as a run the domain started does (lanekit.service.emulated.offset.by_hand_clock)."""
    from lanekit.service.emulated.offset import by_hand_clock
    from lanekit.state.backend import state_dir
    from lanekit.state.clock import use_clock

    domain = os.path.join(state_dir(os.environ, sys.platform), "emulator")  # noqa: PTH118
    clock = by_hand_clock(domain)
    if clock is not None:
        use_clock(clock)
    code = empty_run(argv)
    if code is not None:
        return code
    from lanekit.run.runner import main as full_run

    return full_run(argv)


def empty_run(argv: Sequence[str], *, clock: Callable[[], float] = time.monotonic) -> int | None:
    """The whole run when nothing is queued, delayed or claimed: its exit code. None when
    the fast path cannot vouch for the run (unusual arguments, a snapshot it does not read
    cleanly, anything queued, a lane lock that cannot be opened): the full run takes over,
    from the start, having changed nothing but perhaps rotated the lane log."""
    parsed = split_args(argv)
    if parsed is None:
        return None
    lane, snapshot = parsed
    if snapshot is None:
        return None  # without --snapshot the installed snapshots are searched: full path
    try:
        spec = read_snapshot(snapshot)
    except Exception:
        # Any refusal (a lanekit.errors class, imported only when raised) or read error: the
        # full run reads the snapshot again and explains, or refuses, what is wrong.
        return None
    if spec["lane"] != lane or spec.get("plain") is True:
        return None  # another lane's snapshot, or a plain lane: every fire of it runs
    queue_dir, log_path = spec["queue_dir"], spec["log_path"]
    max_bytes, keep = spec["log_max_bytes"], spec["log_keep"]
    keep_done = spec["keep_done"]
    if not (
        isinstance(queue_dir, str)
        and isinstance(log_path, str)
        and _is_int(max_bytes)
        and _is_int(keep)
        and _is_int(keep_done)
        and nothing_queued(queue_dir)
        and not purge_due(queue_dir, epoch(), keep_done)
    ):
        return None
    warn = log_warner(log_path)
    try:
        rotate_if_needed(log_path, max_bytes, keep)
        for key in ("stdout_path", "stderr_path"):
            launchd_log = spec[key]
            if isinstance(launchd_log, str):
                rotate_if_needed(launchd_log, max_bytes, keep)
    except OSError as exc:
        warn(exc)
    log = LaneLog(log_path, lane, on_error=warn)
    try:
        fd = try_lock(lock_file(queue_dir, lane, log_path))
    except OSError:
        return None  # the full run names the directory that is missing or unusable (69)
    if fd is None:
        log.event(EventName.SKIPPED, reason=Reason.LANE_BUSY)
        return 0
    try:
        started = clock()
        log.event(EventName.START, pid=os.getpid())
        log_finish(log, reason=Reason.EMPTY, code=0, duration=clock() - started)
    finally:
        os.close(fd)
    return 0


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
