"""`lanekit try` on a Mac: the job runs as a one-shot launchd job, not as a child of the shell.

A child of the terminal inherits its privacy (TCC) grants and its session; a launchd job gets
neither, which is exactly what `try` must show. So the job's plist is copied under try's one
label (`local.lanekit.try`, no schedule, no RunAtLoad, the same LimitLoadToSessionType) at one
path (`<state>/try/local.lanekit.try.plist`), loaded into the user's service manager, started,
observed until its run ends, then unloaded and its plist deleted, whatever happened. One label
and one path for every run: macOS 13+ files each new label under Login Items & Extensions >
Allow in the Background, and a random label per run left a record per run there. Two tries at
once would share that label, so a try holds a flock on `<state>/try/.lock` from load to unload
and a second one is refused. `--here` keeps the in-process mode.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lanekit.errors import LanekitError
from lanekit.run.jobenv import TRY_LABEL
from lanekit.run.lanelock import try_lock
from lanekit.service.manager import Ending, LaneObservation, ServiceManager
from lanekit.system.atomic import write_atomic
from lanekit.system.owned import make_private_dirs

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
    """The job under try's label, started only by kickstart (no schedule, no RunAtLoad)."""
    plist = {key: value for key, value in job.items() if key not in _UNSCHEDULED}
    plist["Label"] = label
    plist["RunAtLoad"] = False
    return plist


LOCK_NAME = ".lock"


def held_by_one(directory: Path, what: str, label: str, hint: str) -> int:
    """A non-blocking flock on `<directory>/.lock` (the descriptor: close it to release); a
    LanekitError naming `what` and `label` when another process holds it. `try` and
    `selftest` each load under one fixed label, so two at once must not share it."""
    make_private_dirs(directory)
    fd = try_lock(str(directory / LOCK_NAME))
    if fd is None:
        raise LanekitError(
            f"another `{what}` of yours is running under the launchd label {label} (it holds "
            f"{directory / LOCK_NAME}); two at once would load over each other",
            hint,
        )
    return fd


def clear_leftover(manager: ServiceManager, label: str) -> None:
    """Unload `label` if a run that died without cleaning up (kill -9, a crash) left it
    loaded: the caller holds the label's lock, so nobody else is using it."""
    with contextlib.suppress(LanekitError):
        if manager.observe_lane(label).loaded:
            manager.unload(label)


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
    """Bootstrap, kickstart and watch the job under try's one label; always boot it out.
    LanekitError when another try holds the label."""
    label = TRY_LABEL
    lock = held_by_one(
        directory,
        "lanekit try",
        label,
        "wait until it ends, or run this one in the terminal with `lanekit try --here`",
    )
    try:
        return _one_shot(
            job, manager, directory / f"{label}.plist", timeout=timeout, clock=clock, sleep=sleep
        )
    finally:
        os.close(lock)


def _one_shot(
    job: Mapping[str, Any],
    manager: ServiceManager,
    path: Path,
    *,
    timeout: float | None,
    clock: Any,
    sleep: Any,
) -> OneShot:
    label = TRY_LABEL
    clear_leftover(manager, label)
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
