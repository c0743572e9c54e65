"""The lane snapshot: what `lanekit run` needs, frozen at `apply` time.

launchd runs the lane from this file, not from the live lanes.toml, so editing lanes.toml never
changes a lane until `lanekit apply` says so. Kept tiny and stdlib-only: the runner imports it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from lanekit.atomic import write_atomic
from lanekit.errors import UsageError

SNAPSHOT_SCHEMA = 1
DEFAULT_EXIT_TIMEOUT = 5  # modern launchd's default ExitTimeOut (launchd-semantics.md section 3)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything the lane entrypoint needs to drain its queue."""

    lane: str
    label: str
    queue_dir: Path
    command: tuple[str, ...]
    max_jobs: int
    max_seconds: float | None
    max_attempts: int
    stale_after: float
    exit_timeout: int
    log_path: Path
    durable: bool = True
    log_max_bytes: int = 5 * 1024 * 1024
    log_keep: int = 5

    def to_json(self) -> str:
        """Stable JSON (sorted keys) so an unchanged lane writes an unchanged snapshot."""
        data = asdict(self)
        data["queue_dir"] = str(self.queue_dir)
        data["log_path"] = str(self.log_path)
        data["command"] = list(self.command)
        data["schema"] = SNAPSHOT_SCHEMA
        return json.dumps(data, sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: Path) -> RunSpec:
        """Parse a snapshot; a damaged one is a UsageError naming the file."""
        try:
            data = json.loads(text)
            if data.pop("schema") != SNAPSHOT_SCHEMA:
                raise ValueError("unknown schema")
            data["queue_dir"] = Path(data["queue_dir"])
            data["log_path"] = Path(data["log_path"])
            data["command"] = tuple(data["command"])
            return cls(**data)
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(
                f"{source}: lane snapshot is unreadable ({exc})",
                "run `lanekit apply` to write it again",
            ) from None

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        """Read a snapshot file."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(
                f"{path}: lane snapshot not found", "run `lanekit apply` to install the lane"
            ) from None
        return cls.from_json(text, path)

    def write(self, path: Path) -> None:
        """Write atomically (temp file in the same directory, fsync, rename)."""
        write_atomic(path, self.to_json().encode("utf-8"))
