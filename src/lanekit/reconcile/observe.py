"""What `plan` is fed: the lanes as lanes.toml wants them, and what is installed and loaded.

Reads what the service manager has installed, the run snapshots, ONE observation of it
(lanekit.service.manager) and the lane locks; refuses state someone else could have written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from pathlib import Path

from lanekit.config.provenance import MARKER
from lanekit.errors import LanekitError
from lanekit.run import lanelock
from lanekit.service.installs import Desired, Installed, read_installed
from lanekit.service.launchd import ServiceInfo
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec
from lanekit.system.owned import (
    check_private,
    read_regular,
    unsafe_error,
    unsafe_reason,
)


@dataclass(frozen=True, slots=True)
class Observed:
    """The facts `plan` needs, from one observation of the service manager."""

    installed: Mapping[str, Installed]
    loaded: frozenset[str]
    running: Mapping[str, int | None]
    disabled: frozenset[str]
    definitions: Mapping[str, ServiceInfo] = field(default_factory=dict)
    """label -> what launchd has loaded for it (its own copy, not the file)."""
    stale: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """label -> why the manager's loaded copy is older than the files, when the manager says
    so itself (systemd's NeedDaemonReload); launchd's is judged from `definitions`."""


def observe(
    paths: Paths,
    manager: ServiceManager,
    desired: Sequence[Desired],
    specs: Mapping[str, RunSpec],
) -> Observed:
    """Read what the manager has installed, snapshots, ONE observation of it and the lane
    locks. Refuses (UnsafeStateError) state someone else could have written (check_state)."""
    check_state(paths)
    # Where the manager reads the lanes' units from (systemd's ~/.config/systemd/user): whoever
    # may write there decides what runs as you, as in lanekit's own state.
    check_private(manager.install_dir, "unit directory", directory=True)
    wanted = {d.label for d in desired}
    installed = scan_installed(paths, manager, wanted)
    labels = wanted | {k for k, v in installed.items() if v.lane is not None}
    seen = manager.observe(labels)
    loaded = frozenset(label for label, lane in seen.lanes.items() if lane.loaded)
    running: dict[str, int | None] = {}
    for label in labels:
        pid = seen[label].pid
        if pid is not None:
            running[label] = pid
            continue
        # The installed snapshot names the lock a current run holds; the desired one the lock
        # the next run will take (they differ when the queue dir changed).
        candidates = (installed_spec(paths, label), specs.get(label))
        if any(lock_held(spec) for spec in candidates if spec is not None):
            running[label] = None
    definitions = {
        label: lane.definition
        for label, lane in seen.lanes.items()
        if label in wanted and lane.definition is not None
    }
    stale = {
        label: lane.stale
        for label, lane in seen.lanes.items()
        if label in wanted and lane.stale and lane.definition is None
    }
    return Observed(installed, loaded, running, seen.disabled, definitions, stale)


def check_state(paths: Paths) -> None:
    """Refuse lanekit's directories (state, snapshots, emulated domain, LaunchAgents) when they
    are not ours or others may write them: whoever can write there can make the owner's next
    run execute their command."""
    for directory in (paths.state, paths.snapshots, paths.emulator, paths.launch_agents):
        check_private(directory, "state directory", directory=True)


def scan_installed(paths: Paths, manager: ServiceManager, wanted: Set[str]) -> dict[str, Installed]:
    """lanekit's plists (marker present) and any plist at a wanted label, keyed by label,
    among what the manager has installed (`manager.installed()`).

    Files are read without blocking and only when regular (a FIFO named *.plist is refused,
    naming it); a plist lanekit would manage that someone else owns is refused too. A plist
    may be a symlink (users link agents in); the target is then what is judged."""
    reads: dict[str, tuple[tuple[bytes, os.stat_result], str | None]] = {}
    for file in manager.installed().values():
        try:
            read = read_regular(file, "plist", follow=True)
        except LanekitError:
            raise
        except OSError:
            continue  # vanished or unreadable: not something apply may overwrite blindly
        if read is None:
            continue
        label, lane = identify(manager, read[0], fallback=file.stem)
        if lane is None and label not in wanted:
            continue
        if file != manager.artifact_path(label) and label in reads:
            continue  # the canonical file name wins over a stray copy
        if read[1].st_uid != os.geteuid():
            raise unsafe_error(file, unsafe_reason(read[1]) or "is not yours", "plist", read[1])
        reads[label] = read, lane
    found: dict[str, Installed] = {}
    for label in [*reads, *(wanted - reads.keys())]:
        if (item := read_installed(paths, label, *reads.get(label, (None, None)))) is not None:
            companions = read_companions(manager, label)
            found[label] = replace(item, companions=companions) if companions else item
    return found


def read_companions(manager: ServiceManager, label: str) -> dict[str, bytes | None]:
    """The files a lane installs beside its main artifact (a systemd lane's timer), by name
    (None: absent), read as the main one is: regular files of ours only."""
    found: dict[str, bytes | None] = {}
    for path in manager.artifact_paths(label)[1:]:
        read = read_regular(path, "unit file", follow=True)
        if read is not None and read[1].st_uid != os.geteuid():
            raise unsafe_error(path, unsafe_reason(read[1]) or "is not yours", "unit file", read[1])
        found[path.name] = None if read is None else read[0]
    return found


def identify(manager: ServiceManager, data: bytes, *, fallback: str) -> tuple[str, str | None]:
    """The label an artifact defines (`fallback` when it defines no job) and the lane lanekit
    installed it for (its marker; None for anyone else's), as the manager reads it."""
    try:
        job = manager.define(data)
    except ValueError:
        return fallback, None
    return job.label or fallback, job.env.get(MARKER)


def installed_spec(paths: Paths, label: str) -> RunSpec | None:
    try:
        return RunSpec.load(paths.snapshot_for(label))
    except LanekitError:
        return None


def lock_held(spec: RunSpec) -> bool:
    """True when a run holds the lane lock (a shared, non-blocking flock probe)."""
    return lanelock.lane_busy(lock_path(spec))


def lock_path(spec: RunSpec) -> Path:
    return lanelock.lane_lock_path(spec.queue_dir, spec.lane, spec.log_path)
