"""`lanekit demo` on a real systemd user manager (tests/usermanager.py): the burst is fired by
systemd's own timers at the next whole minute, not kicked (so this waits for it, up to 70 s)."""

from __future__ import annotations

import pytest

from lanekit.proof.demo import run_demo
from lanekit.reconcile import Result
from usermanager import UserManager

pytestmark = pytest.mark.slow


def test_the_burst_on_real_timers(
    systemd: UserManager, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Five lanes whose timers fire in one minute drain the backlog: every job once, none
    lost; the change to funnel mid-run is skipped, then applied with --wait; and the report
    says systemd ran it, with why."""
    env = {k: v for k, v in systemd.env.items() if k != "LANEKIT_LAUNCHD"}
    env["LANEKIT_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    report = run_demo(env=env, timeout=60)
    assert report.backend == "systemd"
    assert "answers" in report.manager_reason
    drain = report.drain
    assert (drain.processed, drain.duplicates, drain.lost) == (drain.jobs, 0, 0)
    assert len(drain.fired) == 5
    assert len(drain.per_lane) >= 2
    assert report.reload.skipped.result is Result.SKIPPED
    assert report.reload.applied.result is Result.DONE
