"""The launchd seam's typed facts and protocol: what a domain says, and what it can do.

Every module of lanekit.service.launchd imports these from here, never from the package, so the
package
(which picks a backend, lanekit.service.launchd.open_launchd) and its backends never import each
other
back. `lanekit.service.launchd` re-exports every name: that is where callers import them from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lanekit.errors import ServiceError


class PlistError(ValueError):
    """Bytes that are not a property list; str() is plistlib's own reason."""


def load_plist(data: bytes) -> object:
    """The property list in `data` (XML or binary), or PlistError. plistlib raises a zoo of
    types on bad input (ExpatError, ValueError, TypeError, binascii.Error, IndexError...):
    this is the one place that catches them all. plistlib is imported here, on first use."""
    import plistlib

    try:
        return plistlib.loads(data)
    except Exception as exc:
        raise PlistError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class ListEntry:
    """One row of `launchctl list`: PID (None when not running), last exit status, label.

    `last_exit` follows launchctl's table convention: an exit code, or minus the signal number.
    """

    pid: int | None
    last_exit: int | None
    label: str


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What `launchctl print <service-target>` says about one job (both layouts)."""

    label: str
    state: str | None = None
    """running | not running | spawn scheduled | spawning | xpcproxy ..."""
    pid: int | None = None
    last_exit_code: int | None = None
    """None when the job never exited."""
    last_signal: int | None = None
    """Signal number of the last termination by signal, when known."""
    last_exit_reason: str | None = None
    runs: int | None = None
    program: str | None = None
    arguments: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    default_environment: Mapping[str, str] = field(default_factory=dict)
    inherited_environment: Mapping[str, str] = field(default_factory=dict)
    stdout_path: str | None = None
    stderr_path: str | None = None
    working_directory: str | None = None
    exit_timeout: int | None = None
    minimum_runtime: int | None = None
    """ThrottleInterval as launchd applies it."""
    run_interval: int | None = None
    """StartInterval, for interval jobs."""
    successive_crashes: int | None = None
    path: str | None = None
    """The plist this job was loaded from."""
    type: str | None = None
    domain: str | None = None
    properties: tuple[str, ...] = ()
    """Flags set in `properties` (both the old `{ key = 1 }` and the new `a | b` forms)."""
    calendar: tuple[Mapping[str, int], ...] | None = None
    """StartCalendarInterval as loaded: the `descriptor` of each `event triggers` entry on stream
    com.apple.launchd.calendarinterval; None when the output has no `event triggers` block."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Every other top-level `key = value` line as printed (asid, nice, immediate reason...)."""


FAILED_REAP = "failed reap"
"""print's `last exit reason` for a job whose process vanished without an exit status."""


class LaunchctlError(ServiceError):
    """A launchctl failure with its numeric code, what it means and how to fix it; launchd's
    manager gives it the seam's `reason` (lanekit.service.launchd.manager: load, kick)."""

    def __init__(self, code: int, message: str, meaning: str, hint: str = "") -> None:
        super().__init__(message, hint)
        self.code = code
        self.meaning = meaning

    def __repr__(self) -> str:
        return f"LaunchctlError(code={self.code!r}, message={self.message!r})"


class Launchd(Protocol):
    """One launchd domain (gui/<uid> or user/<uid>), real or emulated."""

    @property
    def domain(self) -> str:
        """The domain target, e.g. `gui/501`."""
        ...

    @property
    def domain_reason(self) -> str:
        """Why lanes live in this domain, in words (`lanekit status` shows it)."""
        ...

    def list(self) -> list[ListEntry]:
        """Every job loaded in the domain (one call, for all lanes)."""
        ...

    def print(self, label: str) -> ServiceInfo:
        """Details of one job; LaunchctlError code 113 when it is not loaded."""
        ...

    def bootstrap(self, plist: Path) -> None:
        """Load a plist into the domain."""
        ...

    def bootout(self, label: str) -> None:
        """Unload a job: SIGTERM, then SIGKILL after its ExitTimeOut."""
        ...

    def kickstart(self, label: str, *, kill: bool = False) -> int | None:
        """Start the job now (kill a running instance first when `kill`); returns its pid."""
        ...

    def kill(self, label: str, signum: int) -> None:
        """Send `signum` to the running instance (`launchctl kill`), leaving the job loaded;
        nothing when it is not running. LaunchctlError 113 when it is not loaded."""
        ...

    def enable(self, label: str) -> None:
        """Clear the disabled override."""
        ...

    def disable(self, label: str) -> None:
        """Set the disabled override (the job cannot be bootstrapped)."""
        ...

    def print_disabled(self) -> dict[str, bool]:
        """label -> True when disabled."""
        ...
