"""Strict JSON: what lanekit refuses in text others can write, and what it still accepts."""

from __future__ import annotations

import pytest

from lanekit.system.strictjson import MAX_INT_DIGITS, NestedTooDeepError, strict_loads


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b'{"a": {"b": 1, "b": 2}}', "duplicate key 'b'"),  # at any depth
        (b'[{"x": 1, "x": 1}]', "duplicate key 'x'"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b"[Infinity]", "Infinity is not JSON"),
        (b"[-Infinity]", "-Infinity is not JSON"),
        (b'{"a": 1} {"a": 2}', "Extra data"),  # a torn write and a newer one on one line
        (b'{"a": 1}x', "Extra data"),
        (b"", "Expecting value"),
        (b"   ", "Expecting value"),
        ('\ufeff{"a": 1}'.encode(), "Unexpected UTF-8 BOM"),
        (b'{"a": "\xff"}', "can't decode byte 0xff"),
        (b"[" + b"1" * (MAX_INT_DIGITS + 1) + b"]", f"at most {MAX_INT_DIGITS}"),
    ],
)
def test_refused(text: bytes, reason: str) -> None:
    """Each is a ValueError whose message says why (json's own words where json has them)."""
    with pytest.raises(ValueError, match=reason.replace("[", r"\[")):
        strict_loads(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b' {"a": [1, 2.5, "x", null, true]} \n\t', {"a": [1, 2.5, "x", None, True]}),
        ('"\u00e9"'.encode(), "\u00e9"),
        (b"[" + b"9" * MAX_INT_DIGITS + b"]", [int("9" * MAX_INT_DIGITS)]),
        ('{"a": 1}', {"a": 1}),  # str as well as bytes
    ],
)
def test_accepted(text: bytes | str, value: object) -> None:
    """Whitespace around the value, any UTF-8 and integers up to the limit read as json would."""
    assert strict_loads(text) == value


def test_validating_only_accepts_any_integer_and_reads_none() -> None:
    """values=False checks without converting: a 5,000-digit integer is valid JSON (a job
    payload may hold one) and reads as 0; strictness is otherwise the same."""
    long = b"[" + b"7" * 5000 + b"]"
    assert strict_loads(long, values=False) == [0]
    with pytest.raises(ValueError, match="duplicate key"):
        strict_loads(b'{"k": 1, "k": 1}', values=False)


def test_nesting_too_deep_is_a_value_error_not_a_recursion_error() -> None:
    """The C scanner recurses; past its depth the text is refused as too deep, in words."""
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(NestedTooDeepError, match="nested too deeply"):
        strict_loads(deep)
    assert issubclass(NestedTooDeepError, ValueError)
