"""Shared fixtures: every test gets its own Paths under tmp_path; nothing touches ~."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lanekit.paths import Paths


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Pin terminal width and colour, and point lanekit's env lookups away from the real home."""
    root = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(root / "state"))
    monkeypatch.setenv("LANEKIT_LAUNCH_AGENTS", str(root / "state" / "emulator" / "LaunchAgents"))
    monkeypatch.setenv("LANEKIT_LAUNCHD", "emulated")
    monkeypatch.delenv("LANEKIT_CONFIG", raising=False)
    yield


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A Paths tree under tmp_path (emulated backend)."""
    return Paths.under(tmp_path)
