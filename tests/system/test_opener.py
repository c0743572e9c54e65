"""Opening the page: `open` on macOS, `xdg-open` elsewhere, argv only; a missing or failing
opener is one clear error (exit 69) saying how to open the file by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanekit.errors import EnvironmentUnusableError, ExitCode
from lanekit.system.opener import open_file, opener_name


@pytest.mark.parametrize(
    ("platform", "name"), [("darwin", "open"), ("linux", "xdg-open"), ("freebsd14", "xdg-open")]
)
def test_opener_per_platform(platform: str, name: str) -> None:
    """macOS has `open`; every other desktop has `xdg-open`."""
    assert opener_name(platform) == name


def test_missing_opener(tmp_path: Path) -> None:
    """No opener on PATH: EnvironmentUnusableError naming it, with the quoted path to open."""
    page = tmp_path / "a day's page.html"
    with pytest.raises(EnvironmentUnusableError) as caught:
        open_file(page, platform="darwin", which=lambda _name: None)
    assert caught.value.message == f"cannot open {page}: `open` is not on PATH"
    assert caught.value.hint == f"open '{tmp_path}/a day'\"'\"'s page.html' in a browser yourself"
    assert caught.value.exit_code is ExitCode.UNAVAILABLE


def test_failing_opener_says_why(tmp_path: Path) -> None:
    """An opener that exits non-zero: its last stderr line is the reason."""
    tool = tmp_path / "xdg-open"
    tool.write_text("#!/bin/sh\necho 'no method available for opening' >&2\nexit 3\n")
    tool.chmod(0o755)
    with pytest.raises(EnvironmentUnusableError) as caught:
        open_file(tmp_path / "p.html", platform="linux", which=lambda _name: str(tool))
    assert caught.value.message.endswith("xdg-open: no method available for opening")
