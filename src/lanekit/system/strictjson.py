"""Strict JSON: what lanekit reads from files others can write (job records, job payloads,
a watcher's request).

Strict means: a duplicate key, NaN/Infinity, bytes after the value, non-UTF-8 bytes or a BOM
make the text unreadable (a ValueError with the reason), never "last key wins" (why that
matters for a record: lanekit.queue.records). Nesting deeper than the parser recurses is a
ValueError too (NestedTooDeepError), never a RecursionError, and integers longer than
Python's default digit limit are refused in words.

Builtin imports only at import time: a single `lanekit enqueue` checks its payload here, and its
start-up is a benchmark figure (lanekit.jobs.add). Text is scanned by json's own C scanner
(`_json.make_scanner`, what json.loads runs on CPython) handed the strict settings directly;
whatever it refuses is scanned again by the json module's scanner with the same settings,
which words the error (json.JSONDecodeError with its position), so `import json` and its
compiled patterns are paid only for bad JSON, or on an interpreter without the C scanner.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Scanner: TypeAlias = Callable[[str, int], tuple[Any, int]]


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # rare: find the key that came twice, to name it
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


MAX_INT_DIGITS = 4300
"""Python's default int_max_str_digits: a longer integer in a record is refused, worded here."""


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _int_unread(text: str) -> int:
    return 0


class _Settings:
    """What a scanner reads of a json.JSONDecoder: json.loads's defaults, but duplicate keys
    and NaN/Infinity refused (and integers bounded, or not converted at all: `_Check`)."""

    strict = True  # no raw control characters inside strings
    object_hook = None
    object_pairs_hook = staticmethod(_reject_duplicates)
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = staticmethod(_bounded_int)
    parse_constant = staticmethod(_reject_constant)
    memo: dict[str, str]  # the pure-Python scanner keeps its key cache here

    def __init__(self) -> None:
        self.memo = {}


class _Check(_Settings):
    """The same strictness for validating JSON whose values nobody here reads (job payloads):
    integers are not converted, so a 5,000-digit integer, which is valid JSON, is accepted."""

    parse_int = staticmethod(_int_unread)


def _c_scanners() -> tuple[Scanner, Scanner] | None:
    """json's C scanner with each of the settings, or None on an interpreter without it."""
    try:
        from _json import make_scanner
    except ImportError:  # pragma: no cover - an interpreter without json's C accelerator
        return None
    return make_scanner(_Settings()), make_scanner(_Check())  # type: ignore[arg-type]


_fast = _c_scanners()
"""One strict scanner of each kind for every parse (json.loads with hooks builds a decoder per
call)."""
_worded: dict[bool, Scanner] = {}
"""json's own scanners (json.scanner.make_scanner) with the same settings, made the first
time a text does not parse: they raise json.JSONDecodeError with the position."""
_SPACE = " \t\n\r"
"""JSON's whitespace (RFC 8259), which json.loads skips around the value."""


def _after_space(text: str, at: int) -> int:
    """Where the first non-whitespace character at or after `at` is (len(text): none)."""
    return len(text) - len(text[at:].lstrip(_SPACE))


def _scan_worded(text: str, at: int, *, values: bool) -> tuple[Any, int]:
    """Scan with json's own scanner: the same value as the C one, or the error worded."""
    scan = _worded.get(values)
    if scan is None:
        from json.scanner import make_scanner

        scan = make_scanner(_Settings() if values else _Check())  # type: ignore[arg-type]
        _worded[values] = scan
    return scan(text, at)


class NestedTooDeepError(ValueError):
    """JSON nested deeper than the parser recurses: valid JSON, but lanekit will not read it."""


def strict_loads(data: bytes | str, *, values: bool = True) -> Any:
    """Parse JSON, rejecting duplicate keys, NaN/Infinity, non-UTF-8 bytes and trailing bytes.

    Raises ValueError (json.JSONDecodeError and UnicodeDecodeError are ValueErrors) with the
    reason. Whitespace after the value is allowed; anything else is "Extra data". Nesting too
    deep for the parser (it recurses) is a ValueError too, never a RecursionError. Integers
    longer than MAX_INT_DIGITS are refused, unless `values=False` (only validating: integers
    are then not converted and every one reads as 0).
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    # json.loads' own steps (BOM check, JSONDecoder.decode and raw_decode), without its
    # per-call decoder and wrappers: this parses every job file and record on the claim path.
    if text.startswith("\ufeff"):
        from json import JSONDecodeError

        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    start = _after_space(text, 0)
    if _fast is not None:
        try:
            value, end = _fast[0 if values else 1](text, start)
        except (StopIteration, ValueError, RecursionError, SystemError):
            # Not JSON, or refused by a hook: json's own scanner says why, below. (On 3.11
            # the C scanner words its errors with json.decoder's class and, json not being
            # imported, fails with SystemError instead.)
            pass
        else:
            if _after_space(text, end) == len(text):
                return value
    from json import JSONDecodeError

    try:
        value, end = _scan_worded(text, start, values=values)
    except StopIteration as err:
        raise JSONDecodeError("Expecting value", text, err.value) from None
    except RecursionError:
        # The C scanner guards its recursion and unwinds cleanly; the depth it reaches depends
        # on the interpreter's recursion limit, so no exact figure is promised.
        raise NestedTooDeepError("nested too deeply (arrays or objects in each other)") from None
    end = _after_space(text, end)
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    return value
