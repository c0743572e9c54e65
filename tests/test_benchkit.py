"""The bench's own helpers (scripts/benchkit): what a round leaves is set aside, not deleted,
until every figure is measured, and the machine line says whether ext4 has a journal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from benchkit import common, report  # noqa: E402 - after the path that holds them
from pgserver import PgServer  # noqa: E402 - beside the other imports of this module


def test_fresh_sets_an_earlier_round_aside_and_empty_trash_deletes_it(tmp_path: Path) -> None:
    first = common.fresh(tmp_path, "round")
    (first / "job.json").write_text("{}")
    inode = (first / "job.json").stat().st_ino

    second = common.fresh(tmp_path, "round")

    assert second == first
    assert list(second.iterdir()) == []
    kept = list((tmp_path / common.TRASH).rglob("job.json"))
    assert [p.stat().st_ino for p in kept] == [inode]  # renamed, not deleted
    common.fresh(tmp_path, "round")
    assert len(list((tmp_path / common.TRASH).iterdir())) == 2
    # what another process set aside under the same name stays apart
    (tmp_path / common.TRASH / "round.0").mkdir()
    ((tmp_path / common.TRASH / "round.0") / "left").write_text("")
    common.fresh(tmp_path, "round")
    assert len(list((tmp_path / common.TRASH).iterdir())) == 4

    common.empty_trash(tmp_path)

    assert not (tmp_path / common.TRASH).exists()
    assert (tmp_path / "round").is_dir()


def test_fresh_of_a_nested_name_keeps_it_in_one_trash_entry(tmp_path: Path) -> None:
    common.fresh(tmp_path, "a/b")
    common.fresh(tmp_path, "a/b")

    (entry,) = (tmp_path / common.TRASH).iterdir()
    assert entry.name.startswith("a_b.")
    assert (tmp_path / "a" / "b").is_dir()


@pytest.mark.parametrize(
    ("journals", "expected"),
    [(["vda-8"], ", with a journal"), (["vdb-8"], ", no journal"), ([], ", no journal")],
)
def test_ext4_journal_reads_the_list_of_journals(
    tmp_path: Path, journals: list[str], expected: str
) -> None:
    jbd2 = tmp_path / "jbd2"
    jbd2.mkdir()
    for name in journals:
        (jbd2 / name).mkdir()
    disk = tmp_path / "vda"
    disk.touch()

    assert report.ext4_journal(str(disk), jbd2).startswith(expected)


def test_ext4_journal_names_a_mapped_device_by_the_node_it_links_to(tmp_path: Path) -> None:
    jbd2 = tmp_path / "jbd2"
    (jbd2 / "dm-0-8").mkdir(parents=True)
    (tmp_path / "dm-0").touch()
    (tmp_path / "mapper").mkdir()
    (tmp_path / "mapper" / "vg-root").symlink_to("../dm-0")

    assert report.ext4_journal(str(tmp_path / "mapper" / "vg-root"), jbd2) == ", with a journal"


@pytest.mark.parametrize("device", ["/dev/no-such-disk", "rootfs", ""])
def test_ext4_journal_says_nothing_about_a_device_it_cannot_find(device: str) -> None:
    assert report.ext4_journal(device, Path("/nonexistent")) == ""


@pytest.mark.parametrize(
    "kind", ["lanekit", "procrastinate", "pg-boss", "procrastinate-bare", "pg-boss-bare"]
)
def test_each_claim_kind_of_figure_p_drains_every_job_once(
    kind: str, pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    """(p)'s kinds on the real server: procrastinate's vendored schema loads, pg-boss's table
    takes its statements, and each drains its queue, one job a claim, and stops when it is
    empty; two workers together take every job exactly once."""
    from benchkit import postgres

    dsn = pg_server.dsn
    postgres._schema(dsn, pg_schema)
    if kind == "lanekit":
        postgres._fill_lanekit(dsn, pg_schema, 25)
    else:
        postgres._fill_others(dsn, pg_schema, kind, 25)
    rate, taken = postgres._rate(kind, dsn, pg_schema, tmp_path / "spool", 2)
    assert taken == 25 and rate > 0
    assert postgres._drain(kind, dsn, pg_schema, str(tmp_path / "spool")) == 0
