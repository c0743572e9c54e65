"""Chaos across three "hosts" on one postgres queue (scripts/pg_chaos.py): TCP proxies cut and
black-holed, runners and watchers SIGKILLed at random, against a real server. Nothing is lost,
no two copies of a job overlap, every attempt has an outcome, and a job succeeded exactly when
it has one succeeded attempt; the control (the self-fence off) shows overlaps, so the check
can fail. Small by default; a larger run's figures are in docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pgserver import PgServer

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pg_chaos.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lanekit_pg_chaos", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


pg_chaos = _load()


@pytest.mark.slow
def test_three_hosts_under_chaos_lose_nothing_and_never_overlap(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    result = pg_chaos.run_pg_chaos(
        server=(pg_server.host, pg_server.port),
        user="lk",
        db="lk",
        passfile=pg_server.passfile,
        schema=pg_schema,
        root=tmp_path,
    )
    print(result)
    assert result.lost == 0, result
    assert result.overlaps == 0, result
    assert result.attempts_without_outcome == 0, result
    assert result.success_mismatches == 0, result
    assert result.succeeded == result.jobs, result
    assert sum(result.strikes.values()) >= 20, result


PARTITIONS = {
    "jobs": 6,
    "lanes": 3,  # more lanes than jobs: an idle one starts a run, which recovers, often
    "seconds": 20,
    "work_ms": (20000, 22000),
    "hole_s": (7.0, 9.0),
    "strike_every": 4.0,
    "kinds": ("blackhole",),
    "max_jobs": 1,
}
"""Long jobs and black-holes longer than the lease, nothing else: a job whose renews are
held up outlives its lease unless its watcher stops it, while another host recovers it."""


@pytest.mark.slow
@pytest.mark.parametrize("fence", [True, False], ids=["fenced", "control"])
def test_partitions_longer_than_the_lease(
    pg_server: PgServer, pg_schema: str, tmp_path: Path, fence: bool
) -> None:
    """With the self-fence, the cut-off copy is killed before its lease lapses: no overlap,
    and the lane logs say so (lease-lost or fenced). The control, the fence off, shows the
    overlaps it prevents, so this check can fail."""
    result = pg_chaos.run_pg_chaos(
        server=(pg_server.host, pg_server.port),
        user="lk",
        db="lk",
        passfile=pg_server.passfile,
        schema=pg_schema,
        root=tmp_path,
        fence=fence,
        **PARTITIONS,
    )
    print(result)
    assert result.lost == 0, result
    assert result.recovered > 0, result
    if fence:
        assert result.overlaps == 0, result
        assert result.lease_lost + result.fenced > 0, result
    else:
        assert result.overlaps > 0, result


DOUBLE_KILLS = {
    "jobs": 6,
    "lanes": 2,
    "seconds": 12,
    "lease": 5,
    "work_ms": (11000, 12000),
    "strike_every": 2.5,
    "kinds": ("double",),
    "max_jobs": 1,
}
"""Jobs longer than the lease and runner + watcher SIGKILLed together, nothing else: with
nobody left to renew or self-fence, a job outlives its lease unless it dies with its
watcher, while another host recovers it."""


@pytest.mark.slow
@pytest.mark.parametrize("tie", [True, False], ids=["tied", "control"])
def test_double_kills_of_runner_and_watcher(
    pg_server: PgServer, pg_schema: str, tmp_path: Path, tie: bool
) -> None:
    """With jobs tied to their watcher (lanekit.run.watcher.JobTie), a job whose runner and
    watcher are SIGKILLed together dies with them, so the host that recovers it after its
    lease lapsed never runs it beside a live copy. The control, jobs not tied, shows the
    overlaps this prevents, so the check can fail."""
    result = pg_chaos.run_pg_chaos(
        server=(pg_server.host, pg_server.port),
        user="lk",
        db="lk",
        passfile=pg_server.passfile,
        schema=pg_schema,
        root=tmp_path,
        tie=tie,
        **DOUBLE_KILLS,
    )
    print(result)
    assert result.strikes["double"] > 0, result
    assert result.lost == 0, result
    assert result.recovered > 0, result
    if tie:
        assert result.overlaps == 0, result
        assert result.attempts_without_outcome == 0, result
        assert result.success_mismatches == 0, result
    else:
        assert result.overlaps > 0, result
