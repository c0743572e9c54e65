"""`sfltool dumpbtm` parsing, on real captures (tests/launchd/samples/macos-tools)."""

from __future__ import annotations

from pathlib import Path

from lanekit.service.launchd.btm import find_item, parse_dumpbtm

TOOLS = Path(__file__).resolve().parent / "samples" / "macos-tools"


def capture(name: str) -> str:
    """A capture's output (after its `# ---` line)."""
    return (TOOLS / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


def test_dumpbtm_records_and_dispositions() -> None:
    """Four records of UID 501; a user agent switched off reads as disallowed, with its plist
    path from the file:// URL."""
    items = parse_dumpbtm(capture("dumpbtm-01"))
    assert [i.identifier for i in items] == [
        "8.com.idefeng.disk-cleanup",
        "16.com.teamviewer.UninstallerWatcher",
        "8.com.youqu.todesk.client.startup",
        "8.com.youqu.todesk.desktop",
    ]
    first = items[0]
    assert (first.uid, first.name, first.type) == (501, "osascript", "legacy agent")
    assert first.disposition == ("enabled", "disallowed", "notified")
    assert first.allowed is False
    assert first.path == "/Users/idefeng/Library/LaunchAgents/com.idefeng.disk-cleanup.plist"
    assert first.executable == "/usr/bin/osascript"


def test_dumpbtm_allowed_agent() -> None:
    """An agent that is on: allowed; found by its label through the `8.<label>` identifier."""
    items = parse_dumpbtm(capture("dumpbtm-02"))
    item = find_item(items, label="ai.openclaw.gateway", plist=None)
    assert item is not None and item.allowed is True
    assert find_item(items, label="ai.openclaw", plist=None) is None


def test_every_tool_capture_is_tested() -> None:
    """Each capture in macos-tools/ is used by a test: sfltool's here, fdesetup's and
    defaults' in test_boot.py, pmset's in test_power.py."""
    tests = {
        "dumpbtm": Path(__file__),
        "fdesetup-status": Path(__file__).with_name("test_boot.py"),
        "defaults-autologin": Path(__file__).with_name("test_boot.py"),
        "pmset-log": Path(__file__).with_name("test_power.py"),
    }
    for capture_file in sorted(TOOLS.glob("*.txt")):
        tool = capture_file.stem.rpartition("-")[0]
        assert tool in tests, f"{capture_file.name}: no test module reads this tool's captures"
        assert f'"{capture_file.stem}"' in tests[tool].read_text(), capture_file.name
