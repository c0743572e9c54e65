"""A plist is loaded in one place, lanekit.service.launchd.model.load_plist, which turns
whatever plistlib raises into one PlistError."""

from __future__ import annotations

import ast
import plistlib
from pathlib import Path

import pytest

from lanekit.service.launchd.model import PlistError, load_plist

SRC = Path(__file__).resolve().parents[3] / "src" / "lanekit"
OWNER = SRC / "service" / "launchd" / "model.py"


@pytest.mark.parametrize(
    "data",
    [
        b"not a plist",
        b"<?xml version='1.0'?><plist><dict><key>a</key></dict>",
        b"bplist00\x00\x01",
        b"<plist><integer>x</integer></plist>",
        b"<plist><date>bad</date></plist>",
        b"",
    ],
)
def test_every_failure_is_a_plist_error(data: bytes) -> None:
    """Malformed XML, a truncated binary plist, a bad integer, a bad date (plistlib's
    AttributeError) and nothing at all each raise PlistError, whatever plistlib raised."""
    with pytest.raises(PlistError):
        load_plist(data)


def test_a_plist_loads_in_either_format() -> None:
    """XML and binary property lists load to the same value."""
    value = {"Label": "com.example.x", "ProgramArguments": ["/bin/true"]}
    assert load_plist(plistlib.dumps(value)) == value
    assert load_plist(plistlib.dumps(value, fmt=plistlib.FMT_BINARY)) == value


def test_no_other_module_catches_plistlib_failures() -> None:
    """Outside the owner no `try` wraps plistlib.loads/load: bad input is load_plist's."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Try) and node.handlers:
                body = "\n".join(ast.unparse(statement) for statement in node.body)
                if "plistlib.load" in body:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []
