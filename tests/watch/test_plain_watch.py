"""The watchdog sees plain lanes (a lane without `queue`) as any lane: a failed run is sent as
an alert once, and the next good run resolves it (emulated domain, a real `command` channel)."""

from __future__ import annotations

from pathlib import Path

from watch_world import WATCHED, WatchWorld

PLAIN = WATCHED.replace(
    "[watch]",
    """[lanes.nightly]
command = ["/bin/sh", "-c", "exit $CODE"]
env = { CODE = "CODE_VALUE" }
throttle_interval = 0

[watch]""",
)


def _run(world: WatchWorld) -> None:
    lane = world.lane("nightly")
    assert world.domain.kickstart(lane.label) is not None
    assert world.domain.wait_idle(lane.label, 30)


def test_a_failed_plain_run_is_alerted_once_and_resolved_by_a_good_one(tmp_path: Path) -> None:
    """exit 4: one alert naming the plain lane's last run; a later pass sends nothing new;
    exit 0 next: one `resolved` notice."""
    world = WatchWorld.make(tmp_path, PLAIN.replace("CODE_VALUE", "4"))
    world.apply()
    _run(world)
    world.watch()
    alerts = [n for n in world.sent() if n["id"] == "queue.failed-jobs"]
    assert [(n["kind"], n["subject"]) for n in alerts] == [("new", "plain:nightly")]
    assert "the last run of plain lane nightly failed (exit 4" in alerts[0]["message"]
    world.watch()
    assert len([n for n in world.sent() if n["id"] == "queue.failed-jobs"]) == 1
    world.write(PLAIN.replace("CODE_VALUE", "0"))
    world.apply()
    _run(world)
    world.watch()
    kinds = [n["kind"] for n in world.sent() if n["id"] == "queue.failed-jobs"]
    assert kinds == ["new", "resolved"]
