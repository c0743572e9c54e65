"""(f) `lanekit timeline --day`: one day of a busy lane's log vs reading it all."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from benchkit.common import Figure, fresh, median, say
from lanekit.run.lanelog import format_line, format_ts, read_between, read_events


def bench_timeline(root: Path, days: int, per_day: int, runs: int) -> Figure:
    """(f): the events of one day (binary search on the log's timestamps, then a forward
    read) vs reading the whole log and keeping that day, over `days` days of a busy lane."""
    from lanekit.timeline.events import to_event

    path = fresh(root, f"timeline-{days}") / "busy.log"
    say(f"  (f) writing {days} days x {per_day} events")
    start = 1_790_000_000.0
    step = 86_400 / per_day
    with path.open("w", encoding="utf-8") as handle:  # the lines LaneLog writes, in bulk
        for n in range(days * per_day):
            fields = {"job": f"{n:020d}-0000001-deadbeef", "attempt": 1}
            handle.write(format_line(format_ts(start + n * step), "busy", "claimed", fields))
    day_start = start + (days // 2) * 86_400
    day_end = day_start + 86_400
    floor, ceiling = format_ts(day_start), format_ts(day_end)
    span_times, full_times = [], []
    for _ in range(runs):
        # As timeit does: without the collector, whose passes over what the previous full
        # read left behind would land at random in the short day read (`lanekit timeline` is
        # a fresh process, with no such garbage).
        gc.collect()
        gc.disable()
        try:
            began = time.perf_counter()
            span = [to_event(f, "busy") for f in read_between(path, day_start, day_end)]
            span_times.append(time.perf_counter() - began)
            gc.collect()
            began = time.perf_counter()
            full = [
                to_event(f, "busy")
                for f in read_events(path, rotated=True)
                if floor <= f["ts"] < ceiling
            ]
            full_times.append(time.perf_counter() - began)
        finally:
            gc.enable()
        assert len(span) == len(full) == per_day, (len(span), len(full))
    per_round = [span / full for span, full in zip(span_times, full_times, strict=True)]
    ratio = median(per_round)
    size = path.stat().st_size
    return Figure(
        key="f",
        title=f"`lanekit timeline --day`: 1 day of {days} ({size / 1e6:.0f} MB log) vs a full read",
        ratio=ratio,
        target=f"<= {200 / days:.0f}%",
        met=ratio <= 2.0 / days,
        rounds=per_round,
        detail=[
            f"one day ({per_day:,} events): {median(span_times) * 1e3:.1f} ms; the whole log "
            f"({days * per_day:,} events): {median(full_times) * 1e3:.0f} ms (median of {runs}; "
            "the ratio is the median of the rounds' ratios)",
        ],
        limits="Parsing the day's own lines (about two thirds of the day read, as fast a "
        "line as the full read parses) and typing them as events (the other third: a "
        "datetime, a kind and an Event each, which the full read pays only for the day it "
        "keeps); finding them costs ~log2(size) short preads per log file (no index file to "
        "keep in step with the runners' appends). So the ratio cannot go below 1 day of "
        f"{days} ({100 / days:.1f}%) plus the events' share.",
    )
