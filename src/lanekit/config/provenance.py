"""Lanes belong to their project: the lanes.toml a label was applied from owns it.

Every snapshot records its `project` (the resolved path of the lanes.toml `apply` read). From
that one fact:

- `apply` refuses a lane whose label is installed from another lanes.toml that still exists
  (two projects with a lane `process` and one label prefix would otherwise take over each
  other's lane): one line naming both files; `--adopt` takes the label over deliberately. A
  label whose owner is unknown (a snapshot from before lanekit recorded it) or whose lanes.toml
  is gone is taken over silently: nobody else can claim it.
- `apply`'s "no longer in lanes.toml" offers list only this project's lanes (and those whose
  owner is unknown), never another project's.
- `remove` run in a project refuses a lane installed from another lanes.toml that still
  exists: one line naming both files; `--adopt` removes it deliberately, as apply's takes a
  label over. Without a lanes.toml (from anywhere) there is no other project to protect it
  from: the installed lane is found by its marker and removed.
- `lanekit init` writes a label prefix unique to the user and the project directory
  (`com.<user>.<directory>`), so two projects do not start out on one prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from lanekit.errors import UsageError
from lanekit.system.quoting import cmdline

MARKER = "LANEKIT_LANE"
"""EnvironmentVariables key that marks a plist as installed by lanekit (value: the lane name)."""

_UNSAFE = r"[^a-z0-9-]+"
"""Compiled on first use (re caches it): only `lanekit init` asks, not every reader of MARKER."""


def owner_of(snapshot: bytes | None) -> Path | None:
    """The lanes.toml a label's installed snapshot came from (None when unknown)."""
    # Imported here: lanekit.config imports this module for MARKER, and `lanekit status`
    # reads no snapshot (its RunSpec is a dataclass created at import: benchmark (i)).
    from lanekit.state.snapshot import snapshot_project

    return snapshot_project(snapshot)


def foreign_owner(snapshot: bytes | None, project: Path) -> Path | None:
    """The other project's lanes.toml when the label is installed from one that still exists
    and is not `project`; None when `project` may take the label."""
    owner = owner_of(snapshot)
    if owner is None or owner == project.resolve() or not owner.exists():
        return None
    return owner


def refuse_takeover(
    project: Path, lanes: Sequence[tuple[str, str]], snapshots: Mapping[str, bytes | None]
) -> None:
    """UsageError naming both lanes.toml files when a lane (name, label) of `project` has a
    label another project owns; `snapshots` are the installed snapshot bytes by label."""
    clashes = [
        (name, label, owner)
        for name, label in lanes
        if (owner := foreign_owner(snapshots.get(label), project)) is not None
    ]
    if not clashes:
        return
    name, label, owner = clashes[0]
    more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
    raise UsageError(
        f"lane {name} of {project.resolve()} has label {label}, which belongs to a lane of "
        f"{owner}{more}; not applied",
        "give this project its own [defaults] label_prefix (or the lane a `label`), "
        "or take the label over with `lanekit apply --adopt`",
    )


def refuse_removal(project: Path, lane: str, label: str, snapshot: bytes | None) -> None:
    """UsageError naming both lanes.toml files when `label` was installed from another
    project's lanes.toml that still exists (`snapshot`: its installed snapshot's bytes)."""
    owner = foreign_owner(snapshot, project)
    if owner is None:
        return
    raise UsageError(
        f"lane {lane} ({label}) was installed from {owner}, not from {project.resolve()}; "
        "not removed",
        f"remove it from its project (`{cmdline('lanekit', 'remove', '-c', owner, lane)}`), "
        f"or deliberately with `{cmdline('lanekit', 'remove', '--adopt', lane)}`",
    )


def ours(snapshot: bytes | None, project: Path) -> bool:
    """Whether an installed lane that `project` no longer lists is this project's to offer
    for removal: it was applied from `project`, or its owner is unknown."""
    owner = owner_of(snapshot)
    return owner is None or owner == project.resolve()


def label_prefix_for(user: str, directory: Path) -> str:
    """`com.<user>.<directory name>`, each part lower-cased and reduced to letters, digits and
    `-` (a launchd label, and a file name, on any file system)."""
    user_part = re.sub(_UNSAFE, "-", user.lower()).strip("-") or "user"
    project_part = re.sub(_UNSAFE, "-", directory.name.lower()).strip("-") or "project"
    return f"com.{user_part}.{project_part}"
