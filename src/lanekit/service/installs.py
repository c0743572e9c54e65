"""A lane as apply would install it, and what is installed for it: the two sides every
comparison of a lane (plan's, doctor's plist.drift) starts from, read one way.

`desired_lane` is the manager's rendering (ServiceManager.render) plus the run snapshot;
`installed_lane` reads one label's artifact and snapshot as lanekit.reconcile.observe's
`scan_installed` does, refusing state someone else could have written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanekit.config import LaneSpec, run_spec
from lanekit.config.provenance import MARKER
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.system.owned import read_regular, unsafe_error, unsafe_reason


@dataclass(frozen=True, slots=True)
class Desired:
    """A lane as lanes.toml wants it: rendered plist and run snapshot bytes."""

    lane: str
    label: str
    plist: bytes
    snapshot: bytes
    job: Mapping[str, Any] | None = field(default=None, compare=False)
    """`plist` parsed, when the renderer had it (else it is parsed when compared)."""
    companions: Mapping[str, bytes] = field(default_factory=dict)
    """The files the lane installs beside the main one (`plist`), by name: a systemd lane's
    timer. Empty for launchd (its plist is the whole lane)."""


@dataclass(frozen=True, slots=True)
class Installed:
    """What is on disk for one label."""

    label: str
    plist: bytes | None
    """The plist file's bytes; None when there is no plist file."""
    snapshot: bytes | None
    """The run snapshot's bytes; None when there is none."""
    lane: str | None = None
    """The LANEKIT_LANE marker's value; None when the plist was not installed by lanekit."""
    plist_mode: int | None = None
    """The plist file's permission bits; None when unknown (no file)."""
    snapshot_mode: int | None = None
    """The snapshot file's permission bits; None when unknown (no file)."""
    companions: Mapping[str, bytes | None] = field(default_factory=dict)
    """The files installed beside the main one, by name, for each name the lane wants or
    has (None: no such file); see Desired.companions."""


def desired_lane(
    lane: LaneSpec,
    paths: Paths,
    *,
    interpreter: str,
    templates: Path | None = None,
    manager: ServiceManager | None = None,
) -> Desired:
    """A lane's main artifact (`manager.render`; by default this machine's manager) and run
    snapshot bytes exactly as apply would write them."""
    if manager is None:
        from lanekit.service import open_manager

        manager = open_manager(paths)
    snapshot_path = paths.snapshot_for(lane.label)
    made = manager.render(
        lane, interpreter=interpreter, snapshot=snapshot_path, templates=templates
    )
    plist = made.files[manager.artifact_path(lane.label).name]
    snapshot = run_spec(lane).to_json().encode("utf-8")
    main = manager.artifact_path(lane.label).name
    companions = {name: data for name, data in made.files.items() if name != main}
    return Desired(lane.name, lane.label, plist, snapshot, job=made.parsed, companions=companions)


def installed_lane(paths: Paths, label: str, parsed: Mapping[str, object]) -> Installed | None:
    """What is installed for one label at its own plist path, read as `scan_installed` reads
    it (None when neither plist nor snapshot exists). Raises UnsafeStateError for a file
    that is not regular or, for the snapshot, not ours; OSError when one cannot be read.
    `parsed`: the plist as the caller already parsed it (doctor's target), not parsed again."""
    read = read_regular(paths.plist_for(label), "plist", follow=True)
    return read_installed(paths, label, read, lane_marker(parsed))


def read_installed(
    paths: Paths, label: str, read: tuple[bytes, os.stat_result] | None, lane: str | None
) -> Installed | None:
    """A label's artifact as read (None: no file) with its snapshot; None when neither exists
    (`lane`: its lanekit marker)."""
    snapshot, snapshot_mode = _read_snapshot(paths.snapshot_for(label))
    if read is None:
        return (
            None
            if snapshot is None
            else Installed(label, None, snapshot, snapshot_mode=snapshot_mode)
        )
    mode = stat.S_IMODE(read[1].st_mode)
    return Installed(label, read[0], snapshot, lane, plist_mode=mode, snapshot_mode=snapshot_mode)


def _read_snapshot(path: Path) -> tuple[bytes | None, int | None]:
    """A lane snapshot's bytes and mode; someone else's snapshot is refused, not replaced."""
    read = read_regular(path, "lane snapshot")
    if read is None:
        return None, None
    data, info = read
    if info.st_uid != os.geteuid():
        raise unsafe_error(path, unsafe_reason(info) or "is not yours", "lane snapshot", info)
    return data, stat.S_IMODE(info.st_mode)


def lane_marker(plist: Mapping[str, object]) -> str | None:
    """The lane a plist says lanekit installed it for (its marker), None for anyone else's."""
    env = plist.get("EnvironmentVariables")
    lane = env.get(MARKER) if isinstance(env, dict) else None
    return lane if isinstance(lane, str) else None
