"""The small chaos run: concurrent `lanekit run` processes under SIGKILL lose nothing and
never succeed a job twice (scripts/chaos.py; the full run is in docs/benchmarks.md)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "chaos.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lanekit_chaos", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


chaos = _load()


@pytest.mark.slow
def test_small_chaos_run_loses_nothing(tmp_path: Path) -> None:
    """200 jobs, 4 runners started again and again, one SIGKILLed every 100 ms: every job
    reaches done/ exactly once, with a succeeded record, and really ran."""
    result = chaos.run_chaos(
        jobs=200,
        runners=4,
        kill_every_ms=100,
        seed=7,
        root=tmp_path / "chaos",
        timeout=300,
        work_ms=0,  # as fast as the jobs go: the suite checks correctness, not the kill window
    )
    assert result.kills > 0, "the run finished before any runner was killed"
    assert result.runs_started > 4
    assert (result.done, result.lost, result.succeeded_twice, result.failed) == (200, 0, 0, 0)
    assert result.done_without_record == 0
    assert result.done_without_execution == 0
    assert result.executions == 200 + result.executions_beyond_one
    assert result.lanes_that_finished_jobs >= 2, "the runners are lanes that drain side by side"
    assert result.overlapping == 0, "two copies of one job ran at the same time"
    assert result.ok


@pytest.mark.slow
def test_kills_of_every_kind_never_run_two_copies(tmp_path: Path) -> None:
    """Runners, job watchers and both together SIGKILLed, runners and watchers stopped and
    continued, under jobs that close their descriptors, leave their session, fork a daemon
    to do the work, or ignore SIGTERM: nothing lost, nothing succeeded twice, never two
    copies of one job at once (a per-job flock), and no job failed (one attempt each: only a
    crash of lanekit's counted as the job's could fail one)."""
    result = chaos.run_chaos(
        jobs=120,
        runners=3,
        kill_every_ms=100,
        seed=11,
        root=tmp_path / "chaos",
        timeout=300,
        work_ms=100,
        max_jobs=20,
        kinds=chaos.KILL_KINDS,
        hostile=True,
    )
    assert set(result.kills_by_kind) == set(chaos.KILL_KINDS), result.kills_by_kind
    assert (result.done, result.lost, result.succeeded_twice, result.failed) == (120, 0, 0, 0)
    assert result.overlapping == 0, "two copies of one job ran at the same time"
    assert result.done_without_execution == 0
    assert result.ok


@pytest.mark.slow
def test_the_control_without_the_protection_runs_two_copies(tmp_path: Path) -> None:
    """The same kind of run with job copies not looked for (COPIES_KEEP_CLAIM off in the
    runners) and runners killed together with their watchers: recovery gives back claims
    whose jobs still run, and second copies start beside them. Without this the test above
    could pass by never reaching the case. (Up to three seeds: an overlap needs a kill to
    land mid-job and a runner to take the job before the orphan ends.)"""
    overlaps = []
    for seed in (1, 2, 3):
        result = chaos.run_chaos(
            jobs=40,
            runners=2,
            kill_every_ms=150,
            seed=seed,
            root=tmp_path / f"control{seed}",
            timeout=300,
            work_ms=300,
            max_jobs=20,
            kinds=("both",),
            hostile=True,
            protect=False,
        )
        assert result.kills > 0 and not result.protected
        overlaps.append(result.overlapping)
        if result.overlapping:
            break
    assert any(overlaps), f"no overlap without the protection in {len(overlaps)} runs"
    assert not result.ok


def test_ok_requires_no_loss_and_no_double_success() -> None:
    """The verdict fails on a lost job, a double success, an unrecorded or unexecuted done job
    or a failed job; at-least-once re-executions alone do not fail it."""
    good = chaos.ChaosResult(
        jobs=10,
        runners=2,
        kill_every_ms=100,
        seed=1,
        runs_started=5,
        kills=3,
        seconds=1.0,
        done=10,
        failed=0,
        lost=0,
        succeeded_twice=0,
        done_without_record=0,
        done_without_execution=0,
        executions=12,
        executions_beyond_one=2,
        recovered_events=2,
        lanes_that_finished_jobs=2,
    )
    assert good.ok
    for field in (
        "lost",
        "succeeded_twice",
        "done_without_record",
        "done_without_execution",
        "failed",
        "overlapping",
    ):
        assert not dataclasses.replace(good, **{field: 1}).ok, field


@pytest.mark.parametrize(
    ("ledger", "starts", "overlapping"),
    [
        ("start a\nend a\nstart b\nend b\n", {"a": 1, "b": 1}, set()),
        ("start a\nend a\nstart a\nend a\n", {"a": 2}, set()),  # a re-execution, after
        ("start a\nstart a\nend a\nend a\n", {"a": 2}, {"a"}),  # two copies at once
        ("start a\nstart b\nend b\nend a\n", {"a": 1, "b": 1}, set()),
        ("start a\n", {"a": 1}, set()),  # killed: never ended
        ("start a 1.5\nend a 2.0\nstart a 2.5\n", {"a": 2}, set()),  # with times
        ("start a 1.5\nbusy a 1.6\nend a 2.0\nstart a 2.1\n", {"a": 2}, {"a"}),  # lock
    ],
)
def test_ledger_counts_executions_and_overlaps(
    ledger: str, starts: dict[str, int], overlapping: set[str]
) -> None:
    """The ledger reader counts starts per job and flags a start while one of the same job
    is still running."""
    counted, overlaps = chaos.read_ledger(ledger)
    assert dict(counted) == starts
    assert overlaps == overlapping
