"""How config values and errors are worded: key paths, quoted values, did-you-mean, the
characters a plist cannot hold, and `~`/`$HOME` expansion."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from lanekit.system.quoting import printable

_HOME_RE = re.compile(r"(~|\$HOME|\$\{HOME\})(?=/|$)")
_BARE_KEY_RE = r"[A-Za-z0-9_-]+"
"""Compiled on first use (re caches it): only an error message names a key."""


def display_path(path: Path, cwd: Path) -> str:
    """How messages name a file: relative to `cwd` when it lies inside it, else as is."""
    if path.is_absolute() and path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    return str(path)


def plist_safe(text: str) -> str | None:
    """Why `text` cannot be carried by a plist (None when it can).

    Plists are XML 1.0: control characters other than tab and newline, and U+FFFE/U+FFFF, are
    not allowed; a carriage return would be read back as a newline.
    """
    for char in text:
        code = ord(char)
        if code in (0x09, 0x0A) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD:
            continue
        if code >= 0x10000:
            continue
        return f"contains U+{code:04X}, which a launchd plist cannot carry"
    return None


def one_line(text: str) -> str:
    """Messages are one line even when they quote user text with line breaks in it (and show
    no other control character either: lanekit.system.quoting owns the escaping)."""
    return printable(text)


def expand_home(text: str, home: Path) -> str:
    """`~`, `$HOME` or `${HOME}` at the start of `text` (alone or before `/`) -> `home`."""
    found = _HOME_RE.match(text)
    return str(home) + text[found.end() :] if found else text


def quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def did_you_mean(word: str, choices: Sequence[str] | Mapping[str, Any]) -> str:
    """`; did you mean "x"?` for the closest choice (ignoring case), or nothing."""
    by_folded = {choice.casefold(): choice for choice in choices}
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1)
    return f"; did you mean {quoted(by_folded[close[0]])}?" if close else ""


def key_path(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if re.fullmatch(_BARE_KEY_RE, part) else quoted(part)
        out += f".{text}" if out else text
    return out


def describe_value(value: Any) -> str:
    """A TOML value as the error message names it: its type, and the value when short."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = quoted(value) if len(value) <= 40 else quoted(value[:37] + "...")
        return f"a string ({shown})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime | date | time):
        return f"a date/time ({value.isoformat()})"
    return type(value).__name__


Key = tuple[str | int, ...]
