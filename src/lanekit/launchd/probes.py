"""The only code that runs macOS's read-only diagnostic tools (today `sfltool dumpbtm`).

argv lists, no shell, stdin closed, a timeout on every call; a tool that is missing, refuses
(it may want root), or hangs answers None, and doctor then says nothing rather than guess.
"""

from __future__ import annotations

import subprocess

SFLTOOL = "/usr/bin/sfltool"
TIMEOUT = 10.0


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
