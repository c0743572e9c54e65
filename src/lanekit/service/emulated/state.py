"""The emulated launchd domain's state file, `domain.json`: one entry per loaded job and the
disabled labels (lanekit.service.emulated.emulator reads and writes it under its lock).

The layout is read by two more: lanekit.service.emulated.offset (the domain's clock, without
the lock, through `offset_of` as here) and
the watchdog's lean pass (lanekit.watch.fingerprint, builtin modules only, which keeps to
EMULATED_STATE_SCHEMA and the `jobs` / `disabled` / `clock_offset` keys). Change them together,
or bump EMULATED_STATE_SCHEMA.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from lanekit.service.emulated.info import Definition
from lanekit.service.emulated.offset import offset_of
from lanekit.service.launchd.model import FAILED_REAP
from lanekit.state.schemas import EMULATED_STATE_SCHEMA

if TYPE_CHECKING:
    from lanekit.service.launchd.environ import JobExit, SpawnedJob


@dataclass(slots=True)
class JobEntry:
    """One loaded job as kept in domain.json."""

    label: str
    path: str
    plist_xml: str
    """The plist as it was at bootstrap (launchd keeps its own copy)."""
    loaded_at: float
    runs: int = 0
    pid: int | None = None
    token: str | None = None
    watcher_pid: int | None = None
    watcher_token: str | None = None
    status_file: str | None = None
    last_spawn_at: float | None = None
    last_exit_code: int | None = None
    last_signal: int | None = None
    last_exit_reason: str | None = None
    pending_at: float | None = None
    """A throttled start is due at this time (state `spawn scheduled`)."""
    stopping: bool = False
    kill_at: float | None = None
    """When SIGKILL is due for a stop in progress (None: no stop, or ExitTimeOut 0)."""
    booted_out: bool = False
    """bootout was asked: the label goes away as soon as the job is gone."""
    last_calendar: str | None = None
    """The minute (YYYY-MM-DDTHH:MM) of the last calendar firing handled."""
    interval_base: float | None = None
    """The StartInterval timer counts from here (load time, then the last firing)."""
    queue_directories: list[str] | None = None
    """QueueDirectories of the plist (None: none), for the domain's watch on them
    (lanekit.service.emulated.queuewatch), which reads domain.json without importing plistlib."""
    definition: Definition | None = None
    """What `print` says of the plist, worked out at bootstrap
    (lanekit.service.emulated.info)."""

    @property
    def running(self) -> bool:
        return self.pid is not None

    def spawned(self) -> SpawnedJob:
        from lanekit.service.launchd.environ import SpawnedJob

        assert self.pid is not None
        return SpawnedJob(
            self.pid, self.token or "", self.watcher_pid or 0, self.watcher_token or ""
        )

    def clear_run(self) -> None:
        self.pid = self.token = self.watcher_pid = self.watcher_token = None
        self.status_file = None
        self.stopping = False
        self.kill_at = None

    def record_exit(self, ended: JobExit | None) -> None:
        self.last_exit_code = ended.exit_code if ended else None
        self.last_signal = ended.signal if ended else None
        self.last_exit_reason = None if ended else FAILED_REAP

    @property
    def list_status(self) -> int | None:
        """launchctl list's Status column: exit code, or minus the signal."""
        return -self.last_signal if self.last_signal is not None else self.last_exit_code


JOB_FIELDS = tuple(f.name for f in fields(JobEntry))


@dataclass(slots=True)
class DomainState:
    jobs: dict[str, JobEntry]
    disabled: dict[str, bool]
    ended: list[str] = field(default_factory=list)
    """Labels whose run was reaped when this state was loaded (not persisted)."""
    offset: float = 0.0
    """Seconds the domain's clock is ahead of the real one (lanekit.state.clock): `lanekit emulator
    tick` moves it on, and it never goes back."""

    def same_as(self, other: DomainState) -> bool:
        """Whether both would be written as the same file (`ended` is not persisted)."""
        return (
            self.jobs == other.jobs
            and self.disabled == other.disabled
            and self.offset == other.offset
        )

    def to_bytes(self) -> bytes:
        data: dict[str, object] = {
            "schema": EMULATED_STATE_SCHEMA,
            # Every field is a plain value: a shallow dict is asdict's, without its deep copies
            # (this runs on every call into the domain, reads included).
            "jobs": {
                label: {name: getattr(job, name) for name in JOB_FIELDS}
                for label, job in sorted(self.jobs.items())
            },
            "disabled": dict(sorted(self.disabled.items())),
        }
        if self.offset:
            data["clock_offset"] = self.offset
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> DomainState:
        data = json.loads(raw)
        known = {f.name for f in fields(JobEntry)}
        jobs = {
            label: JobEntry(**{k: v for k, v in job.items() if k in known})
            for label, job in data.get("jobs", {}).items()
        }
        disabled = {str(k): bool(v) for k, v in data.get("disabled", {}).items()}
        return cls(jobs, disabled, offset=offset_of(data))
