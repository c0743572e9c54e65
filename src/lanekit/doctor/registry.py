"""The registered checks and the context they run in: `@check` registers a check under its
stable id (the registry is filled by importing lanekit.doctor.checks, one module per group, in run
order); DoctorContext is what a check may ask about the world (paths, config, launchd asked once
and shared, the clock, the caller, the lane logs, and the findings of other checks)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from lanekit.doctor.model import Finding, Problem, Scope, SubjectKind, Target
from lanekit.errors import LanekitError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.config import Config, LaneSpec
    from lanekit.queue.protocol import JobQueue
    from lanekit.service.launchd import Launchd, ListEntry, ServiceInfo
    from lanekit.state.paths import Paths

CheckFunc = Callable[[Target, "DoctorContext"], Iterable[Problem]]


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
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check under a stable id; the id's prefix (`plist.`) is its group."""

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
        )
        return func

    return register


def registry() -> Mapping[str, Check]:
    """Every check, in the order they run (cheap file checks first, launchd and queue last)."""
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
        launchd: Launchd | None = None,
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
        self.launchd = launchd
        self.now = now
        self.uid = os.geteuid() if uid is None else uid
        if gids is None:
            gids = [*os.getgroups(), os.getegid()] if uid is None else ()
        self.gids = frozenset(gids)
        self.notes: list[str] = []
        self._listing: dict[str, ListEntry] | None = None
        self._disabled: dict[str, bool] | None = None
        self._services: dict[str, ServiceInfo | None] = {}
        self._launchd_error: LanekitError | None = None
        self._findings: dict[tuple[str, str], list[Finding]] = {}
        self._events: dict[tuple[Path, bool], list[dict[str, str]]] = {}
        """(check id, `kind:subject`) -> findings: a lane and a queue may share a name."""

    # launchd facts ------------------------------------------------------------------------

    @property
    def launchd_available(self) -> bool:
        """True when launchd can be asked (it answered, or has not been asked yet)."""
        if self.launchd is None:
            return False
        self.listing()
        return self._launchd_error is None

    def _unavailable(self, exc: LanekitError) -> None:
        if self._launchd_error is None:
            self._launchd_error = exc
            self.notes.append(skipped_note(exc))

    def listing(self) -> Mapping[str, ListEntry]:
        """label -> `launchctl list` row for every loaded job (one call for all targets)."""
        if self._listing is None:
            self._listing = {}
            if self.launchd is not None:
                try:
                    self._listing = {entry.label: entry for entry in self.launchd.list()}
                except LanekitError as exc:
                    self._unavailable(exc)
        return self._listing

    def disabled(self) -> Mapping[str, bool]:
        """label -> True when launchd has the job disabled."""
        if self._disabled is None:
            self._disabled = {}
            if self.launchd is not None and self.launchd_available:
                try:
                    self._disabled = dict(self.launchd.print_disabled())
                except LanekitError as exc:
                    self._unavailable(exc)
        return self._disabled

    def service(self, label: str) -> ServiceInfo | None:
        """`launchctl print` of a loaded job; None when it is not loaded."""
        if label not in self._services:
            info = None
            if self.launchd is not None and label in self.listing():
                try:
                    info = self.launchd.print(label)
                except LanekitError:
                    info = None  # unloaded between list and print: treat as not loaded
            self._services[label] = info
        return self._services[label]

    def last_exit(self, label: str) -> int | None:
        """The job's last exit status, launchctl-list style: an exit code, or -signal."""
        info = self.service(label)
        if info is not None:
            if info.last_signal:
                return -info.last_signal
            if info.last_exit_code is not None:
                return info.last_exit_code
        entry = self.listing().get(label)
        return entry.last_exit if entry is not None else None

    @property
    def domain(self) -> str:
        """The launchd domain target for fix commands (`gui/501`)."""
        if self.launchd is not None:
            try:
                return self.launchd.domain
            except LanekitError:
                pass
        return f"gui/{os.getuid()}"

    # lanekit facts ------------------------------------------------------------------------

    def queue(self, lane: LaneSpec) -> JobQueue:
        """The lane's queue (not created or checked: checks look, they never change)."""
        from lanekit.queue import open_queue

        return open_queue(lane.queue.dir, durable=lane.queue.durable)

    def lane_events(self, lane: LaneSpec, *, rotated: bool = True) -> list[dict[str, str]]:
        """The lane log's events (with its rotated files when `rotated`), parsed once per
        context: several checks fold over the same log (lanekit.run.lanelog.read_events)."""
        from lanekit.run.lanelog import read_events

        key = (lane.log_path, rotated)
        if key not in self._events:
            self._events[key] = list(read_events(lane.log_path, rotated=rotated))
        return self._events[key]

    def lanes(self) -> Sequence[LaneSpec]:
        """Every lane in lanes.toml (schedule collisions compare a lane with all the others)."""
        return list(self.config.lanes.values()) if self.config is not None else []

    # other checks ---------------------------------------------------------------------------

    def findings(self, check_id: str, target: Target) -> list[Finding]:
        """The findings of one check on one target (computed once, shared)."""
        key = (check_id, f"{target.kind}:{target.subject}")
        if key not in self._findings:
            chk = registry()[check_id]
            found: list[Finding] = []
            if chk.applies_to(target) and (not chk.needs_launchd or self.launchd_available):
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
