"""The daily digest: yesterday's runs, jobs done / failed / retried and missed runs per lane,
and the alerts opened and resolved, sent once a day from `digest` on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, timedelta
from pathlib import Path

import pytest
from watch_world import WATCHED, WatchWorld

from lanekit.config.watch import WatchSpec
from lanekit.run.lanelog import LaneLog
from lanekit.watch.digest import digest_due, digest_notice, lane_day
from lanekit.watch.memory import Happened

TODAY = datetime(2026, 11, 3, 8, 30)
YESTERDAY = datetime(2026, 11, 2)


@pytest.mark.parametrize(
    ("now", "last", "due"),
    [
        (datetime(2026, 11, 3, 7, 59), None, False),
        (datetime(2026, 11, 3, 8, 0), None, True),
        (datetime(2026, 11, 3, 8, 0), "2026-11-02", True),
        (datetime(2026, 11, 3, 23, 0), "2026-11-03", False),
    ],
)
def test_digest_is_due_once_a_day_from_its_time(now: datetime, last: str | None, due: bool) -> None:
    """Due at or after `digest` local time, unless already sent that day."""
    assert digest_due(time(8, 0), now, last) is due


def _frozen(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def _log(world: WatchWorld, lane: str, at: datetime, event: str, **fields: object) -> None:
    LaneLog(world.lane(lane).log_path, lane, clock=at.timestamp).event(event, **fields)


def test_a_lanes_yesterday(tmp_path: Path) -> None:
    """Counted from the lane log over yesterday only: runs, done, failed, retried; a 09:00
    fire without a run within missed_after is missed, the 17:00 one ran."""
    world = WatchWorld.make(
        tmp_path, WATCHED.replace("throttle_interval = 0", 'schedule = "0 9,17 * * *"')
    )
    world.lane("funnel").log_path.parent.mkdir(parents=True)
    _log(world, "funnel", YESTERDAY - timedelta(hours=2), "start")  # the day before: not counted
    at = YESTERDAY + timedelta(hours=17, minutes=1)
    _log(world, "funnel", at, "start", pid=1)
    for event in ("done", "done", "failed", "requeued"):
        _log(world, "funnel", at, event, job="j")
    _log(world, "funnel", TODAY, "start")  # today: not counted
    history = [
        Happened((YESTERDAY + timedelta(hours=10)).timestamp(), "new", "k", ("funnel",)),
        Happened((YESTERDAY + timedelta(hours=12)).timestamp(), "resolved", "k", ("funnel",)),
        Happened((TODAY - timedelta(days=3)).timestamp(), "new", "old", ("funnel",)),
    ]
    day = lane_day(world.lane("funnel"), YESTERDAY, YESTERDAY + timedelta(days=1), 900, history)
    assert day.to_json("funnel") == {
        "lane": "funnel",
        "runs": 1,
        "done": 2,
        "failed": 1,
        "retried": 1,
        "missed": 1,
        "alerts_opened": 1,
        "alerts_resolved": 1,
    }
    notice = digest_notice(world.config(), history, TODAY, WatchSpec(digest=time(8)))
    assert notice.kind == "digest"
    assert notice.message.startswith("2026-11-02: funnel: 1 runs, 2 done, 1 failed, 1 retried")
    assert notice.details["day"] == "2026-11-02"
    assert [lane["lane"] for lane in notice.details["lanes"]] == ["funnel"]


def test_a_pass_sends_the_digest_once_a_day(tmp_path: Path) -> None:
    """The first pass at or after `digest` sends it; later passes that day do not; the next
    day's does again."""
    world = WatchWorld.make(tmp_path, WATCHED.replace("[watch]", '[watch]\ndigest = "08:00"'))
    world.apply()
    for at, expected in (
        (TODAY.replace(hour=7), []),
        (TODAY, ["digest"]),
        (TODAY + timedelta(hours=2), []),
        (TODAY + timedelta(days=1), ["digest"]),
    ):
        result = world.watch(now=_frozen(at))
        assert [str(n.kind) for n in result.notices] == expected, at
    assert [n["kind"] for n in world.sent()] == ["digest", "digest"]


def test_the_digest_links_the_days_timeline_page(tmp_path: Path) -> None:
    """The digest writes yesterday's `lanekit timeline` page under the state dir (0600, no
    network references) and links it: a file:// URI in the message, the path in details; a
    dry run writes no page and links none."""
    world = WatchWorld.make(tmp_path, WATCHED.replace("[watch]", '[watch]\ndigest = "08:00"'))
    world.apply()
    dry = world.watch(now=_frozen(TODAY), dry_run=True)
    assert [n.details.get("page") for n in dry.notices] == [None]
    assert not (world.paths.state / "timeline").exists()
    (notice,) = world.watch(now=_frozen(TODAY)).notices
    page = Path(notice.details["page"])
    yesterday = (TODAY - timedelta(days=1)).date()
    assert page == world.paths.state / "timeline" / f"timeline-{yesterday.isoformat()}.html"
    assert page.as_uri() in notice.message
    text = page.read_text()
    assert "<svg" in text
    assert "http:" not in text and "https:" not in text
    assert page.stat().st_mode & 0o777 == 0o600
    assert world.sent()[0]["details"]["page"] == str(page)


def test_a_digest_whose_page_cannot_be_written_still_goes_out(tmp_path: Path) -> None:
    """A state dir where the page cannot go (a file named `timeline`) costs the link, not the
    digest: the notice is sent without `page`, and the pass says why in a note."""
    world = WatchWorld.make(tmp_path, WATCHED.replace("[watch]", '[watch]\ndigest = "08:00"'))
    world.apply()
    (world.paths.state / "timeline").write_text("not a directory")
    result = world.watch(now=_frozen(TODAY))
    assert [n.details.get("page") for n in result.notices] == [None]
    assert [n["kind"] for n in world.sent()] == ["digest"]
    assert any("timeline page was not written" in note for note in result.notes)


def test_missed_runs_count_from_installation(tmp_path: Path) -> None:
    """Issue 32 item 10: a lane installed at 16:00 yesterday with an every-30-minutes schedule
    did not miss the 32 fires before that; only the unanswered ones after count (the
    timeline's rule: fires before the lane's first logged event are not missed)."""
    world = WatchWorld.make(
        tmp_path, WATCHED.replace("throttle_interval = 0", 'schedule = "*/30 * * * *"')
    )
    world.lane("funnel").log_path.parent.mkdir(parents=True)
    installed = YESTERDAY + timedelta(hours=16)
    _log(world, "funnel", installed, "applied", action="create")
    for hour in range(16, 24):
        for minute in (0, 30):
            if (hour, minute) != (20, 0):  # one fire after installation went unanswered
                _log(world, "funnel", YESTERDAY + timedelta(hours=hour, minutes=minute), "start")
    day = lane_day(world.lane("funnel"), YESTERDAY, YESTERDAY + timedelta(days=1), 900, [])
    assert day.missed == 1
