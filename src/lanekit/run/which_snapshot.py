"""Which snapshot a lane run reads: the one launchd passes (`--snapshot PATH`), or the
installed snapshot whose lane it is, checked to be that lane's."""

from __future__ import annotations

from pathlib import Path

from lanekit.errors import LanekitError, UsageError
from lanekit.state.snapshot import RunSpec
from lanekit.system.quoting import cmdline


def find_snapshot(lane: str, snapshots: Path) -> Path:
    """The installed snapshot whose lane is `lane` (when launchd did not pass --snapshot).

    A snapshot that cannot be read (damaged, or someone else's) is never run from; when no
    readable one is the lane's, the damaged ones are what is wrong, not a missing install: the
    one named like the lane's label (`<prefix>.<lane>.json`) is reported with its own error
    (the error `--snapshot` gives), else the first of them."""
    matches = []
    damaged: list[tuple[Path, LanekitError]] = []
    try:
        candidates = sorted(snapshots.glob("*.json"))
    except OSError:
        candidates = []
    for candidate in candidates:
        try:
            spec = RunSpec.load(candidate)
        except LanekitError as exc:
            damaged.append((candidate, exc))
            continue
        if spec.lane == lane:
            matches.append(candidate)
    if not matches and damaged:
        for candidate, problem in damaged:
            if candidate.stem == lane or candidate.stem.endswith(f".{lane}"):
                raise problem  # the lane's own, by its label's name: what --snapshot says
        first = damaged[0][1]
        raise UsageError(
            f"lane {lane}: no readable installed snapshot in {snapshots} is this lane's, and "
            f"{len(damaged)} cannot be read: {first.message}",
            f"{first.hint}, or pass --snapshot PATH" if first.hint else "run `lanekit apply`",
        )
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
        from lanekit.state.paths import Paths

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
