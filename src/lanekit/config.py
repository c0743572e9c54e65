"""lanes.toml -> validated, frozen lane specs. Errors name the file, the lane and the key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lanekit.schedule import Schedule

DEFAULT_PATH = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A directory queue: `dir` holds tmp/ queue/ claimed/ done/ failed/ records/ logs/."""

    name: str
    dir: Path
    durable: bool = True
    """False skips fsyncs on enqueue (faster; a power loss may lose recent jobs)."""


@dataclass(frozen=True, slots=True)
class LaneSpec:
    """One lane: a launchd job that drains `queue` by running `command` once per job."""

    name: str
    label: str
    queue: QueueSpec
    command: tuple[str, ...]
    """argv; `{job}` is replaced by the claimed job file's path."""
    schedule: Schedule
    stdout_path: Path
    """launchd StandardOutPath (the runner's and the jobs' stdout)."""
    stderr_path: Path
    """launchd StandardErrorPath."""
    log_path: Path
    """The runner's logfmt event log (claimed, done, failed, requeued, recovered, skipped)."""
    env: Mapping[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = DEFAULT_PATH
    """The PATH the job gets (launchd would otherwise give /usr/bin:/bin:/usr/sbin:/sbin)."""
    max_jobs: int = 10
    max_seconds: int | None = None
    max_attempts: int = 3
    stale_after: int = 3600
    nice: int | None = None
    low_priority_io: bool | None = None
    process_type: str | None = None
    throttle_interval: int | None = None
    exit_timeout: int | None = None
    run_at_load: bool = False


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded lanes.toml."""

    path: Path
    label_prefix: str
    queues: Mapping[str, QueueSpec]
    lanes: Mapping[str, LaneSpec]
    templates: Path | None = None
    """A user template directory overriding the shipped templates/."""
