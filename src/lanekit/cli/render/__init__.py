"""The only place that prints. Colour and progress only on a terminal; NO_COLOR is honoured.

Each command group has its own module here (render/config.py, render/queue.py, ...) built on
these primitives.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # rich is imported when a console is first needed: `lanekit --version`, `--help` and the
    # plain-line commands never pay for it (benchmark figure (g)).
    from rich.console import Console


def stdout() -> Console:
    """Console for results (bound to the current sys.stdout, which test runners swap)."""
    return _console(sys.stdout)


def stderr() -> Console:
    """Console for errors, hints and progress (bound to the current sys.stderr)."""
    return _console(sys.stderr)


@lru_cache(maxsize=8)
def _console(stream: Any) -> Console:
    from rich.console import Console

    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    color = is_tty and "NO_COLOR" not in os.environ
    return Console(
        file=stream,
        no_color=not color,
        color_system="auto" if color else None,
        force_terminal=is_tty,
        highlight=False,
        soft_wrap=True,
        width=None if is_tty else 100,
    )


def line(text: str = "") -> None:
    """One plain line on stdout (no markup interpretation)."""
    sys.stdout.write(text + "\n")


def error(message: str, hint: str = "") -> None:
    """`error: ...` and `hint: ...` on stderr."""
    sys.stderr.write(f"error: {message}\n")
    if hint:
        sys.stderr.write(f"hint: {hint}\n")


def warning(message: str) -> None:
    """`warning: ...` on stderr."""
    sys.stderr.write(f"warning: {message}\n")


def json_out(data: Any) -> None:
    """Versioned JSON documents go through here: sorted keys, two-space indent, newline."""
    import json

    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
