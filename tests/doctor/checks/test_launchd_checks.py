"""launchd.* checks against the emulated launchd domain: real processes really exit 78, 126,
127, die by SIGKILL or loop, and doctor names what happened and what explains it."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from doctor_world import HEALTHY, World, job_plist, tool

from lanekit.doctor import Severity
from lanekit.queue.directory.backend import Queue
from lanekit.service.emulated.emulator import EmulatedDomain


@pytest.fixture
def domain(tmp_path: Path) -> EmulatedDomain:
    """An emulated launchd domain under the test's Paths."""
    world = World.make(tmp_path)
    return EmulatedDomain(world.paths.emulator, launch_agents=world.paths.launch_agents)


def run_once(domain: EmulatedDomain, label: str) -> None:
    """Start the job now and wait until it has exited and been reaped."""
    domain.kickstart(label)
    assert domain.wait_idle(label, 20)
    domain.reap()


def test_installed_lane_not_loaded(tmp_path: Path, domain: EmulatedDomain) -> None:
    """A lane whose plist is on disk but not bootstrapped never runs: error, `lanekit apply`."""
    world = World.make(tmp_path)
    world.install()
    [finding] = world.run("launchd.not-loaded", world.target(), launchd=domain)
    assert finding.severity is Severity.ERROR
    assert "installed but not loaded" in finding.message
    assert finding.fix == "lanekit apply funnel"


def test_foreign_plist_not_loaded(tmp_path: Path, domain: EmulatedDomain) -> None:
    """Any plist: not loaded is a warning with the bootstrap command for this domain."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist())
    [finding] = world.run("launchd.not-loaded", target, launchd=domain)
    assert finding.severity is Severity.WARNING
    assert finding.fix == f"launchctl bootstrap gui/{os.getuid()} {target.plist_path}"


def test_loaded_lane_is_not_reported(tmp_path: Path, domain: EmulatedDomain) -> None:
    """After bootstrap the lane is loaded and the check is silent."""
    world = World.make(tmp_path)
    domain.bootstrap(world.install())
    assert world.run("launchd.not-loaded", world.target(), launchd=domain) == []


def test_disabled_label(tmp_path: Path, domain: EmulatedDomain) -> None:
    """A disabled label cannot be loaded: one error (not also "not loaded") with enable+apply."""
    world = World.make(tmp_path)
    world.install()
    label = world.lane().label
    domain.disable(label)
    ctx = world.context(launchd=domain)
    [finding] = ctx.findings("launchd.disabled", world.target())
    assert ctx.findings("launchd.not-loaded", world.target()) == []
    assert finding.fix == f"launchctl enable gui/{os.getuid()}/{label} && lanekit apply funnel"


def test_exit_78_names_the_missing_log_directory(tmp_path: Path, domain: EmulatedDomain) -> None:
    """The lane's logs/ directory is removed; launchd (emulated) cannot open StandardOutPath,
    records 78 and never runs the program. doctor says so and gives the cause's fix."""
    world = World.make(tmp_path)
    domain.bootstrap(world.install())
    logs = world.lane().stdout_path.parent
    shutil.rmtree(logs)
    run_once(domain, world.lane().label)
    assert {e.label: e.last_exit for e in domain.list()}[world.lane().label] == 78
    [finding] = world.run("launchd.exit-78", world.target(), launchd=domain)
    assert finding.severity is Severity.ERROR
    assert "the program never ran" in finding.message
    assert "likely cause: logs.dir-missing" in finding.message
    assert finding.fix == f"mkdir -p {logs}"


def test_exit_126_from_a_shell_wrapper(tmp_path: Path, domain: EmulatedDomain) -> None:
    """`sh -c /path/job.sh` where job.sh lacks +x: the shell exits 126; the cause is named."""
    world = World.make(tmp_path)
    script = tool(tmp_path / "bin", "job.sh", mode=0o644)
    path = world.plist(job_plist(ProgramArguments=["/bin/sh", "-c", str(script)]))
    domain.bootstrap(path)
    run_once(domain, "com.example.job")
    target = world.foreign(job_plist(ProgramArguments=["/bin/sh", "-c", str(script)]))
    [finding] = world.run("launchd.exit-126", target, launchd=domain)
    assert "likely cause: program.not-executable" in finding.message
    assert finding.fix == f"chmod +x {script}"


def test_exit_127_is_the_jobs_path(
    tmp_path: Path, domain: EmulatedDomain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sh -c jqish`: jqish is on the test's PATH, not the job's: exit 127, cause and fix."""
    shell_bin = tmp_path / "shell-bin"
    tool(shell_bin, "jqish")
    monkeypatch.setenv("PATH", f"{shell_bin}:/usr/bin:/bin")
    world = World.make(tmp_path)
    job = job_plist(
        ProgramArguments=["/bin/sh", "-c", "jqish --version"],
        EnvironmentVariables={"PATH": "/usr/bin:/bin"},
    )
    domain.bootstrap(world.plist(job))
    run_once(domain, "com.example.job")
    target = world.foreign(job)
    [finding] = world.run("launchd.exit-127", target, launchd=domain)
    assert "likely cause: path.command-missing" in finding.message
    assert (
        finding.fix == f"add {shell_bin} to the PATH in EnvironmentVariables of {target.plist_path}"
    )


def test_killed_by_sigkill(tmp_path: Path, domain: EmulatedDomain) -> None:
    """A run that dies by SIGKILL shows as -9; doctor names the signal."""
    world = World.make(tmp_path)
    job = job_plist(ProgramArguments=["/bin/sh", "-c", "kill -9 $$"])
    domain.bootstrap(world.plist(job))
    run_once(domain, "com.example.job")
    target = world.foreign(job)
    [finding] = world.run("launchd.killed", target, launchd=domain)
    assert finding.severity is Severity.WARNING
    assert "SIGKILL (9)" in finding.message
    assert finding.fix == (f"see why in the job's stderr: lanekit try --plist {target.plist_path}")


def wait_for(condition: Callable[[], bool], timeout: float = 20) -> None:
    """Poll until `condition()` holds (fails the test after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


@pytest.mark.slow
def test_lane_runner_killed_mid_job(tmp_path: Path, domain: EmulatedDomain) -> None:
    """The lane's runner is SIGKILLed while its job runs: launchd shows -9, and since the run
    held a job, the fix starts with `lanekit recover`."""
    world = World.make(tmp_path, HEALTHY.replace('["true", "{job}"]', '["sleep", "30"]'))
    domain.bootstrap(world.install())
    lane = world.lane()
    Queue(lane.queue.dir).enqueue({"n": 1})
    pid = domain.kickstart(lane.label)
    assert pid is not None
    wait_for(lambda: any((lane.queue.dir / "claimed").iterdir()))
    wait_for(lambda: bool(psutil.Process(pid).children()))
    children = psutil.Process(pid).children(recursive=True)
    os.kill(pid, signal.SIGKILL)
    for child in children:
        child.kill()
    assert domain.wait_idle(lane.label, 20)
    [finding] = world.run("launchd.killed", world.target(), launchd=domain)
    assert "SIGKILL (9)" in finding.message
    assert finding.fix.startswith("lanekit recover funnel")


@pytest.mark.slow
def test_crash_loop_on_the_emulator(tmp_path: Path, domain: EmulatedDomain) -> None:
    """A job that fails at once, on a timer no longer than its ThrottleInterval: launchd starts
    it again and again (runs climb, each run short). doctor calls it a crash loop."""
    world = World.make(tmp_path)
    job = job_plist(
        ProgramArguments=["/bin/sh", "-c", "exit 3"], StartInterval=1, ThrottleInterval=1
    )
    domain.bootstrap(world.plist(job))
    label = "com.example.job"
    while (domain.print(label).runs or 0) < 5:
        domain.kickstart(label)  # what the 1 s timer does; inside the window it is postponed
        assert domain.wait_idle(label, 20)
        time.sleep(0.05)
    [finding] = world.run("launchd.crash-loop", world.foreign(job), launchd=domain)
    assert finding.severity is Severity.ERROR
    assert "crash loop" in finding.message
    assert "exit 3" in finding.message
    assert finding.fix.startswith(f"stop it with `launchctl bootout gui/{os.getuid()}/{label}`")


def test_one_failed_run_is_not_a_loop(tmp_path: Path, domain: EmulatedDomain) -> None:
    """A single failing run is not a crash loop."""
    world = World.make(tmp_path)
    job = job_plist(ProgramArguments=["/bin/sh", "-c", "exit 3"])
    domain.bootstrap(world.plist(job))
    run_once(domain, "com.example.job")
    assert world.run("launchd.crash-loop", world.foreign(job), launchd=domain) == []
