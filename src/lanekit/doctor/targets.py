"""What doctor examines: a lanekit lane (its installed plist, or what `apply` would install),
any plist file (a lanekit lane only when it carries lanekit's marker), and each queue once."""

from __future__ import annotations

import plistlib
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lanekit.config.provenance import MARKER
from lanekit.doctor.model import SubjectKind, Target
from lanekit.errors import LanekitError, UsageError
from lanekit.system.owned import read_regular

if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.config import Config, LaneSpec
    from lanekit.service.artifacts import JobDefinition
    from lanekit.state.paths import Paths


def read_plist(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a plist file: (job, None), or (None, why it is not a usable launchd job)."""
    job, error, _ = _read(path)
    return job, error


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None, bytes]:
    """`read_plist`, and the bytes read."""
    try:
        read = read_regular(path, "plist", follow=True)
    except LanekitError as exc:  # a FIFO or device named *.plist: never read (it would block)
        return None, exc.message.removeprefix(f"{path}: plist "), b""
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})", b""
    if read is None:
        return None, "cannot be read (No such file or directory)", b""
    data = read[0]
    job, error = _job(data)
    return job, error, data


def _job(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    from lanekit.service.launchd.manager import read_job

    try:
        return read_job(data), None
    except ValueError as exc:
        return None, str(exc)


def lane_interpreter(installed: Mapping[str, Any] | None, lane: LaneSpec | None = None) -> str:
    """The interpreter a rendered lane plist names: the installed one's, else this Python.

    Using the installed interpreter keeps doctor from reporting drift merely because it runs
    from another virtualenv than the one `apply` ran from. The watchdog's comes after its
    guard (`/bin/sh GUARD HEARTBEAT LABEL`, LaneSpec.guard).
    """
    at = 0 if lane is None or lane.guard is None else len(lane.guard)
    if installed is not None:
        args = installed.get("ProgramArguments")
        if isinstance(args, list) and len(args) > at:
            value = args[at]
            if isinstance(value, str) and value:
                return value
    return sys.executable


def lane_target(lane: LaneSpec, paths: Paths) -> Target:
    """A lanekit lane: its installed plist when present, else what `apply` would install."""
    from lanekit.service.launchd.plist import lane_plist

    path = paths.plist_for(lane.label)
    if path.exists():
        job, error, data = _read(path)
        return Target(
            subject=lane.name,
            plist_path=path,
            plist=job,
            plist_error=error,
            installed=True,
            lane=lane,
            definition=_definition(job, data),
        )
    model = lane_plist(lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label))
    return Target(
        subject=lane.name,
        plist_path=path,
        plist=model,
        installed=False,
        lane=lane,
        definition=_definition(model, plistlib.dumps(model)),
    )


def _definition(job: Mapping[str, Any] | None, data: bytes) -> JobDefinition | None:
    """The job in neutral terms, as launchd reads the plist (lanekit.service.launchd)."""
    from lanekit.service.launchd.manager import plist_definition

    return None if job is None else plist_definition(job, data.decode("utf-8", "replace"))


def plist_target(path: Path, config: Config | None) -> Target:
    """Any plist file; it is treated as a lanekit lane only when it carries lanekit's marker
    and names a lane of the loaded lanes.toml with the same label."""
    if not path.exists():
        raise UsageError(f"{path}: no such plist", "give the path of a .plist file")
    job, error, data = _read(path)
    lane = None
    if job is not None and config is not None:
        env = job.get("EnvironmentVariables")
        name = env.get(MARKER) if isinstance(env, dict) else None
        candidate = config.lanes.get(name) if isinstance(name, str) else None
        if candidate is not None and candidate.label == job.get("Label"):
            lane = candidate
    subject = lane.name if lane is not None else str(path)
    return Target(
        subject=subject,
        plist_path=path,
        plist=job,
        plist_error=error,
        installed=True,
        lane=lane,
        kind=SubjectKind.LANE if lane is not None else SubjectKind.PLIST,
        definition=_definition(job, data),
    )


def queue_targets(examined: Sequence[LaneSpec], config: Config) -> list[Target]:
    """One target per queue the examined lanes drain (in order of first appearance), each
    listing every lane of lanes.toml that drains it."""
    wanted = list(dict.fromkeys(lane.queue.name for lane in examined))
    by_queue: dict[str, list[LaneSpec]] = {name: [] for name in wanted}
    for lane in config.lanes.values():
        if lane.queue.name in by_queue:
            by_queue[lane.queue.name].append(lane)
    return [
        Target(
            subject=name,
            plist_path=None,
            plist=None,
            lane=drainers[0],
            kind=SubjectKind.QUEUE,
            drained_by=tuple(drainers),
        )
        for name, drainers in by_queue.items()
    ]
