"""Events and fires -> runs, markers and bursts, as tables of small days (pure functions)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from lanekit.timeline.model import (
    Burst,
    LaneInfo,
    MarkerKind,
    Outcome,
    Run,
    build_timeline,
    find_bursts,
    run_outcome,
)
from timeline_world import (
    at,
    day_window,
    events,
    incident_timeline,
    line,
    run_lines,
)

# ended, died, running_now, busy, errored, throttled, exit -> outcome
OUTCOMES = [
    (True, False, False, False, False, False, 0, Outcome.OK),
    (True, False, False, False, False, True, 0, Outcome.THROTTLED),
    (True, False, False, False, False, True, 1, Outcome.JOBS_FAILED),
    (True, False, False, False, False, False, 1, Outcome.JOBS_FAILED),
    (True, False, False, False, False, False, 75, Outcome.KILLED),
    (True, False, False, False, False, False, -9, Outcome.KILLED),
    (True, False, False, False, True, False, 69, Outcome.ERROR),
    (False, False, False, True, False, False, None, Outcome.BUSY),
    (False, False, True, False, False, False, None, Outcome.RUNNING),
    (False, True, False, False, False, False, None, Outcome.KILLED),
    (False, False, False, False, False, False, None, Outcome.UNFINISHED),
]


@pytest.mark.parametrize(
    ("ended", "died", "running", "busy", "errored", "throttled", "code", "expected"), OUTCOMES
)
def test_run_outcome_table(
    ended: bool,
    died: bool,
    running: bool,
    busy: bool,
    errored: bool,
    throttled: bool,
    code: int | None,
    expected: Outcome,
) -> None:
    """How a run is coloured, from what was logged; failures outrank a throttled start."""
    got = run_outcome(
        finish_exit=code,
        errored=errored,
        busy=busy,
        ended=ended,
        died=died,
        running_now=running,
        throttled=throttled,
    )
    assert got is expected


def _one_lane(lines: list[str], **info: object) -> tuple[list[Run], list[tuple[str, str]]]:
    """Runs (outcome per run) and markers (kind, HH:MM:SS) of lane `a` on the test day."""
    lane = LaneInfo(name="a", queue="q", **info)  # type: ignore[arg-type]
    timeline = build_timeline(events(lines), [lane], day_window(), read_to_now=True)
    (row,) = timeline.rows
    marks = [
        (str(m.kind), m.at.astimezone(at("00:00").tzinfo).strftime("%H:%M:%S")) for m in row.markers
    ]
    return list(row.runs), marks


def test_a_missed_run_is_a_fire_nobody_answered() -> None:
    """10:40 ran, 16:40 did not: one marker at 16:40; the 10:40 run records its fire."""
    runs, marks = _one_lane(
        run_lines("a", at("10:40:00.400"), ["j1"]), fires=(at("10:40"), at("16:40"))
    )
    assert [r.fire for r in runs] == [at("10:40")]
    assert marks == [("missed", "16:40:00")]


def test_fires_before_the_lane_was_installed_are_not_missed() -> None:
    """A fire before the lane's first logged event (its install) is no missed run."""
    lines = [line(at("12:00"), "a", "applied", action="create", by="apply")]
    _, marks = _one_lane(lines, fires=(at("10:40"), at("16:40")), known_since=at("12:00"))
    assert marks == [("installed", "12:00:00"), ("missed", "16:40:00")]


def test_a_fire_still_to_come_is_not_missed() -> None:
    """A fire after `now` is only a tick."""
    lane = LaneInfo(name="a", queue="q", fires=(at("16:40"),))
    window = day_window(now=at("12:00"))
    timeline = build_timeline([], [lane], window, read_to_now=True)
    assert timeline.rows[0].markers == ()
    assert timeline.rows[0].fires == (at("16:40"),)


def test_the_last_missed_fire_is_exit_78_when_launchd_says_so() -> None:
    """launchd's last exit 78 explains the latest silence: it could not start the job."""
    _, marks = _one_lane([], fires=(at("10:40"), at("16:40")), last_exit=78)
    assert marks == [("missed", "10:40:00"), ("exit-78", "16:40:00")]


def test_a_throttled_start_lands_throttle_interval_after_the_previous() -> None:
    """A kick seconds after a run is postponed by ThrottleInterval: the run that starts exactly
    then is flagged; one that starts later is not."""
    lines = (
        run_lines("a", at("10:40:00"), ["j1"])
        + run_lines("a", at("10:40:10.200"), ["j2"])
        + run_lines("a", at("10:45:00"), ["j3"])
    )
    runs, _ = _one_lane(lines, throttle=10)
    assert [r.outcome for r in runs] == [Outcome.OK, Outcome.THROTTLED, Outcome.OK]
    assert [r.throttled for r in runs] == [False, True, False]


def test_a_busy_skip_answers_its_fire() -> None:
    """A start that found the previous run still going is `busy`, not a missed run."""
    lines = [*run_lines("a", at("10:39:00"), ["j1"], seconds=120)]
    lines.append(line(at("10:40:00.100"), "a", "skipped", reason="lane-busy"))
    runs, marks = _one_lane(lines, fires=(at("10:40"),))
    assert [r.outcome for r in runs] == [Outcome.OK, Outcome.BUSY]
    assert runs[1].fire == at("10:40")
    assert marks == []


def test_a_run_without_finish_then_a_new_start_was_killed() -> None:
    """SIGKILL leaves no finish: the next start proves the runner died."""
    lines = [
        line(at("10:00"), "a", "start", pid=1),
        line(at("10:00:01"), "a", "claimed", job="j1", attempt=1),
        *run_lines("a", at("11:00"), ["j2"]),
    ]
    lines.insert(3, line(at("11:00:00.100"), "a", "recovered", job="j1", to="queue"))
    runs, _ = _one_lane(lines)
    assert [r.outcome for r in runs] == [Outcome.KILLED, Outcome.OK]
    assert runs[0].end == at("10:00:01")
    assert runs[1].recovered == 1


@pytest.mark.parametrize("running_now", [True, False])
def test_the_last_open_run_is_running_or_killed(running_now: bool) -> None:
    """An open last run is `running` when launchd reports a pid, else it died."""
    lines = [line(at("10:00"), "a", "start", pid=1)]
    runs, _ = _one_lane(lines, running_now=running_now)
    assert runs[0].outcome is (Outcome.RUNNING if running_now else Outcome.KILLED)


def test_a_run_across_midnight_shows_on_both_days() -> None:
    """23:59 to 00:03: the first day has it (ending after the window), the next day has it
    beginning the day before; each day clips it to its own span."""
    lines = run_lines("a", at("23:59"), ["j1", "j2"], seconds=120)
    lane = LaneInfo(name="a", queue="q")
    first = build_timeline(events(lines), [lane], day_window(), read_to_now=True)
    nxt = date(2026, 12, 1)
    second = build_timeline(events(lines), [lane], day_window(nxt), read_to_now=True)
    (run1,) = first.rows[0].runs
    (run2,) = second.rows[0].runs
    assert run1 == run2
    assert run1.start == at("23:59") and run1.end > at("00:00", nxt)
    assert run1.outcome is Outcome.OK and run1.claimed == 2
    later = build_timeline(events(lines), [lane], day_window(date(2026, 12, 2)), read_to_now=True)
    assert later.rows[0].runs == ()


def test_a_run_whose_start_was_not_read_begins_before() -> None:
    """Events whose `start` lies before what was read still make one run, flagged."""
    lines = run_lines("a", at("23:00", date(2026, 11, 29)), ["j1", "j2"], seconds=7200)[1:]
    runs, _ = _one_lane(lines)
    assert runs[0].started_before
    assert runs[0].claimed == 2


def test_the_incident_burst() -> None:
    """Five lanes of queue notes at 10:40 are one burst with each lane's claims; publish's
    own queue is not part of it."""
    timeline = incident_timeline()
    (burst,) = timeline.bursts
    assert burst.queue == "notes"
    assert burst.lanes == ("funnel", "thumbs", "social", "portraits", "digest")
    assert burst.claims == {"funnel": 3, "thumbs": 4, "social": 3, "portraits": 4, "digest": 3}
    assert burst.start == at("10:40")


def test_the_incident_markers_and_outcomes() -> None:
    """The skipped reload and the reload after it, digest's missed 16:40, funnel's failing
    16:40 run, publish's run that could not start its command; the unknown event is kept."""
    rows = {row.lane: row for row in incident_timeline().rows}
    assert [m.kind for m in rows["funnel"].markers] == [
        MarkerKind.RELOAD_SKIPPED,
        MarkerKind.RELOADED,
    ]
    assert [m.kind for m in rows["digest"].markers] == [MarkerKind.MISSED]
    assert [r.outcome for r in rows["funnel"].runs] == [Outcome.OK, Outcome.JOBS_FAILED]
    (publish,) = rows["publish"].runs
    assert publish.outcome is Outcome.ERROR
    assert publish.exit == 69
    assert publish.attempts_max == 2
    assert [e.name for e in rows["thumbs"].other] == ["paused"]


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([("a", 0, 10), ("b", 5, 15)], [("a", "b")]),
        ([("a", 0, 10), ("b", 10, 15)], []),
        ([("a", 0, 10), ("a", 20, 30), ("b", 25, 40)], [("a", "b")]),
        ([("a", 0, 10), ("b", 5, 15), ("c", 14, 20)], [("a", "b", "c")]),
        ([("a", 0, 10), ("a", 5, 15)], []),
    ],
)
def test_find_bursts_table(
    spans: list[tuple[str, int, int]], expected: list[tuple[str, ...]]
) -> None:
    """Overlapping runs of two or more lanes of one queue form a burst; touching ones do not,
    nor one lane overlapping itself."""
    base = at("10:40")
    runs = [
        Run(lane, base + timedelta(seconds=s), base + timedelta(seconds=e), Outcome.OK)
        for lane, s, e in spans
    ]
    bursts: list[Burst] = find_bursts({"q": runs})
    assert [b.lanes for b in bursts] == expected
