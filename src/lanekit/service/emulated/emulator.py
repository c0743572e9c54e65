"""An emulated launchd domain with real processes and real signals: the default backend off macOS.

State lives on disk under `state_dir` (`domain.json`, replaced atomically; every operation holds
an flock on `domain.lock`), so separate CLI processes share one domain and a new EmulatedDomain
picks up where the last one stopped. Jobs are started by `environ.spawn`: each has a watcher
process that records its exit status in `exits/<id>.json`, which any later call reaps.

launchd behaviour reproduced (shared/launchd-semantics.md), and the choices made where the
sources leave room:
- bootstrap refuses an unreadable plist, a missing or empty Label, no Program/ProgramArguments,
  a group/world-writable plist or one owned by someone else (`Path had bad ownership/
  permissions`), a disabled label (119, the code launchd gives root; non-root callers reportedly
  get 5) and an already-loaded label. Already loaded answers 5 "Input/output error": that is what
  captures show for bootstrap (errors-01, errors-35); 37 is only a third-party claim. The loaded
  plist is a copy: editing the file later changes nothing until the next bootstrap.
- bootout is asynchronous, as launchd's: SIGTERM to the job's main process, SIGKILL after
  ExitTimeOut (default 5 s, 0 = never). The watcher carries out the stop, so it completes even
  when the CLI that asked for it exits. The label stays listed, with its pid, until the job is
  gone; a second bootout meanwhile fails with 36 and bootstrap with 5, so reconcile's "bootout,
  poll list() until the label is gone, bootstrap" loop runs here as it does on a Mac.
- bootout of a label that is not loaded answers 3 "No such process" (errors-35, macOS 26);
  print and kickstart answer 113.
- A job is never run twice: kickstart of a running job returns its pid. A start within
  ThrottleInterval (default 10 s) of the previous spawn is postponed (`spawn scheduled`) and
  performed by whichever call (`tick`, `list`, ...) comes after it is due.
- A job whose log path or WorkingDirectory cannot be opened, or whose program is missing, is
  not started and gets last exit 78 (EX_CONFIG), as modern launchd reports it. It still counts as
  a run: launchd counts the spawn attempt.
- QueueDirectories: while a listed directory holds anything and the job is not running, the
  job is started (ThrottleInterval applies), as launchd does; a watch process per such job
  (lanekit.service.emulated.queuewatch, started at bootstrap) brings the domain up to date
  when a file arrives, so such a job starts within a fraction of a second with no lanekit call.
- Nothing fires on a clock by itself (there is no daemon): `tick(now)` fires calendar
  (StartCalendarInterval) and interval (StartInterval) jobs due at `now`, each at most once per
  minute (`lanekit emulator tick`, service/emulated/clock.py, drives it through a span); a job
  running at its firing misses it. The minute in which a job is loaded never fires for it
  (launchd arms the timer for the next match, and does not replay a firing from before the
  load).
- Its clock (lanekit.state.clock) is the real time plus an offset that `tick` moves on; every job it
  starts gets LANEKIT_LAUNCHD=emulated and LANEKIT_CLOCK_OFFSET in its environment, beyond what
  launchd would pass, so lanekit inside the job logs and records the domain's time.
- A pid that vanished without an exit record (its watcher was killed, or the machine rebooted)
  gets no exit status: print shows `last exit reason = failed reap`, list shows no status.

Starting, stopping and reaping jobs (lanekit.service.launchd.environ, .definition) and reading
plists
(plistlib) are imported by the methods that do them, and `print` reads the definition kept at
bootstrap (lanekit.service.emulated.info): a read of an idle domain, which is what `lanekit
status` makes, loads none of them (docs/benchmarks.md, figure (i)). The state file's layout is
lanekit.service.emulated.state's; the refusals bootstrap makes and the calendar as launchd
reads it are lanekit.service.emulated.plist's.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.errors import LaunchdError
from lanekit.schedule import CalendarEntry, fires_at
from lanekit.service.emulated.info import (
    definition_of,
    exit_timeout,
    kept_definition,
    positive_int,
    service_info,
    throttle,
)
from lanekit.service.emulated.offset import with_clock
from lanekit.service.emulated.plist import (
    EMULATED_SESSION,
    RefusalError,
    calendar_entries,
    read_plist,
)
from lanekit.service.emulated.state import DomainState, JobEntry
from lanekit.service.launchd.codes import LaunchctlCode
from lanekit.service.launchd.model import LaunchctlError, ListEntry, ServiceInfo
from lanekit.state.clock import Clock
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from lanekit.system.atomic import write_atomic
from lanekit.system.owned import PRIVATE_FILE, make_private_dirs, read_regular
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    pass

POLL_SECONDS = 0.05
STOP_MARGIN = 5.0
"""How long kickstart -k waits beyond ExitTimeOut for the killed instance to be reaped."""
_KICKSTART_STOPPING = "Kickstart failed: 36: Operation now in progress"


class EmulatedDomain:
    """The `Launchd` protocol over real processes, plus `tick`, `wait_idle` and `reap`."""

    def __init__(
        self,
        state_dir: Path,
        *,
        launch_agents: Path,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`clock` (epoch seconds) drives load times, throttling and stop deadlines; by default
        the domain's own clock (lanekit.state.clock: real time plus the offset `tick` moved it on
        by); tests may pass their own. Calendar firing follows the `now` given to `tick`."""
        self.state_dir = Path(state_dir)
        self.launch_agents = Path(launch_agents)
        """Where lanes install their plists for this domain (bootstrap takes any path)."""
        self._state_file = self.state_dir / "domain.json"
        self._lock_file = self.state_dir / "domain.lock"
        self._exits = self.state_dir / "exits"
        self._plists: dict[str, dict[str, object]] = {}
        self._offset = 0.0
        """The state's clock offset, as the current transaction read it."""
        self._clock = self._domain_time if clock is None else clock

    @property
    def domain(self) -> str:
        """`gui/<uid>`, the domain lanes are loaded into."""
        return f"gui/{os.getuid()}"

    @property
    def domain_reason(self) -> str:
        """The emulated domain is chosen off macOS or by LANEKIT_LAUNCHD=emulated."""
        return (
            f"emulated launchd domain under {self.state_dir} "
            "(not macOS, or LANEKIT_LAUNCHD=emulated)"
        )

    # -- the Launchd protocol --------------------------------------------------------------

    def list(self) -> list[ListEntry]:
        """Every loaded job: pid while running, last exit code or minus the signal."""
        return self.read_all(frozenset())[0]

    def print(self, label: str) -> ServiceInfo:
        """What `launchctl print gui/<uid>/<label>` would say; 113 when not loaded."""
        with self._transaction() as state:
            job = self._job(state, label, ("print", f"{self.domain}/{label}"))
            return self._info(job)

    def bootstrap(self, plist: Path) -> None:
        """Load a plist, refusing what launchd refuses; RunAtLoad starts the job."""
        import plistlib

        path = Path(plist).absolute()
        command = ("bootstrap", self.domain, str(path))
        try:
            data = read_plist(path)
        except RefusalError as refusal:
            raise self._fail(refusal.code, command, refusal.line, path=path) from None
        label = str(data["Label"])
        sessions = data.get("LimitLoadToSessionType", EMULATED_SESSION)
        listed = [sessions] if isinstance(sessions, str) else sessions
        if not isinstance(listed, list) or EMULATED_SESSION not in listed:
            line = "Bootstrap failed: 134: Service cannot load in requested session"
            raise self._fail(LaunchctlCode.WRONG_SESSION, command, line, label, path)
        with self._transaction() as state:
            if state.disabled.get(label):
                raise self._fail(
                    LaunchctlCode.DISABLED, command, f"{path}: Service is disabled", label, path
                )
            if label in state.jobs:
                raise self._fail(
                    LaunchctlCode.IO_ERROR, command, f"{path}: service already loaded", label, path
                )
            now = self._clock()
            job = JobEntry(
                label=label,
                path=str(path),
                plist_xml=plistlib.dumps(data).decode(),
                definition=definition_of(data),
                loaded_at=now,
                interval_base=now,
                last_calendar=_minute_key(datetime.fromtimestamp(now)),
            )
            watched = data.get("QueueDirectories")
            if isinstance(watched, list) and watched:
                job.queue_directories = [str(directory) for directory in watched]
            state.jobs[label] = job
            if data.get("RunAtLoad") is True:
                self._start(job, now)
        if job.queue_directories:
            self._watch_queue_directories(label, now)

    def _watch_queue_directories(self, label: str, loaded_at: float) -> None:
        """Start launchd's watch on the job's QueueDirectories (a process of its own, outside
        the domain lock), and start the job now if they already hold something."""
        import functools

        from lanekit.service.emulated.queuewatch import watch
        from lanekit.service.launchd.environ import detach

        detach(functools.partial(watch, self.state_dir, label, loaded_at, self.reap))
        self.reap()

    def bootout(self, label: str) -> None:
        """Unload: SIGTERM now, SIGKILL after ExitTimeOut; returns before the job is gone."""
        command = ("bootout", f"{self.domain}/{label}")
        with self._transaction() as state:
            job = state.jobs.get(label)
            if job is None:
                raise self._fail(
                    LaunchctlCode.NO_SUCH_PROCESS,
                    command,
                    "Boot-out failed: 3: No such process",
                    label,
                )
            if job.booted_out:
                raise self._fail(
                    LaunchctlCode.STILL_STOPPING,
                    command,
                    "Boot-out failed: 36: Operation now in progress",
                    label,
                )
            job.pending_at = None
            if not job.running:
                del state.jobs[label]
                return
            job.booted_out = True
            if not job.stopping:
                self._request_stop(job, self._clock())

    def kickstart(self, label: str, *, kill: bool = False) -> int | None:
        """Start the job now; its pid, or None when throttled (`spawn scheduled`).

        A running job is left alone (its pid is returned) unless `kill`: then it is stopped
        (SIGTERM, SIGKILL after ExitTimeOut) and started again once it is gone, subject to
        ThrottleInterval like every start (so usually `spawn scheduled`, returning None).
        """
        command = ("kickstart", *(["-k"] if kill else []), "-p", f"{self.domain}/{label}")
        with self._transaction() as state:
            job = self._job(state, label, command)
            if job.booted_out:
                raise self._fail(LaunchctlCode.STILL_STOPPING, command, _KICKSTART_STOPPING, label)
            if job.running and not kill:
                return job.pid
            if not job.running:
                return self._start(job, self._clock())
            if not job.stopping:
                self._request_stop(job, self._clock())
            timeout = exit_timeout(self._plist(job))
        deadline = time.monotonic() + (timeout or DEFAULT_EXIT_TIMEOUT) + STOP_MARGIN
        while True:
            with self._transaction() as state:
                job = self._job(state, label, command)
                if not job.running:
                    return self._start(job, self._clock())
                if job.booted_out:
                    raise self._fail(
                        LaunchctlCode.STILL_STOPPING, command, _KICKSTART_STOPPING, label
                    )
            if time.monotonic() >= deadline:
                raise LaunchdError(
                    f"{label}: the running instance (pid {job.pid}) did not exit when stopped",
                    "ExitTimeOut 0 means launchd never sends SIGKILL: stop it with "
                    f"`{cmdline('kill', '-KILL', str(job.pid))}`"
                    if timeout == 0
                    else f"check `{cmdline('ps', '-o', 'pid,stat,command', '-p', str(job.pid))}`;"
                    " a process stuck in the kernel (state D) cannot be killed",
                )
            time.sleep(POLL_SECONDS)

    def kill(self, label: str, signum: int) -> None:
        """Send `signum` to the job's main process, as `launchctl kill` does: the job stays
        loaded, and its watcher records how it ended. Nothing when it is not running; 113
        when it is not loaded."""
        command = ("kill", str(signum), f"{self.domain}/{label}")
        with self._transaction() as state:
            job = self._job(state, label, command)
            if job.running and job.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(job.pid, signum)

    def enable(self, label: str) -> None:
        """Clear the disabled override (persisted)."""
        with self._transaction() as state:
            state.disabled[label] = False

    def disable(self, label: str) -> None:
        """Set the disabled override (persisted); a loaded job keeps running."""
        with self._transaction() as state:
            state.disabled[label] = True

    def print_disabled(self) -> dict[str, bool]:
        """Every override: label -> True when disabled."""
        return self.read_all(frozenset())[1]

    def read_all(
        self, labels: Set[str]
    ) -> tuple[builtins.list[ListEntry], dict[str, bool], dict[str, ServiceInfo]]:
        """`list()`, `print_disabled()` and `print()` of each loaded label of `labels`, from
        ONE read of the state (a read per call decoded domain.json once per lane)."""
        with self._transaction() as state:
            entries = [
                ListEntry(job.pid, job.list_status, label)
                for label, job in sorted(state.jobs.items())
            ]
            infos = {label: self._info(job) for label, job in state.jobs.items() if label in labels}
            return entries, dict(state.disabled), infos

    # -- emulator extras -------------------------------------------------------------------

    def tick(self, now: datetime) -> builtins.list[str]:
        """Fire the calendar and interval jobs due at `now` (naive local wall time).

        Each job fires at most once per minute; one that is running at its firing misses it.
        Returns the labels fired (started, or postponed by ThrottleInterval). Throttled starts
        that have come due are performed too.
        """
        if now.tzinfo is not None:
            now = now.astimezone().replace(tzinfo=None)
        minute = now.replace(second=0, microsecond=0)
        key = _minute_key(minute)
        fired: builtins.list[str] = []
        with self._transaction() as state:
            wall = self._clock()
            for label, job in sorted(state.jobs.items()):
                if job.booted_out:
                    continue
                plist = self._plist(job)
                due = False
                entries = calendar_entries(plist.get("StartCalendarInterval"))
                if entries and job.last_calendar != key and fires_at(entries, minute):
                    job.last_calendar = key
                    due = True
                interval = positive_int(plist.get("StartInterval"))
                if interval is not None:
                    base = job.interval_base if job.interval_base is not None else job.loaded_at
                    elapsed = now.timestamp() - base
                    if elapsed >= interval:
                        job.interval_base = base + (elapsed // interval) * interval
                        due = True
                if due and not job.running:
                    self._start(job, wall)
                    fired.append(label)
        return fired

    def timers(self) -> builtins.list[Timer]:
        """What will start each loaded job on a clock: its calendar entries and StartInterval."""
        with self._transaction() as state:
            found = []
            for label, job in sorted(state.jobs.items()):
                if job.booted_out:
                    continue
                plist = self._plist(job)
                base = job.interval_base if job.interval_base is not None else job.loaded_at
                found.append(
                    Timer(
                        label,
                        calendar_entries(plist.get("StartCalendarInterval")),
                        positive_int(plist.get("StartInterval")),
                        base,
                        job.last_calendar,
                    )
                )
            return found

    def offset(self) -> float:
        """Seconds the domain's clock is ahead of the real one (lanekit.state.clock)."""
        with self._transaction() as state:
            return state.offset

    def clock(self) -> Clock:
        """The domain's clock: what its jobs are told the time is."""
        return Clock(self.offset())

    def set_clock(self, when: float) -> None:
        """Move the domain's clock to `when` (epoch seconds) if that is later than its time
        now; it never moves back. Time flows on from there at the real rate."""
        with self._transaction() as state:
            state.offset = max(state.offset, when - time.time())
            self._offset = state.offset

    def wake(
        self, now: datetime, calendar: Iterable[str], intervals: Mapping[str, float]
    ) -> builtins.list[str]:
        """The Mac wakes at `now` after sleeping: each label in `calendar` had fires while it
        slept and runs once (launchd coalesces them); StartInterval fires during the sleep are
        missed, so `intervals` (label -> the last missed fire) only moves their timers on."""
        fired: builtins.list[str] = []
        key = _minute_key(now.replace(second=0, microsecond=0))
        with self._transaction() as state:
            wall = self._clock()
            for label, base in intervals.items():
                job = state.jobs.get(label)
                if job is not None and not job.booted_out:
                    job.interval_base = base
            for label in sorted(set(calendar)):
                job = state.jobs.get(label)
                if job is None or job.booted_out:
                    continue
                job.last_calendar = key
                if not job.running:
                    self._start(job, wall)
                    fired.append(label)
        return fired

    def wait_idle(self, label: str, timeout: float) -> bool:
        """Wait until `label` has no running process (or is not loaded); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            with self._transaction() as state:
                job = state.jobs.get(label)
                if job is None or not job.running:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)

    def reap(self) -> builtins.list[str]:
        """Collect finished runs, deliver due SIGKILLs and throttled starts; labels that ended."""
        with self._transaction() as state:
            return list(state.ended)

    # -- internals -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[DomainState]:
        """Lock the domain, load it, bring it up to date; write it back if it changed."""
        make_private_dirs(self.state_dir)
        fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = self._read_state_bytes()
            state = self._parse_state(before)
            self._offset = state.offset
            state.ended = self._refresh(state, self._clock())
            try:
                yield state
            finally:
                # Reads (list, print, print_disabled) change nothing: comparing with the state
                # as read (json.loads is C; dumps with indent is pure Python) spares them the
                # encoding, which was most of what a read of the domain cost.
                if not before or not state.same_as(self._parse_state(before)):
                    after = state.to_bytes()
                    if after != before:
                        write_atomic(self._state_file, after)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _domain_time(self) -> float:
        return time.time() + self._offset

    def _read_state_bytes(self) -> bytes:
        # Never blocking, never through a symlink: a FIFO planted at domain.json would hang
        # every command that asks the domain anything (status, kick, apply, doctor); it is
        # refused by type instead (UnsafeStateError, exit 69, with the fix).
        read = read_regular(self._state_file, "emulated launchd state")
        return b"" if read is None else read[0]

    def _parse_state(self, raw: bytes) -> DomainState:
        if not raw:
            return DomainState({}, {})
        try:
            return DomainState.from_bytes(raw)
        except (ValueError, TypeError, AttributeError) as exc:
            raise LaunchdError(
                f"{self._state_file}: emulated launchd state is unreadable ({exc})",
                f"remove {self._state_file} to reset the emulated domain (loaded jobs are "
                "forgotten; running jobs keep running), then run `lanekit apply`",
            ) from None

    def _refresh(self, state: DomainState, now: float) -> builtins.list[str]:
        """Reap ended runs, enforce stop deadlines, drop booted-out jobs, run due starts."""
        ended: builtins.list[str] = []
        for label, job in list(state.jobs.items()):
            if job.running and self._reap(job, now):
                ended.append(label)
            if job.booted_out and not job.running:
                del state.jobs[label]
                continue
            if not job.running and job.pending_at is not None and now >= job.pending_at:
                job.pending_at = None
                self._spawn(job, now)
            elif not job.running and not job.booted_out and job.queue_directories:
                from lanekit.service.emulated.queuewatch import non_empty

                # launchd starts a QueueDirectories job, again and again, while a directory
                # holds anything (ThrottleInterval applies: _start postpones).
                if non_empty(job.queue_directories):
                    self._start(job, now)
        return ended

    def _reap(self, job: JobEntry, now: float) -> bool:
        """True when the job's run has ended (its exit is recorded)."""
        from lanekit.service.launchd.environ import is_alive, read_exit, signal_process

        status_file = Path(job.status_file) if job.status_file else None
        ended = read_exit(status_file) if status_file else None
        if ended is None:
            watcher_alive = is_alive(job.watcher_pid, job.watcher_token)
            if is_alive(job.pid, job.token):
                if job.kill_at is not None and now >= job.kill_at and not watcher_alive:
                    # The watcher owns the SIGKILL; without it, the emulator delivers it.
                    signal_process(job.pid, job.token, signal.SIGKILL)
                return False
            if watcher_alive:
                return False  # the job is gone and the watcher is writing its status
            ended = read_exit(status_file) if status_file else None
        job.record_exit(ended)
        job.clear_run()
        if status_file is not None:
            status_file.unlink(missing_ok=True)
        return True

    def _start(self, job: JobEntry, now: float) -> int | None:
        """A start request (kickstart, timer, RunAtLoad): never a second instance; throttled."""
        if job.running:
            return job.pid
        interval = throttle(self._plist(job))
        if job.last_spawn_at is not None and 0 <= now - job.last_spawn_at < interval:
            due = job.last_spawn_at + interval
            job.pending_at = due if job.pending_at is None else min(job.pending_at, due)
            return None
        job.pending_at = None
        return self._spawn(job, now)

    def _spawn(self, job: JobEntry, now: float) -> int | None:
        from lanekit.service.launchd.environ import spawn
        from lanekit.service.launchd.launch import JobSetupError, launch_for

        launch = with_clock(launch_for(self._plist(job)), self._offset)
        status_file = self._exits / f"{uuid.uuid4().hex}.json"
        make_private_dirs(self._exits)
        try:
            spawned = spawn(launch, status_file=status_file)
        except JobSetupError:
            job.runs += 1
            job.last_spawn_at = now
            job.last_exit_code, job.last_signal, job.last_exit_reason = os.EX_CONFIG, None, None
            return None
        job.runs += 1
        job.last_spawn_at = now
        job.pid, job.token = spawned.pid, spawned.start_token
        job.watcher_pid, job.watcher_token = spawned.watcher_pid, spawned.watcher_token
        job.status_file = str(status_file)
        return spawned.pid

    def _request_stop(self, job: JobEntry, now: float) -> None:
        from lanekit.service.launchd.environ import request_stop

        timeout = exit_timeout(self._plist(job))
        job.stopping = True
        job.kill_at = now + timeout if timeout > 0 else None
        request_stop(job.spawned())

    def _job(self, state: DomainState, label: str, command: tuple[str, ...]) -> JobEntry:
        job = state.jobs.get(label)
        if job is None:
            line = f'Could not find service "{label}" in domain for user gui: {os.getuid()}'
            raise self._fail(LaunchctlCode.NO_SERVICE, command, line, label)
        return job

    def _fail(
        self,
        code: int,
        command: tuple[str, ...],
        line: str,
        label: str | None = None,
        path: Path | None = None,
    ) -> LaunchctlError:
        """The error the real adapter raises for the same failure: same code, same words."""
        # The real adapter's module (and its parsers) only when there is an error to word.
        from lanekit.service.launchd.launchctl_errors import error_for

        return error_for(
            code,
            f"{cmdline('launchctl', *command)}: {line}",
            domain=self.domain,
            label=label,
            path=str(path) if path else None,
        )

    def _plist(self, job: JobEntry) -> dict[str, object]:
        import plistlib

        cached = self._plists.get(job.plist_xml)
        if cached is None:
            loaded = plistlib.loads(job.plist_xml.encode())
            cached = loaded if isinstance(loaded, dict) else {}
            self._plists[job.plist_xml] = cached
        return cached

    def _info(self, job: JobEntry) -> ServiceInfo:
        definition = kept_definition(job.definition) or definition_of(self._plist(job))
        if job.running:
            state = "running"
        elif job.pending_at is not None:
            state = "spawn scheduled"
        else:
            state = "not running"
        return service_info(
            definition,
            label=job.label,
            state=state,
            pid=job.pid,
            last_exit_code=job.last_exit_code,
            last_signal=job.last_signal,
            last_exit_reason=job.last_exit_reason,
            runs=job.runs,
            path=job.path,
            domain=self.domain,
        )


@dataclass(frozen=True, slots=True)
class Timer:
    """What starts one loaded job on a clock (for `lanekit emulator tick`)."""

    label: str
    calendar: tuple[CalendarEntry, ...]
    interval: int | None
    interval_base: float
    """The StartInterval timer counts from here (epoch seconds)."""
    last_calendar: str | None
    """The minute (YYYY-MM-DDTHH:MM) of the last calendar firing handled."""


def _minute_key(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")
