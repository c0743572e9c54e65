"""Exit statuses and signals have one vocabulary each: signal names come from
lanekit.service.exits.signal_label (launchd's parser keeps macOS's own numbering), and sysexits
codes from `os.EX_*` or lanekit.errors.ExitCode, never a module's own constant."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from lanekit.service.exits import SYSEXITS, describe_exit, signal_label

SRC = Path(__file__).resolve().parents[2] / "src" / "lanekit"
SIGNAL_NAMES = {
    "service/exits.py": "the running system's names (signal.Signals)",
    "service/launchd/parse/common.py": "macOS's own numbering, as launchd reports it",
}


def _own_exit_codes(source: str) -> list[str]:
    """Module-level `EX_SOMETHING = 78` (or `_EX_...`) definitions in `source`."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and re.fullmatch(r"_?EX_[A-Z]+", target.id):
                    found.append(f"line {node.lineno}: {target.id}")
    return found


def test_signal_label_names_the_running_systems_signals() -> None:
    """A known number is its name; an unknown one is said as a number."""
    assert signal_label(15) == "SIGTERM"
    assert signal_label(9) == "SIGKILL"
    assert signal_label(99) == "signal 99"
    assert describe_exit(-9) == "killed by SIGKILL"


def test_signal_names_have_one_owner_per_numbering() -> None:
    """Only the two owners turn a signal number into a name."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        text = path.read_text(encoding="utf-8")
        if relative not in SIGNAL_NAMES and re.search(r"Signals\(|strsignal|\"SIGBUS\"", text):
            offenders.append(relative)
    assert offenders == []


def test_no_module_defines_its_own_sysexits_code() -> None:
    """EX_CONFIG and its kin come from `os` (or ExitCode); no module numbers them itself."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        found = _own_exit_codes(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(SRC))] = found
    assert offenders == {}
    assert _own_exit_codes("EX_CONFIG = 78\n_EX_SOFTWARE = 70\nEXIT = 1") == [
        "line 1: EX_CONFIG",
        "line 2: _EX_SOFTWARE",
    ]
    assert os.EX_CONFIG == 78  # what launchd records when it could not set a job up
    # The sysexits names launchctl print appends, taken from os: all fifteen, 64-78.
    assert sorted(SYSEXITS) == list(range(64, 79))
    assert SYSEXITS[78] == "EX_CONFIG"
