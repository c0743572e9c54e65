"""The one place the watchdog starts a process: a `command` channel's program, or osascript.

No shell: the argv is executed as given, the notice arrives on stdin, and the process (its
whole process group) is killed when it outlives `timeout`. Its stdout is discarded; the tail
of its stderr is kept for the failure message.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

STDERR_TAIL = 300
"""Characters of a failed notifier's stderr kept for the message."""


@dataclass(frozen=True, slots=True)
class Ran:
    """How a notifier process ended."""

    returncode: int | None
    """None when it was killed at the timeout."""
    stderr: str


def run_notifier(
    argv: Sequence[str], stdin: bytes, *, timeout: float, env: Mapping[str, str]
) -> Ran:
    """Run `argv` with `stdin`; OSError when it cannot be started (not found, not executable)."""
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env),
        start_new_session=True,  # its own group, so a timeout stops its children too
        close_fds=True,
    )
    try:
        _, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return Ran(None, "")
    text = err.decode("utf-8", "replace").strip()
    return Ran(process.returncode, text[-STDERR_TAIL:])
