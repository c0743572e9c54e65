"""Exit statuses in words: one vocabulary for `status`, `try` and `doctor`.

A lane's last exit can come from lanekit's runner (0/1/2/69/75), from launchd itself (78: it
could not set the job up, the program never ran), from a shell wrapper (126/127), or be a
signal. Signal names are the running system's: launchd and lanekit run on the same machine.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping

from lanekit.errors import ExitCode

SYSEXITS: Mapping[int, str] = {
    value: name for name, value in vars(os).items() if name.startswith("EX_") and 64 <= value <= 78
}
"""The sysexits(3) names `launchctl print` appends to exit codes 64-78 (`78: EX_CONFIG`).
Owned here, with the other exit words, so that describing an exit (`lanekit status`) does not
load the launchctl parsers."""

RUNNER_EXITS = {
    int(ExitCode.FAILURE): "some jobs failed",
    int(ExitCode.USAGE): "lanekit usage error: bad snapshot or arguments",
    int(ExitCode.UNAVAILABLE): "environment unusable, see the lane log",
    int(ExitCode.INTERRUPTED): "stopped by a signal, jobs restored",
}
"""What lanekit's runner means by its codes (docs/exit-codes.md)."""

LAUNCHD_AND_SHELL_EXITS = {
    os.EX_CONFIG: "EX_CONFIG: launchd could not start the job",
    126: "command found but not executable",
    127: "command not found",
}


def signal_label(number: int) -> str:
    """`SIGTERM`, or `signal N` for a number this system does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(
    exit_code: int | None, sig: int | None = None, *, lanekit_runner: bool = True
) -> str:
    """`exit code 127 (command not found)`, `killed by SIGTERM`, or `never exited`.

    `exit_code` may also be launchctl's list convention (minus the signal number).
    `lanekit_runner=False` for programs that are not lanekit's runner, whose 1/2/69/75 mean
    whatever that program means.
    """
    if sig is None and exit_code is not None and exit_code < 0:
        sig = -exit_code
    if sig is not None:
        return f"killed by {signal_label(sig)}"
    if exit_code is None:
        return "never exited"
    meaning = (RUNNER_EXITS.get(exit_code) if lanekit_runner else None) or (
        LAUNCHD_AND_SHELL_EXITS.get(exit_code)
    )
    if meaning is None and exit_code in SYSEXITS and exit_code != os.EX_CONFIG:
        meaning = SYSEXITS[exit_code]
    return f"exit code {exit_code} ({meaning})" if meaning else f"exit code {exit_code}"
