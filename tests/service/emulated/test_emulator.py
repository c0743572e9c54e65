"""The emulated launchd domain: launchd's semantics with real processes and real signals."""

from __future__ import annotations

import contextlib
import os
import plistlib
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from lanekit.schedule import CalendarEntry
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.emulated.plist import calendar_entries
from lanekit.service.launchd import LaunchctlError, ListEntry
from lanekit.service.launchd.environ import process_token
from lanekit.service.launchd.launch import DEFAULT_PATH

WAIT = 30.0  # generous bound for processes on a loaded CI machine; never a timing assertion

Install = Callable[..., Path]


def _wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _entry(domain: EmulatedDomain, label: str) -> ListEntry | None:
    return next((e for e in domain.list() if e.label == label), None)


@pytest.fixture
def domain(tmp_path: Path) -> Iterator[EmulatedDomain]:
    """A fresh emulated domain; every job still loaded at teardown is booted out and waited
    for, and any process that outlived that is killed, so no test leaks processes."""
    emulated = EmulatedDomain(tmp_path / "state", launch_agents=tmp_path / "agents")
    yield emulated
    seen: dict[int, str | None] = {}
    for entry in emulated.list():
        if entry.pid is not None:
            seen[entry.pid] = process_token(entry.pid)
        with contextlib.suppress(LaunchctlError):
            emulated.bootout(entry.label)
    with contextlib.suppress(AssertionError):
        _wait_for(lambda: not emulated.list(), "teardown bootouts")
    for pid, token in seen.items():
        if token is not None and process_token(pid) == token:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def install(tmp_path: Path) -> Install:
    """Write `<label>.plist` (mode 0644) with the given keys and return its path."""
    agents = tmp_path / "agents"

    def _install(label: str, **keys: object) -> Path:
        agents.mkdir(exist_ok=True)
        path = agents / f"{label}.plist"
        path.write_bytes(plistlib.dumps({"Label": label, **keys}))
        path.chmod(0o644)
        return path

    return _install


def _code(call: Callable[[], object]) -> LaunchctlError:
    with pytest.raises(LaunchctlError) as caught:
        call()
    return caught.value


def _future_minute(hour: int, minute: int) -> datetime:
    """A wall time tomorrow: never the minute a test job was loaded in."""
    return (datetime.now() + timedelta(days=1)).replace(hour=hour, minute=minute, second=30)


IGNORE_TERM = (
    "import signal, sys, time\n"
    "log = open(sys.argv[1], 'a')\n"
    "def note(signum, frame):\n"
    "    log.write('TERM\\n'); log.flush()\n"
    "signal.signal(signal.SIGTERM, note)\n"
    "log.write('ready\\n'); log.flush()\n"
    "time.sleep(60)\n"
)


def test_bootstrap_refuses_group_or_world_writable_plist(
    domain: EmulatedDomain, install: Install
) -> None:
    """A 0666 plist is refused with code 5 and launchd's words, naming the path; nothing is
    loaded."""
    path = install("perm.job", ProgramArguments=["true"])
    path.chmod(0o666)
    error = _code(lambda: domain.bootstrap(path))
    assert error.code == 5
    assert f"{path}: Path had bad ownership/permissions" in error.message
    assert domain.list() == []


@pytest.mark.parametrize(
    ("sessions", "loads"),
    [("Background", False), (["LoginWindow"], False), (["Aqua", "Background"], True)],
)
def test_bootstrap_honours_limit_load_to_session_type(
    domain: EmulatedDomain, install: Install, sessions: object, loads: bool
) -> None:
    """The emulated domain is an Aqua (gui) session: a plist limited to other sessions is
    refused with 134 and the session_type fix, as launchd refuses it; Aqua in the list loads."""
    path = install("session.job", ProgramArguments=["true"], LimitLoadToSessionType=sessions)
    if loads:
        domain.bootstrap(path)
        assert [e.label for e in domain.list()] == ["session.job"]
        return
    error = _code(lambda: domain.bootstrap(path))
    assert error.code == 134
    assert "session_type" in error.hint
    assert domain.list() == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"<plist><dict><key>Label</key>", "Invalid property list"),
        (plistlib.dumps({"ProgramArguments": ["true"]}), "Label is missing"),
        (plistlib.dumps({"Label": "", "ProgramArguments": ["true"]}), "Label is missing"),
        (plistlib.dumps({"Label": "no.program"}), "Neither Program nor ProgramArguments"),
    ],
)
def test_bootstrap_refuses_what_launchd_cannot_load(
    domain: EmulatedDomain, tmp_path: Path, content: bytes, words: str
) -> None:
    """An unparsable plist, a missing or empty Label and a job with nothing to run are refused
    with code 5 and a message naming the file."""
    path = tmp_path / "job.plist"
    path.write_bytes(content)
    path.chmod(0o644)
    error = _code(lambda: domain.bootstrap(path))
    assert error.code == 5
    assert str(path) in error.message
    assert words in error.message
    assert domain.list() == []


def test_bootstrap_of_a_loaded_label_fails_with_5(domain: EmulatedDomain, install: Install) -> None:
    """Loading a label that is already loaded fails with 5 (Input/output error), as captures
    of real bootstrap show; the loaded job is untouched."""
    path = install("twice.job", ProgramArguments=["true"])
    domain.bootstrap(path)
    error = _code(lambda: domain.bootstrap(path))
    assert error.code == 5
    assert "already loaded" in error.message
    assert domain.list() == [ListEntry(None, None, "twice.job")]


def test_disabled_label_cannot_be_bootstrapped_until_enabled(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """A disabled label is refused with 119; the override persists in the domain's state and
    enable clears it."""
    path = install("off.job", ProgramArguments=["true"])
    domain.disable("off.job")
    assert _code(lambda: domain.bootstrap(path)).code == 119
    again = EmulatedDomain(tmp_path / "state", launch_agents=tmp_path / "agents")
    assert again.print_disabled() == {"off.job": True}
    again.enable("off.job")
    domain.bootstrap(path)
    assert domain.print_disabled() == {"off.job": False}
    assert [e.label for e in domain.list()] == ["off.job"]


def test_unknown_labels_get_the_real_tools_codes(domain: EmulatedDomain) -> None:
    """print and kickstart of a label that is not loaded answer 113, bootout answers 3."""
    printed = _code(lambda: domain.print("nobody"))
    assert printed.code == 113
    assert 'Could not find service "nobody"' in printed.message
    assert _code(lambda: domain.kickstart("nobody")).code == 113
    assert _code(lambda: domain.bootout("nobody")).code == 3


def test_loaded_job_is_a_copy_of_the_plist(domain: EmulatedDomain, install: Install) -> None:
    """launchd reads the plist at load: editing the file afterwards changes nothing, and print
    reports launchd's defaults for keys the plist leaves out."""
    path = install("copy.job", ProgramArguments=["echo", "old"], StartInterval=300)
    domain.bootstrap(path)
    install("copy.job", ProgramArguments=["echo", "new"])
    info = domain.print("copy.job")
    assert info.arguments == ("echo", "old")
    assert (info.state, info.pid, info.runs, info.last_exit_code) == ("not running", None, 0, None)
    assert (info.exit_timeout, info.minimum_runtime, info.run_interval) == (5, 10, 300)
    assert info.environment == {"XPC_SERVICE_NAME": "copy.job"}
    assert info.default_environment == {"PATH": DEFAULT_PATH}
    assert (info.path, info.type, info.domain) == (str(path), "LaunchAgent", domain.domain)


@pytest.mark.slow
def test_job_runs_with_the_default_path_only(
    domain: EmulatedDomain, install: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kickstarted job sees exactly PATH=/usr/bin:/bin:/usr/sbin:/sbin and XPC_SERVICE_NAME,
    plus the domain's clock (LANEKIT_LAUNCHD, LANEKIT_CLOCK_OFFSET: the one thing the emulated
    domain adds, lanekit.state.clock); its exit is reaped into list() and print()."""
    monkeypatch.setenv("LEAKED_FROM_CALLER", "1")
    out = tmp_path / "env.out"
    domain.bootstrap(install("env.job", ProgramArguments=["env"], StandardOutPath=str(out)))
    assert domain.kickstart("env.job") is not None
    assert domain.wait_idle("env.job", WAIT)
    assert sorted(out.read_text().splitlines()) == [
        "LANEKIT_CLOCK_OFFSET=0.000000",
        "LANEKIT_LAUNCHD=emulated",
        f"PATH={DEFAULT_PATH}",
        "XPC_SERVICE_NAME=env.job",
    ]
    assert domain.list() == [ListEntry(None, 0, "env.job")]
    assert domain.print("env.job").runs == 1


@pytest.mark.slow
def test_unopenable_log_path_gives_last_exit_78(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """A job whose StandardErrorPath cannot be opened (its directory is missing, which stops
    root too) is not started and gets last exit 78 (EX_CONFIG); the attempt counts as a run."""
    marker = tmp_path / "ran"
    domain.bootstrap(
        install(
            "bad.log",
            ProgramArguments=["/bin/sh", "-c", f"touch {marker}"],
            StandardErrorPath=str(tmp_path / "no-such-dir" / "err.log"),
        )
    )
    assert domain.kickstart("bad.log") is None
    info = domain.print("bad.log")
    assert (info.state, info.pid, info.last_exit_code, info.runs) == ("not running", None, 78, 1)
    assert domain.list() == [ListEntry(None, 78, "bad.log")]
    assert not marker.exists()


@pytest.mark.slow
def test_respawn_within_throttle_interval_is_delayed(install: Install, tmp_path: Path) -> None:
    """A kickstart right after a run ended, inside ThrottleInterval, does not start the job: it
    is `spawn scheduled` until the interval has passed, and then starts exactly once. (The
    domain's clock is stepped by hand so the test does not depend on how fast CI is.)"""
    clock = [1_800_000_000.0]
    domain = EmulatedDomain(
        tmp_path / "state", launch_agents=tmp_path / "agents", clock=lambda: clock[0]
    )
    runs = tmp_path / "runs"
    domain.bootstrap(
        install(
            "throttled.job",
            ProgramArguments=["/bin/sh", "-c", f"echo run >> {runs}"],
            ThrottleInterval=2,
        )
    )
    assert domain.kickstart("throttled.job") is not None
    assert domain.wait_idle("throttled.job", WAIT)
    clock[0] += 1.5
    assert domain.kickstart("throttled.job") is None
    info = domain.print("throttled.job")
    assert (info.state, info.runs, info.minimum_runtime) == ("spawn scheduled", 1, 2)
    assert domain.reap() == []
    assert domain.print("throttled.job").runs == 1
    clock[0] += 0.5
    assert domain.print("throttled.job").runs == 2
    assert domain.wait_idle("throttled.job", WAIT)
    assert runs.read_text() == "run\nrun\n"
    assert domain.print("throttled.job").state == "not running"


@pytest.mark.slow
def test_stop_sends_sigkill_after_exit_timeout_to_a_job_ignoring_sigterm(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """kickstart -k stops the running instance: SIGTERM first, and SIGKILL after ExitTimeOut
    when the job does not exit; the killed run's last signal is 9."""
    log = tmp_path / "signals.log"
    domain.bootstrap(
        install(
            "stubborn.job",
            ProgramArguments=[sys.executable, "-c", IGNORE_TERM, str(log)],
            ExitTimeOut=1,
        )
    )
    first = domain.kickstart("stubborn.job")
    _wait_for(lambda: log.exists() and "ready" in log.read_text(), "the job's TERM handler")
    domain.kickstart("stubborn.job", kill=True)
    info = domain.print("stubborn.job")
    assert (info.last_signal, info.last_exit_code) == (9, None)
    assert log.read_text() == "ready\nTERM\n"
    assert first is not None and process_token(first) is None


@pytest.mark.slow
def test_job_exiting_on_sigterm_reports_minus_15(domain: EmulatedDomain, install: Install) -> None:
    """A job that dies of the SIGTERM it is sent shows -15 in list() and signal 15 in print."""
    domain.bootstrap(install("polite.job", ProgramArguments=["sleep", "60"]))
    assert domain.kickstart("polite.job") is not None
    domain.kickstart("polite.job", kill=True)
    assert _entry(domain, "polite.job") == ListEntry(None, -15, "polite.job")
    assert domain.print("polite.job").last_signal == 15


@pytest.mark.slow
def test_bootout_is_asynchronous_until_the_job_is_gone(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """bootout returns at once; while the job is exiting the label stays listed with its pid,
    a second bootout fails with 36 and bootstrap with 5; after SIGKILL it is gone."""
    log = tmp_path / "signals.log"
    path = install(
        "draining.job",
        ProgramArguments=[sys.executable, "-c", IGNORE_TERM, str(log)],
        ExitTimeOut=2,
    )
    domain.bootstrap(path)
    pid = domain.kickstart("draining.job")
    _wait_for(lambda: log.exists() and "ready" in log.read_text(), "the job's TERM handler")
    domain.bootout("draining.job")
    assert _entry(domain, "draining.job") == ListEntry(pid, None, "draining.job")
    assert _code(lambda: domain.bootout("draining.job")).code == 36
    assert _code(lambda: domain.bootstrap(path)).code == 5
    _wait_for(lambda: _entry(domain, "draining.job") is None, "the label to go away")
    assert pid is not None and process_token(pid) is None
    assert log.read_text() == "ready\nTERM\n"
    domain.bootstrap(path)
    assert [e.label for e in domain.list()] == ["draining.job"]


@pytest.mark.slow
def test_never_two_instances_of_one_label(domain: EmulatedDomain, install: Install) -> None:
    """kickstart of a running job returns its pid without starting another, and a calendar
    firing while it runs is missed."""
    domain.bootstrap(
        install("single.job", ProgramArguments=["sleep", "60"], StartCalendarInterval={"Minute": 7})
    )
    pid = domain.kickstart("single.job")
    assert pid is not None
    assert domain.kickstart("single.job") == pid
    assert domain.tick(_future_minute(10, 7)) == []
    assert domain.list() == [ListEntry(pid, None, "single.job")]
    assert domain.print("single.job").runs == 1


@pytest.mark.slow
def test_tick_fires_every_due_calendar_job_at_once(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """tick(now) starts every job whose StartCalendarInterval matches that minute, once per
    minute; jobs due at another minute are left alone."""
    for label, calendar in [
        ("cal.hourly", {"Minute": 5}),
        ("cal.daily", [{"Hour": 3, "Minute": 0}, {"Hour": 10, "Minute": 5}]),
        ("cal.other", {"Minute": 6}),
    ]:
        marker = tmp_path / f"{label}.ran"
        domain.bootstrap(
            install(
                label,
                ProgramArguments=["/bin/sh", "-c", f"echo ran >> {marker}"],
                StartCalendarInterval=calendar,
                ThrottleInterval=0,
            )
        )
    at = _future_minute(10, 5)
    assert domain.tick(at) == ["cal.daily", "cal.hourly"]
    assert domain.tick(at + timedelta(seconds=20)) == []
    for label in ("cal.daily", "cal.hourly"):
        assert domain.wait_idle(label, WAIT)
    assert (tmp_path / "cal.daily.ran").read_text() == "ran\n"
    assert (tmp_path / "cal.hourly.ran").read_text() == "ran\n"
    assert not (tmp_path / "cal.other.ran").exists()
    assert domain.tick(at + timedelta(minutes=1)) == ["cal.other"]


def test_tick_fires_interval_jobs_from_load_time(domain: EmulatedDomain, install: Install) -> None:
    """StartInterval counts from the load: not due before N seconds, due after; the timer then
    counts from that firing."""
    domain.bootstrap(
        install("every.job", ProgramArguments=["true"], StartInterval=600, ThrottleInterval=0)
    )
    now = datetime.now()
    assert domain.tick(now + timedelta(seconds=300)) == []
    assert domain.tick(now + timedelta(seconds=601)) == ["every.job"]
    assert domain.wait_idle("every.job", WAIT)
    assert domain.tick(now + timedelta(seconds=900)) == []
    assert domain.tick(now + timedelta(seconds=1201)) == ["every.job"]


@pytest.mark.slow
def test_run_at_load_starts_the_job_at_bootstrap(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """RunAtLoad starts the job as part of bootstrap."""
    marker = tmp_path / "ran"
    domain.bootstrap(
        install("atload.job", ProgramArguments=["/bin/sh", "-c", f"touch {marker}"], RunAtLoad=True)
    )
    assert domain.print("atload.job").runs == 1
    assert domain.wait_idle("atload.job", WAIT)
    assert marker.exists()


@pytest.mark.slow
def test_state_survives_a_new_domain_object_and_reaps_finished_jobs(
    domain: EmulatedDomain, install: Install, tmp_path: Path
) -> None:
    """A new EmulatedDomain over the same directory sees the loaded jobs, and reaps a job that
    finished while nobody was looking: its exit code is recorded."""
    gate = tmp_path / "gate"
    domain.bootstrap(
        install(
            "later.job",
            ProgramArguments=[
                "/bin/sh",
                "-c",
                f"while [ ! -e {gate} ]; do sleep 0.02; done; exit 4",
            ],
        )
    )
    pid = domain.kickstart("later.job")
    assert pid is not None
    del domain
    gate.write_text("")
    _wait_for(lambda: process_token(pid) is None, "the job to finish")
    restarted = EmulatedDomain(tmp_path / "state", launch_agents=tmp_path / "agents")
    _wait_for(lambda: _entry(restarted, "later.job") == ListEntry(None, 4, "later.job"), "reap")
    info = restarted.print("later.job")
    assert (info.runs, info.last_exit_code, info.state) == (1, 4, "not running")


@pytest.mark.slow
def test_a_run_lost_without_exit_record_is_a_failed_reap(
    domain: EmulatedDomain, install: Install
) -> None:
    """If the job's watcher is killed and the job dies too, no status exists: the run ends with
    no exit code and print says `failed reap`."""
    domain.bootstrap(install("lost.job", ProgramArguments=["sleep", "60"]))
    pid = domain.kickstart("lost.job")
    assert pid is not None
    watcher = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(watcher, signal.SIGKILL)
    _wait_for(lambda: process_token(watcher) is None, "the watcher to die")
    os.kill(pid, signal.SIGKILL)
    _wait_for(lambda: process_token(pid) is None, "the job to die")
    assert domain.list() == [ListEntry(None, None, "lost.job")]
    info = domain.print("lost.job")
    assert (info.last_exit_code, info.last_signal, info.last_exit_reason) == (
        None,
        None,
        "failed reap",
    )


def test_calendar_entries_read_like_launchd() -> None:
    """A dict or an array of dicts; negative values act as wildcards, a dict with another
    out-of-range value is dropped, unknown keys are ignored, Weekday 7 is Sunday."""
    assert calendar_entries({"Minute": 5}) == (CalendarEntry(minute=5),)
    assert calendar_entries(
        [{"Hour": 24, "Minute": 0}, {"Hour": -1, "Minute": 3, "Color": "red"}, {"Weekday": 7}]
    ) == (CalendarEntry(minute=3), CalendarEntry(weekday=0))
    assert calendar_entries("nonsense") == ()
