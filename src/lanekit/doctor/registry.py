"""The registered checks and the context they run in: `@check` registers a check under its
stable id (the registry is filled by importing lanekit.doctor.checks, one module per group, in run
order); DoctorContext is what a check may ask about the world (paths, config, launchd asked once
and shared, the clock, the caller, the lane logs, and the findings of other checks)."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lanekit.doctor.model import Finding, Problem, Scope, SubjectKind, Target
from lanekit.errors import LanekitError, UsageError
from lanekit.service.manager import EVERY_MANAGER, ManagerKind

if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.config import Config, LaneSpec
    from lanekit.queue.protocol import JobQueue
    from lanekit.schedule import Collision
    from lanekit.service.launchd import Launchd
    from lanekit.service.manager import LaneObservation, Observation, ServiceManager
    from lanekit.state.paths import Paths

CheckFunc = Callable[[Target, "DoctorContext"], Iterable[Problem]]


@dataclass(frozen=True, slots=True)
class Tally:
    """What an alert check counts (jobs in failed/), so the watchdog alerts again when the
    count grows while the finding stays open, naming how many are new."""

    count: Callable[[Target, DoctorContext], int | None]
    """The count now; None when it cannot be told."""
    grew: Callable[[Target, int, int], Problem]
    """The problem worded for `new` more since the last pass, `total` now."""


@dataclass(frozen=True, slots=True)
class Check:
    """A registered check."""

    id: str
    group: str
    summary: str
    """What the check looks for, shown by `--list-checks`."""
    func: CheckFunc
    needs_lane: bool = False
    """Needs lanekit knowledge (queue, job command, lane log): skipped for foreign plists."""
    needs_plist: bool = True
    """Needs a parsed plist: skipped when the plist is missing or invalid."""
    needs_launchd: bool = False
    """Asks launchd (real or emulated): skipped when launchd cannot be reached."""
    scope: Scope = Scope.JOB
    """Queue checks run on queue subjects only; the others on lanes and plists only."""
    uses_launchd: bool = False
    """Asks launchd when it can be reached, and still answers (less precisely) when not."""
    alert: bool = False
    """The watchdog (`lanekit watch`) alerts on its findings: a problem that stops work."""
    tally: Tally | None = None
    """What it counts, for the watchdog to alert again when that grows (alert checks only)."""
    managers: frozenset[ManagerKind] = EVERY_MANAGER
    """The service managers whose lanes the check applies to (launchd's sessions, Background
    Items and login rules are not the emulated domain's)."""

    @property
    def asks_launchd(self) -> bool:
        """Whether the check consults launchd at all: `doctor --check ID` must then open it,
        or a check run alone would answer differently from a full run."""
        return self.needs_launchd or self.uses_launchd

    def applies_to(self, target: Target) -> bool:
        """Whether this check has what it needs to examine `target`."""
        if (self.scope is Scope.QUEUE) != (target.kind is SubjectKind.QUEUE):
            return False
        if self.needs_lane and target.lane is None:
            return False
        return not (self.needs_plist and target.plist is None)


_REGISTRY: dict[str, Check] = {}


def check(
    check_id: str,
    *,
    summary: str,
    needs_lane: bool = False,
    needs_plist: bool = True,
    needs_launchd: bool = False,
    uses_launchd: bool = False,
    scope: Scope = Scope.JOB,
    alert: bool = False,
    tally: Tally | None = None,
    managers: frozenset[ManagerKind] = EVERY_MANAGER,
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check under a stable id; the id's prefix (`plist.`) is its group."""
    if tally is not None and not alert:
        raise ValueError(f"check {check_id!r}: a tally is for the watchdog's alert checks")

    def register(func: CheckFunc) -> CheckFunc:
        if check_id in _REGISTRY:
            raise ValueError(f"check {check_id!r} is registered twice")
        _REGISTRY[check_id] = Check(
            id=check_id,
            group=check_id.split(".", 1)[0],
            summary=summary,
            func=func,
            needs_lane=needs_lane,
            needs_plist=needs_plist,
            needs_launchd=needs_launchd,
            uses_launchd=uses_launchd,
            scope=scope,
            alert=alert,
            tally=tally,
            managers=managers,
        )
        return func

    return register


def registry() -> Mapping[str, Check]:
    """Every check, in the order they run (cheap file checks first, launchd and queue last)."""
    if "lanekit.doctor.checks" not in sys.modules:  # asked per check and target: no import
        import lanekit.doctor.checks  # noqa: F401  (importing the package registers its checks)

    return _REGISTRY


def select_checks(ids: Sequence[str]) -> list[Check]:
    """The checks named by `--check` (all when empty); an unknown id is a UsageError."""
    checks = registry()
    if not ids:
        return list(checks.values())
    chosen: list[Check] = []
    for check_id in ids:
        if check_id not in checks:
            close = difflib.get_close_matches(check_id, list(checks), n=1)
            hint = f"did you mean {close[0]}?" if close else "see `lanekit doctor --list-checks`"
            raise UsageError(f"--check {check_id}: no such check", hint)
        if checks[check_id] not in chosen:
            chosen.append(checks[check_id])
    return [c for c in checks.values() if c in chosen]


def alert_checks() -> list[Check]:
    """The checks the watchdog alerts on (`@check(..., alert=True)`), in run order."""
    return [chk for chk in registry().values() if chk.alert]


def list_checks() -> list[Check]:
    """Every registered check, for `--list-checks`."""
    return list(registry().values())


def skipped_note(exc: LanekitError) -> str:
    """The note for launchd checks doctor could not make: why, and the fix when there is one
    (an emulated domain whose state file is a FIFO is refused, not waited on)."""
    note = f"launchd checks skipped: {exc.message}"
    return f"{note}; {exc.hint}" if exc.hint else note


class DoctorContext:
    """What checks may ask about the world: paths, config, launchd, the clock and the caller.

    launchd answers are fetched once and shared by every check; a check may also ask for the
    findings of another check (`findings`), e.g. exit 78 names its likely cause.
    """

    def __init__(
        self,
        paths: Paths,
        *,
        config: Config | None = None,
        launchd: Launchd | ServiceManager | None = None,
        now: Callable[[], datetime] = datetime.now,
        uid: int | None = None,
        gids: Iterable[int] | None = None,
        missed_after: timedelta | None = None,
        stale_claim_after: float | None = None,
    ) -> None:
        """`now` returns naive local wall time (schedules are local); `uid`/`gids` are whose
        write access the file checks judge (the caller's by default). `missed_after` is how
        long after a fire a run may take to leave its trace (lane.missed-run's default grace
        when None); `stale_claim_after` (seconds) makes a claim that old a finding even while
        its runner lives (`[watch]` sets both)."""
        self.paths = paths
        self.missed_after = missed_after
        self.stale_claim_after = stale_claim_after
        self.config = config
        self.manager: ServiceManager | None = None
        """The service manager (launchd's, or the emulated domain's), None without one."""
        if launchd is not None:
            from lanekit.service import manager_of

            self.manager = manager_of(launchd, paths.launch_agents)
        self.launchd: Launchd | None = getattr(self.manager, "launchd", None)
        """launchd's own verbs, under a launchd-based manager (launchd-only checks ask them)."""
        self.now = now
        self.uid = os.geteuid() if uid is None else uid
        if gids is None:
            gids = [*os.getgroups(), os.getegid()] if uid is None else ()
        self.gids = frozenset(gids)
        self.notes: list[str] = []
        self._expected: set[str] = set()
        self._observation: Observation | None = None
        self._collisions: list[Collision] | None = None
        self._launchd_error: LanekitError | None = None
        self._findings: dict[tuple[str, SubjectKind, str], list[Finding]] = {}
        """(check id, kind, subject) -> findings: a lane and a queue may share a name."""
        self._events: dict[Path, list[dict[str, str]]] = {}

    # the service manager's facts -----------------------------------------------------------

    @property
    def manager_kind(self) -> ManagerKind | None:
        """Which manager runs the lanes (checks declare which ones they apply to)."""
        return self.manager.kind if self.manager is not None else None

    def expect(self, labels: Iterable[str]) -> None:
        """The labels the checks will ask about: observed together, in one call (one more
        observation when a label comes after the first)."""
        new = set(labels) - self._expected
        if new:
            self._expected |= new
            self._observation = None

    @property
    def launchd_available(self) -> bool:
        """True when the manager can be asked (it answered, or has not been asked yet)."""
        if self.manager is None:
            return False
        self.observation()
        return self._launchd_error is None

    def _unavailable(self, exc: LanekitError) -> None:
        if self._launchd_error is None:
            self._launchd_error = exc
            self.notes.append(skipped_note(exc))

    def observation(self, label: str | None = None) -> Observation:
        """ONE observation of every expected label (and `label`), shared by every check; a
        label asked about later than the first observation is observed again with it."""
        from lanekit.service.manager import Observation

        if label is not None and label not in self._expected:
            self.expect([label])
        if self._observation is None:
            self._observation = Observation({})
            manager = self.manager
            if manager is not None and self._launchd_error is None:
                try:
                    self._observation = manager.observe(self._expected)
                except LanekitError as exc:
                    self._unavailable(exc)
        return self._observation

    def seen(self, label: str) -> LaneObservation:
        """What the manager says of one job (loaded, disabled, pid, last exit, definition),
        from the shared observation."""
        return self.observation(label)[label]

    def collisions(self) -> Sequence[Collision]:
        """Pairs of lanes of one queue that fire in the same minute (found once, for every
        lane: a search per lane grew with the cube of the lane count)."""
        if self._collisions is None:
            from lanekit.schedule import find_collisions

            self._collisions = find_collisions(self.lanes(), after=self.now())
        return self._collisions

    @property
    def domain(self) -> str:
        """The launchd domain target for fix commands (`gui/501`)."""
        if self.manager is not None:
            try:
                return self.manager.domain
            except LanekitError:
                pass
        return f"gui/{os.getuid()}"

    # lanekit facts ------------------------------------------------------------------------

    def queue(self, lane: LaneSpec) -> JobQueue:
        """The lane's queue (not created or checked: checks look, they never change)."""
        from lanekit.queue import open_queue

        return open_queue(lane.queue.dir, durable=lane.queue.durable)

    def lane_events(self, lane: LaneSpec, *, rotated: bool = True) -> list[dict[str, str]]:
        """The lane log's events (with its rotated files when `rotated`), each file parsed
        once per context: several checks fold over the same log, some with its rotated files
        and some without (lanekit.run.lanelog.read_events), and parsing is most of a pass."""
        from lanekit.run.lanelog import log_files, read_events

        events: list[dict[str, str]] = []
        for name in log_files(lane.log_path, rotated=rotated):
            if name not in self._events:
                self._events[name] = list(read_events(name))
            events += self._events[name]
        return events

    def lanes(self) -> Sequence[LaneSpec]:
        """Every lane in lanes.toml (schedule collisions compare a lane with all the others)."""
        return list(self.config.lanes.values()) if self.config is not None else []

    # other checks ---------------------------------------------------------------------------

    def findings(self, check_id: str, target: Target) -> list[Finding]:
        """The findings of one check on one target (computed once, shared)."""
        key = (check_id, target.kind, target.subject)
        if key not in self._findings:
            chk = registry()[check_id]
            found: list[Finding] = []
            label = target.label
            if label is not None and label not in self._expected:
                self.expect([label])
            kind = self.manager_kind
            runs_here = kind is None or kind in chk.managers
            if (
                runs_here
                and chk.applies_to(target)
                and (not chk.needs_launchd or self.launchd_available)
            ):
                for problem in chk.func(target, self):
                    found.append(
                        Finding(
                            id=chk.id,
                            severity=problem.severity,
                            subject=target.subject,
                            message=problem.message,
                            fix=problem.fix,
                            kind=target.kind,
                            lanes=target.lanes,
                        )
                    )
            self._findings[key] = found
        return self._findings[key]
