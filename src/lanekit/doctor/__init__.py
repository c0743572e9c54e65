"""`lanekit doctor`: a registry of named checks that explain why a launchd job stays silent.

Each check has a stable id (`path.command-missing`, `launchd.exit-78`, ...) and yields problems;
the runner stamps them with the id and the subject (a lane name, a plist path, or a queue) and
returns findings, most severe first per subject. A queue's problems (stale claims, failed jobs,
...) are the queue's, not its lanes': queue-scoped checks run once per queue, on a queue subject
that lists the lanes draining it, so a queue shared by five lanes is not reported five times.
Checks run on lanekit lanes (lanes.toml + what is installed + what launchd says) and on any
plist file; a check that needs lanekit knowledge (the queue, the job command, the lane log) is
skipped for a plist lanekit did not write.

The checks themselves live in `lanekit.doctor.checks` (one module per group) and register with the
`@check` decorator. The package: `model` (targets, problems, findings, the report), `registry`
(the checks and the context they run in), `targets` (what is examined), and below the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.doctor.model import (
    DoctorReport,
    Finding,
    Problem,
    Scope,
    Severity,
    SubjectKind,
    Target,
)
from lanekit.doctor.registry import (
    Check,
    CheckFunc,
    DoctorContext,
    check,
    list_checks,
    registry,
    select_checks,
    skipped_note,
)
from lanekit.doctor.targets import (
    lane_interpreter,
    lane_target,
    plist_target,
    queue_targets,
    read_plist,
)
from lanekit.errors import LanekitError
from lanekit.state.schemas import DOCTOR_SCHEMA

if TYPE_CHECKING:
    from lanekit.config import Config
    from lanekit.service.launchd import Launchd
    from lanekit.service.manager import ServiceManager
    from lanekit.state.paths import Paths

__all__ = [
    "DOCTOR_SCHEMA",
    "Check",
    "CheckFunc",
    "DoctorContext",
    "DoctorReport",
    "DoctorRequest",
    "Finding",
    "Problem",
    "Scope",
    "Severity",
    "SubjectKind",
    "Target",
    "check",
    "diagnose",
    "lane_interpreter",
    "lane_target",
    "list_checks",
    "plist_target",
    "queue_targets",
    "read_plist",
    "registry",
    "run_checks",
    "select_checks",
]


def run_checks(
    targets: Sequence[Target], ctx: DoctorContext, checks: Sequence[Check] | None = None
) -> DoctorReport:
    """Run `checks` (all by default) on every target."""
    chosen = list(registry().values()) if checks is None else list(checks)
    order = {c.id: i for i, c in enumerate(registry().values())}
    findings: list[Finding] = []
    ctx.expect(t.label for t in targets if t.label is not None)  # one observation for all
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


@dataclass(frozen=True, slots=True)
class DoctorRequest:
    """What `lanekit doctor` was asked to examine."""

    lanes: tuple[str, ...] = ()
    plists: tuple[Path, ...] = ()
    all_plists: bool = False
    checks: tuple[str, ...] = ()
    config_path: Path | None = None
    project: Path | None = None
    """`--project`: one installed project, from anywhere (lanekit.config.projects)."""


def diagnose(
    request: DoctorRequest,
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    launchd: Launchd | ServiceManager | None = None,
    now: Callable[[], datetime] | None = None,
    uid: int | None = None,
) -> DoctorReport:
    """The core of `lanekit doctor`: load what is asked, run the checks, return the report.

    `now` (naive local wall time) defaults to the clock of the launchd backend in use
    (lanekit.state.clock: the emulated domain's time on the emulated one), so ages and missed runs
    are judged by the time the runners logged by.

    lanes.toml is required when lanes are examined; with `--plist`/`--all` alone it is used
    when found (to recognise lanekit's own plists) and optional otherwise.
    """
    from lanekit.config.projects import find_configs
    from lanekit.errors import ConfigError
    from lanekit.service import open_manager

    env = os.environ if env is None else env
    if now is None:
        from lanekit.service import clock_for

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
        chosen = {c.service_manager for c in configs if c.service_manager is not None}
        try:
            launchd = open_manager(paths, env, chosen.pop() if len(chosen) == 1 else None)
        except LanekitError as exc:
            note = skipped_note(exc)
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
    its lane: the loaded one, or the project that installed its label (lanekit.config.projects), so
    `doctor --plist`/`--all` finds a lanekit lane's problems from any directory."""
    from lanekit.config.projects import config_of_label, lanes_named

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
