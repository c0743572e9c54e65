"""`lanekit doctor`: a registry of named checks that explain why a launchd job stays silent.

Each check has a stable id (`path.command-missing`, `launchd.exit-78`, ...) and yields problems;
the runner stamps them with the id and the subject (a lane name, a plist path, or a queue) and
returns findings, most severe first per subject. A queue's problems (stale claims, failed jobs,
...) are the queue's, not its lanes': queue-scoped checks run once per queue, on a queue subject
that lists the lanes draining it, so a queue shared by five lanes is not reported five times.
Checks run on lanekit lanes (lanes.toml + what is installed + what launchd says) and on any
plist file; a check that needs lanekit knowledge (the queue, the job command, the lane log) is
skipped for a plist lanekit did not write.

The checks themselves live in `lanekit.checks` (one module per group) and register here with
the `@check` decorator.
"""

from __future__ import annotations

import difflib
import os
import plistlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.errors import ExitCode, LanekitError, UsageError
from lanekit.owned import read_regular
from lanekit.ownership import MARKER

if TYPE_CHECKING:
    from lanekit.config import Config, LaneSpec
    from lanekit.launchd import Launchd, ListEntry, ServiceInfo
    from lanekit.paths import Paths
    from lanekit.queue import JobQueue

DOCTOR_SCHEMA = 2
"""Version of the `lanekit doctor --json` document (docs/json.md).

History: 1 - findings with id, severity, subject, message, fix; the queue checks reported on
every lane of the queue. 2 - findings carry `subject_kind` (lane, plist, queue) and `lanes`;
queue checks report once, with the queue as subject."""


class SubjectKind(StrEnum):
    """What a finding is about."""

    LANE = "lane"
    PLIST = "plist"
    """A plist lanekit did not write (subject: its path)."""
    QUEUE = "queue"
    """A queue of lanes.toml (subject: its name); `lanes` are the lanes that drain it."""


class Scope(StrEnum):
    """What a check examines."""

    JOB = "job"
    """A lane or a plist (the launchd job)."""
    QUEUE = "queue"
    """A queue, once, whichever lanes drain it."""


class Severity(StrEnum):
    """How bad a finding is. Any error makes `lanekit doctor` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe; findings sort on it."""
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True, slots=True)
class Problem:
    """What a check yields: the runner adds the check id and the subject."""

    severity: Severity
    message: str
    """One sentence: what is wrong and what it causes."""
    fix: str
    """A command to run or an edit to make."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found by one named check, about one lane or plist."""

    id: str
    """The check id, stable across releases (`path.command-missing`)."""
    severity: Severity
    subject: str
    """The lane name, or the plist path for a plist lanekit did not write."""
    message: str
    fix: str
    kind: SubjectKind = SubjectKind.LANE
    lanes: tuple[str, ...] = ()
    """The lane (for a lane), or the lanes that drain the queue (for a queue)."""

    def to_json(self) -> dict[str, Any]:
        """The finding as it appears in `doctor --json` (keys pinned by a contract test)."""
        return {
            "id": self.id,
            "severity": str(self.severity),
            "subject": self.subject,
            "subject_kind": str(self.kind),
            "lanes": list(self.lanes),
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class Target:
    """One thing doctor examines: a lanekit lane, or a plist file.

    `plist` is the job as launchd would load it: the installed (or given) file when it exists
    and parses, else, for a lane that is not installed yet, the plist `apply` would write.
    """

    subject: str
    plist_path: Path | None
    """Where the plist is (or would be) installed; None only for a lane that cannot render."""
    plist: Mapping[str, Any] | None
    """The parsed job; None when the file does not parse (see `plist_error`)."""
    plist_error: str | None = None
    installed: bool = False
    """True when `plist_path` exists (a lane may not be installed yet)."""
    lane: LaneSpec | None = None
    """Set for lanekit lanes only; checks that need it skip foreign plists. For a queue: the
    first of its lanes (fix commands name it; `lanekit recover LANE` acts on its queue)."""
    kind: SubjectKind = SubjectKind.LANE
    drained_by: tuple[LaneSpec, ...] = ()
    """For a queue: every lane (of those examined) that drains it, in lanes.toml order."""

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lane names a finding on this target lists."""
        if self.kind is SubjectKind.QUEUE:
            return tuple(lane.name for lane in self.drained_by)
        return (self.lane.name,) if self.lane is not None else ()

    @property
    def label(self) -> str | None:
        """The launchd label: the plist's Label, else the lane's."""
        if self.plist is not None:
            label = self.plist.get("Label")
            if isinstance(label, str) and label:
                return label
        return self.lane.label if self.lane is not None else None


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
    import lanekit.checks  # noqa: F401  (importing the package registers its checks)

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
            self.notes.append(f"launchd checks skipped: {exc.message}")

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
        context: several checks fold over the same log (lanekit.lanelog.read_events)."""
        from lanekit.lanelog import read_events

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


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """What `lanekit doctor` found: findings grouped by subject, most severe first."""

    findings: tuple[Finding, ...]
    subjects: tuple[str, ...]
    """Everything examined, in order (a subject with no findings is healthy)."""
    checks: tuple[str, ...]
    """The ids of the checks that ran."""
    notes: tuple[str, ...] = ()
    """Why some checks could not run (e.g. launchd unreachable)."""

    @property
    def exit_code(self) -> ExitCode:
        """1 when any finding is an error, else 0."""
        if any(f.severity is Severity.ERROR for f in self.findings):
            return ExitCode.FAILURE
        return ExitCode.OK

    def count(self, severity: Severity) -> int:
        """How many findings have this severity."""
        return sum(1 for f in self.findings if f.severity is severity)

    def summary(self) -> dict[str, int]:
        """Counts for the JSON summary and the closing line of the table."""
        return {
            "errors": self.count(Severity.ERROR),
            "warnings": self.count(Severity.WARNING),
            "info": self.count(Severity.INFO),
            "subjects": len(self.subjects),
            "checks": len(self.checks),
        }

    def to_json(self) -> dict[str, Any]:
        """The versioned `doctor --json` document."""
        return {
            "schema": DOCTOR_SCHEMA,
            "findings": [f.to_json() for f in self.findings],
            "summary": self.summary(),
            "notes": list(self.notes),
        }


def run_checks(
    targets: Sequence[Target], ctx: DoctorContext, checks: Sequence[Check] | None = None
) -> DoctorReport:
    """Run `checks` (all by default) on every target."""
    chosen = list(registry().values()) if checks is None else list(checks)
    order = {c.id: i for i, c in enumerate(registry().values())}
    findings: list[Finding] = []
    for target in targets:
        found: list[Finding] = []
        for chk in chosen:
            found.extend(ctx.findings(chk.id, target))
        found.sort(key=lambda f: (f.severity.rank, order[f.id]))
        findings.extend(found)
    return DoctorReport(
        findings=tuple(findings),
        subjects=tuple(t.subject for t in targets),
        checks=tuple(c.id for c in chosen),
        notes=tuple(ctx.notes),
    )


# targets ------------------------------------------------------------------------------------


def read_plist(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a plist file: (job, None), or (None, why it is not a usable launchd job)."""
    try:
        read = read_regular(path, "plist", follow=True)
    except LanekitError as exc:  # a FIFO or device named *.plist: never read (it would block)
        return None, exc.message.removeprefix(f"{path}: plist ")
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    if read is None:
        return None, "cannot be read (No such file or directory)"
    data = read[0]
    try:
        job = plistlib.loads(data)
    except Exception as exc:  # plistlib raises expat, ValueError, binascii and more
        return None, f"is not a valid property list ({exc})"
    if not isinstance(job, dict):
        return None, f"holds a {type(job).__name__}, not a dictionary"
    label = job.get("Label")
    if not isinstance(label, str) or not label:
        return None, "has no Label string"
    args = job.get("ProgramArguments")
    program = job.get("Program")
    if program is not None and not isinstance(program, str):
        return None, "has a Program that is not a string"
    if args is not None and (
        not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args)
    ):
        return None, "has a ProgramArguments that is not a non-empty array of strings"
    if program is None and args is None:
        return None, "has neither Program nor ProgramArguments"
    return job, None


def lane_interpreter(installed: Mapping[str, Any] | None) -> str:
    """The interpreter a rendered lane plist names: the installed one's, else this Python.

    Using the installed interpreter keeps doctor from reporting drift merely because it runs
    from another virtualenv than the one `apply` ran from.
    """
    if installed is not None:
        args = installed.get("ProgramArguments")
        if isinstance(args, list) and args and isinstance(args[0], str) and args[0]:
            return args[0]
    return sys.executable


def lane_target(lane: LaneSpec, paths: Paths) -> Target:
    """A lanekit lane: its installed plist when present, else what `apply` would install."""
    from lanekit.plist import lane_plist

    path = paths.plist_for(lane.label)
    if path.exists():
        job, error = read_plist(path)
        return Target(
            subject=lane.name,
            plist_path=path,
            plist=job,
            plist_error=error,
            installed=True,
            lane=lane,
        )
    model = lane_plist(lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label))
    return Target(subject=lane.name, plist_path=path, plist=model, installed=False, lane=lane)


def plist_target(path: Path, config: Config | None) -> Target:
    """Any plist file; it is treated as a lanekit lane only when it carries lanekit's marker
    and names a lane of the loaded lanes.toml with the same label."""
    if not path.exists():
        raise UsageError(f"{path}: no such plist", "give the path of a .plist file")
    job, error = read_plist(path)
    lane = None
    if job is not None and config is not None:
        env = job.get("EnvironmentVariables")
        name = env.get(MARKER) if isinstance(env, dict) else None
        candidate = config.lanes.get(name) if isinstance(name, str) else None
        if candidate is not None and candidate.label == job.get("Label"):
            lane = candidate
    subject = lane.name if lane is not None else str(path)
    return Target(
        subject=subject,
        plist_path=path,
        plist=job,
        plist_error=error,
        installed=True,
        lane=lane,
        kind=SubjectKind.LANE if lane is not None else SubjectKind.PLIST,
    )


def queue_targets(examined: Sequence[LaneSpec], config: Config) -> list[Target]:
    """One target per queue the examined lanes drain (in order of first appearance), each
    listing every lane of lanes.toml that drains it."""
    wanted = list(dict.fromkeys(lane.queue.name for lane in examined))
    by_queue: dict[str, list[LaneSpec]] = {name: [] for name in wanted}
    for lane in config.lanes.values():
        if lane.queue.name in by_queue:
            by_queue[lane.queue.name].append(lane)
    return [
        Target(
            subject=name,
            plist_path=None,
            plist=None,
            lane=drainers[0],
            kind=SubjectKind.QUEUE,
            drained_by=tuple(drainers),
        )
        for name, drainers in by_queue.items()
    ]


@dataclass(frozen=True, slots=True)
class DoctorRequest:
    """What `lanekit doctor` was asked to examine."""

    lanes: tuple[str, ...] = ()
    plists: tuple[Path, ...] = ()
    all_plists: bool = False
    checks: tuple[str, ...] = ()
    config_path: Path | None = None
    project: Path | None = None
    """`--project`: one installed project, from anywhere (lanekit.projects)."""


def diagnose(
    request: DoctorRequest,
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    launchd: Launchd | None = None,
    now: Callable[[], datetime] | None = None,
    uid: int | None = None,
) -> DoctorReport:
    """The core of `lanekit doctor`: load what is asked, run the checks, return the report.

    `now` (naive local wall time) defaults to the clock of the launchd backend in use
    (lanekit.clock: the emulated domain's time on the emulated one), so ages and missed runs
    are judged by the time the runners logged by.

    lanes.toml is required when lanes are examined; with `--plist`/`--all` alone it is used
    when found (to recognise lanekit's own plists) and optional otherwise.
    """
    from lanekit.errors import ConfigError
    from lanekit.launchd import open_launchd
    from lanekit.projects import find_configs

    env = os.environ if env is None else env
    if now is None:
        from lanekit.launchd import clock_for

        now = clock_for(paths, env).now
    checks = select_checks(request.checks)
    needs_config = bool(request.lanes) or not (request.plists or request.all_plists)
    configs: list[Config] = []
    try:
        configs, _ = find_configs(request.config_path, paths, env, project=request.project)
    except ConfigError:
        if needs_config or request.config_path is not None or request.project is not None:
            raise
    note = None
    if launchd is None and any(c.asks_launchd for c in checks):
        try:
            launchd = open_launchd(paths, env)
        except LanekitError as exc:
            note = f"launchd checks skipped: {exc.message}"
    groups = _targets_by_config(request, paths, configs)
    reports = []
    for config, targets in groups:
        ctx = DoctorContext(paths, config=config, launchd=launchd, now=now, uid=uid)
        if note is not None:
            ctx.notes.append(note)
        reports.append(run_checks(targets, ctx, checks))
    if len(reports) == 1:
        return reports[0]
    return DoctorReport(
        findings=tuple(f for r in reports for f in r.findings),
        subjects=tuple(s for r in reports for s in r.subjects),
        checks=tuple(c.id for c in checks),
        notes=tuple(dict.fromkeys(n for r in reports for n in r.notes)),
    )


def _targets_by_config(
    request: DoctorRequest, paths: Paths, configs: Sequence[Config]
) -> list[tuple[Config | None, list[Target]]]:
    """The targets of each config (its lanes), then plists, each with the config that knows
    its lane: the loaded one, or the project that installed its label (lanekit.projects), so
    `doctor --plist`/`--all` finds a lanekit lane's problems from any directory."""
    from lanekit.projects import config_of_label, lanes_named

    groups: dict[int, tuple[Config | None, list[Target]]] = {}
    seen: set[Path] = set()
    if configs and (request.lanes or request.all_plists or not request.plists):
        for lane in lanes_named(configs, request.lanes):
            owner = next(c for c in configs if c.lanes.get(lane.name) is lane)
            target = lane_target(lane, paths)
            groups.setdefault(id(owner), (owner, []))[1].append(target)
            if target.plist_path is not None:
                seen.add(target.plist_path.absolute())
        for known_owner, targets in list(groups.values()):
            if known_owner is not None:
                examined = [t.lane for t in targets if t.lane is not None]
                targets.extend(queue_targets(examined, known_owner))
    files = list(request.plists)
    if request.all_plists and paths.launch_agents.is_dir():
        files.extend(sorted(paths.launch_agents.glob("*.plist")))
    known: dict[str, Config | None] = {}
    for file in files:
        if file.absolute() in seen:
            continue
        seen.add(file.absolute())
        config: Config | None = configs[0] if len(configs) == 1 else None
        target = plist_target(file, config)
        label = target.label
        if target.lane is None and label is not None:
            if label not in known:
                known[label] = config_of_label(paths, label)
            if known[label] is not None:
                config = known[label]
                target = plist_target(file, config)
        groups.setdefault(id(config), (config, []))[1].append(target)
    if not groups:
        return [(configs[0] if len(configs) == 1 else None, [])]
    return list(groups.values())


def list_checks() -> list[Check]:
    """Every registered check, for `--list-checks`."""
    return list(registry().values())
