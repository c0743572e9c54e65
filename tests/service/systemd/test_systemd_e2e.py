"""lanekit on a real systemd user manager (tests/usermanager.py), end to end: lanes fire on
systemd's clock and drain their queue, a busy lane is not reloaded without --wait, --force
puts its job back, a missed calendar fire is caught up (Persistent=), remove leaves nothing,
and `lanekit status` says what systemd says."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import Config, load_config
from lanekit.queue import open_queue
from lanekit.reconcile import ActionKind, Result, apply, remove
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.names import unit_names
from lanekit.service.systemd.systemctl import Systemctl
from lanekit.state.paths import Paths
from usermanager import UserManager

pytestmark = pytest.mark.slow


def _manager(user: UserManager, paths: Paths) -> SystemdManager:
    return SystemdManager(Systemctl(user.env), user.unit_dir, paths.state, "the test's manager")


def _config(paths: Paths, lanes: str) -> Config:
    text = f'[defaults]\nlabel_prefix = "com.example.e2e"\n[queues.q]\ndir = "{paths.home / "q"}"\n'
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + lanes, encoding="utf-8")
    return load_config(path, paths)


def _until(what: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.1)
    return what()


def test_a_timer_fires_on_the_clock_and_drains_the_queue(
    systemd: UserManager, paths: Paths
) -> None:
    """`every = "2s"` is `OnCalendar=*:*:00/2`: systemd starts the lane by itself, and its runs
    take every queued job to done/, each once; the job saw the unit's environment (PATH from
    lanes.toml, arguments with % and $ intact)."""
    out = paths.home / "out.txt"
    config = _config(
        paths,
        '[lanes.tick]\nqueue = "q"\nevery = "2s"\nmax_jobs = 10\n'
        f'command = ["/bin/sh", "-c", "echo \\"$0 $PATH\\" >> {out}", "50%-$HOME", "{{job}}"]\n'
        'path = ["/usr/bin", "/bin"]\n',
    )
    manager = _manager(systemd, paths)
    queue = open_queue(config.lanes["tick"].queue.dir, durable=False)
    queue.ensure()
    for n in range(3):
        queue.enqueue({"n": n})
    outcomes = apply(config, paths, manager).outcomes
    assert {o.result for o in outcomes} == {Result.DONE}, outcomes
    label = config.lanes["tick"].label
    assert manager.observe([label])[label].next_fire is not None
    assert _until(lambda: queue.counts().done == 3, 20), queue.counts()
    assert out.read_text().splitlines() == ["50%-$HOME /usr/bin:/bin"] * 3
    # It keeps firing every 2 s; between two runs systemd says the last one exited 0.
    assert _until(lambda: manager.observe([label])[label].exit_code == 0, 10)
    assert manager.observe([label])[label].loaded


def test_busy_lane_is_not_reloaded_and_force_puts_its_job_back(
    systemd: UserManager, paths: Paths
) -> None:
    """A lane running a job is skipped by apply (not reloaded, nothing stopped); --force stops
    it: SIGTERM reaches the runner first (KillMode=mixed), it puts the job back in the queue
    and exits 75, which systemd records; the new definition is loaded."""
    lanes = '[lanes.busy]\nqueue = "q"\ncommand = ["/bin/sleep", "60"]\nschedule = "0 3 * * *"\n'
    config = _config(paths, lanes)
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["busy"].label
    queue = open_queue(config.lanes["busy"].queue.dir, durable=False)
    queue.enqueue({"long": True})
    pid = manager.kick(label)
    assert _until(lambda: queue.counts().claimed == 1, 10)
    pid = pid or manager.observe([label])[label].pid
    assert pid is not None
    changed = _config(paths, lanes + 'env = { GEN = "2" }\n')
    skipped = apply(changed, paths, manager).outcomes[0]
    assert skipped.result is Result.SKIPPED
    assert skipped.action.kind is ActionKind.SKIP_RUNNING
    assert manager.observe([label])[label].pid == pid
    forced = apply(changed, paths, manager, force=True).outcomes[0]
    assert forced.result is Result.DONE, forced.detail
    counts = queue.counts()
    assert (counts.queued + counts.delayed, counts.claimed, counts.done) == (1, 0, 0)
    after = manager.observe([label])[label]
    assert after.loaded
    assert after.pid is None
    assert after.exit_code == 75
    assert b"GEN=2" in manager.artifact_path(label).read_bytes()


def test_a_fire_missed_while_stopped_is_caught_up(systemd: UserManager, paths: Paths) -> None:
    """Persistent=true: a timer whose last trigger is older than a calendar fire that passed
    while it was stopped starts the lane as soon as it is armed again."""
    now = time.localtime(time.time() - 120)
    config = _config(
        paths,
        '[lanes.daily]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\n'
        f'schedule = "{now.tm_min} {now.tm_hour} * * *"\n',
    )
    manager = _manager(systemd, paths)
    label = config.lanes["daily"].label
    stamps = Path(systemd.env["HOME"]) / ".local" / "share" / "systemd" / "timers"
    stamps.mkdir(parents=True, exist_ok=True)
    stamp = stamps / f"stamp-{unit_names(label)[1]}"
    stamp.touch()
    two_days_ago = time.time() - 2 * 86400
    os.utime(stamp, (two_days_ago, two_days_ago))
    apply(config, paths, manager)
    assert _until(lambda: manager.observe([label])[label].exit_code == 0, 15)


def test_remove_leaves_no_unit_and_no_state(systemd: UserManager, paths: Paths) -> None:
    """remove stops the lane, deletes its service, timer and snapshot, the timer's
    timers.target.wants link and its disabled mark, and systemd no longer knows the units."""
    config = _config(
        paths, '[lanes.gone]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "0 3 * * *"\n'
    )
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["gone"].label
    assert (systemd.unit_dir / "timers.target.wants" / unit_names(label)[1]).is_symlink()
    result = remove(config, paths, manager, "gone")
    assert result.booted_out
    assert sorted(p.name for p in systemd.unit_dir.rglob("*") if label in p.name) == []
    assert not paths.snapshot_for(label).exists()
    shown = systemd.systemctl("show", "-p", "LoadState", *unit_names(label)).stdout
    assert shown.split() == ["LoadState=not-found", "LoadState=not-found"]


def test_status_says_what_systemd_says(
    systemd: UserManager, paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit status` on Linux with a user manager: the systemd manager is chosen (and says
    why), NEXT comes from the timer, and `lanekit apply` twice changes nothing."""
    lanes = '[lanes.st]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "0 3 * * *"\n'
    _config(paths, lanes)
    for name in ("LANEKIT_LAUNCHD", "LANEKIT_LAUNCH_AGENTS"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.setenv(name, systemd.env[name])
    monkeypatch.setenv("LANEKIT_STATE_DIR", str(paths.state))
    monkeypatch.chdir(paths.cwd)
    runner = CliRunner()
    first = runner.invoke(app, ["apply"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["apply"])
    assert again.exit_code == 0, again.output
    assert "unchanged" in again.output
    shown = runner.invoke(app, ["status"])
    assert shown.exit_code == 0, shown.output
    assert "systemd user manager: systemd --user" in shown.output
    assert "a systemd user manager answers at" in shown.output
    assert "03:00" in shown.output
    assert sys.platform.startswith("linux")


def test_kick_says_when_systemd_could_not_start_the_run(systemd: UserManager, paths: Paths) -> None:
    """A lane whose queue directory (its working directory, holding its logs) is gone: `kick`
    starts it with --no-block, systemd fails to set the run up (209/STDOUT: the log cannot be
    opened; launchd's 78) and kick says so, naming the status and the command that shows
    systemd's view; a healthy kick reports the run's pid."""
    import shutil

    from lanekit.errors import NotStartedError
    from lanekit.reconcile import kick

    config = _config(
        paths, '[lanes.k]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "0 3 * * *"\n'
    )
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    started = kick(config, paths, manager, "k")
    assert started.pid is not None
    label = config.lanes["k"].label
    assert _until(lambda: manager.observe([label])[label].exit_code == 0, 10)
    shutil.rmtree(config.lanes["k"].queue.dir)
    with pytest.raises(NotStartedError) as caught:
        kick(config, paths, manager, "k")
    assert "systemd could not start it: exit 209/STDOUT" in caught.value.message
    assert caught.value.message.endswith("the program never ran")
    assert f"systemctl --user status {label}.service" in caught.value.hint
    assert manager.observe([label])[label].not_started


def test_units_changed_behind_systemds_back_are_reloaded(
    systemd: UserManager, paths: Paths
) -> None:
    """Same bytes, but systemd says its copy is older (NeedDaemonReload: the file was touched
    after the last daemon-reload): apply reloads instead of calling it unchanged, and after
    that the lane is unchanged again."""
    config = _config(
        paths, '[lanes.t]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "0 3 * * *"\n'
    )
    manager = _manager(systemd, paths)
    apply(config, paths, manager)
    label = config.lanes["t"].label
    timer = systemd.unit_dir / unit_names(label)[1]
    later = time.time() + 5
    os.utime(timer, (later, later))
    assert manager.observe([label])[label].stale
    reloaded = apply(config, paths, manager).outcomes[0]
    assert reloaded.action.kind is ActionKind.UPDATE, reloaded.action.reason
    assert "older" in reloaded.action.reason or "changed" in reloaded.action.reason
    assert reloaded.result is Result.DONE
    assert not manager.observe([label])[label].stale
    assert apply(config, paths, manager).nothing_to_do


def test_applying_twenty_lanes_reloads_systemd_once(systemd: UserManager, paths: Paths) -> None:
    """20 lanes, never more than ONE daemon-reload per apply (`enable --no-reload`: enable
    would reload the manager once per lane): new units need none (systemd reads a unit when
    it is first named, and again once a stop let it go), changed or touched ones at most one
    (the first load that finds systemd's copy older reloads; the other 19 then find theirs
    read), and systemd then runs what the files say. A second apply reloads nothing."""
    lanes = "".join(
        f'[lanes.l{i}]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "{i} 3 * * *"\n'
        for i in range(20)
    )
    manager = _manager(systemd, paths)

    def reloads() -> int:
        """daemon-reloads, and the one `enable`/`disable` make unless told --no-reload."""
        return sum(
            1
            for call in manager.systemctl.calls
            if "daemon-reload" in call
            or ({"enable", "disable"} & set(call) and "--no-reload" not in call)
        )

    first = _config(paths, lanes)
    labels = [lane.label for lane in first.lanes.values()]
    assert {o.result for o in apply(first, paths, manager).outcomes} == {Result.DONE}
    assert reloads() <= 1
    changed = _config(paths, lanes.replace(' 3 * * *"\n', ' 4 * * *"\n'))
    outcomes = apply(changed, paths, manager).outcomes
    assert {(o.action.kind, o.result) for o in outcomes} == {(ActionKind.UPDATE, Result.DONE)}
    assert reloads() <= 1
    fires = manager.observe(labels)
    assert {
        lane.next_fire.astimezone().hour for lane in fires.lanes.values() if lane.next_fire
    } == {4}
    before = reloads()
    later = time.time() + 5
    for label in labels:
        os.utime(systemd.unit_dir / unit_names(label)[1], (later, later))
    outcomes = apply(changed, paths, manager).outcomes
    assert {(o.action.kind, o.result) for o in outcomes} == {(ActionKind.UPDATE, Result.DONE)}
    assert reloads() - before <= 1
    assert apply(changed, paths, manager).nothing_to_do
    assert reloads() - before <= 1
    assert not any(lane.stale for lane in manager.observe(labels).lanes.values())


def test_a_first_apply_creates_the_unit_directory(systemd: UserManager, paths: Paths) -> None:
    """On a fresh account ~/.config/systemd/user does not exist yet: apply creates it (ours,
    0700) and systemd loads the lane from it; a unit directory others may write is refused."""
    import shutil
    import stat

    from lanekit.errors import UnsafeStateError

    shutil.rmtree(systemd.unit_dir)
    config = _config(
        paths, '[lanes.f]\nqueue = "q"\ncommand = ["/bin/true"]\nschedule = "0 3 * * *"\n'
    )
    manager = _manager(systemd, paths)
    assert {o.result for o in apply(config, paths, manager).outcomes} == {Result.DONE}
    assert stat.S_IMODE(systemd.unit_dir.stat().st_mode) == 0o700
    label = config.lanes["f"].label
    assert manager.observe([label])[label].loaded
    systemd.unit_dir.chmod(0o777)
    try:
        with pytest.raises(UnsafeStateError, match="unit directory"):
            apply(config, paths, manager)
    finally:
        systemd.unit_dir.chmod(0o700)
