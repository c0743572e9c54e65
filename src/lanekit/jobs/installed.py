"""The installed lanes, as their snapshots say (lanekit.state.snapshot_schema.read_snapshot),
for the two paths that must not read lanes.toml: a single `lanekit enqueue` (lanekit.jobs.add)
and shell completion of lane names and job ids (lanekit.jobs.complete). Builtin imports only.

Which project: the lanes installed from the lanes.toml a command would read here
($LANEKIT_CONFIG, else ./lanes.toml) when it exists; with no such file, every installed
project's. The watchdog's lane runs no jobs and is left out.
"""

# ruff: noqa: PTH100, PTH113, PTH118, PTH208
# (os.path on str paths: pathlib is one of the imports these paths avoid)
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CONFIG_VARIABLE = "LANEKIT_CONFIG"
"""lanekit.config's CONFIG_ENV (a test pins the two together; importing config costs the
start-up these paths exist to save)."""
CONFIG_NAME = "lanes.toml"
"""lanekit.config's CONFIG_NAME (pinned as CONFIG_VARIABLE is)."""
WATCH_LANE = "watch"
"""The watchdog lane's name (lanekit.config.watch.WATCH_LANE, pinned likewise)."""


def installed_lanes(
    lane: str | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> list[dict[str, object]]:
    """The snapshots of the installed lanes of the project here (see the module's docstring),
    named `lane` when given (a label is `<label_prefix>.<lane>`, so only those files are
    read). A snapshot that cannot be read (damaged, someone else's) is passed over: the
    commands that read snapshots themselves (run, status, doctor) say what is wrong with it."""
    from lanekit.state.backend import state_dir
    from lanekit.state.snapshot_schema import read_snapshot

    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if lane == WATCH_LANE:
        return []
    snapshots = os.path.join(state_dir(env, platform), "lanes")
    suffix = ".json" if lane is None else f".{lane}.json"
    try:
        names = sorted(n for n in os.listdir(snapshots) if n.endswith(suffix) and n[:1] != ".")
    except OSError:
        return []
    config = os.path.abspath(env.get(CONFIG_VARIABLE) or CONFIG_NAME)
    here = os.path.realpath(config) if os.path.isfile(config) else None
    found: list[dict[str, object]] = []
    for name in names:
        try:
            spec = read_snapshot(os.path.join(snapshots, name))
        except Exception:  # noqa: S112 - a refusal (lanekit.errors, not imported) or OSError
            continue
        project = spec["project"]
        if spec.get("watch") is not None or spec["lane"] == WATCH_LANE:
            continue
        if lane is not None and spec["lane"] != lane:
            continue
        if here is None or (isinstance(project, str) and os.path.realpath(project) == here):
            found.append(spec)
    return found
