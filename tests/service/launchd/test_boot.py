"""FileVault and automatic login, parsed from real `fdesetup status` and `defaults read`
output (tests/launchd/samples/macos-tools), and read only on macOS through the probes seam."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanekit.service.launchd import probes
from lanekit.service.launchd.boot import FileVault, parse_auto_login_user, parse_fdesetup_status

TOOLS = Path(__file__).resolve().parent / "samples" / "macos-tools"


def capture(name: str) -> str:
    """A capture's output (after its `# ---` line)."""
    return (TOOLS / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


@pytest.mark.parametrize(
    ("name", "state", "blocks"),
    [
        ("fdesetup-status-01", FileVault.ON, True),
        ("fdesetup-status-02", FileVault.OFF, False),
        ("fdesetup-status-03", FileVault.PENDING, True),
        ("fdesetup-status-04", FileVault.ON, True),
    ],
)
def test_fdesetup_status_captures(name: str, state: FileVault, blocks: bool) -> None:
    """On, off, on after the next restart, and on while still encrypting (a progress line
    follows): only off leaves automatic login possible at the next boot."""
    parsed = parse_fdesetup_status(capture(name))
    assert parsed is state
    assert parsed.blocks_auto_login is blocks


@pytest.mark.parametrize("text", [None, "", "Error: not authorized\n", "FileVault maybe\n"])
def test_fdesetup_status_unknown(text: str | None) -> None:
    """No output, or output that is not fdesetup's status line, is UNKNOWN, never a guess."""
    assert parse_fdesetup_status(text) is FileVault.UNKNOWN
    assert parse_fdesetup_status(text).blocks_auto_login is False


def test_auto_login_user_capture() -> None:
    """`defaults read ... autoLoginUser` prints the short user name; unset (no stdout) and
    multi-line or spaced text are no user."""
    assert parse_auto_login_user(capture("defaults-autologin-01")) == "ci"
    assert parse_auto_login_user(None) is None
    assert parse_auto_login_user("") is None
    assert parse_auto_login_user("a\nb\n") is None
    assert parse_auto_login_user("The domain/default pair of (x, y) does not exist\n") is None


def test_boot_probes_do_not_run_off_macos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off macOS the boot and sleep probes run nothing (a tool of the same name there means
    something else): a planted tool that would record its call is never started."""
    called = tmp_path / "called"
    tool = tmp_path / "tool"
    tool.write_text(f"#!/bin/sh\ntouch {called}\necho 'FileVault is On.'\n")
    tool.chmod(0o755)
    for name in ("FDESETUP", "DEFAULTS", "PMSET"):
        monkeypatch.setattr(probes, name, str(tool))
    monkeypatch.setattr(probes, "MACOS", False)
    assert probes.fdesetup_status() is None
    assert probes.auto_login_user() is None
    assert probes.pmset_log() is None
    assert not called.exists()


def test_boot_probes_run_the_tools_on_macos(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On macOS each probe runs its tool with the documented argv and returns its stdout; a
    tool that exits 1 (defaults on an unset key) answers None."""
    log = tmp_path / "argv"
    tool = tmp_path / "tool"
    tool.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\necho out\n')
    tool.chmod(0o755)
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'does not exist' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(probes, "MACOS", True)
    monkeypatch.setattr(probes, "FDESETUP", str(tool))
    monkeypatch.setattr(probes, "PMSET", str(tool))
    monkeypatch.setattr(probes, "DEFAULTS", str(failing))
    assert probes.fdesetup_status() == "out\n"
    assert probes.pmset_log() == "out\n"
    assert probes.auto_login_user() is None
    assert log.read_text().splitlines() == [f"{tool} status", f"{tool} -g log"]
