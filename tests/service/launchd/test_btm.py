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


def test_dumpbtm_disabled_words_and_bits() -> None:
    """The `disabled` word (dumpbtm-03) and the `disallowed` one (dumpbtm-01) are separate
    bits, enabled 0x1 and allowed 0x2; either one clear is switched off, read from the words,
    or from the number alone when no word is printed (DumpBTM's decimal, or bits only)."""
    developer, daemon, docker = parse_dumpbtm(capture("dumpbtm-03"))
    assert developer.disposition == ("disabled", "allowed", "not notified")
    assert (developer.bits, developer.enabled, developer.allowed) == (0x2, False, True)
    assert developer.switched_off
    assert (daemon.bits, daemon.enabled, daemon.allowed, daemon.switched_off) == (
        0xB,
        True,
        True,
        False,
    )
    assert not docker.switched_off
    first = parse_dumpbtm(capture("dumpbtm-01"))[0]
    assert (first.bits, first.enabled, first.allowed, first.switched_off) == (9, True, False, True)
    for disposition, off in (
        ("[ ] (0x9)", True),
        ("[ ] (0x2)", True),
        ("[ ] (0xb)", False),
        ("[enabled allowed visible notified] (11)", False),
        ("[disabled disallowed] (0)", True),
    ):
        [item] = parse_dumpbtm(f" #1:\n          Disposition: {disposition}\n")
        assert item.switched_off is off, disposition


def test_identifier_fallback_strips_only_a_digit_prefix() -> None:
    """`8.com.x` and `16.com.x` name the label com.x; a label that starts with a word
    (`uk.co.example.lane`) is kept whole, not cut to `co.example.lane`."""
    text = (
        " #1:\n           Identifier: uk.co.example.lane\n"
        " #2:\n           Identifier: 16.com.henry.studio-route-guard\n"
    )
    items = parse_dumpbtm(text)
    assert find_item(items, label="uk.co.example.lane", plist=None) is items[0]
    assert find_item(items, label="co.example.lane", plist=None) is None
    assert find_item(items, label="com.henry.studio-route-guard", plist=None) is items[1]
    assert find_item(parse_dumpbtm(capture("dumpbtm-03")), label="Developer", plist=None) is None
