"""`lanekit selftest`: prove this install against the real launchd (or the emulated domain).

One temporary lane under selftest's one label (`local.lanekit.selftest`, its plist always at
`<state>/selftest/local.lanekit.selftest.plist`, so macOS 13+ keeps one Background Items record
for it rather than one per run), its queue and state in a temp directory, taken through what
lanes rely on: bootstrap, print, a no-replace rename on that volume, a durable
enqueue, a kickstart that runs a job, a second kick launchd throttles, and a bootout while a job
runs (SIGTERM: the job goes back to the queue, nothing lost), then cleanup. Each step is timed
and recorded; the report is also written as JSON, to attach to an issue.

On a Mac this drives launchctl in your own domain; elsewhere a private emulated domain in the
temp directory (so it never touches your lanes either way). A selftest holds a flock on
`<state>/selftest/.lock` throughout, so a second one at the same time is refused instead of
loading over the first.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import lanekit
from lanekit.config import Config, load_config
from lanekit.errors import ExitCode, LanekitError
from lanekit.queue import open_queue
from lanekit.queue.protocol import JobQueue
from lanekit.queue.records import JobState
from lanekit.reconcile import Result, apply, remove
from lanekit.service import open_manager
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths, backend_name
from lanekit.state.schemas import SELFTEST_SCHEMA
from lanekit.system import fsops
from lanekit.system.atomic import write_atomic
from lanekit.watch.channels import OSASCRIPT

NOTICE_STEP = "test notice"
THROTTLE = 2
"""The lane's ThrottleInterval: short, so the throttled second kick is seen in seconds."""
JOB_TIMEOUT = 30.0
LABEL = "local.lanekit.selftest"
"""The selftest lane's one label (see the module docstring)."""
LONG_JOB_SECONDS = 60.0
"""The job that bootout interrupts; it never finishes on its own within the test."""

JOB_SCRIPT = """\
import json, sys, time
with open(sys.argv[1], encoding="utf-8") as f:
    time.sleep(float(json.load(f).get("seconds", 0)))
"""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the selftest."""

    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass(frozen=True, slots=True)
class SelftestReport:
    """Every step, in order, with where it ran."""

    backend: str
    domain: str
    label: str
    directory: str
    steps: tuple[Step, ...]
    facts: Mapping[str, str] = field(default_factory=dict)
    report_path: str | None = None

    @property
    def ok(self) -> bool:
        """True when every step passed."""
        return all(step.ok for step in self.steps)

    @property
    def exit_code(self) -> ExitCode:
        """0 when every step passed, 1 otherwise."""
        return ExitCode.OK if self.ok else ExitCode.FAILURE

    def to_json(self) -> dict[str, Any]:
        """The JSON report (schema in docs/json.md)."""
        return {
            "schema": SELFTEST_SCHEMA,
            "ok": self.ok,
            "backend": self.backend,
            "domain": self.domain,
            "label": self.label,
            "directory": self.directory,
            "facts": dict(self.facts),
            "steps": [asdict(step) for step in self.steps],
        }


class _StepFailedError(LanekitError):
    """A step's check did not hold."""


def _lanes_toml(root: Path, *, timers: bool = False) -> str:
    """The selftest's lane; under systemd (`timers`) it fires every 2 s on its own timer
    instead of being throttled (systemd has no ThrottleInterval)."""
    job = root / "job.py"
    return "\n".join(
        [
            "# Written by `lanekit selftest`; removed when it ends.",
            "[defaults]",
            'path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]',
            "" if timers else f"throttle_interval = {THROTTLE}",
            "exit_timeout = 10",
            "",
            "[queues.selftest]",
            f"dir = {json.dumps(str(root / 'jobs'))}",
            "",
            "[lanes.selftest]",
            f"label = {json.dumps(LABEL)}",
            'queue = "selftest"',
            f"command = [{json.dumps(sys.executable)}, {json.dumps(str(job))}, " + '"{job}"]',
            "max_jobs = 1",
            'every = "2s"' if timers else "",
            "",
        ]
    )


def _paths(root: Path, backend: str, real: Paths) -> Paths:
    # The plist at one path of lanekit's state (one Background Items record), the rest in the
    # temp dir: bootstrap takes any path, and a failed cleanup leaves nothing in
    # ~/Library/LaunchAgents that would load again at the next login.
    return Paths(
        home=real.home,
        launch_agents=real.state / "selftest",
        state=root / "state",
        cwd=root,
    )


def _wait(condition: Callable[[], bool], timeout: float, poll: Callable[[], object]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        poll()  # asking launchd lets the emulated domain reap and start due jobs
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class _Run:
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def step(self, name: str, action: Callable[[], str]) -> bool:
        started = time.monotonic()
        try:
            detail = action()
            ok = True
        except LanekitError as exc:
            detail, ok = exc.message, False
        except OSError as exc:
            detail, ok = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), False
        self.steps.append(Step(name, ok, detail, round(time.monotonic() - started, 3)))
        return ok


def _rename_probe(queue_dir: Path) -> str:
    # Beside the queue, on its volume: the probe asks the file system, not the queue's layout.
    failed = fsops.probe_noreplace(str(queue_dir.parent))
    if failed is not None:
        raise _StepFailedError(f"the no-replace rename on this volume: {failed}")
    return f"refuses to replace, moves otherwise ({fsops.rename_strategy()})"


def run_selftest(
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    report_path: Path | None = None,
    keep: bool = False,
    timeout: float = JOB_TIMEOUT,
    osascript: str | None = None,
) -> SelftestReport:
    """Run the steps (stopping at the first that later ones need), send a test notice through
    Notification Center (`osascript`: the program, by default /usr/bin/osascript on a Mac and
    none elsewhere), always clean up, and write the JSON report; `timeout` bounds each wait for
    a run."""
    from lanekit.proof.tryjob import held_by_one

    env = dict(os.environ if env is None else env)
    if osascript is None and sys.platform == "darwin":
        osascript = OSASCRIPT
    backend = backend_name(env, sys.platform)
    lock = held_by_one(
        paths.state / "selftest",
        "lanekit selftest",
        LABEL,
        "wait until it ends (it cleans up after itself), then run `lanekit selftest` again",
    )
    try:
        report = _selftest(paths, env, backend, keep=keep, timeout=timeout, osascript=osascript)
    finally:
        os.close(lock)
    target = report_path or paths.state / "selftest.json"
    data = json.dumps(report.to_json(), indent=2, sort_keys=True).encode() + b"\n"
    write_atomic(target, data, 0o600)
    return SelftestReport(**{**_fields(report), "report_path": str(target)})


def _selftest(
    paths: Paths,
    env: Mapping[str, str],
    backend: str,
    *,
    keep: bool,
    timeout: float,
    osascript: str | None,
) -> SelftestReport:
    from lanekit.proof.tryjob import clear_leftover

    root = Path(tempfile.mkdtemp(prefix="lanekit-selftest-")).resolve()
    spaths = _paths(root, backend, paths)
    (root / "job.py").write_text(JOB_SCRIPT, encoding="utf-8")
    launchd = open_manager(spaths, env)
    timers = launchd.kind == "systemd"
    if timers:
        backend = "systemd"
    (root / "lanes.toml").write_text(_lanes_toml(root, timers=timers), encoding="utf-8")
    config = load_config(root / "lanes.toml", spaths)
    lane = config.lanes["selftest"]
    queue = open_queue(lane.queue.dir)
    run = _Run()
    notice = _NoticeStep(paths, osascript, env)
    try:
        clear_leftover(launchd, lane.label)  # a selftest killed before its cleanup left it loaded
        _steps(run, config, spaths, launchd, queue, timeout=timeout)
        run.step(NOTICE_STEP, notice.send)
    finally:
        run.step("cleanup", lambda: _clean_up(root, spaths, launchd, config, keep=keep))
    return SelftestReport(
        backend=backend,
        domain=launchd.domain,
        label=lane.label,
        directory=str(root),
        steps=tuple(run.steps),
        facts={
            "lanekit": lanekit.__version__,
            "python": sys.executable,
            "platform": platform.platform(),
            "domain_reason": launchd.domain_reason,
            "test_notice": str(notice.state),
        },
    )


class NoticeState(StrEnum):
    """What became of selftest's test notice (`facts.test_notice`)."""

    CONFIRMED = "confirmed"
    """Sent, and the user once said macos notices arrive (`lanekit watch --test`)."""
    UNCONFIRMED = "unconfirmed"
    """Sent; whether it was shown only the user can say."""
    REFUSED = "refused"
    NOT_SENT = "not sent"
    """No Notification Center here (not macOS)."""


@dataclass(slots=True)
class _NoticeStep:
    """Send one test notice through the macos channel and say whether the user ever confirmed
    that its notices arrive (the answer `lanekit watch --test` records)."""

    paths: Paths
    osascript: str | None
    env: Mapping[str, str]
    state: NoticeState = NoticeState.NOT_SENT

    def send(self) -> str:
        from datetime import datetime

        from lanekit.state.confirmations import MACOS_FIX, confirmed
        from lanekit.watch.channels import MacosChannel
        from lanekit.watch.testnotice import test_notice

        if self.osascript is None:
            return "not sent: no Notification Center here (not macOS)"
        channel = MacosChannel(self.osascript, env=self.env)
        try:
            channel.send(test_notice("lanekit selftest", datetime.now()))
        except LanekitError:
            self.state = NoticeState.REFUSED
            raise
        if confirmed(self.paths.state, channel.name):
            self.state = NoticeState.CONFIRMED
            return "sent through macos; you confirmed earlier that its notices arrive"
        self.state = NoticeState.UNCONFIRMED
        return (
            "sent through macos, but never confirmed to arrive (osascript succeeds even when "
            f"macOS drops the notice): {MACOS_FIX}"
        )


def _fields(report: SelftestReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in report.__dataclass_fields__}


def _steps(
    run: _Run,
    config: Config,
    paths: Paths,
    launchd: ServiceManager,
    queue: JobQueue,
    *,
    timeout: float,
) -> None:
    _Steps(config, paths, launchd, queue, timeout).run(run)


class _Steps:
    """The selftest's steps against one temporary lane, in order; each returns what it saw
    or raises _StepFailedError."""

    def __init__(
        self, config: Config, paths: Paths, launchd: ServiceManager, queue: JobQueue, timeout: float
    ) -> None:
        self.config = config
        self.paths = paths
        self.launchd = launchd
        self.queue = queue
        self.timeout = timeout
        self.lane = config.lanes["selftest"]
        self.label = self.lane.label

    def run(self, run: _Run) -> None:
        """Every step; a failed bootstrap or kickstart leaves nothing for the later ones."""
        if not run.step("bootstrap", self.bootstrap):
            return
        run.step("print", self.print_job)
        run.step("claim rename", lambda: _rename_probe(self.lane.queue.dir))
        run.step("durable enqueue", self.enqueue)
        if not run.step("kickstart", self.kick):
            return
        if self.launchd.kind == "systemd":
            run.step("timer fires", self.timer_fires)
        else:
            run.step("throttled second kick", self.throttled)
        run.step("bootout while running", self.bootout_running)

    def bootstrap(self) -> str:
        result = apply(self.config, self.paths, self.launchd)
        outcome = result.outcomes[0]
        if outcome.result is not Result.DONE:
            raise _StepFailedError(f"apply: {outcome.detail}")
        return f"bootstrap {self.launchd.domain} {self.launchd.artifact_path(self.label)}"

    def print_job(self) -> str:
        seen = self.launchd.observe([self.label])[self.label]
        if seen.definition is None and seen.next_fire is not None:
            # systemd keeps no definition to print: its timer says when it fires next.
            when = seen.next_fire.astimezone().strftime("%H:%M:%S")
            return f"loaded in {self.launchd.domain}, timer armed, next fire {when}"
        info = seen.definition
        state = info.state if info is not None else None
        domain = info.domain if info is not None else None
        return f"state {state or '?'}, loaded in {domain or self.launchd.domain}"

    def enqueue(self) -> str:
        job_id = self.queue.enqueue({"seconds": 0})
        return f"{job_id} (durable: fsync + directory fsync)"

    def kick(self) -> str:
        started = time.monotonic()
        pid = self.launchd.kick(self.label)
        if not self._wait_done(1):
            raise _StepFailedError(f"the job did not finish within {self.timeout:g} s (pid {pid})")
        return f"pid {pid}; job done in {time.monotonic() - started:.1f} s"

    def throttled(self) -> str:
        # A kick while the first run is still exiting would only return its pid.
        if not _wait(self._idle, self.timeout, lambda: None):
            raise _StepFailedError("the first run did not exit")
        self.queue.enqueue({"seconds": 0})
        started = time.monotonic()
        pid = self.launchd.kick(self.label)
        if not self._wait_done(2):
            raise _StepFailedError(f"the second run did not finish within {self.timeout:g} s")
        waited = time.monotonic() - started
        how = "started at once" if pid is not None else "postponed by launchd"
        return f"{how}; done after {waited:.1f} s (ThrottleInterval {THROTTLE} s)"

    def timer_fires(self) -> str:
        """systemd's own timer (every 2 s) starts a run that takes a job nobody kicked."""
        done = self.queue.counts().done
        self.queue.enqueue({"seconds": 0})
        started = time.monotonic()
        if not self._wait_done(done + 1):
            raise _StepFailedError(f"the timer started no run within {self.timeout:g} s")
        return f"the timer's run took the job after {time.monotonic() - started:.1f} s"

    def bootout_running(self) -> str:
        launchd, label, timeout = self.launchd, self.label, self.timeout
        if not _wait(self._idle, timeout, lambda: None):
            raise _StepFailedError("the previous run did not exit")
        job_id = self.queue.enqueue({"seconds": LONG_JOB_SECONDS})
        launchd.kick(label)
        if not _wait(lambda: self.queue.counts().claimed >= 1, timeout, launchd.loaded):
            raise _StepFailedError("the long job was never claimed")
        if not launchd.unload(label, grace=timeout):
            raise _StepFailedError(f"{label} was still loaded {timeout:g} s after bootout")
        location = self.queue.locate(job_id)
        back = location is not None and location.state is JobState.QUEUED
        counts = self.queue.counts()
        if not back or counts.claimed:
            raise _StepFailedError(
                f"after SIGTERM the job is not back in queue/ (queued {counts.queued}, "
                f"claimed {counts.claimed})"
            )
        return "SIGTERM reached the run; the job is back in queue/, nothing lost"

    def _idle(self) -> bool:
        return self.launchd.loaded().get(self.label) is None

    def _wait_done(self, count: int) -> bool:
        return _wait(lambda: self.queue.counts().done >= count, self.timeout, self.launchd.loaded)


def _clean_up(
    root: Path, paths: Paths, launchd: ServiceManager, config: Config, *, keep: bool
) -> str:
    # Unloaded first, whatever the listing says: a temporary lane must never outlive the test.
    for undo in (
        lambda: launchd.unload(config.lanes["selftest"].label),
        lambda: remove(config, paths, launchd, "selftest", force=True),
    ):
        # Already booted out (by the last step, or by the first undo): nothing to undo.
        with contextlib.suppress(LanekitError):
            undo()
    if keep:
        return f"kept {root}"
    shutil.rmtree(root, ignore_errors=True)
    return f"removed {root}"
