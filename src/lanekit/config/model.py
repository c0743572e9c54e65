"""What lanes.toml becomes: the frozen QueueSpec, LaneSpec and Config, the keys each table
takes, and the limits and defaults lanekit applies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from lanekit.config.provenance import MARKER
from lanekit.config.watch import WatchSpec
from lanekit.schedule import (
    Schedule,
)
from lanekit.state.clock import OFFSET_VARIABLE
from lanekit.state.snapshot_schema import (
    DEFAULT_KEEP_DONE,
    DEFAULT_KEEP_FAILED,
    DEFAULT_MAX_JOB_BYTES,
)

DEFAULT_PATH = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


DEFAULT_LABEL_PREFIX = "local.lanekit"


CONFIG_NAME = "lanes.toml"


CONFIG_ENV = "LANEKIT_CONFIG"


PROCESS_TYPES = ("Background", "Standard", "Adaptive", "Interactive")


SESSION_TYPES = ("Aqua", "Background", "LoginWindow", "StandardIO")
"""launchd.plist(5) LimitLoadToSessionType values that apply to a per-user agent."""


DEFAULT_SESSION_TYPES = ("Aqua", "Background")
"""Agents default to Aqua (gui/<uid> only); a lane bootstrapped into user/<uid> (SSH, headless)
needs Background (sops-nix #966: 125/134 without it). Listing both loads one plist into either
domain, as Homebrew's service.rb does with its list of every session type."""


RESERVED_LABEL_PREFIX = "com.apple."


# Labels become file names (<Label>.plist, <label>.json, and write_atomic's temp names add ~20
# bytes); 200 keeps every one of them under the 255-byte name limit of APFS and ext4.
MAX_LABEL_BYTES = 200


MAX_NAME_LENGTH = 64


# launchd reads plist integers into C ints; nothing in a lane needs more.
MAX_INT = 2**31 - 1


# Env keys lanekit writes itself: PATH comes from `path`, LANEKIT_LANE marks lanekit's plists.
RESERVED_ENV = {
    "PATH": "set the lane's PATH with path = [...] instead",
    MARKER: "lanekit sets it to the lane name to recognise its own plists",
    OFFSET_VARIABLE: ("the emulated domain sets it for the jobs it starts (lanekit.state.clock)"),
}


TOP_KEYS = ("defaults", "queues", "lanes", "watch")


RETENTION_MINIMUM = 3600
"""keep_done / keep_failed below an hour would purge jobs a person is still looking at."""


QUEUE_KEYS = (
    "backend",
    "dir",
    "durable",
    "dsn",
    "schema",
    "lease",
    "on_orphan",
    "keep_done",
    "keep_failed",
    "max_job_bytes",
)

QUEUE_BACKENDS = ("directory", "postgres")
"""`[queues.NAME] backend`: a directory on this machine (the default), or a PostgreSQL server
that several machines share."""
DIRECTORY_ONLY_KEYS = ("dir", "durable")
POSTGRES_ONLY_KEYS = ("dsn", "schema", "lease", "on_orphan")

MIN_JOB_BYTES = 2
"""The smallest job there is, `{}`: a lower max_job_bytes would refuse every job."""


# Lane options that [defaults] may set for every lane.
OPTION_KEYS = (
    "max_jobs",
    "max_seconds",
    "max_attempts",
    "stale_after",
    "timeout",
    "kill_grace",
    "nice",
    "low_priority_io",
    "process_type",
    "session_type",
    "throttle_interval",
    "exit_timeout",
    "run_at_load",
)


DEFAULTS_KEYS = ("path", "label_prefix", "templates", "service_manager", *OPTION_KEYS)


LANE_KEYS = (
    "queue",
    "command",
    "schedule",
    "every",
    "env",
    "path",
    "label",
    "stdout_log",
    "stderr_log",
    "log",
    "working_directory",
    "replaces",
    "start",
    "retry_on_crash",
    *OPTION_KEYS,
)


class StartOn(StrEnum):
    """What starts a lane (`start`): its schedule, and/or a job arriving in its queue."""

    SCHEDULE = "schedule"
    """launchd's StartCalendarInterval / StartInterval (`schedule` / `every`), and kicks."""
    ENQUEUE = "enqueue"
    """launchd's QueueDirectories on the queue's queue/: the lane starts while jobs wait."""


DEFAULT_START = (StartOn.SCHEDULE,)


QUEUE_ONLY_KEYS = ("max_jobs", "max_seconds", "max_attempts", "stale_after")
"""Lane keys that only mean something for a lane with a queue: a plain lane (no `queue`) runs
once per fire, one run at a time, and a failed run is not retried."""


PLAIN_QUEUE_PREFIX = "plain:"
"""A plain lane's private queue is named `plain:<lane>`: no queue of lanes.toml can be (queue
names start with a letter or digit and hold no colon), so no two lanes ever share one."""


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A queue: a directory (`dir` holds tmp/ queue/ claimed/ done/ failed/ records/ logs/),
    or a PostgreSQL queue, whose `dir` is its location (`postgres:queue=NAME&...&dsn=...`,
    lanekit.queue.postgres.location: never a password), what every caller hands to
    lanekit.queue.open_queue."""

    name: str
    dir: Path
    durable: bool = True
    """False skips fsyncs on enqueue (faster; a power loss may lose recent jobs)."""
    keep_done: int = DEFAULT_KEEP_DONE
    """Seconds a finished job stays in done/ (with its record) before purging removes it."""
    keep_failed: int = DEFAULT_KEEP_FAILED
    """Seconds a failed job stays in failed/ (with its .error and record)."""
    max_job_bytes: int = DEFAULT_MAX_JOB_BYTES
    """The largest job file, in bytes: enqueue refuses a larger payload, and a larger file
    dropped in queue/ goes to failed/ unread (lanekit.state.snapshot_schema says why 1 MiB)."""


def plain_dir(state: Path, label: str) -> Path:
    """A plain lane's directory under the state dir: its private queue (one job per run, the
    run's record) and its logs."""
    return state / "plain" / label


@dataclass(frozen=True, slots=True)
class LaneSpec:
    """One lane: a launchd job that drains `queue` by running `command` once per job, or, for
    a plain lane (no `queue` in lanes.toml), runs `command` once per fire."""

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
    timeout: int | None = None
    """Seconds one job may run; then SIGTERM to its process group (None: no limit)."""
    kill_grace: int = 5
    """Seconds between a timeout's SIGTERM and SIGKILL."""
    nice: int | None = None
    low_priority_io: bool | None = None
    process_type: str | None = None
    session_type: tuple[str, ...] = DEFAULT_SESSION_TYPES
    """launchd LimitLoadToSessionType: the sessions (domains) the lane may be loaded into."""
    throttle_interval: int | None = None
    exit_timeout: int | None = None
    run_at_load: bool = False
    working_directory: Path | None = None
    """launchd's WorkingDirectory for the lane (its runs and its jobs start there); None:
    the queue's directory."""
    replaces: str | None = None
    """The label of a hand-written launchd job this lane takes over (`lanekit adopt` writes
    it): `apply` boots that job out (never while it runs) and moves its plist aside."""
    start: tuple[StartOn, ...] = DEFAULT_START
    """What starts the lane; with StartOn.ENQUEUE its plist watches the queue's queue/."""
    plain: bool = False
    """No `queue` in lanes.toml: each fire runs `command` once (no `{job}`). `queue` is then a
    private one under the state dir (plain_dir) that holds one job per run: the run's record,
    so the runner, `runs`/`jobs`, doctor, watch and timeline treat it as any lane's job."""
    retry_on_crash: bool = False
    """A plain lane's run cut short by a crash (or `lanekit stop`) runs again at the next fire
    instead of the new one; False (the default): it is recorded as failed and not repeated."""
    project: Path | None = field(default=None, compare=False)
    """The lanes.toml the lane comes from (resolved): the project that owns its label. Where
    a lane was read from is not part of what it is, so it does not take part in ==."""
    entrypoint: tuple[str, ...] | None = None
    """lanekit's arguments in the plist instead of `run NAME --snapshot SNAPSHOT`; only the
    watchdog lane has them (`watch --config LANES.TOML`, lanekit.watch)."""
    guard: tuple[str, ...] | None = None
    """What launchd runs before the interpreter (only the watchdog: `/bin/sh GUARD HEARTBEAT
    LABEL`, lanekit.system.interpreter.guard_script): a check, without Python, that the
    interpreter can still start lanekit, which says so when it cannot."""
    watch: WatchSpec | None = None
    """The watchdog lane's `[watch]` (None for every other lane): `apply` records its channels
    in the lane's snapshot, and each pass runs the channels applied, never what lanes.toml
    says since (lanekit.watch.watchdog.applied_channels)."""

    @property
    def start_directory(self) -> Path:
        """Where the lane's process starts (launchd's and systemd's WorkingDirectory): its
        `working_directory`, else its queue's directory, or, for a queue kept elsewhere (a
        server), the directory of its lane log."""
        if self.working_directory is not None:
            return self.working_directory
        from lanekit.queue import directory_of

        return self.queue.dir if directory_of(self.queue.dir) is not None else self.log_path.parent


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded lanes.toml."""

    path: Path
    label_prefix: str
    queues: Mapping[str, QueueSpec]
    lanes: Mapping[str, LaneSpec]
    templates: Path | None = None
    """A user template directory overriding the shipped templates/."""
    service_manager: str | None = None
    """`[defaults] service_manager`: launchd, systemd or emulated; None: chosen by platform
    (lanekit.state.backend.manager_choice)."""
    watch: WatchSpec | None = None
    """`[watch]`: the watchdog (its lane is in `lanes` as `watch`); None without the table."""
