"""Strict JSON: what lanekit reads from files others can write (job records, job payloads,
a watcher's request).

Strict means: a duplicate key, NaN/Infinity, bytes after the value, non-UTF-8 bytes or a BOM
make the text unreadable (a ValueError with the reason), never "last key wins" (why that
matters for a record: lanekit.queue.records). Nesting deeper than the parser recurses is a
ValueError too (NestedTooDeepError), never a RecursionError, and integers longer than
Python's default digit limit are refused in words.
"""

from __future__ import annotations

from json import JSONDecodeError, JSONDecoder
from json.decoder import WHITESPACE  # type: ignore[attr-defined]  # not in typeshed
from json.scanner import make_scanner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


_strict = JSONDecoder(
    object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant, parse_int=_bounded_int
)
# typeshed's stub asks for a make_scanner; any object carrying a decoder's hooks will do.
_scan = make_scanner(_strict)  # type: ignore[arg-type]
"""One strict scanner for every parse (json.loads with hooks builds a decoder per call)."""
_check = JSONDecoder(
    object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant, parse_int=_int_unread
)
_scan_check = make_scanner(_check)  # type: ignore[arg-type]
"""The same strictness for validating JSON whose values nobody here reads (job payloads):
integers are not converted, so a 5,000-digit integer, which is valid JSON, is accepted."""
_space = WHITESPACE.match
"""JSON's whitespace, json's own compiled pattern; it matches everywhere, if only emptily."""


def _after_space(text: str, at: int) -> int:
    match = _space(text, at)
    return at if match is None else match.end()


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
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value, end = (_scan if values else _scan_check)(text, _after_space(text, 0))
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
