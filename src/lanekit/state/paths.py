"""Every location lanekit reads or writes, owned by one frozen object.

The CLI builds it with `Paths.from_env()`; tests build it with `Paths.under(tmp_path)` and pass
it explicitly, so no test ever touches the real home directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lanekit.state.backend import backend_name, state_dir
from lanekit.state.snapshot_schema import pause_marker

__all__ = ["Paths", "backend_name", "is_paused", "paused_labels"]


@dataclass(frozen=True, slots=True)
class Paths:
    """Where lanekit keeps things. All paths are absolute."""

    home: Path
    """The user's home; `~` and `$HOME` in lanes.toml expand to this."""
    launch_agents: Path
    """Where lane plists are installed (~/Library/LaunchAgents, or the emulated domain's dir)."""
    state: Path
    """lanekit's own state: lane snapshots, the emulated domain."""
    cwd: Path
    """Where `./lanes.toml` is looked for."""

    @property
    def snapshots(self) -> Path:
        """Lane snapshots written by `apply`, read by `lanekit run` under launchd."""
        return self.state / "lanes"

    @property
    def emulator(self) -> Path:
        """The emulated launchd domain's state directory."""
        return self.state / "emulator"

    def snapshot_for(self, label: str) -> Path:
        """The snapshot file of the lane with this launchd label."""
        return self.snapshots / f"{label}.json"

    def pause_marker_for(self, label: str) -> Path:
        """The pause marker of the lane with this launchd label (snapshot_fields owns it)."""
        return pause_marker(self.snapshot_for(label))

    def plist_for(self, label: str) -> Path:
        """The installed plist of the lane with this launchd label."""
        return self.launch_agents / f"{label}.plist"

    @classmethod
    def under(cls, root: Path, *, backend: str = "emulated") -> Paths:
        """A self-contained tree below `root` (tests, the demo)."""
        root = root.resolve()
        state = root / "state"
        agents = (
            state / "emulator" / "LaunchAgents"
            if backend == "emulated"
            else root / "Library" / "LaunchAgents"
        )
        return cls(home=root / "home", launch_agents=agents, state=state, cwd=root)

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        platform: str | None = None,
        backend: str | None = None,
    ) -> Paths:
        """The real locations, honouring LANEKIT_STATE_DIR and LANEKIT_LAUNCH_AGENTS."""
        env = os.environ if env is None else env
        platform = sys.platform if platform is None else platform
        backend = backend or backend_name(env, platform)
        home = Path(env.get("HOME") or Path.home())
        state = Path(state_dir(env, platform))
        if "LANEKIT_LAUNCH_AGENTS" in env:
            agents = Path(env["LANEKIT_LAUNCH_AGENTS"])
        elif backend == "emulated":
            agents = state / "emulator" / "LaunchAgents"
        else:
            agents = home / "Library" / "LaunchAgents"
        return cls(
            home=home.absolute(),
            launch_agents=agents.absolute(),
            state=state.absolute(),
            cwd=Path.cwd(),
        )


def is_paused(paths: Paths, label: str) -> bool:
    """True while `lanekit pause` holds the lane with this label (the rule: reconcile.pause;
    here, beside the marker's path, status and doctor ask it without loading reconcile)."""
    return paths.pause_marker_for(label).exists()


def paused_labels(paths: Paths, labels: Iterable[str]) -> frozenset[str]:
    """The labels among `labels` that are paused."""
    return frozenset(label for label in labels if is_paused(paths, label))
