"""Open a file the way the user's desktop would: `open` on macOS, `xdg-open` elsewhere.

One of the few places lanekit starts a process (tests/test_process_seams.py lists it): argv
only, no shell, the path passed as one argument.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from lanekit.errors import EnvironmentUnusableError
from lanekit.system.quoting import shell_quote

OPEN_TIMEOUT = 20.0
"""Seconds to wait for the opener (`open` and `xdg-open` hand the file over and return)."""


def opener_name(platform: str) -> str:
    """The desktop's opener on this platform."""
    return "open" if platform == "darwin" else "xdg-open"


def open_file(
    path: Path,
    *,
    platform: str = sys.platform,
    which: Callable[[str], str | None] = shutil.which,
) -> None:
    """Hand `path` to the desktop's opener; EnvironmentUnusableError (exit 69) when there is
    none or it fails, with the path to open by hand."""
    name = opener_name(platform)
    by_hand = f"open {shell_quote(path)} in a browser yourself"
    found = which(name)
    if found is None:
        raise EnvironmentUnusableError(f"cannot open {path}: `{name}` is not on PATH", by_hand)
    try:
        done = subprocess.run(
            [found, str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=OPEN_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnusableError(f"cannot open {path}: {name}: {exc}", by_hand) from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit {done.returncode}"
        raise EnvironmentUnusableError(f"cannot open {path}: {name}: {why}", by_hand)
