"""A small world for doctor tests: a lanes.toml under tmp_path, lanes installed the way
`apply` installs them (plist + snapshot + queue dirs), hand-written plists, and a context to
run one check with. Problems are then created for real on top of it.
"""

from __future__ import annotations

import os
import plistlib
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lanekit.config import Config, LaneSpec, load_config, run_spec
from lanekit.doctor import (
    DoctorContext,
    Finding,
    Target,
    lane_target,
    plist_target,
    queue_targets,
)
from lanekit.service.launchd import Launchd
from lanekit.service.launchd.plist import render_lane
from lanekit.state.paths import Paths

SYSTEM_PATH = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]

HEALTHY = """
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.lanekit"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["true", "{job}"]
schedule = ["40 10 * * *"]
"""


def tool(directory: Path, name: str, body: str = "exit 0", *, mode: int = 0o755) -> Path:
    """An executable shell script `name` in `directory` (a command some PATH may lack)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(mode)
    return path


@dataclass
class World:
    """lanes.toml + Paths under one tmp dir."""

    paths: Paths
    config_path: Path

    @classmethod
    def make(cls, tmp_path: Path, text: str = HEALTHY) -> World:
        """A world whose lanes.toml is `text`; `~` is tmp_path/home."""
        paths = Paths.under(tmp_path)
        paths.home.mkdir(parents=True, exist_ok=True)
        config_path = tmp_path / "lanes.toml"
        config_path.write_text(text)
        return cls(paths, config_path)

    def config(self) -> Config:
        """lanes.toml as loaded now."""
        return load_config(self.config_path, self.paths)

    def lane(self, name: str = "funnel") -> LaneSpec:
        """One lane of lanes.toml."""
        return self.config().lanes[name]

    def install(self, name: str = "funnel") -> Path:
        """Write the lane's plist and snapshot and create its queue, as `apply` does."""
        from lanekit.queue.directory.backend import Queue

        lane = self.lane(name)
        data = render_lane(
            lane, interpreter=sys.executable, snapshot=self.paths.snapshot_for(lane.label)
        )
        path = self.paths.plist_for(lane.label)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o644)
        run_spec(lane).write(self.paths.snapshot_for(lane.label))
        Queue(lane.queue.dir).ensure()
        lane.stdout_path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def target(self, name: str = "funnel") -> Target:
        """The lane as doctor sees it (installed plist, or what apply would write)."""
        return lane_target(self.lane(name), self.paths)

    def queue_target(self, name: str = "funnel") -> Target:
        """The queue lane `name` drains, as doctor sees it (one subject for all its lanes)."""
        config = self.config()
        (target,) = queue_targets([config.lanes[name]], config)
        return target

    def plist(self, job: Mapping[str, Any], *, name: str | None = None, mode: int = 0o644) -> Path:
        """A hand-written plist file (not lanekit's) in the LaunchAgents directory."""
        label = str(job.get("Label", "com.example.job"))
        path = self.paths.launch_agents / (name or f"{label}.plist")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(plistlib.dumps(dict(job)))
        path.chmod(mode)
        return path

    def foreign(self, job: Mapping[str, Any], **kwargs: Any) -> Target:
        """A hand-written plist as doctor sees it."""
        return plist_target(self.plist(job, **kwargs), None)

    def context(
        self,
        *,
        launchd: Launchd | None = None,
        now: datetime | None = None,
        uid: int | None = None,
    ) -> DoctorContext:
        """A context over this world (optionally a launchd, a frozen clock, another uid)."""
        return DoctorContext(
            self.paths,
            config=self.config(),
            launchd=launchd,
            now=(lambda: now) if now is not None else datetime.now,
            uid=uid,
        )

    def run(self, check_id: str, target: Target, **context: Any) -> list[Finding]:
        """The findings of one check on one target."""
        return self.context(**context).findings(check_id, target)


def job_plist(label: str = "com.example.job", **keys: Any) -> dict[str, Any]:
    """A minimal hand-written job that runs /bin/true; `keys` add or replace plist keys."""
    job: dict[str, Any] = {"Label": label, "ProgramArguments": ["/bin/true"]}
    job.update(keys)
    return job


def is_root() -> bool:
    """Tests run as root in CI: root ignores permission bits, so some problems need a uid."""
    return os.geteuid() == 0


def mode_of(path: Path) -> int:
    """Permission bits of `path`."""
    return stat.S_IMODE(path.stat().st_mode)
