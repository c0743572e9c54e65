"""The lane snapshot: what `lanekit run` needs, frozen at `apply` time.

launchd runs the lane from this file, not from the live lanes.toml, so editing lanes.toml never
changes a lane until `lanekit apply` says so. Kept tiny and stdlib-only: the runner imports it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from lanekit.state.schemas import SNAPSHOT_SCHEMA
from lanekit.state.snapshot_schema import (
    DEFAULT_KEEP_DONE,
    DEFAULT_KEEP_FAILED,
    DEFAULT_MAX_JOB_BYTES,
    parse_json,
    parse_snapshot,
    read_snapshot,
)
from lanekit.system.atomic import write_atomic

__all__ = ["SNAPSHOT_SCHEMA", "RunSpec", "WatchChannels"]
_PATH_FIELDS = ("queue_dir", "log_path", "stdout_path", "stderr_path", "project")


def snapshot_project(data: bytes | None) -> Path | None:
    """The `project` of a snapshot's bytes (the lanes.toml it came from), or None when the
    snapshot is missing, unreadable or older than the key."""
    if data is None:
        return None
    try:
        parsed = parse_json(data.decode("utf-8"))  # UnicodeDecodeError is a ValueError
    except (ValueError, RecursionError):
        return None
    value = parsed.get("project") if isinstance(parsed, dict) else None
    return Path(value) if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class WatchChannels:
    """The watchdog's channels as `apply` installed them (`[watch]` notify, command and
    webhook): what its passes run and where they post, whatever lanes.toml says since."""

    notify: tuple[str, ...] = ()
    command: tuple[str, ...] | None = None
    webhook_sha256: str | None = None
    """The webhook URL's digest (lanekit.config.watch.webhook_digest), never the URL: it is a
    secret, and secrets reach no snapshot. A pass posts to lanes.toml's URL only while it
    still matches."""
    heartbeat_sha256: str | None = None
    """The heartbeat URL's digest, likewise (written only when there is a heartbeat, so a
    watchdog without one keeps the snapshot it had)."""


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
    timeout: float | None = None
    """Seconds one job may run before its group gets SIGTERM (None: no limit)."""
    kill_grace: float = 5.0
    """Seconds between that SIGTERM and SIGKILL (inside the stop grace when the run stops)."""
    stdout_path: Path | None = None
    """launchd's StandardOutPath for the lane: rotated like the lane log, between runs."""
    stderr_path: Path | None = None
    """launchd's StandardErrorPath, likewise."""
    keep_done: int = DEFAULT_KEEP_DONE
    """The queue's retention of done/ in seconds (the runner purges once a day)."""
    keep_failed: int = DEFAULT_KEEP_FAILED
    """The queue's retention of failed/ in seconds."""
    max_job_bytes: int = DEFAULT_MAX_JOB_BYTES
    """The queue's largest job: a larger file in queue/ goes to failed/ unread."""
    project: Path | None = None
    """The lanes.toml the lane was applied from: the project that owns the label (None in
    snapshots written before lanekit recorded it)."""
    environment: Mapping[str, str] | None = None
    """The lane's EnvironmentVariables, as its plist carries them (lanekit.config
    .lane_environment: its env, PATH from its `path`, LANEKIT_LANE). A run launchd did not
    start gives its jobs what launchd gives from these (lanekit.run.jobenv.lane_process_env).
    None in snapshots written before lanekit recorded it."""
    watch: WatchChannels | None = None
    """The watchdog lane's channels (None for every other lane, and then not written)."""
    plain: bool = False
    """A plain lane (no `queue` in lanes.toml): each run enqueues one job for itself into its
    private queue and runs it (lanekit.run.runner). Written only when true."""
    retry_on_crash: bool = False
    """A plain lane's run cut short (crash, stop) runs again at the next fire; otherwise it is
    failed there and not repeated. Written only for plain lanes."""
    start_on_enqueue: bool = False
    """launchd starts the lane while jobs wait in queue/ (start = [..., "enqueue"]): a run
    that cannot start its command defers them (delayed/) instead of leaving them there, or
    launchd would start it again and again. Written only when true."""

    def to_json(self) -> str:
        """Stable JSON (sorted keys) so an unchanged lane writes an unchanged snapshot."""
        # One level deep: asdict's recursive copy was a third of rendering a lane for doctor.
        data: dict[str, Any] = {item.name: getattr(self, item.name) for item in fields(self)}
        if self.environment is not None:
            data["environment"] = dict(self.environment)
        for key in _PATH_FIELDS:
            value = getattr(self, key)
            data[key] = None if value is None else str(value)
        data["command"] = list(self.command)
        if self.watch is None:
            del data["watch"]  # a lane's snapshot: only the watchdog's has channels
        else:
            data["watch"] = asdict(self.watch)
            if self.watch.heartbeat_sha256 is None:
                del data["watch"]["heartbeat_sha256"]
        if not self.plain:
            del data["plain"], data["retry_on_crash"]  # a queue lane's snapshot is unchanged
        if not self.start_on_enqueue:
            del data["start_on_enqueue"]
        data["schema"] = SNAPSHOT_SCHEMA
        return json.dumps(data, sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: Path) -> RunSpec:
        """Parse a snapshot; a damaged one (not JSON, not an object, a missing, unknown or
        wrong-typed field) is a UsageError naming the file and the field."""
        return cls._from_checked(parse_snapshot(text, source))

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        """Read a snapshot file: a regular file of ours, in a directory of ours, that nobody
        else may write, reached through directories only you or root may write, from your
        home down (UnsafeStateError otherwise: it could make the run execute another user's
        command). The one reader (lanekit.state.snapshot_schema.read_snapshot) is the empty
        run's too."""
        return cls._from_checked(read_snapshot(path))

    @classmethod
    def _from_checked(cls, checked: dict[str, object]) -> RunSpec:
        data: dict[str, Any] = dict(checked)  # every field's type checked by snapshot_problem
        del data["schema"]
        for key in _PATH_FIELDS:
            if data[key] is not None:
                data[key] = Path(data[key])
        data["command"] = tuple(data["command"])
        watch = data.get("watch")
        if watch is not None:
            command = watch["command"]
            data["watch"] = WatchChannels(
                notify=tuple(watch["notify"]),
                command=None if command is None else tuple(command),
                webhook_sha256=watch["webhook_sha256"],
                heartbeat_sha256=watch.get("heartbeat_sha256"),
            )
        return cls(**data)

    def write(self, path: Path) -> None:
        """Write atomically (temp file in the same directory, fsync, rename), mode 0600."""
        write_atomic(path, self.to_json().encode("utf-8"))
