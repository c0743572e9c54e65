"""lanekit.run.which_snapshot: which snapshot `lanekit run LANE` reads without --snapshot, and what
it
says when none of the installed ones can be the lane's."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanekit.errors import UsageError
from lanekit.run import which_snapshot as runsnapshot
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec


def spec_of(paths: Paths, lane: str, label: str) -> RunSpec:
    """A snapshot of `lane` under label `label` (nothing in it is run here)."""
    queue_dir = paths.home / "q"
    return RunSpec(
        lane=lane,
        label=label,
        queue_dir=queue_dir,
        command=("/bin/true",),
        max_jobs=1,
        max_seconds=None,
        max_attempts=1,
        stale_after=3600.0,
        exit_timeout=5,
        log_path=queue_dir / "logs" / f"{lane}.log",
    )


def test_a_corrupt_snapshot_of_the_lane_is_reported_as_corrupt_not_missing(
    paths: Paths,
) -> None:
    """The lane's snapshot (`<prefix>.<lane>.json`) is damaged: the error names that file and
    what is wrong with it, as `--snapshot` would, not "no installed lane snapshot" (issue 30
    item 11)."""
    spec_of(paths, "other", "test.other").write(paths.snapshot_for("test.other"))
    path = paths.snapshot_for("test.work")
    path.write_text('{"x"')
    with pytest.raises(UsageError) as caught:
        runsnapshot.find_snapshot("work", paths.snapshots)
    assert caught.value.message.startswith(f"{path}: lane snapshot is unreadable (not valid JSON")
    assert caught.value.hint == "run `lanekit apply` to write it again"


def test_a_corrupt_snapshot_under_another_label_is_named_too(paths: Paths) -> None:
    """A damaged snapshot whose name does not say its lane (a custom label) may be the lane's:
    the error says none readable is the lane's and why the damaged one cannot be read."""
    path = paths.snapshot_for("custom-label")
    paths.snapshots.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text("null")
    with pytest.raises(UsageError) as caught:
        runsnapshot.find_snapshot("work", paths.snapshots)
    assert caught.value.message == (
        f"lane work: no readable installed snapshot in {paths.snapshots} is this lane's, and "
        f"1 cannot be read: {path}: lane snapshot is unreadable (holds null, not a JSON object)"
    )
    assert "lanekit apply" in caught.value.hint


def test_a_good_snapshot_beside_a_damaged_one_is_used(paths: Paths) -> None:
    """A readable snapshot of the lane wins over a damaged neighbour."""
    spec_of(paths, "work", "test.work").write(paths.snapshot_for("test.work"))
    paths.snapshot_for("test.old.work").write_text("[")
    assert runsnapshot.find_snapshot("work", paths.snapshots) == paths.snapshot_for("test.work")


def test_no_snapshot_at_all_is_still_missing(paths: Paths, tmp_path: Path) -> None:
    """Nothing installed: the usage error says to apply, as before."""
    with pytest.raises(UsageError, match="no installed lane snapshot"):
        runsnapshot.find_snapshot("work", tmp_path / "none")
