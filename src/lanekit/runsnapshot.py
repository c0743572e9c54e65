"""Which snapshot a lane run reads: the one launchd passes (`--snapshot PATH`), or the
installed snapshot whose lane it is, checked to be that lane's."""

from __future__ import annotations

from pathlib import Path

from lanekit.errors import LanekitError, UsageError
from lanekit.quoting import cmdline
from lanekit.snapshot import RunSpec


def find_snapshot(lane: str, snapshots: Path) -> Path:
    """The installed snapshot whose lane is `lane` (when launchd did not pass --snapshot)."""
    matches = []
    try:
        candidates = sorted(snapshots.glob("*.json"))
    except OSError:
        candidates = []
    for candidate in candidates:
        try:
            spec = RunSpec.load(candidate)
        except LanekitError:
            continue  # damaged, or someone else's: never a lane's snapshot to run from
        if spec.lane == lane:
            matches.append(candidate)
    if not matches:
        raise UsageError(
            f"lane {lane}: no installed lane snapshot in {snapshots}",
            f"run `lanekit apply` to install it, or "
            f"`{cmdline('lanekit', 'run', '-c', 'lanes.toml', lane)}`",
        )
    if len(matches) > 1:
        names = ", ".join(m.name for m in matches)
        raise UsageError(
            f"lane {lane}: several installed snapshots match ({names})",
            "pass --snapshot PATH to choose one",
        )
    return matches[0]


def resolve_snapshot(lane: str, snapshot: Path | None) -> Path:
    """`snapshot`, or the installed snapshot of `lane` when none was given."""
    if snapshot is None:
        from lanekit.paths import Paths

        snapshot = find_snapshot(lane, Paths.from_env().snapshots)
    return snapshot


def load_spec(lane: str, snapshot: Path | None) -> RunSpec:
    """Read the lane's RunSpec from `snapshot`, or find it among the installed snapshots."""
    snapshot = resolve_snapshot(lane, snapshot)
    spec = RunSpec.load(snapshot)
    if spec.lane != lane:
        raise UsageError(
            f"{snapshot}: snapshot is for lane {spec.lane}, not {lane}",
            "run `lanekit apply` to rewrite the lane's plist and snapshot",
        )
    return spec
