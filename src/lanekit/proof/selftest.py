"""`lanekit selftest`: prove this install against the real launchd (or the emulated domain).

One temporary lane with a random label, its queue, plist and state in a temp directory, taken
through what lanes rely on: bootstrap, print, a no-replace rename on that volume, a durable
enqueue, a kickstart that runs a job, a second kick launchd throttles, and a bootout while a job
runs (SIGTERM: the job goes back to the queue, nothing lost), then cleanup. Each step is timed
and recorded; the report is also written as JSON, to attach to an issue.

On a Mac this drives launchctl in your own domain; elsewhere a private emulated domain in the
temp directory (so it never touches your lanes either way).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
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

THROTTLE = 2
"""The lane's ThrottleInterval: short, so the throttled second kick is seen in seconds."""
JOB_TIMEOUT = 30.0
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


def _lanes_toml(root: Path, prefix: str, *, timers: bool = False) -> str:
    """The selftest's lane; under systemd (`timers`) it fires every 2 s on its own timer
    instead of being throttled (systemd has no ThrottleInterval)."""
    job = root / "job.py"
    return "\n".join(
        [
            "# Written by `lanekit selftest`; removed when it ends.",
            "[defaults]",
            f"label_prefix = {json.dumps(prefix)}",
            'path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]',
            "" if timers else f"throttle_interval = {THROTTLE}",
            "exit_timeout = 10",
            "",
            "[queues.selftest]",
            f"dir = {json.dumps(str(root / 'jobs'))}",
            "",
            "[lanes.selftest]",
            'queue = "selftest"',
            f"command = [{json.dumps(sys.executable)}, {json.dumps(str(job))}, " + '"{job}"]',
            "max_jobs = 1",
            'every = "2s"' if timers else "",
            "",
        ]
    )


def _paths(root: Path, backend: str, real: Paths) -> Paths:
    # Plist and state in the temp dir: bootstrap takes any path, and a failed cleanup leaves
    # nothing in ~/Library/LaunchAgents that would load again at the next login.
    return Paths(
        home=real.home,
        launch_agents=root / "LaunchAgents",
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
    probe = queue_dir.parent
    a, b, c = (str(probe / f".selftest-{n}-{secrets.token_hex(4)}") for n in "abc")
    for path in (a, b):
        fsops.write_new(path, b"x", durable=False)
    try:
        try:
            fsops.rename_noreplace(a, b)
        except FileExistsError:
            pass
        else:
            raise _StepFailedError("a no-replace rename replaced an existing file on this volume")
        fsops.rename_noreplace(a, c)
    finally:
        for path in (a, b, c):
            Path(path).unlink(missing_ok=True)
    return f"refuses to replace, moves otherwise ({fsops.rename_strategy()})"


def run_selftest(
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    report_path: Path | None = None,
    keep: bool = False,
    timeout: float = JOB_TIMEOUT,
) -> SelftestReport:
    """Run the steps (stopping at the first that later ones need), always clean up, and
    write the JSON report; `timeout` bounds each wait for a run."""
    env = dict(os.environ if env is None else env)
    backend = backend_name(env, sys.platform)
    root = Path(tempfile.mkdtemp(prefix="lanekit-selftest-")).resolve()
    prefix = f"local.lanekit-selftest-{secrets.token_hex(4)}"
    spaths = _paths(root, backend, paths)
    (root / "job.py").write_text(JOB_SCRIPT, encoding="utf-8")
    launchd = open_manager(spaths, env)
    timers = launchd.kind == "systemd"
    if timers:
        backend = "systemd"
    (root / "lanes.toml").write_text(_lanes_toml(root, prefix, timers=timers), encoding="utf-8")
    config = load_config(root / "lanes.toml", spaths)
    lane = config.lanes["selftest"]
    queue = open_queue(lane.queue.dir)
    run = _Run()
    try:
        _steps(run, config, spaths, launchd, queue, timeout=timeout)
    finally:
        run.step("cleanup", lambda: _clean_up(root, spaths, launchd, config, keep=keep))
    report = SelftestReport(
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
        },
    )
    target = report_path or paths.state / "selftest.json"
    data = json.dumps(report.to_json(), indent=2, sort_keys=True).encode() + b"\n"
    write_atomic(target, data, 0o600)
    return SelftestReport(**{**_fields(report), "report_path": str(target)})


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
