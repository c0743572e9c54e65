"""The one error root and the exit codes every command and the runner use (docs/exit-codes.md)."""

from __future__ import annotations

from enum import IntEnum, StrEnum


class ExitCode(IntEnum):
    """Process exit statuses; documented in docs/exit-codes.md and pinned by tests."""

    OK = 0
    FAILURE = 1  # the command ran and found or caused failures (validate errors, failed jobs)
    USAGE = 2  # bad command line or bad input (lanes.toml, job payload, id)
    PENDING = 3  # apply: a change waits for a running lane; cancel --stop: the job still ends
    POSTPONED = 4  # kick: launchd postponed the start (ThrottleInterval); it runs by itself soon
    NOT_STARTED = 5  # kick: launchd could not start the job (e.g. exit 78); see lanekit doctor
    UNAVAILABLE = 69  # EX_UNAVAILABLE: environment unusable (dirs missing, cross-device, launchd)
    INTERRUPTED = 75  # EX_TEMPFAIL: stopped by a signal, claimed jobs restored


class LanekitError(Exception):
    """A failure explained to a person: one line of message, one line of hint."""

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(LanekitError):
    """The command line or an input file is wrong; nothing was changed."""

    exit_code = ExitCode.USAGE


class ConfigError(UsageError):
    """lanes.toml (or a template) is invalid; the message names file, lane and key."""


class EnvironmentUnusableError(LanekitError):
    """A directory, filesystem or tool the lane needs is unusable (exit 69)."""

    exit_code = ExitCode.UNAVAILABLE


class UnsafeStateError(EnvironmentUnusableError):
    """A snapshot, plist or state directory someone else could have written (another owner,
    group/world-writable) or that is not a regular file: refused, never trusted (exit 69)."""


class QueueError(EnvironmentUnusableError):
    """The queue's directories cannot be used safely (cross-device, network folder, symlink...)."""


class StopPendingError(LanekitError):
    """`cancel --stop`: the job was asked to stop but has not ended yet (exit 3)."""

    exit_code = ExitCode.PENDING


class LaunchdError(LanekitError):
    """launchd (real or emulated) refused an operation; see launchd.LaunchctlError for details."""


class Refusal(StrEnum):
    """Why a manager refused a verb, in no manager's words (`ServiceError.reason`)."""

    NOT_LOADED = "not-loaded"
    """The lane is not loaded (kick)."""
    BUSY = "busy"
    """A previous instance of the lane is still on its way out: retry once it is gone (load)."""
    REFUSED = "refused"
    """Any other refusal: the error's message and hint say why."""


class ServiceError(LaunchdError):
    """A service manager refused a verb: `reason` is what callers act on, the message and hint
    what the user reads (launchd's `LaunchctlError` adds its code and meaning)."""

    reason: Refusal = Refusal.REFUSED


class NotStartedError(LaunchdError):
    """launchd accepted the start request but could not start the job (exit 5)."""

    exit_code = ExitCode.NOT_STARTED
