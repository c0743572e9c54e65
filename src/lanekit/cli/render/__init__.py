"""The only place that prints. Colour and progress only on a terminal; NO_COLOR is honoured.

Each command group has its own module here (render/config.py, render/queue.py, ...) built on
these primitives, and every primitive escapes terminal controls with
`lanekit.system.quoting.printable`
(labels, paths and log text come from files anyone may write): render modules never write to a
stream or a console themselves, so nothing reaches the terminal unescaped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from lanekit.system.quoting import printable

if TYPE_CHECKING:
    # rich is imported when a console is first needed: `lanekit --version`, `--help` and the
    # plain-line commands never pay for it (benchmark figure (g)).
    from rich.console import Console
    from rich.text import Text


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
    """One plain line on stdout (no markup interpretation, controls escaped)."""
    sys.stdout.write(printable(text) + "\n")


def note(text: str) -> None:
    """One plain line on stderr (controls escaped)."""
    sys.stderr.write(printable(text) + "\n")


def error(message: str, hint: str = "") -> None:
    """`error: ...` and `hint: ...` on stderr, each one line whatever the message holds."""
    note(f"error: {message}")
    if hint:
        note(f"hint: {hint}")


def warning(message: str) -> None:
    """`warning: ...` on stderr."""
    note(f"warning: {message}")


def styled(*parts: str | tuple[str, str]) -> Text:
    """A rich Text from parts, each escaped; a `(value, style)` part is styled on a terminal."""
    from rich.text import Text

    text = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        text.append(printable(value), style=style or None)
    return text


def escaped(text: Text) -> Text:
    """`text` itself when it holds no terminal control, else its plain text escaped (styles
    are dropped: a span cannot be mapped onto the longer escaped text). For renderers that
    build rich Text from parts, like the timeline chart."""
    plain = text.plain
    safe = printable(plain)
    if safe == plain:
        return text
    from rich.text import Text

    return Text(safe)


def show(text: Text) -> None:
    """One styled line on stdout; build `text` with `styled` so that it is escaped."""
    if sys.stdout.isatty():
        stdout().print(text)
    else:
        sys.stdout.write(text.plain + "\n")


def show_parts(*parts: str | tuple[str, str]) -> None:
    """`show(styled(*parts))` that needs rich only on a terminal: off one (a pipe, a file, a
    script) the line is the parts' escaped text, and rich is never imported."""
    if sys.stdout.isatty():
        show(styled(*parts))
    else:
        sys.stdout.write(
            "".join(printable(p if isinstance(p, str) else p[0]) for p in parts) + "\n"
        )


def table_row(cells: Sequence[tuple[str, str]], widths: Sequence[int]) -> None:
    """One table row of (value, style) cells padded to `widths`, two spaces apart; styles show
    only on a terminal (show_parts)."""
    parts: list[str | tuple[str, str]] = []
    last = len(cells) - 1
    for i, ((value, style), width) in enumerate(zip(cells, widths, strict=True)):
        parts.append((value if i == last else value.ljust(width), style))
        if i != last:
            parts.append("  ")
    show_parts(*parts)


def json_out(data: Any) -> None:
    """Versioned JSON documents go through here: sorted keys, two-space indent, newline."""
    import json

    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
