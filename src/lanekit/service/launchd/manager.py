"""launchd as a `ServiceManager` (lanekit.service.manager): the seam's facts from launchd's own
verbs, spoken through the inner `Launchd` protocol (launchctl, or a test's fake).

An observation is one `list()`, one `print_disabled()` and one `print()` per loaded lane asked
about: launchd has no call that prints several jobs, and only `print` tells runs, the signal
and the loaded definition. The emulated domain answers the same in one read of its state
(lanekit.service.emulated.manager).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from lanekit.errors import Refusal, ServiceError
from lanekit.service.exits import describe_exit
from lanekit.service.launchd.codes import NOT_LOADED, STILL_LOADED, LaunchctlCode
from lanekit.service.launchd.model import (
    FAILED_REAP,
    LaunchctlError,
    Launchd,
    ListEntry,
    PlistError,
    ServiceInfo,
    load_plist,
)
from lanekit.service.manager import LaneObservation, ManagerKind, Observation, Stopped

if TYPE_CHECKING:
    from lanekit.config import LaneSpec
    from lanekit.service.artifacts import Artifacts, JobDefinition

POLL_SECONDS = 0.05

Facts = tuple[list[ListEntry], Mapping[str, bool], dict[str, ServiceInfo]]
"""What one observation reads: the list rows, the disabled overrides, `print` of the loaded
labels asked about."""


class LaunchdManager:
    """The `ServiceManager` over one launchd domain (`launchd`, the inner seam)."""

    kind = ManagerKind.LAUNCHD

    def __init__(self, launchd: Launchd, install_dir: Path) -> None:
        self.launchd = launchd
        """The inner seam: launchd's own verbs (launchd-only doctor checks read it)."""
        self._install_dir = Path(install_dir)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.launchd!r}, {str(self._install_dir)!r})"

    @property
    def domain(self) -> str:
        """The domain target, e.g. `gui/501`."""
        return self.launchd.domain

    @property
    def domain_reason(self) -> str:
        """Why lanes live in this domain, in words."""
        return self.launchd.domain_reason

    @property
    def install_dir(self) -> Path:
        """The LaunchAgents directory."""
        return self._install_dir

    def artifact_path(self, label: str) -> Path:
        """`<LaunchAgents>/<label>.plist`."""
        return self._install_dir / f"{label}.plist"

    def artifact_paths(self, label: str) -> tuple[Path, ...]:
        """The plist alone."""
        return (self.artifact_path(label),)

    def render(
        self, lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
    ) -> Artifacts:
        """The lane's plist, and its dictionary (jinja2, imported only when rendering)."""
        from lanekit.service.artifacts import Artifacts
        from lanekit.service.launchd.plist import rendered_lane

        data, job = rendered_lane(
            lane, interpreter=interpreter, snapshot=snapshot, templates=templates
        )
        return Artifacts(self._install_dir, {self.artifact_path(lane.label).name: data}, job)

    def installed(self) -> dict[str, Path]:
        """label -> plist for every *.plist in the LaunchAgents directory (named for its
        label, as lanekit writes them)."""
        if not self._install_dir.is_dir():
            return {}
        return {path.stem: path for path in sorted(self._install_dir.glob("*.plist"))}

    def define(self, artifact: bytes) -> JobDefinition:
        """The plist's job as launchd reads it; ValueError (why) when launchd would not load
        it as a job (`read_job`)."""
        return plist_definition(read_job(artifact), artifact.decode("utf-8", "replace"))

    def observe(
        self, labels: Iterable[str], wanted: Mapping[str, bytes] | None = None
    ) -> Observation:
        """Every lane of `labels`, from one read of the domain (`_facts`)."""
        asked = frozenset(labels)
        entries, overrides, infos = self._facts(asked)
        listed = {entry.label: entry for entry in entries}
        disabled = frozenset(label for label, off in overrides.items() if off)
        lanes = {
            label: _lane(
                label,
                listed.get(label),
                infos.get(label),
                label in disabled,
                (wanted or {}).get(label),
            )
            for label in asked
        }
        return Observation(lanes, frozenset(listed), disabled)

    def _facts(self, labels: Set[str]) -> Facts:
        entries = self.launchd.list()
        overrides = self.launchd.print_disabled()
        infos: dict[str, ServiceInfo] = {}
        for entry in entries:
            if entry.label not in labels:
                continue
            try:
                infos[entry.label] = self.launchd.print(entry.label)
            except LaunchctlError as exc:
                # Booted out between list() and print(): judged on list()'s row alone.
                if exc.code not in NOT_LOADED:
                    raise
        return entries, overrides, infos

    def observe_lane(self, label: str) -> LaneObservation:
        """One `print` of the label; not loaded (3/113) is an unloaded lane."""
        try:
            info = self.launchd.print(label)
        except LaunchctlError as exc:
            if exc.code in NOT_LOADED:
                return LaneObservation(label)
            raise
        return _lane(label, ListEntry(info.pid, None, label), info, False, None)

    def loaded(self) -> dict[str, int | None]:
        """One `list()`."""
        return {entry.label: entry.pid for entry in self.launchd.list()}

    def load(self, artifact: Path) -> None:
        """`launchctl bootstrap DOMAIN PLIST`; 5/37 from it (only) mean the previous instance
        still drains: the seam's BUSY (the error is otherwise raised unchanged)."""
        try:
            self.launchd.bootstrap(artifact)
        except LaunchctlError as exc:
            if exc.code in STILL_LOADED:
                exc.reason = Refusal.BUSY
            raise

    def unload(self, label: str, *, grace: float = 0.0) -> bool:
        """bootout (asynchronous in launchd), then poll list() up to `grace` seconds. Not
        loaded (3/113) is gone; already stopping (36) is on its way out."""
        try:
            self.launchd.bootout(label)
        except LaunchctlError as exc:
            if exc.code in NOT_LOADED:
                return True
            if exc.code != LaunchctlCode.STILL_STOPPING:
                raise
        if grace <= 0:
            return False
        deadline = time.monotonic() + grace
        while label in self.loaded():
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def kick(self, label: str, *, kill: bool = False) -> int | None:
        """`launchctl kickstart [-k] -p`; 3/113: NOT_LOADED."""
        try:
            return self.launchd.kickstart(label, kill=kill)
        except LaunchctlError as exc:
            if exc.code in NOT_LOADED:
                exc.reason = Refusal.NOT_LOADED
            raise

    def stop(self, label: str, *, kill_after: float | None, grace: float) -> Stopped:
        """`launchctl kill SIGTERM`, then poll list() for the pid to go: `launchctl kill
        SIGKILL` once `kill_after` passed (what a bootout does after ExitTimeOut), until
        `grace`. 113: NOT_LOADED."""
        loaded = self.loaded()
        if label not in loaded:
            self._not_loaded(label)
        pid = loaded[label]
        if pid is None:
            return Stopped(pid=None, ended=True)
        started = time.monotonic()
        self._signal(label, signal.SIGTERM)
        killed = False
        while self.loaded().get(label) == pid:
            waited = time.monotonic() - started
            if not killed and kill_after is not None and waited >= kill_after:
                self._signal(label, signal.SIGKILL)
                killed = True
            if waited >= grace:
                return Stopped(pid=pid, ended=False, killed=killed)
            time.sleep(POLL_SECONDS)
        return Stopped(pid=pid, ended=True, killed=killed)

    def _signal(self, label: str, signum: int) -> None:
        try:
            self.launchd.kill(label, signum)
        except LaunchctlError as exc:
            if exc.code in NOT_LOADED:
                exc.reason = Refusal.NOT_LOADED
            raise

    def _not_loaded(self, label: str) -> NoReturn:
        error = ServiceError(
            f"{label} is not loaded in {self.domain}", "run `lanekit apply` to load it"
        )
        error.reason = Refusal.NOT_LOADED
        raise error

    def disable(self, label: str) -> None:
        """`launchctl disable`."""
        self.launchd.disable(label)

    def enable(self, label: str) -> None:
        """`launchctl enable`."""
        self.launchd.enable(label)

    def forget(self, label: str) -> None:
        """Nothing: launchd keeps nothing of a lane once it is booted out."""

    def describe_exit(
        self, exit_code: int | None, sig: int | None = None, *, lanekit_runner: bool = True
    ) -> str:
        """lanekit.service.exits' wording (launchd's 78, the shell's 126/127, signals)."""
        return describe_exit(exit_code, sig, lanekit_runner=lanekit_runner)


def read_job(data: bytes) -> dict[str, Any]:
    """A plist's job dictionary; ValueError saying why it is not a job launchd would load."""
    try:
        job = load_plist(data)
    except PlistError as exc:
        raise ValueError(f"is not a valid property list ({exc})") from None
    if not isinstance(job, dict):
        raise ValueError(f"holds a {type(job).__name__}, not a dictionary")
    label = job.get("Label")
    if not isinstance(label, str) or not label:
        raise ValueError("has no Label string")
    args = job.get("ProgramArguments")
    program = job.get("Program")
    if program is not None and not isinstance(program, str):
        raise ValueError("has a Program that is not a string")
    if args is not None and (
        not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args)
    ):
        raise ValueError("has a ProgramArguments that is not a non-empty array of strings")
    if program is None and args is None:
        raise ValueError("has neither Program nor ProgramArguments")
    return job


def plist_definition(job: Mapping[str, Any], text: str = "") -> JobDefinition:
    """How launchd reads a plist's job: ProgramArguments (or [Program]); Program, else
    argv[0], is what it executes; only string variables count; a relative log path starts at
    WorkingDirectory. Values launchd would ignore (wrong types) are left out."""
    from lanekit.service.artifacts import JobDefinition

    args = job.get("ProgramArguments")
    program = job.get("Program")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        argv = tuple(args)
    else:
        argv = (program,) if isinstance(program, str) else ()
    if not (isinstance(program, str) and program):
        program = argv[0] if argv else None
    env = job.get("EnvironmentVariables")
    variables = (
        {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
        if isinstance(env, dict)
        else {}
    )
    calendar = job.get("StartCalendarInterval")
    tables = calendar if isinstance(calendar, list) else [calendar] if calendar else []
    label = job.get("Label")
    return JobDefinition(
        label=label if isinstance(label, str) else "",
        argv=argv,
        program=program,
        env=variables,
        cwd=_text(job.get("WorkingDirectory")),
        stdout=_text(job.get("StandardOutPath")),
        stderr=_text(job.get("StandardErrorPath")),
        calendar=tuple(
            {k: v for k, v in t.items() if isinstance(v, int)}
            for t in tables
            if isinstance(t, dict)
        ),
        interval=_count(job.get("StartInterval")),
        exit_timeout=_count(job.get("ExitTimeOut"), zero=True),
        throttle=_count(job.get("ThrottleInterval"), zero=True),
        text=text,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: object, *, zero: bool = False) -> int | None:
    """A plist integer launchd acts on (above 0, or 0 too), else None."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (value > 0 or (zero and value == 0))
    ):
        return value
    return None


def _lane(
    label: str,
    entry: ListEntry | None,
    info: ServiceInfo | None,
    disabled: bool,
    wanted: bytes | None,
) -> LaneObservation:
    """One lane's facts: `print`'s when it answered (it knows the signal and the runs), else
    the list row's (its status is an exit code or minus the signal)."""
    if entry is None:
        return LaneObservation(label, disabled=disabled)
    exit_code: int | None = None
    sig: int | None = None
    if info is not None and (info.last_signal is not None or info.last_exit_code is not None):
        exit_code, sig = info.last_exit_code, info.last_signal
    elif entry.last_exit is not None and entry.last_exit < 0:
        sig = -entry.last_exit
    else:
        exit_code = entry.last_exit
    return LaneObservation(
        label,
        loaded=True,
        disabled=disabled,
        pid=entry.pid,
        exit_code=exit_code,
        signal=sig,
        runs=info.runs if info is not None else None,
        lost=info is not None and info.last_exit_reason == FAILED_REAP,
        definition=info,
        stale=_stale(wanted, info),
    )


def _stale(wanted: bytes | None, info: ServiceInfo | None) -> tuple[str, ...]:
    """How the loaded definition differs from the plist `wanted` (launchd/definition.py)."""
    if wanted is None or info is None:
        return ()
    from lanekit.service.launchd.definition import differences

    try:
        plist = load_plist(wanted)
    except PlistError:  # an unreadable file is not ours to compare
        return ()
    if not isinstance(plist, dict):
        return ()
    return tuple(str(difference) for difference in differences(plist, info))
