"""The only code that runs macOS's read-only diagnostic tools: `sfltool dumpbtm`, `fdesetup
status`, `defaults read` of the login window's automatic login, and `pmset -g log`.

argv lists, no shell, stdin closed, a timeout on every call; a tool that is missing, refuses
(it may want root), or hangs answers None, and doctor then says nothing rather than guess. Off
macOS the tools added for boot and sleep facts are not run at all (MACOS): a Linux host may have
a `pmset` or `defaults` of its own that means something else.
"""

from __future__ import annotations

import subprocess
import sys

SFLTOOL = "/usr/bin/sfltool"
FDESETUP = "/usr/bin/fdesetup"
DEFAULTS = "/usr/bin/defaults"
PMSET = "/usr/bin/pmset"
LOGINWINDOW = "/Library/Preferences/com.apple.loginwindow"
"""The login window's preferences (world-readable): `autoLoginUser` names the user macOS logs
in at boot."""
TIMEOUT = 10.0
MACOS = sys.platform == "darwin"


def run_tool(argv: list[str], timeout: float = TIMEOUT) -> str | None:
    """stdout of `argv` when it exits 0, else None."""
    try:
        done = subprocess.run(
            argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace")


def dumpbtm() -> str | None:
    """`sfltool dumpbtm` (per-user records need no root on macOS 13+), None when unreadable."""
    return run_tool([SFLTOOL, "dumpbtm"])


def fdesetup_status() -> str | None:
    """`fdesetup status` (a status verb: no root needed, fdesetup(8)), None off macOS or when
    unreadable."""
    return run_tool([FDESETUP, "status"]) if MACOS else None


def auto_login_user() -> str | None:
    """`defaults read <loginwindow> autoLoginUser` (world-readable), None off macOS, when the
    key is unset (defaults exits 1) or unreadable."""
    return run_tool([DEFAULTS, "read", LOGINWINDOW, "autoLoginUser"]) if MACOS else None


def pmset_log() -> str | None:
    """`pmset -g log` (the power log's Sleep/Wake/DarkWake lines; inspection needs no root),
    None off macOS or when unreadable."""
    return run_tool([PMSET, "-g", "log"], timeout=2 * TIMEOUT) if MACOS else None
