"""Fakes at the launchd seam: FakeLaunchd implements the `Launchd` protocol in memory.

It records every call, keeps jobs, pids, last exit statuses, runs and the disabled set, and
answers with the same LaunchctlError codes and words as the real tool (through
`launchctl.error_for`). Tests drive runs by hand (`start`, `finish`), inject failures
(`fail_next`), and make bootout asynchronous like launchd's (`bootout_lag`).
"""

from __future__ import annotations

import plistlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from lanekit.service.launchd import LaunchctlError, ListEntry, ServiceInfo
from lanekit.service.launchd.launchctl import error_for, error_text

SIGTERM = 15


class Call(NamedTuple):
    """One recorded call: the operation and its target (a label; `bootstrap` records the label
    read from the plist, or the path when the file has no readable Label)."""

    op: str
    target: str = ""


@dataclass
class FakeJob:
    """A loaded job."""

    label: str
    plist: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    pid: int | None = None
    last_exit: int | None = None
    """launchctl list convention: exit code, or minus the signal number."""
    runs: int = 0
    draining: int = 0
    """list() calls left before a booted-out job disappears (launchd's bootout is asynchronous)."""


class FakeLaunchd:
    """An in-memory launchd domain that records calls. Not thread-safe; not a process runner."""

    def __init__(self, *, domain: str = "gui/501", bootout_lag: int = 0) -> None:
        self._domain = domain
        self.jobs: dict[str, FakeJob] = {}
        self.disabled: set[str] = set()
        self.calls: list[Call] = []
        self.signalled: list[tuple[str, int]] = []
        """(label, pid) of every run stopped by bootout or kickstart -k."""
        self.bootout_lag = bootout_lag
        self.already_loaded_code = 5
        """What bootstrap of a loaded label fails with (modern macOS: 5; some report 37)."""
        self._errors: dict[str, list[LaunchctlError]] = {}
        self._next_pid = 1000

    # -- test controls -------------------------------------------------------------------

    def add_job(
        self,
        label: str,
        plist: Mapping[str, Any] | None = None,
        *,
        pid: int | None = None,
        last_exit: int | None = None,
        runs: int = 0,
        path: Path | None = None,
    ) -> FakeJob:
        """Put a job in the domain without recording a call."""
        job = FakeJob(label, dict(plist or {"Label": label}), path, pid, last_exit, runs)
        self.jobs[label] = job
        return job

    def start(self, label: str, pid: int | None = None) -> int:
        """A run begins (as if launchd fired the lane)."""
        job = self.jobs[label]
        job.pid = pid if pid is not None else self._new_pid()
        job.runs += 1
        return job.pid

    def finish(self, label: str, status: int = 0) -> None:
        """The run ends with `status` (list convention)."""
        job = self.jobs[label]
        job.pid = None
        job.last_exit = status

    def fail_next(self, op: str, code: int, message: str = "") -> None:
        """The next call of `op` raises the standard error for `code`."""
        self._errors.setdefault(op, []).append(error_for(code, message))

    def ops(self, label: str) -> list[str]:
        """The changes recorded against `label`, in order (reads, list and print, excluded)."""
        return [c.op for c in self.calls if c.target == label and c.op != "print"]

    # -- the Launchd protocol ------------------------------------------------------------

    @property
    def domain(self) -> str:
        """The domain target."""
        return self._domain

    @property
    def domain_reason(self) -> str:
        """A fixed reason: tests set the domain by hand."""
        return "chosen by the test"

    def list(self) -> list[ListEntry]:
        """Every loaded job; a booted-out job lingers for `bootout_lag` calls."""
        self._record("list")
        entries = [ListEntry(j.pid, j.last_exit, j.label) for j in self.jobs.values()]
        for label, job in list(self.jobs.items()):
            if job.draining > 0:
                job.draining -= 1
                if job.draining == 0:
                    del self.jobs[label]
        return entries

    def print(self, label: str) -> ServiceInfo:
        """Details of one job (113 when it is not loaded)."""
        self._record("print", label)
        job = self._job(label)
        plist = job.plist
        env = plist.get("EnvironmentVariables") or {}
        args = plist.get("ProgramArguments") or []
        signal_no = -job.last_exit if job.last_exit is not None and job.last_exit < 0 else None
        exit_code = job.last_exit if job.last_exit is not None and job.last_exit >= 0 else None
        return ServiceInfo(
            label=label,
            state="running" if job.pid is not None else "not running",
            pid=job.pid,
            last_exit_code=exit_code,
            last_signal=signal_no,
            runs=job.runs,
            program=plist.get("Program") or (args[0] if args else None),
            arguments=tuple(args),
            environment={**env, "XPC_SERVICE_NAME": label},
            stdout_path=plist.get("StandardOutPath"),
            stderr_path=plist.get("StandardErrorPath"),
            working_directory=plist.get("WorkingDirectory"),
            exit_timeout=plist.get("ExitTimeOut", 5),
            minimum_runtime=plist.get("ThrottleInterval", 10),
            run_interval=plist.get("StartInterval"),
            calendar=tuple(_calendar(plist.get("StartCalendarInterval"))),
            extra=_extra(plist),
            path=str(job.path) if job.path else None,
            type="LaunchAgent",
            domain=self._domain,
        )

    def bootstrap(self, plist: Path) -> None:
        """Load a plist: refuses a loaded label and a disabled one, like launchd."""
        try:
            data = plistlib.loads(Path(plist).read_bytes())
            label = str(data["Label"])
        except Exception:
            self._record("bootstrap", str(plist))
            raise error_for(5, f"{plist}: Invalid property list") from None
        self._record("bootstrap", label)
        if label in self.disabled:
            raise error_for(119, f"{plist}: Service is disabled")
        if label in self.jobs:
            code = self.already_loaded_code
            raise error_for(code, f"Bootstrap failed: {code}: {error_text(code)}")
        self.jobs[label] = FakeJob(label, data, Path(plist))

    def bootout(self, label: str) -> None:
        """Unload a job; a running one is signalled (recorded in `signalled`)."""
        self._record("bootout", label)
        job = self.jobs.get(label)
        if job is None or job.draining:
            code = 3 if job is None else 36
            raise error_for(code, f"Boot-out failed: {code}: {error_text(code)}")
        if job.pid is not None:
            self.signalled.append((label, job.pid))
            job.pid = None
            job.last_exit = -SIGTERM
        if self.bootout_lag:
            job.draining = self.bootout_lag
        else:
            del self.jobs[label]

    def kickstart(self, label: str, *, kill: bool = False) -> int | None:
        """Start the job now; a running job keeps its pid unless `kill`."""
        self._record("kickstart-k" if kill else "kickstart", label)
        job = self._job(label)
        if job.pid is not None:
            if not kill:
                return job.pid
            self.signalled.append((label, job.pid))
            job.last_exit = -SIGTERM
        return self.start(label)

    def kill(self, label: str, signum: int) -> None:
        """Signal the running instance (recorded in `signalled`); the job stays loaded."""
        self._record(f"kill-{signum}", label)
        job = self._job(label)
        if job.pid is not None:
            self.signalled.append((label, job.pid))
            job.pid = None
            job.last_exit = -signum

    def enable(self, label: str) -> None:
        """Clear the disabled override."""
        self._record("enable", label)
        self.disabled.discard(label)

    def disable(self, label: str) -> None:
        """Set the disabled override."""
        self._record("disable", label)
        self.disabled.add(label)

    def print_disabled(self) -> dict[str, bool]:
        """Every override, True when disabled."""
        self._record("print-disabled")
        return dict.fromkeys(self.disabled, True)

    # -- internals -------------------------------------------------------------------------

    def _record(self, op: str, target: str = "") -> None:
        self.calls.append(Call(op, target))
        pending = self._errors.get(op)
        if pending:
            raise pending.pop(0)

    def _job(self, label: str) -> FakeJob:
        job = self.jobs.get(label)
        if job is None or job.draining:
            raise error_for(113, f'Could not find service "{label}" in domain for port')
        return job

    def _new_pid(self) -> int:
        self._next_pid += 1
        return self._next_pid


def _calendar(value: object) -> list[dict[str, int]]:
    """StartCalendarInterval as launchd's `event triggers` descriptors show it."""
    if value is None:
        return []
    tables = value if isinstance(value, list) else [value]
    return [dict(t) for t in tables if isinstance(t, dict)]


def _extra(plist: dict[str, Any]) -> dict[str, str]:
    """The loose `key = value` lines print shows: nice (when set) and spawn type."""
    extra = {
        "spawn type": "background (5)" if plist.get("ProcessType") == "Background" else "daemon (3)"
    }
    if isinstance(plist.get("Nice"), int):
        extra["nice"] = str(plist["Nice"])
    return extra
