"""doctor's registry: what a check declares about itself beyond its id (lanekit.doctor.registry)."""

from __future__ import annotations

import pytest

from lanekit.doctor import Problem, Severity, check
from lanekit.doctor.registry import Tally, alert_checks

ISSUE_9_ALERTS = {
    "launchd.not-loaded",
    "launchd.disabled",
    "plist.drift",
    "program.missing",
    "path.command-missing",
    "lane.cannot-start",
    "launchd.exit-78",
    "launchd.exit-126",
    "launchd.exit-127",
    "launchd.killed",
    "launchd.crash-loop",
    "lane.missed-run",
    "queue.stale-claim",
    "queue.orphaned-job",
    "queue.backlog",
    "queue.failed-jobs",
    "queue.duplicate-success",
    # systemd's counterparts of launchd.exit-78 and of a domain that cannot be asked (issue 33)
    "systemd.exec-failed",
    "systemd.no-user-manager",
}
"""What the watchdog alerts on (issue 9 item 4, and its systemd counterparts): problems that
stop work."""

ISSUE_34_ALERTS = {
    "queue.db-unreachable",
    "queue.schema-version",
    "queue.lease-expired",
    "queue.pgpass-mode",
}
"""The postgres queue's problems that stop work (its server, its schema, its leases, the
password file libpq ignores): alerted on too."""

ISSUE_35_ALERTS = {"lane.respawn-loop"}
"""A lane started on enqueue that launchd starts again and again without a job ending: it
spins (a start every ThrottleInterval) and drains nothing, so the owner must hear of it."""


def test_the_alert_checks_are_the_problems_that_stop_work() -> None:
    """`@check(..., alert=True)` marks exactly issue 9's alert checks; of them only
    queue.failed-jobs keeps a tally (more jobs failed: the alert is sent again)."""
    chosen = alert_checks()
    assert {chk.id for chk in chosen} == ISSUE_9_ALERTS | ISSUE_34_ALERTS | ISSUE_35_ALERTS
    assert [chk.id for chk in chosen if chk.tally is not None] == ["queue.failed-jobs"]


def test_a_tally_is_for_alert_checks_only() -> None:
    """A check that does not alert has nobody to tell that its count grew: refused."""

    def never(*_: object) -> int | None:
        return None

    def grew(*_: object) -> Problem:
        return Problem(Severity.INFO, "grew", "nothing")

    with pytest.raises(ValueError, match="alert checks"):
        check("test.tally", summary="a test", tally=Tally(never, grew))
