"""lanekit.state.clock: one answer to "what time is it", the emulated domain's on the emulated
backend and the real one on launchctl, whatever the environment or a stray state file says."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lanekit.config import Config, load_config
from lanekit.doctor import DoctorRequest, diagnose
from lanekit.queue.directory.backend import Queue
from lanekit.reconcile import apply
from lanekit.run.lanelog import read_events
from lanekit.service import clock_for
from lanekit.service.emulated.clock import advance
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.launchd.plist import ENTRYPOINT_CODE
from lanekit.state.clock import REAL, Clock, job_clock, parse_offset
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec
from lanekit.timeline.events import parse_ts

DAY = timedelta(days=1)
EMULATED = {"LANEKIT_LAUNCHD": "emulated"}
REAL_LAUNCHD = {"LANEKIT_LAUNCHD": "launchctl"}


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        (None, 0.0),
        ("", 0.0),
        ("86400", 86400.0),
        ("12.5", 12.5),
        ("-5", 0.0),
        ("nan", 0.0),
        ("inf", 0.0),
        ("soon", 0.0),
    ],
)
def test_parse_offset(text: str | None, offset: float) -> None:
    """LANEKIT_CLOCK_OFFSET: a finite number of seconds >= 0; anything else is no offset."""
    assert parse_offset(text) == offset


@pytest.mark.parametrize(
    ("env", "platform", "offset"),
    [
        ({**EMULATED, "LANEKIT_CLOCK_OFFSET": "3600"}, "darwin", 3600.0),
        ({"LANEKIT_CLOCK_OFFSET": "3600"}, "linux", 3600.0),
        ({"LANEKIT_CLOCK_OFFSET": "3600"}, "darwin", 0.0),
        ({**REAL_LAUNCHD, "LANEKIT_CLOCK_OFFSET": "3600"}, "linux", 0.0),
        ({**EMULATED}, "linux", 0.0),
    ],
)
def test_a_job_reads_the_offset_only_on_the_emulated_backend(
    env: dict[str, str], platform: str, offset: float
) -> None:
    """The offset the emulated domain hands its jobs counts only where the emulated domain is
    the backend; on launchctl (macOS by default) a stray variable changes nothing."""
    assert job_clock(env, platform).offset == offset


def test_the_launchctl_backend_is_real_time_whatever_the_emulator_left(tmp_path: Path) -> None:
    """A domain whose clock was moved a week ahead: the emulated backend reads that week, the
    launchctl backend never does (not from the state file, not from the environment)."""
    paths = Paths.under(tmp_path)
    EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents).set_clock(
        time.time() + 7 * DAY.total_seconds()
    )
    emulated = clock_for(paths, EMULATED, "linux")
    assert 7 * DAY.total_seconds() - 60 < emulated.offset <= 7 * DAY.total_seconds()
    assert emulated.now() - datetime.now() > 6 * DAY
    stray = {**REAL_LAUNCHD, "LANEKIT_CLOCK_OFFSET": str(30 * DAY.total_seconds())}
    for env, platform in ((stray, "linux"), ({}, "darwin"), (stray, "darwin")):
        clock = clock_for(paths, env, platform)
        assert clock == REAL
        assert abs(clock.time() - time.time()) < 5


def test_the_emulated_clock_flows_at_the_real_rate() -> None:
    """A clock ahead by an offset stays ahead by exactly that offset as real time passes."""
    clock = Clock(3600.0)
    before = time.time()
    ahead = clock.time()
    after = time.time()
    assert before + 3600 <= ahead <= after + 3600


def _config(paths: Paths) -> Config:
    text = (
        '[defaults]\nlabel_prefix = "test.clock"\n[queues.q]\ndir = "~/q"\n'
        '[lanes.l]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "40 10 * * *"\n'
    )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def _local(stamp: str) -> datetime:
    parsed = parse_ts(stamp)
    assert parsed is not None, stamp
    return parsed.astimezone().replace(tzinfo=None)


@pytest.mark.slow
def test_a_tick_to_a_fixed_time_is_what_runners_records_and_doctor_say(tmp_path: Path) -> None:
    """Ticked to 2031-03-04: the lane's 10:40 run logs 10:40, its job's record and done/ bucket
    say 10:40 (queued at the 10:30 it was enqueued at), and doctor, a day later with the lane
    booted out by hand, names the missed 10:40 of 2031-03-05, not a real-time fire."""
    paths = Paths.under(tmp_path)
    paths.home.mkdir(parents=True)
    config = _config(paths)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    lane = config.lanes["l"]
    first = datetime(2031, 3, 4, 10, 30)
    advance(paths.emulator, paths.launch_agents, first, asleep=True)  # wakes: one empty run
    assert domain.wait_idle(lane.label, 30)
    queue = Queue(lane.queue.dir, clock=clock_for(paths, EMULATED, "linux").time)
    job = queue.enqueue({"n": 1})
    advance(paths.emulator, paths.launch_agents, datetime(2031, 3, 4, 10, 45))
    assert domain.wait_idle(lane.label, 30)

    applied, *events = read_events(lane.log_path)
    assert applied["event"] == "applied"  # by apply, before any tick: the real time
    assert [e["event"] for e in events] == ["start", "finish", "start", "claimed", "done", "finish"]
    stamps = [_local(e["ts"]) for e in events]
    assert all(first <= s < first + timedelta(minutes=1) for s in stamps[:2])
    fire = datetime(2031, 3, 4, 10, 40)
    assert all(fire <= s < fire + timedelta(minutes=1) for s in stamps[2:])

    record = queue.store.read(job)
    assert record is not None
    assert first <= _local(record.queued_at) < first + timedelta(minutes=1)
    assert fire <= _local(record.updated_at) < fire + timedelta(minutes=1)
    bucket = datetime.fromtimestamp(fire.timestamp(), UTC).strftime("%Y-%m-%d")
    assert (lane.queue.dir / "done" / bucket / f"{job}.json").exists()

    domain.bootout(lane.label)
    assert domain.wait_idle(lane.label, 30)
    advance(paths.emulator, paths.launch_agents, datetime(2031, 3, 5, 11, 0), asleep=True)
    report = diagnose(
        DoctorRequest(lanes=("l",), checks=("lane.missed-run",), config_path=config.path),
        paths,
        env={**EMULATED, "HOME": str(paths.home)},
        launchd=domain,
    )
    (missed,) = [f for f in report.findings if f.id == "lane.missed-run"]
    assert "should have run at 2031-03-05 10:40" in missed.message
    assert "not loaded" in missed.message


def _spec(root: Path) -> RunSpec:
    queue_dir = root / "q"
    spec = RunSpec(
        lane="work",
        label="test.work",
        queue_dir=queue_dir,
        command=("true",),
        max_jobs=10,
        max_seconds=None,
        max_attempts=3,
        stale_after=3600.0,
        exit_timeout=5,
        log_path=queue_dir / "logs" / "work.log",
        durable=False,
    )
    spec.write(root / "snap.json")
    return spec


@pytest.mark.parametrize(
    ("backend", "ahead"),
    [("emulated", True), ("launchctl", False)],
)
def test_a_runner_logs_and_records_by_the_clock_it_was_handed(
    tmp_path: Path, backend: str, ahead: bool
) -> None:
    """A runner started with LANEKIT_CLOCK_OFFSET of ten days: on the emulated backend its log
    lines and the job's record are ten days ahead; on launchctl they are the real time."""
    spec = _spec(tmp_path)
    queue = Queue(spec.queue_dir, clock=time.time)
    queue.ensure()
    job = queue.enqueue({"n": 1})
    offset = 10 * DAY.total_seconds()
    env = {
        **os.environ,
        "LANEKIT_LAUNCHD": backend,
        "LANEKIT_CLOCK_OFFSET": str(offset),
        "PATH": "/usr/bin:/bin",
    }
    before = time.time()
    argv = [sys.executable, "-c", ENTRYPOINT_CODE, "run", "work", "--snapshot"]
    subprocess.run([*argv, str(tmp_path / "snap.json")], env=env, check=True, timeout=60)
    after = time.time()
    shift = offset if ahead else 0.0
    events = list(read_events(spec.log_path))
    assert [e["event"] for e in events] == ["start", "claimed", "done", "finish"]
    record = queue.store.read(job)
    assert record is not None
    for stamp in [*(e["ts"] for e in events), record.updated_at]:
        parsed = parse_ts(stamp)
        assert parsed is not None
        assert before + shift - 1 <= parsed.timestamp() <= after + shift + 1
