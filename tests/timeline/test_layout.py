"""The timeline on a time axis: DST days in New York, terminal cells, SVG geometry (pure)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta

import pytest

from lanekit.schedule import build_schedule
from lanekit.timeline.build import day_window as local_day_window
from lanekit.timeline.build import fires_between
from lanekit.timeline.layout import (
    MIN_BAR_PX,
    Cell,
    around,
    axis_ticks,
    bars,
    burst_columns,
    column,
    row_cells,
)
from lanekit.timeline.model import LaneRow, Marker, MarkerKind, Outcome, Run, Window
from timeline_world import NY, at, day_window, incident_timeline

SPRING = date(2026, 3, 8)  # 02:00 -> 03:00 in New York
FALL = date(2026, 11, 1)  # 02:00 -> 01:00


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's local time is America/New_York for this test (TZ + tzset, undone after)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("day", "hours", "labels"),
    [
        (date(2026, 11, 30), 24, ["00:00", "01:00", "02:00", "03:00"]),
        (SPRING, 23, ["00:00", "01:00", "03:00", "04:00"]),
        (FALL, 25, ["00:00", "01:00", "01:00", "02:00"]),
    ],
)
def test_dst_days_are_23_or_25_hours_labelled_in_wall_time(
    day: date, hours: int, labels: list[str]
) -> None:
    """The axis is real time; its hourly labels skip 02:00 in March and repeat 01:00 in
    November, and the day ends at the next local midnight."""
    window = day_window(day)
    assert window.end - window.start == timedelta(hours=hours)
    ticks = axis_ticks(window, NY, 30)
    assert [t.label for t in ticks[:4]] == labels
    assert len(ticks) == hours + 1
    assert ticks[-1].label == "00:00"


def test_ticks_thin_out_to_fit() -> None:
    """With room for 8 labels a day gets one every 3 hours; a burst's close-up gets seconds."""
    window = day_window()
    assert [t.label for t in axis_ticks(window, NY, 8)] == [
        f"{h:02d}:00" for h in range(0, 24, 3)
    ] + ["00:00"]
    close = around(incident_timeline().bursts[0], window)
    labels = [t.label for t in axis_ticks(close, NY, 12)]
    assert labels and all(len(label) == 8 for label in labels)  # HH:MM:SS


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        (SPRING, ["01:30", "03:30"]),  # 02:30 does not exist: no fire (lanekit.schedule's rule)
        (FALL, ["01:30", "02:30", "03:30"]),  # 01:30 happens twice: it fires once, the first
    ],
)
@pytest.mark.usefixtures("new_york")
def test_fires_on_dst_days(day: date, expected: list[str]) -> None:
    """Scheduled ticks on DST days follow launchd's wall-clock semantics as lanekit.schedule models
    them, and sit at the right instants (the fall 01:30 is the EDT one)."""
    now = datetime(2027, 1, 1).astimezone()
    window = local_day_window(day, now)
    fires = fires_between(build_schedule("30 1-3 * * *"), window.start, window.end)
    assert [f.astimezone(NY).strftime("%H:%M") for f in fires] == expected
    if day == FALL:
        assert fires[0].astimezone(NY).utcoffset() == timedelta(hours=-4)


def _row(runs: list[Run], markers: list[Marker] = (), fires: list[datetime] = ()) -> LaneRow:  # type: ignore[assignment]
    return LaneRow("a", "q", tuple(fires), tuple(runs), tuple(markers))


def test_row_cells_put_the_most_important_thing_in_a_shared_column() -> None:
    """A day in 24 columns (an hour each): a fire alone is a tick, a run covers its hours, a
    failure beats an ok run in the same hour, a missed run beats a fire."""
    window = day_window()
    runs = [
        Run("a", at("10:40"), at("12:10"), Outcome.OK),
        Run("a", at("12:30"), at("12:31"), Outcome.JOBS_FAILED),
    ]
    markers = [Marker("a", at("16:40"), MarkerKind.MISSED)]
    cells = row_cells(_row(runs, markers, [at("08:00"), at("16:40")]), window, 24)
    assert cells[8] is Cell.FIRE
    assert cells[10:13] == [Cell.OK, Cell.OK, Cell.JOBS_FAILED]
    assert cells[16] is Cell.MISSED
    assert cells.count(Cell.EMPTY) == 24 - 5


def test_install_markers_do_not_hide_runs() -> None:
    """An install in the same column as a run shows the run; a skipped reload shows itself."""
    window = day_window()
    run = Run("a", at("10:40"), at("10:41"), Outcome.OK)
    installed = Marker("a", at("10:40"), MarkerKind.INSTALLED)
    skipped = Marker("a", at("10:41"), MarkerKind.RELOAD_SKIPPED)
    assert row_cells(_row([run], [installed]), window, 24)[10] is Cell.OK
    assert row_cells(_row([run], [installed, skipped]), window, 24)[10] is Cell.RELOAD_SKIPPED


def test_columns_and_burst_row() -> None:
    """The first and last instants map to the first and last column; a burst marks its own."""
    window = day_window()
    assert column(window.start, window, 80) == 0
    assert column(window.end, window, 80) == 79
    covered = burst_columns(incident_timeline().bursts, window, 24)
    assert [i for i, c in enumerate(covered) if c] == [10]


def test_bars_are_visible_and_clipped() -> None:
    """A one-second run still gets MIN_BAR_PX; a run from the day before starts at x=0."""
    window = day_window()
    short = Run("a", at("12:00"), at("12:00:01"), Outcome.OK)
    early = Run("a", at("23:00", date(2026, 11, 29)), at("01:00"), Outcome.OK)
    got = bars(_row([short, early]), window, 1000.0)
    assert got[0].width == MIN_BAR_PX
    assert got[0].x == pytest.approx(500.0)
    assert got[1].x == 0.0
    assert got[1].width == pytest.approx(1000 / 24, abs=0.01)


def test_a_span_of_days_is_labelled_by_date() -> None:
    """--since a week ago: ticks at local midnights, labelled MM-DD, thinned to fit."""
    start = day_window(date(2026, 11, 23)).start
    window = Window(start, day_window().end, day_window().end)
    assert [t.label for t in axis_ticks(window, NY, 10)] == [f"11-{d}" for d in range(23, 31)] + [
        "12-01"
    ]
    assert [t.label for t in axis_ticks(window, NY, 4)] == ["11-23", "11-26", "11-29"]


def test_a_close_up_shows_only_what_falls_inside_it() -> None:
    """Runs, fires and bursts outside a close-up window are not drawn at its edges."""
    timeline = incident_timeline()
    close = around(timeline.bursts[0], timeline.window)
    funnel = next(row for row in timeline.rows if row.lane == "funnel")
    cells = row_cells(funnel, close, 40)
    assert Cell.JOBS_FAILED not in cells and Cell.FIRE not in cells[-3:]
    assert cells[-1] is Cell.EMPTY
    assert not any(burst_columns(timeline.bursts, around(timeline.bursts[0], close), 40)[-1:])
