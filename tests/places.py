"""Where the tests' shared files live, named once: the tree under tests/ mirrors src/, so a test's
own directory says nothing about where the launchctl captures or the golden files are."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SRC = REPO / "src" / "lanekit"
GOLDEN = TESTS / "golden"
LAUNCHD_TESTS = TESTS / "service" / "launchd"
SAMPLES = LAUNCHD_TESTS / "samples"
"""Real `launchctl` (and macOS tool) captures the parsers are tested on."""
MACOS_TOOLS = SAMPLES / "macos-tools"
FAKE_LAUNCHCTL = LAUNCHD_TESTS / "fake_launchctl.py"
