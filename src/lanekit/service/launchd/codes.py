"""launchctl's numeric codes by name, and the groups of them lanekit acts on.

launchctl reports a failure as `<what>: N: <text>` and exits N; below 107 N is an errno
(macOS numbering), from 107 on launchd's own error (`launchctl error N` prints both kinds;
launchctl.ERROR_TEXT holds every text). The ones lanekit recognises or raises are named here
once: the parser (launchctl.py), the emulator, reconcile, status and doctor's checks use these
names instead of bare numbers, so "which code means not loaded" has one answer.
"""

from __future__ import annotations

from enum import IntEnum


class LaunchctlCode(IntEnum):
    """A launchctl error code. An IntEnum: it compares equal to the int launchctl printed."""

    NOT_PERMITTED = 1
    """EPERM: another user's domain, or the system domain without root."""
    NO_SUCH_FILE = 2
    """ENOENT: the plist path does not exist (also: launchctl itself could not be executed)."""
    NO_SUCH_PROCESS = 3
    """ESRCH: bootout of a label that is not loaded."""
    IO_ERROR = 5
    """EIO: launchd refused without saying why (bootstrap of a label still loaded, a bad plist
    on old releases, ...)."""
    FILE_EXISTS = 17
    """EEXIST: 10.10-10.15 say `Bootstrap failed: 17: File exists` for a label already loaded."""
    STILL_STOPPING = 36
    """EINPROGRESS: bootout already asked the job to stop and it is still exiting."""
    ALREADY_IN_PROGRESS = 37
    """EALREADY: the label is already loaded, or still being unloaded."""
    TIMED_OUT = 60
    """ETIMEDOUT: what lanekit reports when launchctl itself did not answer in time."""
    USAGE = 64
    """launchctl's usage exit: a subcommand, option or target this launchctl does not know."""
    INVALID_PLIST = 109
    """The plist file is not a valid property list."""
    NO_DOMAIN = 112
    """No such domain: gui/<uid> exists only while the user is logged in at the screen."""
    NO_SERVICE = 113
    """No job with this label is loaded in this domain."""
    DISABLED = 119
    """The job has a disabled override, and a disabled job cannot be loaded."""
    BAD_PERMISSIONS = 122
    """The plist is writable by group or others, or not owned by the loading user."""
    DOMAIN_UNSUPPORTED = 125
    """This domain cannot do that (gui/<uid> without a GUI session, usually)."""
    WRONG_SESSION = 134
    """LimitLoadToSessionType does not list this domain's session."""
    SIP = 150
    """System Integrity Protection guards the job."""
    NOT_PLATFORM_BINARY = 154
    """launchd accepts the request only from Apple-signed tools."""


NOT_LOADED = frozenset({LaunchctlCode.NO_SUCH_PROCESS, LaunchctlCode.NO_SERVICE})
"""Codes for "that job is not loaded" (print says 113, bootout 3)."""
STILL_LOADED = frozenset({LaunchctlCode.IO_ERROR, LaunchctlCode.ALREADY_IN_PROGRESS})
"""bootstrap codes seen while the previous instance of the label is still draining."""
ABSENT = frozenset(
    {LaunchctlCode.NO_DOMAIN, LaunchctlCode.NO_SERVICE, LaunchctlCode.DOMAIN_UNSUPPORTED}
)
"""Codes meaning "not in this domain": no such service, or no such domain here (no GUI login)."""
ABSENT_OR_GONE = ABSENT | {LaunchctlCode.NO_SUCH_PROCESS}
"""bootout also says 3 (No such process) for a label that is not loaded (errors-04, errors-06)."""
NO_GUI = frozenset({LaunchctlCode.NO_DOMAIN, LaunchctlCode.DOMAIN_UNSUPPORTED})
"""What launchd answers for gui/<uid> when the user has no GUI login here (errors-13: 125,
errors-15/17: 112): the only answers on which lanekit falls back to user/<uid>."""
