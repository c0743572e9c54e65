"""The systemctl adapter: `show` parsed (pure, on a capture from systemd 252), errors explained
(an unreachable bus says how to reach the user manager), exit statuses in words."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lanekit.errors import Refusal, ServiceError
from lanekit.service.manager import Ending, LaneObservation
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.systemctl import (
    BUS_HINT,
    Systemctl,
    explain,
    parse_show,
    parse_timestamp,
    unit_state,
)

CAPTURE = """MainPID=0
ExecMainStartTimestamp=@1796486542
ExecMainCode=1
ExecMainStatus=0
Id=t1.service
LoadState=loaded
ActiveState=inactive
UnitFileState=static
NeedDaemonReload=no

MainPID=0
ExecMainStartTimestamp=
ExecMainCode=0
ExecMainStatus=0
Id=nope.service
LoadState=not-found
ActiveState=inactive
UnitFileState=
NeedDaemonReload=no

NextElapseUSecRealtime=Sat 2026-12-05 16:02:24 UTC
Id=t1.timer
LoadState=loaded
ActiveState=active
UnitFileState=static
NeedDaemonReload=yes
"""


def test_show_is_one_block_per_unit() -> None:
    """`systemctl show A B C` prints blocks in order, blank lines apart; each becomes typed
    facts (a unit never started has no start time, a timer its next elapse in UTC)."""
    states = [unit_state(block) for block in parse_show(CAPTURE)]
    assert [s.id for s in states] == ["t1.service", "nope.service", "t1.timer"]
    ran, missing, timer = states
    assert ran.loaded and ran.started_at == 1796486542 and ran.main_pid is None
    assert not missing.loaded and missing.started_at is None
    assert timer.next_elapse == datetime(2026, 12, 5, 16, 2, 24, tzinfo=UTC)
    assert timer.need_reload


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@1796486542", datetime.fromtimestamp(1796486542, UTC)),
        ("Sat 2026-12-05 16:02:24 UTC", datetime(2026, 12, 5, 16, 2, 24, tzinfo=UTC)),
        ("n/a", None),
        ("", None),
        ("Sat 2026-12-05 16:02:24 CET", None),
    ],
)
def test_timestamps(text: str, expected: datetime | None) -> None:
    """Only what is unambiguous is read: `@SECONDS` and UTC; anything else is unknown."""
    assert parse_timestamp(text) == expected


def test_a_bus_that_cannot_be_reached_says_how_to_reach_it(tmp_path: Path) -> None:
    """The real systemctl with no user manager behind XDG_RUNTIME_DIR (sudo, ssh without a
    session): one line naming the problem, and the fix as the hint."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    systemctl = Systemctl({"XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"})
    if not Path("/usr/bin/systemctl").exists() and not Path("/bin/systemctl").exists():
        pytest.skip("systemctl is not installed")
    with pytest.raises(ServiceError) as caught:
        systemctl.show(["x.service"])
    assert "user manager cannot be reached" in caught.value.message
    assert caught.value.hint == BUS_HINT
    assert "\n" not in caught.value.message
    assert not systemctl.answers()


def test_a_missing_unit_is_not_loaded() -> None:
    """`Unit x.service not found.` is the seam's NOT_LOADED."""
    error = explain("Failed to start x.service: Unit x.service not found.\n", "start")
    assert error.reason is Refusal.NOT_LOADED
    assert explain("Access denied", "start").reason is Refusal.REFUSED


def test_setup_failures_are_not_started(tmp_path: Path) -> None:
    """203/EXEC and 200/CHDIR mean systemd could not set the run up (launchd's 78): the lane's
    last run ended NOT_STARTED and the words say so; a runner's own 75 is its own."""
    manager = SystemdManager(Systemctl({}), tmp_path, tmp_path)
    assert "203/EXEC" in manager.describe_exit(203)
    assert "could not set the run up" in manager.describe_exit(200)
    assert "could not set" not in manager.describe_exit(75)
    assert LaneObservation("x", exit_code=203, not_started=True).ended is Ending.NOT_STARTED
