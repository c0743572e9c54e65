"""The emulator's clock stays in the emulator: production code asks one clock object for "now"
(lanekit.state.clock's, as `clock_for` or `epoch` give it), and only the clock module and the
emulated domain know that an offset exists."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "lanekit"
OFFSET_WORDS = re.compile(
    r"LANEKIT_CLOCK_OFFSET|OFFSET_VARIABLE|job_offset|parse_offset|format_offset|read_offset"
    r"|clock_offset|\.offset\(\)|\bClock\("
)
KNOWERS = {
    "state/clock.py": "the clock itself",
    "service/launchd/__init__.py": "clock_for: the service manager's answer to 'now'",
    "config/model.py": "reserves the variable's name, so lanes.toml cannot set it",
}
GOING: dict[str, str] = {}


def _emulated(relative: str) -> bool:
    """The emulated domain's own modules (where they are now, and where they move)."""
    name = relative.rpartition("/")[2]
    return relative.startswith("service/emulated/") or (
        relative.startswith("service/launchd/") and name.startswith(("emu", "emulated_"))
    )


def test_only_the_clock_and_the_emulated_domain_know_the_offset() -> None:
    """No other module reads LANEKIT_CLOCK_OFFSET, an offset, or builds a Clock of its own."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        if relative in KNOWERS or relative in GOING or _emulated(relative):
            continue
        found = sorted(set(OFFSET_WORDS.findall(path.read_text(encoding="utf-8"))))
        if found:
            offenders[relative] = found
    assert offenders == {}
    assert all((SRC / relative).exists() for relative in [*KNOWERS, *GOING])
    assert _emulated("service/launchd/emuclock.py")
    assert _emulated("service/emulated/domain.py")
    assert not _emulated("service/launchd/launchctl.py")
    assert OFFSET_WORDS.findall("t = time.time() + launchd.offset()") == [".offset()"]
