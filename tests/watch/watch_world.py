"""A world for watchdog tests: a lanes.toml with [watch] under tmp_path, applied for real to
an emulated launchd domain, and a `command` channel that appends every notice it gets (one
JSON object on stdin) to a file, and fails while a flag file exists."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lanekit.config import Config, LaneSpec, load_config
from lanekit.reconcile import ApplyResult, apply
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths
from lanekit.watch.watchdog import PassResult, WatchRequest, run_pass

NOTIFIER = 'test -e "$1" && exit 3; cat >> "$2"'
"""The command channel: exit 3 while the flag file exists, else append stdin to the file."""

WATCHED = """\
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.watch"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["/bin/sh", "-c", "exit 1", "{job}"]
max_attempts = 1
throttle_interval = 0

[watch]
every = "5m"
repeat = "6h"
command = ["/bin/sh", "-c", "NOTIFIER", "notifier", "FLAG", "SENT"]
"""


@dataclass
class WatchWorld:
    """lanes.toml + Paths + the emulated domain under one tmp dir."""

    root: Path
    paths: Paths
    config_path: Path

    @classmethod
    def make(cls, tmp_path: Path, text: str = WATCHED) -> WatchWorld:
        """A world whose lanes.toml is `text` (NOTIFIER, FLAG and SENT filled in)."""
        paths = Paths.under(tmp_path)
        paths.home.mkdir(parents=True, exist_ok=True)
        config_path = tmp_path / "lanes.toml"
        world = cls(tmp_path, paths, config_path)
        world.write(text)
        return world

    def write(self, text: str) -> None:
        """Replace lanes.toml."""
        filled = (
            text.replace("NOTIFIER", json.dumps(NOTIFIER)[1:-1])
            .replace("FLAG", str(self.flag))
            .replace("SENT", str(self.sent_file))
        )
        self.config_path.write_text(filled, encoding="utf-8")

    @property
    def flag(self) -> Path:
        """While this file exists the command channel fails (exit 3)."""
        return self.root / "channel-down"

    @property
    def sent_file(self) -> Path:
        """Where the command channel appends the notices it took."""
        return self.root / "sent.jsonl"

    @property
    def domain(self) -> EmulatedDomain:
        """The emulated launchd domain of this world."""
        return EmulatedDomain(self.paths.emulator, launch_agents=self.paths.launch_agents)

    def config(self) -> Config:
        """lanes.toml as loaded now."""
        return load_config(self.config_path, self.paths)

    def lane(self, name: str) -> LaneSpec:
        """One lane of lanes.toml."""
        return self.config().lanes[name]

    def apply(self) -> ApplyResult:
        """`lanekit apply` of the whole lanes.toml."""
        return apply(self.config(), self.paths, self.domain, interpreter=sys.executable)

    def watch(
        self,
        *,
        now: Callable[[], datetime] = datetime.now,
        dry_run: bool = False,
        config: Config | None = None,
    ) -> PassResult:
        """One `lanekit watch` pass on this world (over `config` instead of lanes.toml as
        loaded now, when given: one with a queue in memory, tests/memory_config)."""
        return run_pass(
            WatchRequest(config_path=self.config_path, dry_run=dry_run),
            self.paths,
            env={},
            launchd=self.domain,
            now=now,
            config=config,
        )

    def sent(self) -> list[dict[str, Any]]:
        """Every notice the command channel took, in order."""
        if not self.sent_file.exists():
            return []
        return [json.loads(line) for line in self.sent_file.read_text().splitlines() if line]
