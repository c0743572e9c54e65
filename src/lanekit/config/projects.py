"""Read commands from anywhere: the projects of the installed lanes.

Every installed snapshot records the lanes.toml it was applied from (lanekit.config.provenance).
When
no lanes.toml is given or found (`--config`, `$LANEKIT_CONFIG`, `./lanes.toml`), `status`,
`jobs`, `job`, `doctor`, `logs`, `try`, `retry`, `pause` ... use those projects instead: each
lanes.toml that still exists, loaded, with only the lanes installed from it. `--project PATH`
(a project directory or its lanes.toml) names one project explicitly, from anywhere.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from lanekit.config import CONFIG_NAME, Config, LaneSpec, find_config, load_config
from lanekit.errors import ConfigError, UsageError
from lanekit.state.paths import Paths


def installed_projects(paths: Paths) -> dict[Path, set[str]]:
    """lanes.toml path -> labels installed from it, from every readable snapshot."""
    found: dict[Path, set[str]] = {}
    directory = paths.snapshots
    for snapshot in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            data = json.loads(snapshot.read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        project = data.get("project") if isinstance(data, dict) else None
        label = data.get("label") if isinstance(data, dict) else None
        if isinstance(project, str) and isinstance(label, str):
            found.setdefault(Path(project), set()).add(label)
    return found


def project_config(project: Path, paths: Paths) -> Path:
    """The lanes.toml that `--project PATH` names (a directory holding one, or the file)."""
    path = paths.cwd / project
    if path.is_dir():
        path = path / CONFIG_NAME
    if not path.is_file():
        raise ConfigError(
            f"{path}: no such lanes.toml (from --project)",
            "give a project directory or its lanes.toml; `lanekit status` from anywhere lists "
            "the installed projects",
        )
    return path


def find_configs(
    option: Path | None,
    paths: Paths,
    env: Mapping[str, str],
    *,
    project: Path | None = None,
) -> tuple[list[Config], bool]:
    """The configs a read command works on, and whether they came from the installed
    snapshots (True: from anywhere; the project is then worth showing).

    `--config` / `$LANEKIT_CONFIG` / `./lanes.toml` when given or present; else `--project`;
    else every installed project whose lanes.toml still exists, restricted to its installed
    lanes. None of these: the ConfigError of a missing ./lanes.toml."""
    if project is not None:
        if option is not None:
            raise UsageError("give either --config or --project, not both", "--project PATH")
        return [load_config(project_config(project, paths), paths)], False
    try:
        return [load_config(find_config(option, env, paths.cwd), paths)], False
    except ConfigError as missing:
        if option is not None or env.get("LANEKIT_CONFIG") or (paths.cwd / CONFIG_NAME).exists():
            raise
        configs = []
        for path, labels in installed_projects(paths).items():
            if not path.is_file():
                continue
            loaded = load_config(path, paths)
            lanes = {n: lane for n, lane in loaded.lanes.items() if lane.label in labels}
            if lanes:
                configs.append(replace(loaded, lanes=lanes))
        if not configs:
            raise ConfigError(
                f"{missing.message}, and no installed lane records a lanes.toml that exists",
                missing.hint,
            ) from None
        return configs, True


def lanes_named(configs: Sequence[Config], names: Sequence[str]) -> list[LaneSpec]:
    """The named lanes (every lane when none is named) across `configs`, in order. A name in
    several projects is ambiguous: UsageError naming them, with the --project hint."""
    if not names:
        return [lane for config in configs for lane in config.lanes.values()]
    chosen = []
    for name in names:
        holders = [config for config in configs if name in config.lanes]
        if not holders:
            known = sorted({n for config in configs for n in config.lanes})
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}?" if close else f"lanes: {', '.join(known)}"
            where = configs[0].path if len(configs) == 1 else "any installed project"
            raise UsageError(f"no lane named {name!r} in {where}", hint)
        if len(holders) > 1:
            files = ", ".join(str(config.path) for config in holders)
            raise UsageError(
                f"lane {name!r} is in several projects ({files})",
                "say which with --project PATH (or --config)",
            )
        chosen.append(holders[0].lanes[name])
    return chosen


def config_of_label(paths: Paths, label: str) -> Config | None:
    """The config of the project that installed `label` (from its snapshot), if it still
    exists and loads: how `doctor --plist` recognises a lanekit lane from anywhere."""
    from lanekit.state.snapshot import snapshot_project

    try:
        data = paths.snapshot_for(label).read_bytes()
    except OSError:
        return None
    project = snapshot_project(data)
    if project is None or not project.is_file():
        return None
    try:
        return load_config(project, paths)
    except ConfigError:
        return None
