"""The exit-code contract: lanekit.errors.ExitCode and docs/exit-codes.md say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

from lanekit.errors import (
    ConfigError,
    EnvironmentUnusableError,
    ExitCode,
    LanekitError,
    QueueError,
    UsageError,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "exit-codes.md"


def test_exit_codes_documented_exactly() -> None:
    """Every ExitCode appears in the table with its number and name, and nothing else does."""
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|", DOC.read_text(), re.MULTILINE)
    assert {(int(code), name) for code, name in rows} == {(int(c), c.name) for c in ExitCode}


def test_exit_codes_values_are_the_contract() -> None:
    """The numbers users script against never change."""
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 69, 75]
    assert 78 not in {int(c) for c in ExitCode}


def test_error_classes_carry_their_exit_code_and_hint() -> None:
    """Each subclass maps to its documented code; message and hint are kept apart."""
    assert LanekitError("m").exit_code is ExitCode.FAILURE
    assert UsageError("m").exit_code is ExitCode.USAGE
    assert ConfigError("m").exit_code is ExitCode.USAGE
    assert EnvironmentUnusableError("m").exit_code is ExitCode.UNAVAILABLE
    assert QueueError("m").exit_code is ExitCode.UNAVAILABLE
    err = ConfigError("lanes.toml: lanes.x.queue: missing", 'add queue = "..."')
    assert (str(err), err.hint) == ("lanes.toml: lanes.x.queue: missing", 'add queue = "..."')
