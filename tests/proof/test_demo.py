"""`lanekit demo`: the seed-001 burst replayed on the emulated domain, counted from the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.proof.demo import BACKLOG, BROKEN_LANE, FIRE_AT, LANES, DemoReport, run_demo
from lanekit.reconcile import Result
from lanekit.timeline.model import MarkerKind, Outcome


@pytest.mark.slow
def test_demo_five_lanes_no_duplicates_no_losses(tmp_path: Path) -> None:
    """Five lanes fired at once drain 57 jobs exactly once; the mid-run reload is deferred and
    then applied; doctor names the planted PATH problem; nothing is left behind."""
    root = tmp_path / "demo"
    report = run_demo(directory=root, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    d = report.drain
    assert d.fired == tuple(sorted(LANES))
    assert (d.jobs, d.processed, d.duplicates, d.lost) == (BACKLOG, BACKLOG, 0, 0)
    assert sum(d.per_lane.values()) == BACKLOG
    assert len(d.per_lane) >= 2, "a burst of five lanes should share the backlog"
    assert report.reload.skipped.result is Result.SKIPPED
    assert "running" in report.reload.skipped.detail
    assert report.reload.applied.result is Result.DONE
    ids = {f.id for f in report.findings}
    assert ids == {"path.command-missing"}
    assert all(f.subject == "publish" for f in report.findings)
    assert "lanekit-demo-publish" in report.findings[0].message
    assert not root.exists(), "the demo removes the directory it created, without --keep"
    _check_timeline(report)


def _check_timeline(report: DemoReport) -> None:
    """The demo's timeline: the five lanes' burst with every claim, drawn at the emulated 10:40
    the demo fires them at (the domain's clock, lanekit.state.clock), on that day; the reload
    skipped
    while funnel ran, the sixth lane's run that could not start its command; its page outlives
    the clean-up, in lanekit's state dir."""
    assert report.timeline is not None and report.timeline_page is not None
    timeline = report.timeline.timeline
    bursts = [b for b in timeline.bursts if b.queue == "notes"]
    assert bursts and set(bursts[0].lanes) == set(LANES)
    assert sum(bursts[0].claims.values()) == BACKLOG
    start = bursts[0].start.astimezone()
    assert (start.hour, start.minute) == FIRE_AT
    assert report.timeline.day == start.date()
    rows = {row.lane: row for row in timeline.rows}
    fires = [f.astimezone() for f in rows["thumbs"].fires]
    assert [(f.hour, f.minute) for f in fires] == [FIRE_AT]
    assert all(run.start.astimezone() >= start for row in rows.values() for run in row.runs)
    assert MarkerKind.RELOAD_SKIPPED in {m.kind for m in rows["funnel"].markers}
    assert [r.outcome for r in rows[BROKEN_LANE].runs] == [Outcome.ERROR]
    page = report.timeline_page.read_text(encoding="utf-8")
    assert 'id="lane-publish"' in page and 'class="burst"' in page


@pytest.mark.slow
def test_demo_in_an_existing_empty_dir_leaves_it_empty(tmp_path: Path) -> None:
    """A directory the user made is kept, but emptied: nothing of the demo is left behind."""
    root = tmp_path / "mine"
    root.mkdir()
    report = run_demo(directory=root, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert report.drain.duplicates == report.drain.lost == 0
    assert root.is_dir()
    assert list(root.iterdir()) == []


@pytest.mark.slow
def test_demo_cli_prints_table_and_keeps_with_flag(tmp_path: Path) -> None:
    """The CLI shows the counts, the skipped reload and the doctor finding; --keep keeps files."""
    root = tmp_path / "kept"
    result = CliRunner().invoke(app, ["demo", "--dir", str(root), "--keep"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "processed more than once" in out
    assert "skipped" in out
    assert "path.command-missing" in out
    assert "the day's timeline, as a page: " in out
    assert "burst " in out and "publish: could not run (exit 69)" in out
    assert (root / "ledger.txt").exists()
    assert (root / "lanes.toml").exists()
    # --keep leaves the lanes loaded: boot them out so no process outlives the test.
    from lanekit.config import load_config
    from lanekit.reconcile import remove
    from lanekit.service.launchd import open_launchd
    from lanekit.state.paths import Paths

    paths = Paths.under(root)
    config = load_config(root / "lanes.toml", paths)
    launchd = open_launchd(paths, {"LANEKIT_LAUNCHD": "emulated"})
    for name in config.lanes:
        remove(config, paths, launchd, name, force=True)
