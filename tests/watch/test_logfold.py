"""Lane logs read from offsets (lanekit.watch.logfold): the fold of appended lines, the Bloom
filter of done ids, and the arithmetic that moves a healthy missed-run result on."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lanekit.run.lanelog import LaneLog, format_ts
from lanekit.watch.cache import run_rules
from lanekit.watch.logfold import Seen, read_appended, renewed, still_holds, ts_epoch


@given(st.floats(min_value=0, max_value=4e9))
def test_ts_epoch_reads_what_format_ts_writes(epoch: float) -> None:
    """Any lane-log timestamp reads back to its time, to the millisecond it keeps."""
    back = ts_epoch(format_ts(epoch))
    assert back == int(epoch) + int((epoch - int(epoch)) * 1000) / 1000


def test_ts_epoch_refuses_what_is_not_a_timestamp() -> None:
    """A torn or foreign ts is no run evidence."""
    for text in ("", "2026-12-01", "2026-12-01T10:40:00.123", "2026-12-01 10:40:00.123Z"):
        assert ts_epoch(text) is None


def test_the_fold_reads_only_complete_lines_after_the_offset(tmp_path: Path) -> None:
    """What the last pass read is not read again; a line still being written waits."""
    path = tmp_path / "lane.log"
    log = LaneLog(path, "l", clock=lambda: 1_800_000_000.0)
    log.event("done", job="old")
    offset = path.stat().st_size
    log.event("start", pid=1)
    log.event("done", job="a")
    log.event("requeued", job="b", reason="cannot-start", error="x")
    with path.open("a") as handle:
        handle.write("ts=2027-01-15T08:00:00.000Z lane=l event=done job=tor")
    fold = read_appended(str(path), offset, path.stat().st_size, rules=run_rules())
    assert fold is not None
    assert (fold.count, fold.done, fold.cannot_start, fold.skipped) == (3, ["a"], True, False)
    assert fold.end < path.stat().st_size
    assert fold.last_run == 1_800_000_000.0


def test_a_log_check_result_stands_only_when_the_new_lines_cannot_change_it() -> None:
    """The incremental forms: cannot-start waits for a requeue (or a done when open); a
    missed-run finding and a duplicate-success finding are looked at again."""
    from lanekit.watch.logfold import Appended

    quiet, done, requeue = Appended(), Appended(), Appended()
    for fold in (done, requeue):
        fold.count = 1
    done.done = ["x"]
    requeue.cannot_start = True
    assert still_holds("lane.cannot-start", False, done)
    assert not still_holds("lane.cannot-start", False, requeue)
    assert not still_holds("lane.cannot-start", True, done)
    assert still_holds("lane.missed-run", False, done)
    assert not still_holds("lane.missed-run", True, done)
    assert still_holds("lane.missed-run", True, quiet)
    assert not still_holds("queue.duplicate-success", True, done)
    assert still_holds("queue.duplicate-success", False, done)


@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=200, unique=True))
def test_seen_never_forgets_an_id(ids: list[str]) -> None:
    """Every id added is found again, through the cache's representation too."""
    seen = Seen(len(ids))
    for job in ids:
        seen.add(job)
    back = Seen.load(seen.dump())
    assert all(back.maybe_has(job) for job in ids)


def test_renewed_moves_an_expiry_on_and_never_back() -> None:
    """Interval lanes: evidence + interval + grace - 1; calendar lanes: the first listed fire
    after the evidence + grace - 1; evidence from before the listed fires renews nothing."""
    interval = {"grace": 900.0, "interval": 3600.0}
    assert renewed(interval, 100.0, 1000.0) == 1000.0 + 3600 + 900 - 1
    assert renewed(interval, 10_000.0, 1000.0) == 10_000.0
    assert renewed(interval, 100.0, None) == 100.0
    calendar = {"grace": 60.0, "from": 500.0, "fires": [600.0, 1200.0]}
    assert renewed(calendar, 0.0, 700.0) == 1200.0 + 60 - 1
    assert renewed(calendar, 0.0, 400.0) == 0.0
    assert renewed(calendar, 0.0, 1300.0) == 0.0
