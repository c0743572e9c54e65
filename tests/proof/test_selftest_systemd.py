"""`lanekit selftest` against a real systemd user manager (tests/usermanager.py): load, a kick
that runs a job, a timer that fires by itself, a stop while a job runs puts it back, and the
clean-up leaves no unit behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanekit.proof.selftest import run_selftest
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow


def test_selftest_passes_on_systemd(systemd: UserManager, paths: Paths, tmp_path: Path) -> None:
    """Every step passes on systemd (its timer step instead of launchd's throttled kick), the
    report names systemd, and no unit of the temporary lane is left."""
    env = {k: v for k, v in systemd.env.items() if k != "LANEKIT_LAUNCHD"}
    report = run_selftest(paths, env=env, report_path=tmp_path / "selftest.json")
    failed = [step for step in report.steps if not step.ok]
    assert failed == [], failed
    names = [step.name for step in report.steps]
    assert "timer fires" in names
    assert "throttled second kick" not in names
    assert report.backend == "systemd"
    assert [p.name for p in systemd.unit_dir.glob("*.service")] == []
    assert [p.name for p in systemd.unit_dir.glob("*.timer")] == []
