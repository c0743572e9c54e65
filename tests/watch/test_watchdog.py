"""One watchdog pass, for real: problems are created on the emulated launchd domain with real
processes, and every notice goes through a real `command` channel (tests/watch/watch_world)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import psutil
import pytest
from watch_world import WATCHED, WatchWorld

from lanekit.config.watch import WATCH_LANE
from lanekit.errors import UsageError
from lanekit.queue.directory.backend import Queue
from lanekit.watch.watchdog import WatchRequest, run_pass
from neighbours import SecondUser

THREE_QUEUES = WATCHED.replace(
    "[watch]",
    """[queues.slow]
dir = "~/slow"

[queues.other]
dir = "~/other"

[lanes.sleeper]
queue = "slow"
command = ["/bin/sleep", "60"]

[lanes.broken]
queue = "other"
command = ["/bin/cat", "{job}"]

[watch]""",
)


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    """Poll until `condition()` holds (fails the test after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _sent_kinds(world: WatchWorld, since: int = 0) -> list[tuple[str, str, str]]:
    return [(n["kind"], n["id"], n["subject"]) for n in world.sent()[since:]]


def _exit_78(world: WatchWorld) -> None:
    """The lane's log directory is gone: launchd cannot open StandardOutPath (exit 78)."""
    lane = world.lane("broken")
    shutil.rmtree(lane.stdout_path.parent)
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 20)


def _failed_job(world: WatchWorld) -> None:
    """A job whose command exits 1, with one attempt: it goes to failed/."""
    lane = world.lane("funnel")
    Queue(lane.queue.dir).enqueue({"n": 1})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)
    assert len(list((lane.queue.dir / "failed").glob("*.json"))) == 1


def _stranded_claim(world: WatchWorld) -> None:
    """`kill -9` of the runner and of its job (and the job's watcher) mid-job."""
    lane = world.lane("sleeper")
    Queue(lane.queue.dir).enqueue({"n": 1})
    pid = world.domain.kickstart(lane.label)
    assert pid is not None
    wait_for(lambda: any((lane.queue.dir / "claimed").iterdir()))
    wait_for(lambda: bool(psutil.Process(pid).children(recursive=True)))
    wait_for(lambda: len(psutil.Process(pid).children(recursive=True)) >= 2)
    children = psutil.Process(pid).children(recursive=True)
    os.kill(pid, signal.SIGKILL)
    for child in children:
        child.kill()
    assert world.domain.wait_idle(lane.label, 20)
    psutil.wait_procs(children, timeout=10)


@pytest.mark.slow
def test_done_when(tmp_path: Path) -> None:
    """Issue 9's acceptance: a lane that exits 78, a failed job and a claim stranded by kill -9
    of runner and job each produce exactly one alert on the next pass (the killed runner is
    an alert of its own: launchd.killed); a second pass sends nothing; fixing one produces
    exactly one resolved notice."""
    world = WatchWorld.make(tmp_path, THREE_QUEUES)
    world.apply()
    first = world.watch()
    assert first.notices == (), [n.message for n in first.notices]
    _exit_78(world)
    _failed_job(world)
    _stranded_claim(world)

    second = world.watch()
    assert second.failed_deliveries == ()
    assert Counter(_sent_kinds(world)) == Counter(
        [
            ("new", "launchd.exit-78", "broken"),
            ("new", "queue.failed-jobs", "notes"),
            ("new", "queue.stale-claim", "slow"),
            ("new", "launchd.killed", "sleeper"),
        ]
    )
    assert world.watch().notices == ()
    assert len(world.sent()) == 4

    sleeper = world.lane("sleeper")
    Queue(sleeper.queue.dir).recover(stale_after=3600, max_attempts=3)
    fixed = world.watch()
    assert [(n.kind, n.check, n.subject) for n in fixed.notices] == [
        ("resolved", "queue.stale-claim", "slow")
    ]
    assert _sent_kinds(world, 4) == [("resolved", "queue.stale-claim", "slow")]


def test_repeat_after_repeat_and_resolve_once(tmp_path: Path) -> None:
    """An open alert is sent once, again only after `repeat` (on the pass's own clock), and
    once as resolved when it clears; nothing else in between."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    base = datetime.now()
    for hours, expected in ((0, ["new"]), (1, []), (5, []), (6.1, ["repeat"]), (7, [])):
        result = world.watch(now=_at(base + timedelta(hours=hours)))
        assert [str(n.kind) for n in result.notices] == expected, hours
    shutil.rmtree(world.lane("funnel").queue.dir / "failed")
    (world.lane("funnel").queue.dir / "failed").mkdir()
    cleared = world.watch(now=lambda: base + timedelta(hours=8))
    assert [str(n.kind) for n in cleared.notices] == ["resolved"]
    assert world.watch(now=lambda: base + timedelta(hours=9)).notices == ()
    assert [n["kind"] for n in world.sent()] == ["new", "repeat", "resolved"]


def _at(moment: datetime) -> Callable[[], datetime]:
    """A frozen clock."""
    return lambda: moment


def _failed_job_only(world: WatchWorld) -> None:
    lane = world.lane("funnel")
    Queue(lane.queue.dir).enqueue({"n": 1})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)


def test_more_failures_are_one_new_alert_naming_how_many(tmp_path: Path) -> None:
    """Jobs that fail after the first alert make the queue's alert new again, once per pass,
    saying how many failed since (not one alert per job)."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    assert [n.kind for n in world.watch().notices] == ["new"]
    lane = world.lane("funnel")
    for n in range(3):
        Queue(lane.queue.dir).enqueue({"n": n + 10})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)
    [notice] = world.watch().notices
    assert notice.kind == "new"
    assert notice.message.startswith("3 more jobs failed in queue notes since the last pass")
    assert world.watch().notices == ()


def test_a_failing_channel_keeps_the_notice_and_recovers(tmp_path: Path) -> None:
    """The channel fails (exit 3): the pass logs it, exits 1 and keeps the notice; the next
    pass, with the channel back, delivers it once and nothing twice."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    world.flag.touch()
    down = world.watch()
    assert int(down.exit_code) == 1
    [delivery] = down.failed_deliveries
    assert delivery.channel == "command"
    assert "exited 3" in (delivery.error or "")
    assert world.sent() == []
    log = world.lane(WATCH_LANE).log_path.read_text()
    assert "event=channel-failed channel=command" in log
    still_down = world.watch()
    assert [d.retry for d in still_down.failed_deliveries] == [True]
    world.flag.unlink()
    back = world.watch()
    assert int(back.exit_code) == 0
    assert [d.retry for d in back.deliveries] == [True]
    assert [n["kind"] for n in world.sent()] == ["new"]
    assert world.watch().deliveries == ()
    assert len(world.sent()) == 1


def test_a_broken_channel_never_stops_the_others(tmp_path: Path) -> None:
    """A command that cannot even start is one refused delivery; the webhook-less, macos-less
    world still has its other command delivered... here: a second command channel."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    from lanekit.watch.channels import CommandChannel

    good = CommandChannel(("/bin/sh", "-c", f"cat >> {world.sent_file}"))
    missing = CommandChannel((str(tmp_path / "no-such-notifier"),))
    from lanekit.watch.watchdog import WatchRequest, run_pass

    result = run_pass(
        WatchRequest(config_path=world.config_path),
        world.paths,
        env={},
        launchd=world.domain,
        channels=[missing, good],
    )
    assert [(d.channel, d.error is None) for d in result.deliveries] == [
        ("command", False),
        ("command", True),
    ]
    assert "cannot be started" in (result.deliveries[0].error or "")
    assert len(world.sent()) == 1


def test_dry_run_sends_and_remembers_nothing(tmp_path: Path) -> None:
    """--dry-run shows what would be sent; the next real pass still sends it."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    dry = world.watch(dry_run=True)
    assert [n.check for n in dry.notices] == ["queue.failed-jobs"]
    assert world.sent() == []
    assert not (world.lane(WATCH_LANE).queue.dir / "alerts.json").exists()
    assert [n.check for n in world.watch().notices] == ["queue.failed-jobs"]


def test_two_passes_at_once_send_once(tmp_path: Path) -> None:
    """Two passes started together (launchd's and a manual one): the lock makes them run one
    after the other, and the second sends nothing the first sent."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    world.write(
        WATCHED.replace(
            'command = ["/bin/sh", "-c", "NOTIFIER"',
            'command = ["/bin/sh", "-c", "sleep 1; cat >> \\"$2\\"", "notifier", "FLAG", "SENT"]\n'
            "#",
        )
    )
    world.apply()  # a pass runs the channels applied, not what lanes.toml says since
    results = []

    def one() -> None:
        results.append(world.watch())

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(len(r.notices) for r in results) == [0, 1]
    assert [n["id"] for n in world.sent()] == ["queue.failed-jobs"]


def test_a_pass_logs_start_and_finish_for_the_watchdog_lane(tmp_path: Path) -> None:
    """Each pass leaves `start` and `finish` in the watchdog's lane log on the pass's clock,
    the run evidence doctor's lane.missed-run and status read for it as for any lane."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    at = datetime(2031, 5, 4, 3, 2, 1)
    world.watch(now=lambda: at)
    lines = world.lane(WATCH_LANE).log_path.read_text().splitlines()
    from lanekit.run.lanelog import format_ts

    stamp = format_ts(at.timestamp())
    assert any(line.startswith(f"ts={stamp} lane=watch event=start") for line in lines)
    assert any(f"ts={stamp} lane=watch event=finish" in line for line in lines)


# --- a pass by hand: channels get the watchdog lane's environment, as under launchd ---------

ENV_NOTIFIER = 'cat > /dev/null; env > "$1"'
"""A command channel that writes the environment it was started with to its first argument."""


def _terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process as a terminal: a PATH with a directory the [defaults] path lacks (holding
    `only-in-terminal`, a notifier that appends the notice to sent.jsonl), a variable of its
    own, and no XPC_SERVICE_NAME (launchd did not start it)."""
    directory = tmp_path / "terminal-bin"
    directory.mkdir()
    tool = directory / "only-in-terminal"
    tool.write_text(f'#!/bin/sh\ncat >> "{tmp_path / "sent.jsonl"}"\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TERMINAL_ONLY", "1")
    monkeypatch.delenv("XPC_SERVICE_NAME", raising=False)
    return tool


def _with_command(command: str) -> str:
    """WATCHED with `command` as its [watch] command channel."""
    return WATCHED.replace(
        'command = ["/bin/sh", "-c", "NOTIFIER", "notifier", "FLAG", "SENT"]', command
    )


def test_a_pass_by_hand_gives_the_command_channel_the_watchdogs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lanekit watch` in a terminal runs the [watch] command as launchd would: with the
    watchdog lane's PATH (the [defaults] path) and environment, nothing of the terminal's."""
    _terminal(monkeypatch, tmp_path)
    seen = tmp_path / "seen.env"
    command = f'command = ["/bin/sh", "-c", "{ENV_NOTIFIER}", "notifier", "{seen}"]'
    command = command.replace('"$1"', '\\"$1\\"')
    world = WatchWorld.make(tmp_path, _with_command(command))
    result = world.watch()  # nothing is loaded: launchd.not-loaded notices to send
    assert result.notices
    assert result.failed_deliveries == ()
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    lane = world.lane(WATCH_LANE)
    assert env["PATH"] == "/usr/bin:/bin:/usr/sbin:/sbin"
    assert env["XPC_SERVICE_NAME"] == lane.label
    assert env["LANEKIT_STATE_DIR"] == str(world.paths.state)
    assert env["HOME"] == str(world.paths.home)
    assert "TERMINAL_ONLY" not in env


def test_a_channel_command_only_on_the_terminals_path_fails_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare [watch] command found only on the terminal's PATH is not found by a pass by
    hand either, as under launchd: the delivery fails (the notice is kept for the next pass)."""
    _terminal(monkeypatch, tmp_path)
    world = WatchWorld.make(tmp_path, _with_command('command = ["only-in-terminal"]'))
    result = world.watch()
    assert result.notices
    errors = [d.error or "" for d in result.deliveries]
    assert errors
    assert all("only-in-terminal cannot be started" in error for error in errors)
    assert world.sent() == []


def test_a_pass_launchd_started_keeps_the_environment_launchd_gave_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under launchd (XPC_SERVICE_NAME is the watchdog's label) the pass's own environment
    is launchd's: its channels get it as it is."""
    tool = _terminal(monkeypatch, tmp_path)
    world = WatchWorld.make(tmp_path, _with_command('command = ["only-in-terminal"]'))
    label = world.lane(WATCH_LANE).label
    result = run_pass(
        WatchRequest(config_path=world.config_path),
        world.paths,
        env={"XPC_SERVICE_NAME": label, "PATH": f"{tool.parent}:/usr/bin:/bin"},
        launchd=world.domain,
    )
    assert result.notices
    assert result.failed_deliveries == ()
    assert len(world.sent()) == len(result.notices)


# --- issue 30 item 4: a pass runs what was applied; a lanes.toml others may write is refused ---


def test_a_pass_runs_the_channels_applied_not_what_lanes_toml_says_now(tmp_path: Path) -> None:
    """[watch] command edited after apply: passes keep sending through the applied command
    until `lanekit apply` installs the new one (before, every pass re-read lanes.toml and ran
    whatever it said)."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    _failed_job_only(world)
    marker = tmp_path / "edited-command-ran"
    world.write(WATCHED.replace('"NOTIFIER"', f"'touch {marker}; cat >> \"$2\"'"))
    first = world.watch()
    assert first.failed_deliveries == ()
    assert "queue.failed-jobs" in [n["id"] for n in world.sent()]
    assert not marker.exists()
    world.apply()
    _failed_job_only(world)  # one more failed job: a notice for the new command to send
    again = world.watch()
    assert again.notices
    assert marker.exists()


def _hostile(text: str, proof: Path) -> str:
    """lanes.toml with its [watch] command replaced by one that records who ran it."""
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("command = "))
    lines[last] = f'command = ["/bin/sh", "-c", "id -u > {proof}; cat > /dev/null"]'
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("mistake", ["lanes.toml 0666", "its directory 0777"])
def test_a_neighbour_who_may_write_lanes_toml_never_runs_a_command_as_its_owner(
    second_user: SecondUser, mistake: str
) -> None:
    """Issue 30 item 4, as it happened: lanes.toml (or its directory) is writable by others;
    a second local user (nobody, for real: setpriv) rewrites [watch] command; the owner's next
    `lanekit watch` pass (here root's) refuses lanes.toml with exit 69 and one error naming it
    and the chmod, and runs nothing (before, it ran nobody's command as root). Once the owner
    fixes the mode, the pass sends through the channel `apply` installed, still never the
    neighbour's."""
    owner = second_user.shared / "owner"
    owner.mkdir(mode=0o755)
    world = WatchWorld.make(owner)
    world.apply()
    _failed_job_only(world)
    config = world.config_path
    proof = second_user.shared / "ran-as-uid"
    if mistake == "lanes.toml 0666":
        config.chmod(0o666)
        rewrite = 'cat > "$1"'
        part = config
    else:
        owner.chmod(0o777)
        rewrite = 'cat > "$1.new" && mv -f "$1.new" "$1"'
        part = owner
    done = second_user.run(
        ["/bin/sh", "-c", rewrite, "sh", str(config)], input=_hostile(config.read_text(), proof)
    )
    assert done.returncode == 0, done.stderr
    assert str(proof) in config.read_text()
    env = {
        "LANEKIT_STATE_DIR": str(world.paths.state),
        "LANEKIT_LAUNCH_AGENTS": str(world.paths.launch_agents),
        "LANEKIT_LAUNCHD": "emulated",
        "HOME": str(world.paths.home),
    }
    argv = [sys.executable, "-m", "lanekit", "watch", "--config", str(config)]
    proc = subprocess.run(
        argv,
        cwd=owner,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 69, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    [error, hint] = proc.stderr.splitlines()
    assert error.startswith("error: lanes.toml: configuration ")
    assert "writable by group and others" in error
    assert hint == f"hint: chmod go-w {part}"
    assert not proof.exists()
    assert world.sent() == []
    if mistake == "lanes.toml 0666":
        config.chmod(0o644)  # the mode fixed, the neighbour's text not noticed
        fixed = world.watch()
        assert fixed.failed_deliveries == ()
        assert "queue.failed-jobs" in [n["id"] for n in world.sent()]
        assert not proof.exists()


def test_the_webhook_url_never_reaches_a_snapshot_and_an_edited_one_is_refused(
    tmp_path: Path,
) -> None:
    """A webhook URL is a secret: `apply` records only its digest in the watchdog's snapshot
    (no plist, snapshot or other file of lanekit's holds any part of it), and a pass posts to
    lanes.toml's URL only while it is the one apply installed: an edited URL is refused,
    naming the fix, until `lanekit apply`."""
    canary = "http://user:canary-pass@127.0.0.1:9/hook/canary-path?token=canary-query"
    world = WatchWorld.make(tmp_path, WATCHED + f'webhook = "{canary}"\n')
    world.apply()
    written = [
        path
        for path in tmp_path.rglob("*")
        if path.is_file() and not path.is_symlink() and path != world.config_path
    ]
    assert written, "apply wrote nothing"
    for path in written:
        assert b"canary" not in path.read_bytes(), path
    _failed_job_only(world)
    first = world.watch()
    assert {d.channel for d in first.failed_deliveries} == {"webhook"}  # nobody on :9
    world.write(WATCHED + 'webhook = "http://127.0.0.1:9/elsewhere"\n')
    with pytest.raises(UsageError, match="webhook is not the one `lanekit apply` installed"):
        world.watch()
    world.apply()
    assert world.watch() is not None


def test_the_watchdog_names_no_check_of_its_own() -> None:
    """Which checks alert, and what each counts, is the checks' knowledge (`@check(...,
    alert=True, tally=...)`): no module of lanekit.watch spells a doctor check id."""
    from lanekit.doctor import registry

    ids = set(registry())
    package = Path(__file__).resolve().parents[2] / "src" / "lanekit" / "watch"
    named = {
        (module.name, check_id)
        for module in package.glob("*.py")
        for check_id in ids
        if f'"{check_id}"' in module.read_text(encoding="utf-8")
    }
    assert named == set()


def test_the_watchdog_lane_run_by_launchd_leaves_its_summary_and_its_heartbeat(
    tmp_path: Path,
) -> None:
    """launchd starts the watchdog lane (`lanekit watch --config X`, no fast path: the full
    pass): its summary line lands in its StandardOutPath, its lane log gets `start` and
    `finish`, and the memory records when the pass completed (the dead man's switch)."""
    from lanekit.config.watch import memory_path
    from lanekit.run.lanelog import read_events
    from lanekit.watch import memory as memory_store

    world = WatchWorld.make(tmp_path)
    world.apply()
    lane = world.lane(WATCH_LANE)
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 60)
    assert lane.stdout_path.read_text(encoding="utf-8").endswith(" sent (command)\n")
    events = [event["event"] for event in read_events(lane.log_path)]
    assert events[-2:] == ["start", "finish"]
    assert memory_store.load(memory_path(lane.queue.dir)).completed_at is not None


def test_a_cancelled_job_is_not_alerted(tmp_path: Path) -> None:
    """Issue 32 item 12: a job the user cancelled goes to failed/ on purpose: no alert, and it
    does not count as one more failed job beside a job that really failed."""
    world = WatchWorld.make(tmp_path)
    world.apply()
    queue = Queue(world.lane("funnel").queue.dir)
    queue.cancel(queue.enqueue({"n": 1}))
    quiet = world.watch()
    assert "queue.failed-jobs" not in [n.check for n in quiet.notices]
    lane = world.lane("funnel")
    queue.enqueue({"n": 3})
    world.domain.kickstart(lane.label)
    assert world.domain.wait_idle(lane.label, 30)
    loud = world.watch()
    assert [n.check for n in loud.notices if n.check == "queue.failed-jobs"] == [
        "queue.failed-jobs"
    ]
    queue.cancel(queue.enqueue({"n": 2}))
    before = len(world.sent())
    again = world.watch()
    assert [n.check for n in again.notices if n.check == "queue.failed-jobs"] == []
    assert len(world.sent()) == before
