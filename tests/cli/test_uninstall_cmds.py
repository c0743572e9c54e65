"""`lanekit uninstall` on the emulated domain with real processes: --dry-run changes nothing,
--project removes this project's lanes only, --all everything lanekit installed; queues and
their jobs are kept unless --delete-queues; a running lane is skipped unless --force."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import load_config
from lanekit.queue.directory.backend import Queue
from lanekit.state.paths import Paths
from lanekit.system.interpreter import rescue_path


def _project(root: Path, name: str, *, sleep: int = 0) -> Path:
    """Project NAME: a queue lane and a plain lane, under its own label prefix."""
    root.mkdir(parents=True)
    config = root / "lanes.toml"
    config.write_text(
        f'[defaults]\nlabel_prefix = "com.example.{name}"\n\n'
        f'[queues.q]\ndir = "{root / "q"}"\n\n'
        '[lanes.drain]\nqueue = "q"\n'
        f'command = ["/bin/sh", "-c", "sleep {sleep}", "job", "{{job}}"]\n'
        "throttle_interval = 0\n\n"
        '[lanes.tidy]\ncommand = ["/bin/true"]\nschedule = "@daily"\n',
        encoding="utf-8",
    )
    return config


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two applied projects, `one` and `two`, each with a job waiting in its queue."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    one, two = _project(tmp_path / "one", "one"), _project(tmp_path / "two", "two", sleep=30)
    for config in (one, two):
        _ok("apply", "-c", str(config))
        _ok("enqueue", "drain", "-c", str(config), "-", stdin="{}")
    return one, two


def _invoke(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=stdin)


def _ok(*args: str, code: int = 0, stdin: str | None = None) -> Any:
    result = _invoke(*args, stdin=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def _labels(config: Path) -> list[str]:
    return [lane.label for lane in load_config(config, Paths.from_env()).lanes.values()]


def _loaded() -> set[str]:
    from lanekit.service import open_manager

    return set(open_manager(Paths.from_env()).loaded())


def _queue(config: Path) -> Queue:
    return Queue(load_config(config, Paths.from_env()).queues["q"].dir)


def test_dry_run_lists_each_thing_and_changes_nothing(projects: tuple[Path, Path]) -> None:
    """--project --dry-run names this project's lanes and its queue (kept) and nothing of the
    other project; every plist stays installed and loaded."""
    one, two = projects
    out = _ok("uninstall", "--project", "--dry-run", "-c", str(one)).stdout
    assert "lane    would-remove  drain (com.example.one.drain)" in out
    assert "lane    would-remove  tidy (com.example.one.tidy)" in out
    assert f"queue   kept  {one.parent / 'q'} (drained by drain; its jobs kept)" in out
    assert "com.example.two" not in out
    assert set(_labels(one)) | set(_labels(two)) <= _loaded()
    paths = Paths.from_env()
    assert all(paths.plist_for(label).exists() for label in _labels(one))


def test_project_removes_its_lanes_only_and_keeps_its_queue(projects: tuple[Path, Path]) -> None:
    """--project boots out and deletes this project's lanes (plists, snapshots) and keeps its
    queue with the waiting job; the other project's lanes are untouched."""
    one, two = projects
    _ok("uninstall", "--project", "-c", str(one))
    paths = Paths.from_env()
    loaded = _loaded()
    for label in _labels(one):
        assert label not in loaded
        assert not paths.plist_for(label).exists()
        assert not paths.snapshot_for(label).exists()
    assert set(_labels(two)) <= loaded
    assert _queue(one).counts().queued == 1
    again = _ok("uninstall", "--project", "-c", str(one))
    assert "nothing to uninstall" in again.stderr


def test_all_skips_a_running_lane_then_force_removes_everything_but_queues(
    projects: tuple[Path, Path],
) -> None:
    """--all with a lane running: that lane is skipped (exit 3) and the state directory kept
    for it; --all --force stops it (its job back in its queue), removes every lane, rescue.sh
    and the state directory, and keeps both queues with their jobs."""
    one, two = projects
    c = str(two)
    _ok("kick", "drain", "-c", c)
    queue = _queue(two)
    deadline = time.monotonic() + 20
    while not queue.counts().claimed:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    paths = Paths.from_env()
    assert rescue_path(paths.state).exists()
    skipped = _ok("uninstall", "--all", code=3).stdout
    assert "lane    skipped  drain (com.example.two.drain: lane 'drain' is running" in skipped
    assert paths.state.exists()
    assert "com.example.two.drain" in _loaded()
    forced = _ok("uninstall", "--all", "--force").stdout
    assert "lane    removed  drain (com.example.two.drain, stopped run pid" in forced
    assert not rescue_path(paths.state).exists()
    assert not paths.state.exists()
    assert (_queue(one).counts().queued, _queue(two).counts().queued) == (1, 1)


def test_delete_queues_deletes_lanekit_directories_and_keeps_foreign_files(
    projects: tuple[Path, Path],
) -> None:
    """--delete-queues deletes the queue's own directories (the job with them) and leaves a
    file lanekit did not put there, and so the directory holding it."""
    one, _ = projects
    queue_dir = one.parent / "q"
    (queue_dir / "NOTES.txt").write_text("mine\n", encoding="utf-8")
    out = _ok("uninstall", "--project", "--delete-queues", "-c", str(one)).stdout
    assert "the directory holds files not lanekit's: NOTES.txt" in out
    assert sorted(entry.name for entry in queue_dir.iterdir()) == ["NOTES.txt"]


def test_scope_is_required(projects: tuple[Path, Path]) -> None:
    """Neither or both of --project and --all is a usage error (exit 2) saying so."""
    one, _ = projects
    for args in ([], ["--project", "--all"]):
        result = _invoke("uninstall", *args, "-c", str(one))
        assert result.exit_code == 2
        assert "--project or --all" in result.stderr


def test_project_removes_its_watchdog_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project with [watch]: --project removes its lanes and its watchdog lane
    (`<prefix>.watch`), and nothing is left loaded."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = _project(tmp_path / "w", "w")
    with config.open("a", encoding="utf-8") as text:
        text.write('\n[watch]\nevery = "5m"\ncommand = ["/bin/true"]\n')
    _ok("apply", "-c", str(config))
    assert "com.example.w.watch" in _loaded()
    out = _ok("uninstall", "--project", "-c", str(config)).stdout
    assert "lane    removed  watch (com.example.w.watch)" in out
    assert not _loaded()
