"""The cheap watchdog pass (lanekit.watch.entry) against the full one, for real: each cached
input is changed on the emulated domain with real files and processes, and the next pass
(cheap when it can vouch for the result, full otherwise) must leave exactly the alerts open
that a pass from scratch finds."""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_watchdog import _stranded_claim as kill_mid_job
from watch_world import WATCHED, WatchWorld

from lanekit.config.watch import WATCH_LANE, memory_path
from lanekit.queue.directory.backend import Queue
from lanekit.run.lanelog import LaneLog
from lanekit.state.paths import Paths
from lanekit.watch import entry
from lanekit.watch import memory as memory_store
from lanekit.watch.watchdog import FAILED_CHECK, PassResult, WatchRequest, run_pass

LANES = WATCHED.replace(
    "[watch]",
    """[queues.hours]
dir = "~/hours"

[queues.slow]
dir = "~/slow"

[lanes.hourly]
queue = "hours"
command = ["mytool", "{job}"]
path = ["BIN", "/usr/bin", "/bin"]
every = "1h"

[lanes.sleeper]
queue = "slow"
command = ["/bin/sleep", "60"]

[watch]""",
)

Alert = tuple[str, str, str]
AGED = frozenset({"queue.stale-claim", "queue.orphaned-job", "queue.backlog"})
"""Their wording names an age in seconds, which moves between two passes; the cache never
reuses them while there is anything to age (lanekit.watch.cache.VOLATILE_QUEUE_CHECKS)."""


class Cheap:
    """A world with the lean pass's environment, and its three kinds of pass."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.tool = self.bin / "mytool"
        self.tool.write_text("#!/bin/sh\nexit 0\n")
        self.tool.chmod(0o755)
        self.world = WatchWorld.make(tmp_path, LANES.replace("BIN", str(self.bin)))
        self.world.apply()
        for name, value in self.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("LANEKIT_CLOCK_OFFSET", raising=False)
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        self.full()

    @property
    def paths(self) -> Paths:
        return self.world.paths

    def env(self) -> dict[str, str]:
        """What the watchdog lane's plist gives the pass (lanekit.state.paths finds the state)."""
        return {
            "LANEKIT_STATE_DIR": str(self.paths.state),
            "LANEKIT_LAUNCH_AGENTS": str(self.paths.launch_agents),
            "LANEKIT_LAUNCHD": "emulated",
            "HOME": str(self.paths.home),
        }

    def full(self, *, dry_run: bool = False) -> PassResult:
        """A full pass on the domain's clock, as `lanekit watch --config X` runs it."""
        return run_pass(
            WatchRequest(config_path=self.world.config_path, dry_run=dry_run),
            self.paths,
            env=self.env(),
            launchd=self.world.domain,
        )

    def next(self) -> bool:
        """What launchd's `watch --config X` does: the cheap pass, else the full one. True
        when the cheap one did it."""
        code = entry.main(["watch", "--config", str(self.world.config_path)])
        if code is None:
            self.full()
            return False
        assert code == 0
        return True

    def remembered(self) -> set[Alert]:
        """The alerts the memory holds open after the last pass."""
        memory = memory_store.load(memory_path(self.world.lane(WATCH_LANE).queue.dir))
        return {(r.alert.check, r.alert.subject, r.alert.message) for r in memory.alerts.values()}

    def scratch(self) -> set[Alert]:
        """What a pass from scratch finds open now (a dry run: it reuses and changes nothing)."""
        return {(a.check, a.subject, a.message) for a in self.full(dry_run=True).open}

    def agrees(self) -> set[str]:
        """The ids of the open alerts, after checking the memory says what a fresh pass says
        (word for word, but for a failed-jobs alert a pass renewed: it keeps the wording that
        named how many more failed, lanekit.watch.watchdog._renew_failed; and for AGED)."""
        remembered = self.remembered()
        fresh = self.scratch()
        assert {a[:2] for a in remembered} == {a[:2] for a in fresh}
        loose = {
            a[:2]
            for a in remembered
            if (a[0] == FAILED_CHECK and "since the last pass" in a[2]) or a[0] in AGED
        }
        assert {a for a in remembered if a[:2] not in loose} == {
            a for a in fresh if a[:2] not in loose
        }
        return {check for check, _, _ in remembered}


@pytest.fixture
def cheap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cheap]:
    """A world after its first full pass (which wrote the pass cache)."""
    yield Cheap(tmp_path, monkeypatch)


def test_a_pass_with_nothing_new_reuses_everything_and_records_itself(cheap: Cheap) -> None:
    """Nothing moved: the cheap pass runs no check, logs start/finish in the watchdog's lane
    log, moves the memory's completed_at on and leaves the rest of the memory as it was."""
    lane = cheap.world.lane(WATCH_LANE)
    memory = memory_path(lane.queue.dir)
    before = memory_store.load(memory)
    lines = len(lane.log_path.read_text().splitlines())
    assert cheap.next()
    after = memory_store.load(memory)
    assert after.completed_at is not None and before.completed_at is not None
    assert after.completed_at > before.completed_at
    assert (after.alerts, after.outbox, after.history) == (
        before.alerts,
        before.outbox,
        before.history,
    )
    new = lane.log_path.read_text().splitlines()[lines:]
    assert [line.split(" event=")[1].split()[0] for line in new] == ["start", "finish"]
    assert f"pid={os.getpid()}" in new[0]
    assert new[1].endswith(f"open={len(before.alerts)} sent=0")
    assert cheap.next()
    cheap.agrees()


def test_the_lean_entry_imports_no_cli_and_no_pathlib(cheap: Cheap) -> None:
    """What launchd runs (`-I -c ENTRYPOINT watch --config X`) finishes a reusable pass
    without typer, rich, jinja2, dataclasses, pathlib or json, and exits 0."""
    probe = (
        "import sys\n"
        "from lanekit.watch.entry import main\n"
        f"code = main(['watch', '--config', {str(cheap.world.config_path)!r}])\n"
        "heavy = ('typer', 'rich', 'jinja2', 'dataclasses', 'pathlib', 'json', 'lanekit.doctor')\n"
        "print(code, [m for m in heavy if m in sys.modules])\n"
    )
    env = {**os.environ, **cheap.env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "0 []"


def test_watch_with_other_options_is_not_the_lean_pass() -> None:
    """--dry-run, --json, --help, --debug, or no --config: the full CLI, as before."""
    for argv in (
        ["watch"],
        ["watch", "--dry-run", "--config", "x"],
        ["watch", "--config", "x", "--json"],
        ["watch", "--help"],
        ["watch", "--config", "x", "--debug"],
    ):
        assert entry.main(argv) is None


def test_state_dir_is_the_one_paths_finds() -> None:
    """The lean pass finds the state directory exactly where lanekit.state.paths does."""
    for env in (
        {"HOME": "/h", "LANEKIT_STATE_DIR": "/s"},
        {"HOME": "/h"},
        {"HOME": "/h", "XDG_STATE_HOME": "/x"},
        {"HOME": "/h", "LANEKIT_STATE_DIR": "rel"},
    ):
        for platform in ("linux", "darwin"):
            want = Paths.from_env(env, platform=platform, backend="emulated").state
            assert entry.state_dir(env, platform) == str(want)


def _log(cheap: Cheap, lane: str, event: str, **fields: object) -> None:
    """A line in a lane's log on the domain's clock, as the lane's runner writes it."""
    domain = cheap.world.domain
    clock = lambda: time.time() + domain.offset()  # noqa: E731
    LaneLog(cheap.world.lane(lane).log_path, lane, clock=clock).event(event, **fields)


def test_a_lane_that_keeps_running_keeps_the_pass_cheap(cheap: Cheap) -> None:
    """Run evidence moves lane.missed-run's expiry on in the cheap pass itself: an hourly lane
    that runs every hour and a watchdog that passes every 10 minutes keep every pass cheap,
    hours past the expiry the last full pass computed."""
    start = time.time() + cheap.world.domain.offset()
    assert cheap.next()
    for step in range(1, 19):
        cheap.world.domain.set_clock(start + step * 600)
        if step % 6 == 0:
            _healthy_run(cheap)
        assert cheap.next() or step == 1  # the first clock move changes the domain's state
    assert cheap.agrees() == set()


def test_new_log_lines_are_folded_from_the_offset(cheap: Cheap) -> None:
    """A healthy lane that ran (start, done, finish) is folded from where the last pass
    stopped: the pass stays cheap and agrees with a fresh one."""
    for n in range(3):
        _log(cheap, "hourly", "start", pid=1)
        _log(cheap, "hourly", "done", job=f"job-{n}")
        _log(cheap, "hourly", "finish", exit=0)
        assert cheap.next()
    assert cheap.agrees() == set()


def _edit_plist(cheap: Cheap) -> None:
    path = cheap.paths.plist_for(cheap.world.lane("hourly").label)
    job = plistlib.loads(path.read_bytes())
    job["Nice"] = 5
    path.write_bytes(plistlib.dumps(job))


def _boot_out(cheap: Cheap) -> None:
    cheap.world.domain.bootout(cheap.world.lane("hourly").label)


def _rotate_log(cheap: Cheap) -> None:
    log = cheap.world.lane("hourly").log_path
    log.rename(log.with_name(log.name + ".1"))
    _log(cheap, "hourly", "requeued", job="j1", reason="cannot-start", error="boom")


def _second_success(cheap: Cheap) -> None:
    _log(cheap, "hourly", "done", job="twice")
    assert cheap.next()
    _log(cheap, "hourly", "done", job="twice")


def _cannot_start(cheap: Cheap) -> None:
    _log(cheap, "hourly", "requeued", job="j1", reason="cannot-start", error="exec failed")


def _command_gone(cheap: Cheap) -> None:
    cheap.tool.unlink()


def _toml_edited(cheap: Cheap) -> None:
    text = cheap.world.config_path.read_text()
    cheap.world.config_path.write_text(text.replace('every = "1h"', 'every = "2h"'))


def _time_passes_a_fire(cheap: Cheap) -> None:
    cheap.world.domain.set_clock(time.time() + 3 * 3600)


def _failed_job(cheap: Cheap) -> None:
    lane = cheap.world.lane("funnel")
    Queue(lane.queue.dir).enqueue({"n": 1})
    cheap.world.domain.kickstart(lane.label)
    assert cheap.world.domain.wait_idle(lane.label, 30)


def _stranded_claim(cheap: Cheap) -> None:
    """`kill -9` of the runner and of its job mid-job (test_watchdog's way)."""
    kill_mid_job(cheap.world)
    deadline = time.monotonic() + 30
    # Until the job's lock is gone too, the claim may still read as orphaned, then stranded:
    # the comparison below is between two full passes, and must not straddle that moment.
    while "queue.stale-claim" not in {alert[0] for alert in cheap.scratch()}:
        assert time.monotonic() < deadline
        time.sleep(0.1)


CHANGES: dict[str, tuple[Callable[[Cheap], None], str]] = {
    "a plist edited by hand": (_edit_plist, "plist.drift"),
    "a lane booted out": (_boot_out, "launchd.not-loaded"),
    "a log rotated": (_rotate_log, "lane.cannot-start"),
    "a second success logged": (_second_success, "queue.duplicate-success"),
    "a command that cannot start": (_cannot_start, "lane.cannot-start"),
    "a command removed from PATH": (_command_gone, "path.command-missing"),
    "lanes.toml edited": (_toml_edited, "plist.drift"),
    "time passing a fire": (_time_passes_a_fire, "lane.missed-run"),
    "a job failed": (_failed_job, "queue.failed-jobs"),
    "a claim stranded": (_stranded_claim, "queue.stale-claim"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_changed_input_alerts_as_a_full_pass_does(cheap: Cheap, change: str) -> None:
    """Each cached input, changed for real: the next pass alerts exactly as a pass from
    scratch does (and the notice goes out), then passes go back to being cheap."""
    make, check = CHANGES[change]
    assert cheap.next()
    sent = len(cheap.world.sent())
    make(cheap)
    assert not cheap.next()
    assert check in cheap.agrees()
    assert check in {n["id"] for n in cheap.world.sent()[sent:]}
    cheap.next()
    assert cheap.next() or check in {"queue.stale-claim", "lane.missed-run"}
    cheap.agrees()


def test_a_pass_that_cannot_be_reused_is_full_even_when_cheap_was_possible(
    cheap: Cheap,
) -> None:
    """A pass that had notes or a failed delivery leaves no cache: the next is full."""
    cheap.world.flag.touch()
    _edit_plist(cheap)
    assert not cheap.next()  # the channel refuses the drift notice
    assert not cheap.next()  # kept in the outbox: retried by a full pass
    cheap.world.flag.unlink()
    assert not cheap.next()
    assert cheap.next()
    cheap.agrees()


def test_the_clock_of_the_domain_is_the_passs(cheap: Cheap) -> None:
    """The cheap pass stamps its log lines and completed_at on the domain's clock."""
    ahead = time.time() + 30
    cheap.world.domain.set_clock(ahead)
    cheap.next()  # the domain moved: whatever this pass is, the next one is cheap
    assert cheap.next()
    lane = cheap.world.lane(WATCH_LANE)
    done = memory_store.load(memory_path(lane.queue.dir)).completed_at
    assert done is not None and done >= ahead
    stamp = datetime.fromtimestamp(done)
    assert stamp.year >= 2026


def _healthy_run(cheap: Cheap) -> None:
    _log(cheap, "hourly", "start", pid=1)
    _log(cheap, "hourly", "done", job=os.urandom(4).hex())
    _log(cheap, "hourly", "finish", exit=0)


def _applied_again(cheap: Cheap) -> None:
    cheap.world.apply()


def _command_back(cheap: Cheap) -> None:
    cheap.tool.write_text("#!/bin/sh\nexit 0\n")
    cheap.tool.chmod(0o755)


def _an_hour_passes(cheap: Cheap) -> None:
    cheap.world.domain.set_clock(time.time() + cheap.world.domain.offset() + 3600)


def _ran_jobs(cheap: Cheap) -> None:
    """Two jobs through the hourly lane for real (launchd starts it; done/ and records/ move)."""
    lane = cheap.world.lane("hourly")
    for n in range(2):
        Queue(lane.queue.dir).enqueue({"n": n})
    domain = cheap.world.domain
    domain.set_clock(time.time() + domain.offset() + 11)  # past the lane's ThrottleInterval
    domain.kickstart(lane.label)
    assert domain.wait_idle(lane.label, 60)


STEPS: dict[str, Callable[[Cheap], None]] = {
    "nothing": lambda cheap: None,
    "a healthy run": _healthy_run,
    "a second success": lambda cheap: _log(cheap, "hourly", "done", job="again"),
    "a cannot-start requeue": _cannot_start,
    "a log rotated": _rotate_log,
    "a plist edited": _edit_plist,
    "the plist applied again": _applied_again,
    "a command removed": lambda cheap: cheap.tool.unlink(missing_ok=True),
    "a command restored": _command_back,
    "lanes.toml edited": _toml_edited,
    "an hour passes": _an_hour_passes,
    "a job failed": _failed_job,
    "a lane ran its jobs": _ran_jobs,
}


@settings(max_examples=10, deadline=None)
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=8))
def test_cached_and_fresh_passes_agree_over_random_changes(
    steps: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Over any sequence of world changes (real files, the emulated domain), the alerts each
    pass leaves open are the ones a pass from scratch finds, cheap pass or not."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        cheap = Cheap(tmp_path_factory.mktemp("world"), monkeypatch)
        for step in steps:
            STEPS[step](cheap)
            cheap.next()
            cheap.agrees()


def test_a_command_behind_a_symlink_is_watched_through_it(cheap: Cheap) -> None:
    """A command on PATH that is a symlink (Homebrew's way): removing its target, the link
    left dangling, alerts at the next pass as a full pass does."""
    real = cheap.bin / "real-tool"
    cheap.tool.rename(real)
    cheap.tool.symlink_to(real)
    assert not cheap.next()  # the directory changed
    assert cheap.next()
    real.unlink()
    assert not cheap.next()
    assert "path.command-missing" in cheap.agrees()


def test_a_pass_run_with_another_path_is_a_full_one(
    cheap: Cheap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor words a fix by the caller's PATH: a pass from a terminal with another PATH is
    not answered from a cache written under launchd's."""
    assert cheap.next()
    monkeypatch.setenv("PATH", f"{cheap.bin}:{os.environ.get('PATH', '')}")
    assert not cheap.next()
    assert cheap.next()


def test_the_cheap_pass_prints_what_the_full_one_prints(
    cheap: Cheap, capsys: pytest.CaptureFixture[str]
) -> None:
    """launchd keeps a pass's summary line in the watchdog's StandardOutPath: the cheap pass
    prints the words `lanekit watch` prints for a pass that sent nothing."""
    from lanekit.cli import main as cli_main

    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        cli_main(["watch", "--config", str(cheap.world.config_path)])
    assert done.value.code in (0, None)
    full = capsys.readouterr().out
    assert cheap.next()
    assert capsys.readouterr().out == full
    assert full.endswith("notices sent (command)\n")


def test_passes_started_by_launchd_leave_the_next_one_cheap(
    cheap: Cheap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog lane as the emulated launchd runs it (its plist's environment and working
    directory; its summary line appended to its StandardOutPath): what those passes leave
    behind, their own output included, lets the next pass in that environment be cheap."""
    lane = cheap.world.lane(WATCH_LANE)
    cheap.world.domain.kickstart(lane.label)
    assert cheap.world.domain.wait_idle(lane.label, 60)
    assert lane.stdout_path.read_text().endswith("notices sent (command)\n")
    job = plistlib.loads(cheap.paths.plist_for(lane.label).read_bytes())
    for name, value in job["EnvironmentVariables"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(job["WorkingDirectory"])
    with lane.stdout_path.open("a", encoding="utf-8") as out:
        monkeypatch.setattr(sys, "stdout", out)
        cheap_ones = []
        for _ in range(3):
            cheap_ones.append(cheap.next())
            out.flush()  # as the pass's process exit does
    # The first pass under launchd's PATH is a full one (the cache was the test's).
    assert cheap_ones == [False, True, True]
    # launchd's pass, then the two cheap ones (Cheap.full is the core: it renders nothing).
    assert lane.stdout_path.read_text().count("notices sent (command)\n") == 3


def test_a_repeat_that_comes_due_is_sent_by_the_next_pass(cheap: Cheap) -> None:
    """An open alert is cached with the time its repeat is due (`repeat` = 6h): passes every
    10 minutes stay cheap until then, and the first pass after it is a full one that sends
    the repeat, as a pass from scratch would."""
    _edit_plist(cheap)
    assert not cheap.next()
    start = time.time() + cheap.world.domain.offset()
    sent = len(cheap.world.sent())
    full = []
    for step in range(1, 38):
        cheap.world.domain.set_clock(start + step * 600)
        if step % 6 == 0:
            _healthy_run(cheap)
        if not cheap.next():
            full.append(step)
    assert full[:1] == [36]
    assert ("repeat", "plist.drift") in {(n["kind"], n["id"]) for n in cheap.world.sent()[sent:]}
    cheap.agrees()
