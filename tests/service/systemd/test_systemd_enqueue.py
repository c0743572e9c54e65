"""A lane started on enqueue (start = ["schedule", "enqueue"]) on a real systemd user manager
(tests/usermanager.py): its path unit starts it within seconds of an enqueue, no kick; paused it
is not started; with its command missing it does not spin (the runner defers the job to
delayed/, so the ready directory empties); remove leaves no path unit nor its link."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from lanekit.config import Config, load_config
from lanekit.queue import open_queue
from lanekit.reconcile import Result, apply, remove
from lanekit.reconcile.pause import pause, resume
from lanekit.run.lanelog import EventName, read_events
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.names import path_name, unit_names
from lanekit.service.systemd.systemctl import Systemctl
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow

LANE = '[lanes.arrive]\nqueue = "q"\nschedule = "0 3 * * *"\nstart = ["schedule", "enqueue"]\n'


def _manager(user: UserManager, paths: Paths) -> SystemdManager:
    return SystemdManager(Systemctl(user.env), user.unit_dir, paths.state, "the test's manager")


def _config(paths: Paths, command: str) -> Config:
    text = (
        f'[defaults]\nlabel_prefix = "com.example.enq"\n[queues.q]\ndir = "{paths.home / "q"}"\n'
        f"{LANE}command = {command}\n"
    )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def _until(what: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return what()


def _starts(config: Config) -> int:
    """Runs the lane log recorded (one `start` event per run)."""
    log = config.lanes["arrive"].log_path
    return sum(1 for e in read_events(log) if e.get("event") == EventName.START)


def test_an_enqueued_job_is_drained_without_a_kick(systemd: UserManager, paths: Paths) -> None:
    """apply installs and arms the path unit beside the timer; a job enqueued afterwards is
    done within seconds though the timer is hours away, and the lane ran once for it."""
    config = _config(paths, '["/bin/true", "{job}"]')
    manager = _manager(systemd, paths)
    assert {o.result for o in apply(config, paths, manager).outcomes} == {Result.DONE}
    label = config.lanes["arrive"].label
    assert (systemd.unit_dir / path_name(label)).is_file()
    assert (systemd.unit_dir / "paths.target.wants" / path_name(label)).is_symlink()
    shown = systemd.systemctl("show", "-p", "ActiveState", path_name(label)).stdout
    assert shown.strip() == "ActiveState=active"
    assert manager.observe([label])[label].loaded
    queue = open_queue(config.lanes["arrive"].queue.dir, durable=False)
    queue.enqueue({"n": 1})
    assert _until(lambda: queue.counts().done == 1, 8), queue.counts()
    assert _until(lambda: manager.observe([label])[label].exit_code == 0, 5)
    assert _starts(config) == 1
    assert manager.observe([label])[label].watch_failed == ""
    assert apply(config, paths, manager).nothing_to_do


def test_a_paused_lane_is_not_started_by_an_enqueue(systemd: UserManager, paths: Paths) -> None:
    """pause stops and disables the path unit (a paused run takes nothing, so systemd would
    start it again and again while the job waits): the job stays queued and the lane never
    runs; resume arms the path unit again and the job is drained."""
    config = _config(paths, '["/bin/true", "{job}"]')
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["arrive"].label
    lane = config.lanes["arrive"]
    pause([lane], paths, manager)
    shown = systemd.systemctl("show", "-p", "ActiveState", path_name(label)).stdout
    assert shown.strip() == "ActiveState=inactive"
    assert not (systemd.unit_dir / "paths.target.wants" / path_name(label)).exists()
    queue = open_queue(lane.queue.dir, durable=False)
    queue.enqueue({"n": 1})
    time.sleep(3)
    assert queue.counts().queued == 1
    assert _starts(config) == 0
    resume([lane], paths, manager)
    assert _until(lambda: queue.counts().done == 1, 8), queue.counts()


def test_a_missing_command_does_not_spin(systemd: UserManager, paths: Paths) -> None:
    """The command went missing after apply: the run defers the job to delayed/ (no attempt
    spent), so the ready directory is empty and systemd has nothing to start the lane again
    for; it ran once, and the path unit is still watching (no limit was hit)."""
    command = paths.home / "job.sh"
    command.parent.mkdir(parents=True, exist_ok=True)
    command.write_text("#!/bin/sh\nexit 0\n")
    command.chmod(0o700)
    config = _config(paths, f'["{command}", "{{job}}"]')
    manager = _manager(systemd, paths)
    outcomes = apply(config, paths, manager).outcomes
    assert {o.result for o in outcomes} == {Result.DONE}, outcomes
    command.unlink()
    label = config.lanes["arrive"].label
    queue = open_queue(config.lanes["arrive"].queue.dir, durable=False)
    queue.enqueue({"n": 1})
    assert _until(lambda: queue.counts().delayed == 1, 8), queue.counts()
    time.sleep(3)
    counts = queue.counts()
    assert (counts.queued, counts.delayed, counts.done, counts.failed) == (0, 1, 0, 0)
    assert _starts(config) == 1
    seen = manager.observe([label])[label]
    assert seen.loaded
    assert seen.watch_failed == ""


def test_a_lane_that_leaves_its_jobs_stops_being_started(
    systemd: UserManager, paths: Paths
) -> None:
    """Control for the limits: a lane whose runs leave the job in the ready directory (its
    pause marker is there but the path unit was left armed, by hand) is started again at
    once each time, as systemd.path(5) says; after ENQUEUE_BURST starts in the interval the
    path unit gives up (observed as `watch_failed`) instead of spinning for ever, while the
    timer stays armed. A load (what apply and resume do) arms it again."""
    config = _config(paths, '["/bin/true", "{job}"]')
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["arrive"].label
    lane = config.lanes["arrive"]
    marker = paths.pause_marker_for(label)
    marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    marker.write_text("paused by the test, path unit left armed\n")
    queue = open_queue(lane.queue.dir, durable=False)
    queue.enqueue({"n": 1})
    assert _until(lambda: manager.observe([label])[label].watch_failed != "", 15)
    failed_at = time.monotonic()
    service = unit_names(label)[0]
    invocation = systemd.systemctl("show", "-p", "InvocationID", service).stdout
    time.sleep(2)
    assert systemd.systemctl("show", "-p", "InvocationID", service).stdout == invocation
    assert queue.counts().queued == 1
    assert manager.observe([label])[label].watch_failed in {
        "trigger-limit-hit",
        "unit-start-limit-hit",
    }
    assert manager.observe([label])[label].loaded  # the timer still keeps the schedule
    marker.unlink()
    # The limit holds for its whole interval (10 s): a path unit started again within it
    # fails at once; after it, `load` (what apply and resume do) arms it again.
    time.sleep(max(0.0, 11 - (time.monotonic() - failed_at)))
    manager.unload(label, grace=5)
    manager.load(manager.artifact_path(label))
    assert _until(lambda: queue.counts().done == 1, 8), queue.counts()
    assert manager.observe([label])[label].watch_failed == ""


def test_remove_deletes_the_path_unit_and_its_link(systemd: UserManager, paths: Paths) -> None:
    """remove stops and deletes the service, the timer and the path unit, and both
    *.target.wants links; systemd no longer knows any of them."""
    config = _config(paths, '["/bin/true", "{job}"]')
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["arrive"].label
    remove(config, paths, manager, "arrive")
    assert sorted(p.name for p in systemd.unit_dir.rglob("*") if label in p.name) == []
    shown = systemd.systemctl("show", "-p", "LoadState", path_name(label)).stdout
    assert shown.split() == ["LoadState=not-found"]


def test_a_lane_no_longer_started_on_enqueue_loses_its_path_unit(
    systemd: UserManager, paths: Paths
) -> None:
    """start back to ["schedule"]: apply stops the path unit, deletes its file and its
    paths.target.wants link, and systemd forgets it; an enqueue no longer starts the lane."""
    config = _config(paths, '["/bin/true", "{job}"]')
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["arrive"].label
    text = (paths.cwd / "lanes.toml").read_text().replace(', "enqueue"', "")
    (paths.cwd / "lanes.toml").write_text(text)
    changed = load_config(paths.cwd / "lanes.toml", paths)
    outcomes = apply(changed, paths, manager).outcomes
    assert {o.result for o in outcomes} == {Result.DONE}, outcomes
    assert sorted(p.name for p in systemd.unit_dir.rglob("*") if label in p.name) == [
        f"{label}.service",
        f"{label}.timer",
        f"{label}.timer",  # its timers.target.wants link
    ]
    shown = systemd.systemctl("show", "-p", "LoadState", path_name(label)).stdout
    assert shown.split() == ["LoadState=not-found"]
    queue = open_queue(changed.lanes["arrive"].queue.dir, durable=False)
    queue.enqueue({"n": 1})
    time.sleep(2)
    assert queue.counts().queued == 1
    assert apply(changed, paths, manager).nothing_to_do


def test_a_lane_started_only_on_enqueue(systemd: UserManager, paths: Paths) -> None:
    """start = ["enqueue"]: a service and a path unit, no timer; the lane counts as loaded
    while the path unit watches, and an enqueued job is drained without a kick."""
    text = (
        '[defaults]\nlabel_prefix = "com.example.enq"\n'
        f'[queues.q]\ndir = "{paths.home / "q"}"\n'
        '[lanes.only]\nqueue = "q"\nstart = ["enqueue"]\ncommand = ["/bin/true", "{job}"]\n'
    )
    (paths.cwd / "lanes.toml").parent.mkdir(parents=True, exist_ok=True)
    (paths.cwd / "lanes.toml").write_text(text, encoding="utf-8")
    config = load_config(paths.cwd / "lanes.toml", paths)
    manager = _manager(systemd, paths)
    assert {o.result for o in apply(config, paths, manager).outcomes} == {Result.DONE}
    label = config.lanes["only"].label
    assert sorted(p.name for p in systemd.unit_dir.glob(f"{label}.*")) == [
        f"{label}.path",
        f"{label}.service",
    ]
    seen = manager.observe([label])[label]
    assert seen.loaded and seen.next_fire is None
    queue = open_queue(config.lanes["only"].queue.dir, durable=False)
    queue.enqueue({"n": 1})
    assert _until(lambda: queue.counts().done == 1, 8), queue.counts()
    assert apply(config, paths, manager).nothing_to_do
