"""lanekit.watch.fingerprint: what the watchdog's lean pass reads of the emulated domain."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HANG = 60
"""Seconds after which the child is taken to hang (a hang is forever)."""


def test_a_fifo_at_the_domain_state_is_unreadable_not_waited_on(tmp_path: Path) -> None:
    """A FIFO planted at the emulated domain's domain.json is not waited on by the lean
    pass's reader nor by the domain clock's (lanekit.service.emulated.state.read_offset):
    the state is unreadable (None) and the offset 0 (issue 30 item 8). Run in a child, so
    that a reader that waits fails the test instead of hanging it."""
    os.mkfifo(tmp_path / "domain.json")
    code = (
        "import sys\n"
        "from lanekit.service.emulated.state import read_offset\n"
        "from lanekit.watch.fingerprint import emulated_state\n"
        "print(emulated_state(sys.argv[1]), read_offset(sys.argv[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=True,
    )
    assert done.stdout == "None 0.0\n"
