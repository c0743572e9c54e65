"""`lanekit try` on a Mac: the job runs as a one-shot launchd job, not as a child of the shell.

A child of the terminal inherits its privacy (TCC) grants and its session; a launchd job gets
neither, which is exactly what `try` must show. So the job's plist is copied under a temporary
label (`<label>.try-<random>`, no schedule, no RunAtLoad, the same LimitLoadToSessionType),
loaded into the user's service manager, started, observed until its run ends, then unloaded
and its plist deleted, whatever happened. `--here` keeps the in-process mode.
"""

from __future__ import annotations

import contextlib
import plistlib
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanekit.errors import LanekitError
from lanekit.run.jobenv import TRY_INFIX
from lanekit.service.manager import Ending, LaneObservation, ServiceManager
from lanekit.system.atomic import write_atomic

POLL_SECONDS = 0.2
PLIST_MODE = 0o644
"""launchd refuses a plist that group or others can write."""
_UNSCHEDULED = (
    "StartCalendarInterval",
    "StartInterval",
    "KeepAlive",
    "WatchPaths",
    "QueueDirectories",
)


@dataclass(frozen=True, slots=True)
class OneShot:
    """How the one-shot launchd job ended."""

    label: str
    domain: str
    exit_code: int | None
    signal: int | None
    duration: float
    timed_out: bool
    stderr_tail: str


def one_shot_plist(job: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The job under a temporary label, started only by kickstart (no schedule, no RunAtLoad)."""
    plist = {key: value for key, value in job.items() if key not in _UNSCHEDULED}
    plist["Label"] = label
    plist["RunAtLoad"] = False
    return plist


def try_label(label: str) -> str:
    """`<label>.try-<random>`: never the lane's own label, so the real lane is untouched (a
    run it starts still knows launchd started it: lanekit.run.jobenv.started_by_launchd)."""
    return f"{label}{TRY_INFIX}{secrets.token_hex(4)}"


def _finished(seen: LaneObservation) -> bool:
    return bool(seen.runs) and seen.ended is not Ending.NEVER and not seen.running


def _size(path: str | None) -> int:
    if path is None:
        return 0
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _tail(path: str | None, offset: int) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - a plain read of the job's own log
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_one_shot(
    job: Mapping[str, Any],
    manager: ServiceManager,
    directory: Path,
    *,
    timeout: float | None = None,
    clock: Any = time.monotonic,
    sleep: Any = time.sleep,
) -> OneShot:
    """Bootstrap, kickstart and watch the job under a temporary label; always boot it out."""
    base = job.get("Label")
    label = try_label(str(base) if isinstance(base, str) and base else "local.lanekit")
    path = directory / f"{label}.plist"
    write_atomic(path, plistlib.dumps(one_shot_plist(job, label)), PLIST_MODE)
    stderr_path = job.get("StandardErrorPath")
    stderr_path = stderr_path if isinstance(stderr_path, str) else None
    offset = _size(stderr_path)
    started = clock()
    timed_out = False
    seen: LaneObservation | None = None
    try:
        manager.load(path)
        manager.kick(label)
        while True:
            seen = manager.observe_lane(label)
            if _finished(seen) or not seen.loaded:
                break  # not loaded: booted out by someone else, nothing left to wait for
            if timeout is not None and clock() - started >= timeout:
                timed_out = True
                break
            sleep(POLL_SECONDS)
    finally:
        # bootout sends SIGTERM to a run still going (--timeout); a finished one just unloads.
        with contextlib.suppress(LanekitError):
            manager.unload(label)
        path.unlink(missing_ok=True)
    return OneShot(
        label=label,
        domain=manager.domain,
        exit_code=None if seen is None or timed_out else seen.exit_code,
        signal=None if seen is None or timed_out else seen.signal,
        duration=clock() - started,
        timed_out=timed_out,
        stderr_tail=_tail(stderr_path, offset),
    )
