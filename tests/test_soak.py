"""The small soak: two emulated days of five lanes on two queues under the emulated domain's
clock, every fault planted for real, nothing lost or run to success twice, and every fault
reported by the watchdog in time and once (scripts/soak.py; the 30-day run is in
docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "soak.py"


def _load() -> ModuleType:
    # As `scripts/soak.py` runs: its directory first on sys.path, where its soakkit is.
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("lanekit_soak", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


soak = _load()
T0 = datetime(2031, 3, 4)


def _notice(
    minutes: int, kind: str, check: str = "queue.backlog", subject: str = "inbox"
) -> object:
    return soak.Notice(T0 + timedelta(minutes=minutes), kind, check, subject)


@pytest.mark.parametrize(
    ("kinds", "twice"),
    [
        (["new"], 0),
        (["new", "repeat", "repeat"], 0),
        (["new", "new"], 1),
        (["new", "resolved", "new"], 0),
        (["new", "resolved", "new", "new", "new"], 2),
        (["resolved", "new"], 0),
    ],
)
def test_an_alert_is_sent_twice_only_when_new_while_open(kinds: list[str], twice: int) -> None:
    """A second `new` for an open (check, subject) is a duplicate; repeats and a new one after
    `resolved` are not."""
    notices = [_notice(n, kind) for n, kind in enumerate(kinds)]
    assert soak.duplicate_alerts(notices) == twice


def test_a_fault_takes_its_first_matching_alert_and_the_resolution_after_it() -> None:
    """Alerts before the fault, of other checks or of other subjects do not count; the
    resolved notice is that alert's."""
    fault = soak.Fault("burst", T0, ("queue.backlog",), ("inbox",), planted_at=T0)
    notices = [
        _notice(-30, "new"),
        _notice(10, "new", check="plist.drift"),
        _notice(20, "new", subject="outbox"),
        _notice(30, "new"),
        _notice(40, "resolved", subject="outbox"),
        _notice(90, "resolved"),
    ]
    soak.match_alerts([fault], notices)
    assert fault.alert == "queue.backlog inbox"
    assert fault.alerted_at == T0 + timedelta(minutes=30)
    assert fault.resolved_at == T0 + timedelta(minutes=90)


def test_faults_are_spread_over_the_run_between_fires() -> None:
    """Every kind planted once, in order, inside the run, at 17 past an hour (no lane fires
    then), each at least two hours after the one before."""
    faults = soak.plan_faults(T0, 2)
    assert [f.name for f in faults] == [k.name for k in soak.FAULT_KINDS]
    assert all(f.at.minute == 17 for f in faults)
    assert all(T0 < f.at < T0 + timedelta(days=2) for f in faults)
    gaps = [b.at - a.at for a, b in itertools.pairwise(faults)]
    assert min(gaps) >= timedelta(hours=2)


@pytest.mark.slow
def test_small_soak_reports_every_fault_and_loses_nothing(tmp_path: Path) -> None:
    """Two emulated days with all seven faults: 0 jobs lost, 0 succeeded twice, each fault
    visible; the watchdog alerts on each within missed_after + every, never twice, and reports
    each fixed one resolved."""
    result = soak.run_soak(days=2, root=tmp_path / "soak", watch=soak.WatchSettings())
    assert result.jobs > 50
    assert (result.lost, result.succeeded_twice, result.waiting) == (0, 0, 0)
    assert result.done + result.failed == result.jobs
    by_name = {f.name: f for f in result.faults}
    assert set(by_name) == {k.name for k in soak.FAULT_KINDS}
    assert all(f.visible_at is not None for f in result.faults), result.faults
    assert result.watched
    assert result.alerts_sent_twice == 0
    late = [f for f in result.faults if not f.on_time]
    assert late == [], late
    fixed = [f for f in result.faults if f.fixed_at is not None]
    assert fixed and all(f.resolved_at is not None for f in fixed), fixed
    assert result.ok
