"""What became of a start request: the outcome from kickstart's pid and print, as a table."""

from __future__ import annotations

import pytest

from lanekit.reconcile.starts import StartOutcome, classify_start, postponed_for
from lanekit.service.launchd import ServiceInfo


def _info(
    state: str, *, runs: int = 1, exit_code: int | None = 0, pid: int | None = None
) -> ServiceInfo:
    return ServiceInfo(label="x", state=state, runs=runs, last_exit_code=exit_code, pid=pid)


BEFORE = _info("not running", runs=1)


@pytest.mark.parametrize(
    ("pid", "after", "outcome"),
    [
        (123, _info("running", runs=2, pid=123), StartOutcome.STARTED),
        (None, _info("spawn scheduled", runs=1), StartOutcome.POSTPONED),
        (None, _info("not running", runs=2, exit_code=78), StartOutcome.NOT_STARTED),
        (456, _info("not running", runs=2, exit_code=78), StartOutcome.NOT_STARTED),
        (456, _info("not running", runs=2, exit_code=0), StartOutcome.STARTED),
        (None, _info("not running", runs=2, exit_code=1), StartOutcome.STARTED),
        (None, _info("not running", runs=1, exit_code=0), StartOutcome.NOT_STARTED),
        (None, _info("xpcproxy", runs=2), StartOutcome.STARTED),
        (789, None, StartOutcome.STARTED),
        (None, None, StartOutcome.NOT_STARTED),
    ],
)
def test_start_outcome_table(
    pid: int | None, after: ServiceInfo | None, outcome: StartOutcome
) -> None:
    """Postponed (`spawn scheduled`), not started (a counted spawn that left exit 78, or no
    spawn at all) and started (running, or a quick run that already ended) are told apart."""
    assert classify_start(pid, BEFORE, after) is outcome


@pytest.mark.parametrize(
    ("throttle", "last", "now", "seconds"),
    [(10, 100.0, 103.2, 7), (10, None, 103.0, 10), (10, 80.0, 103.0, 1), (30, 100.0, 100.0, 30)],
)
def test_postponed_for(throttle: int, last: float | None, now: float, seconds: int) -> None:
    """The wait counts from the last spawn; the whole interval when unknown; at least 1 s."""
    assert postponed_for(throttle, last, now) == seconds
