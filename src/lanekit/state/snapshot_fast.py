"""The snapshot as the empty-run fast path reads it: without json.

Importing json pulls in re and compiles its patterns, which would cost every scheduled run
(most find nothing to do) a measurable share of its start-up (benchmark figure (c)). So the
fast path (lanekit.run.entry) reads the snapshot with this small strict JSON reader and the same
field table as lanekit.state.snapshot (lanekit.state.snapshot_schema). Whatever this reader
accepts, json
reads the same way; anything it doubts is left to the full run, which reads the snapshot again
with json and explains, or refuses, what is wrong. Builtin modules only.
"""

# ruff: noqa: PTH116, PTH120
# (os and os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os

from lanekit.state.snapshot_schema import snapshot_problem
from lanekit.system.owned import unsafe_reason

__all__ = ["parse_json", "read_snapshot"]


def read_snapshot(path: str) -> dict[str, object] | None:
    """The snapshot at `path` as a dict when it reads cleanly: a regular file and directory of
    ours that nobody else may write, UTF-8 JSON, and every field of the right type
    (snapshot_fields). None otherwise: the full path reads it again and explains, or refuses,
    what is wrong."""
    try:
        if unsafe_reason(os.stat(os.path.dirname(path) or "."), directory=True) is not None:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if unsafe_reason(os.fstat(fd)) is not None:
                return None
            with open(fd, "rb", closefd=False) as handle:
                data = handle.read()
        finally:
            os.close(fd)
        value = parse_json(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if snapshot_problem(value) is not None or not isinstance(value, dict):
        return None
    return value


_WHITESPACE = " \t\n\r"
_DIGITS = "0123456789"
_HEX = "0123456789abcdefABCDEF"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def parse_json(text: str) -> object:
    """Strict RFC 8259 JSON (no NaN or Infinity, no trailing data, no control characters in
    strings). Whatever it accepts, json.loads accepts and gives the same value (a property
    test holds it to that); it may refuse more, and then the caller asks json. ValueError
    when the text is not JSON."""
    value, end = _value(text, _skip(text, 0))
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data at offset {end}")
    return value


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WHITESPACE:
        i += 1
    return i


def _value(s: str, i: int) -> tuple[object, int]:
    c = s[i : i + 1]
    if c == '"':
        return _string(s, i + 1)
    if c == "{":
        return _object(s, i + 1)
    if c == "[":
        return _array(s, i + 1)
    if s.startswith("true", i):
        return True, i + 4
    if s.startswith("false", i):
        return False, i + 5
    if s.startswith("null", i):
        return None, i + 4
    if c == "-" or (c != "" and c in _DIGITS):
        return _number(s, i)
    raise ValueError(f"expecting a value at offset {i}")


def _digits(s: str, i: int) -> int:
    """The index after the run of ASCII digits at `i` (str.isdigit would take any script's)."""
    n = len(s)
    while i < n and s[i] in _DIGITS:
        i += 1
    return i


def _number(s: str, i: int) -> tuple[object, int]:
    start = i
    if s[i] == "-":
        i += 1
    c = s[i : i + 1]
    if c == "0":
        i += 1
    elif c != "" and c in "123456789":
        i = _digits(s, i + 1)
    else:
        raise ValueError(f"bad number at offset {start}")
    integer = True
    if s[i : i + 1] == ".":
        end = _digits(s, i + 1)
        if end == i + 1:
            raise ValueError(f"bad number at offset {start}")
        i, integer = end, False
    if s[i : i + 1] in ("e", "E"):
        i += 1
        if s[i : i + 1] in ("+", "-"):
            i += 1
        end = _digits(s, i)
        if end == i:
            raise ValueError(f"bad number at offset {start}")
        i, integer = end, False
    text = s[start:i]
    return (int(text) if integer else float(text)), i


def _hex4(s: str, i: int) -> int:
    digits = s[i : i + 4]
    if len(digits) != 4 or any(ch not in _HEX for ch in digits):
        raise ValueError(f"bad \\u escape at offset {i}")
    return int(digits, 16)


def _string(s: str, i: int) -> tuple[str, int]:
    parts: list[str] = []
    n = len(s)
    while True:
        j = i
        while j < n and s[j] != '"' and s[j] != "\\" and s[j] >= " ":
            j += 1
        parts.append(s[i:j])
        if j >= n:
            raise ValueError("unterminated string")
        if s[j] == '"':
            return "".join(parts), j + 1
        if s[j] != "\\":
            raise ValueError(f"control character in string at offset {j}")
        escape = s[j + 1 : j + 2]
        if escape == "u":
            code = _hex4(s, j + 2)
            j += 6
            # A surrogate pair written as two escapes is one character (as json reads it);
            # a lone surrogate stays what it is.
            if 0xD800 <= code <= 0xDBFF and s[j : j + 2] == "\\u":
                low = _hex4(s, j + 2)
                if 0xDC00 <= low <= 0xDFFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    j += 6
            parts.append(chr(code))
        elif escape in _ESCAPES:
            parts.append(_ESCAPES[escape])
            j += 2
        else:
            raise ValueError(f"bad escape at offset {j}")
        i = j


def _object(s: str, i: int) -> tuple[dict[str, object], int]:
    result: dict[str, object] = {}
    i = _skip(s, i)
    if s[i : i + 1] == "}":
        return result, i + 1
    while True:
        if s[i : i + 1] != '"':
            raise ValueError(f"expecting a key at offset {i}")
        key, i = _string(s, i + 1)
        i = _skip(s, i)
        if s[i : i + 1] != ":":
            raise ValueError(f"expecting ':' at offset {i}")
        value, i = _value(s, _skip(s, i + 1))
        result[key] = value
        i = _skip(s, i)
        c = s[i : i + 1]
        if c == "}":
            return result, i + 1
        if c != ",":
            raise ValueError(f"expecting ',' or '}}' at offset {i}")
        i = _skip(s, i + 1)


def _array(s: str, i: int) -> tuple[list[object], int]:
    result: list[object] = []
    i = _skip(s, i)
    if s[i : i + 1] == "]":
        return result, i + 1
    while True:
        item, i = _value(s, i)
        result.append(item)
        i = _skip(s, i)
        c = s[i : i + 1]
        if c == "]":
            return result, i + 1
        if c != ",":
            raise ValueError(f"expecting ',' or ']' at offset {i}")
        i = _skip(s, i + 1)
