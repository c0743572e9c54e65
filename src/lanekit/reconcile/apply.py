"""`lanekit apply`: carry out the plan, lane by lane, under the domain's apply lock."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from lanekit.config import Config, LaneSpec, run_spec, select_lanes
from lanekit.config.provenance import ours, refuse_takeover
from lanekit.errors import EnvironmentUnusableError, ExitCode, LanekitError
from lanekit.reconcile.applylock import OnWait, apply_lock
from lanekit.reconcile.observe import identify, installed_spec, observe
from lanekit.reconcile.plan import Action, ActionKind, plan
from lanekit.reconcile.preflight import preflight, untrusted_dirs
from lanekit.reconcile.stopper import Progress, Stopper, Timing, exit_timeout
from lanekit.service import clock_for, manager_of
from lanekit.service.installs import Desired, Installed, desired_lane
from lanekit.service.launchd import Launchd
from lanekit.service.launchd.domain import domain_notes
from lanekit.service.manager import VOCABULARY, ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.schemas import APPLY_SCHEMA
from lanekit.state.snapshot import RunSpec
from lanekit.system.atomic import write_atomic
from lanekit.system.interpreter import (
    IMPORT_CHECK,
    Interpreter,
    import_problem,
    install_guard,
    install_rescue,
    stable_python,
)
from lanekit.system.interpreter import apply_notes as interpreter_notes
from lanekit.system.interpreter import inspect as inspect_interpreter
from lanekit.system.owned import make_private_dirs, read_regular
from lanekit.system.quoting import cmdline

ADOPTED_SUFFIX = ".adopted"
"""What apply appends to the plist file name of a hand-written job a lane `replaces` (launchd
loads only *.plist at login), moving it aside instead of deleting it."""


class Result(StrEnum):
    """How `apply` ended for one lane."""

    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"
    UNCHANGED = "unchanged"
    OFFERED = "offered"
    """A removal offer: shown, never carried out by apply."""
    PLANNED = "planned"
    """--dry-run: what would have been done."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One lane's action and what became of it."""

    action: Action
    result: Result
    detail: str
    pid: int | None = None
    error: LanekitError | None = None


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """Everything `apply` did (or, with dry_run, would do), in plan order."""

    outcomes: tuple[Outcome, ...]
    dry_run: bool = False
    notes: tuple[str, ...] = ()
    """Things the user should know about where and how the lanes run (domain, interpreter)."""

    @property
    def nothing_to_do(self) -> bool:
        """True when every lane was already up to date (removal offers do not count)."""
        return all(o.result in {Result.UNCHANGED, Result.OFFERED} for o in self.outcomes)

    def count(self, result: Result) -> int:
        """How many lanes ended with `result`."""
        return sum(1 for o in self.outcomes if o.result is result)

    @property
    def pending(self) -> tuple[str, ...]:
        """Lanes whose change waits for their run to end (skipped: not reloaded)."""
        return tuple(o.action.lane for o in self.outcomes if o.result is Result.SKIPPED)

    @property
    def exit_code(self) -> ExitCode:
        """1 when any lane failed, else 3 (PENDING) when a change waits for a running lane, so
        scripts know that launchd does not run what lanes.toml says yet; else 0."""
        if self.count(Result.FAILED):
            return ExitCode.FAILURE
        return ExitCode.PENDING if self.pending else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        """The `apply --json` document (docs/json.md)."""
        return {
            "schema": APPLY_SCHEMA,
            "dry_run": self.dry_run,
            "lanes": [
                {
                    "lane": o.action.lane,
                    "label": o.action.label,
                    "action": str(o.action.kind),
                    "result": str(o.result),
                    "reason": o.action.reason,
                    "detail": o.detail,
                    "pid": o.pid,
                    "steps": list(o.action.steps),
                }
                for o in self.outcomes
            ],
            "pending": list(self.pending),
            "summary": {str(result): self.count(result) for result in Result},
        }


def apply(
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    lanes: Sequence[str] | None = None,
    wait: float | None = None,
    force: bool = False,
    dry_run: bool = False,
    adopt: bool = False,
    install_anyway: bool = False,
    timing: Timing | None = None,
    interpreter: str | None = None,
    on_wait: OnWait | None = None,
    progress: Progress | None = None,
) -> ApplyResult:
    """Make launchd match lanes.toml (all lanes, or the named ones); see the module docstring.

    `wait` is a total budget in seconds for running lanes to finish; lanes that need no
    waiting are handled first. `force` boots out running lanes (their runner puts the jobs
    back) and, like `install_anyway`, installs lanes whose job command cannot start
    (lanekit.reconcile.preflight; refused otherwise, as FAILED outcomes). Removal offers are listed
    only
    when no lanes are named, and only for this project's lanes. A label applied from another
    lanes.toml is refused (UsageError, nothing changed) unless `adopt` (lanekit.config.provenance);
    a
    queue or log directory inside a directory someone else could change is refused before
    anything is created (UnsafeStateError, exit 69: lanekit.reconcile.preflight.untrusted_dirs).

    Unless `dry_run`, the domain's apply lock (applylock) is held from observing to the last
    step, so concurrent applies queue up; `on_wait` is told once who holds it.
    """
    run = functools.partial(
        _apply,
        config,
        paths,
        manager_of(launchd, paths.launch_agents),
        lanes=lanes,
        wait=wait,
        force=force,
        dry_run=dry_run,
        adopt=adopt,
        install_anyway=install_anyway,
        timing=timing,
        interpreter=interpreter,
        progress=progress,
    )
    if dry_run:
        return run()
    with apply_lock(paths.state, on_wait):
        return run()


def _apply(
    config: Config,
    paths: Paths,
    manager: ServiceManager,
    *,
    lanes: Sequence[str] | None,
    wait: float | None,
    force: bool,
    dry_run: bool,
    adopt: bool,
    install_anyway: bool,
    timing: Timing | None,
    interpreter: str | None,
    progress: Progress | None,
) -> ApplyResult:
    timing = timing or Timing()
    selected = select_lanes(config, lanes or ())
    for lane in selected:
        # Before anything is created for any lane: a queue or log directory inside a
        # directory someone else controls refuses the whole apply (exit 69), like a label
        # another project owns.
        untrusted = untrusted_dirs(lane)
        if untrusted:
            raise untrusted[0]
    interpreter = interpreter or sys.executable
    desired = [
        desired_lane(
            lane, paths, interpreter=interpreter, templates=config.templates, manager=manager
        )
        for lane in selected
    ]
    specs = {lane.label: run_spec(lane) for lane in selected}
    seen = observe(paths, manager, desired, specs)
    if not adopt:
        refuse_takeover(
            config.path,
            [(lane.name, lane.label) for lane in selected],
            {label: item.snapshot for label, item in seen.installed.items()},
        )
    from lanekit.state.paths import paused_labels

    paused = paused_labels(paths, [d.label for d in desired])
    actions = plan(
        desired,
        seen.installed,
        seen.loaded,
        seen.running,
        disabled=seen.disabled,
        definitions=seen.definitions,
        paused=paused,
        stale=seen.stale,
        words=VOCABULARY[manager.kind],
    )
    if lanes:
        actions = [a for a in actions if a.kind is not ActionKind.REMOVE]
    actions = _this_project_only(actions, seen.installed, config.path)
    lane_by_label = {lane.label: lane for lane in selected}
    want_by_label = {d.label: d for d in desired}
    refused = (
        {}
        if force or install_anyway
        else _cannot_start(actions, lane_by_label, want_by_label, paths)
    )
    health = inspect_interpreter(interpreter)
    notes = (
        *domain_notes(manager.domain),
        *interpreter_notes(health),
        *_still_cannot_start(actions, lane_by_label, want_by_label, paths),
    )
    if dry_run:
        return ApplyResult(
            tuple(
                refused.get(a.label) or _planned(a, _replacing(lane_by_label.get(a.label), manager))
                for a in actions
            ),
            dry_run=True,
            notes=notes,
        )
    installs = any(a.kind is not ActionKind.REMOVE for a in actions)
    if installs and not (force or install_anyway):
        _refuse_unimportable(health)
    if health.exists and installs:
        # Written while the CLI surely works, for the day its interpreter is gone.
        install_rescue(paths.state, health)
    watchdog = next((lane for lane in selected if lane.guard is not None), None)
    if watchdog is not None:
        _install_guard(paths, watchdog)

    deadline = None if wait is None else timing.clock() + max(wait, 0.0)
    stopper = Stopper(manager, timing, deadline=deadline, force=force, progress=progress)
    stopper.lanes.update({lane.label: lane.name for lane in selected})
    outcomes: dict[int, Outcome] = {}
    # Lanes that must wait for a run go last, so --wait never holds up the idle ones.
    order = sorted(range(len(actions)), key=lambda i: actions[i].kind is ActionKind.SKIP_RUNNING)
    for i in order:
        action = actions[i]
        if action.label in refused:
            outcomes[i] = refused[action.label]
        elif action.kind is ActionKind.UNCHANGED:
            outcomes[i] = Outcome(action, Result.UNCHANGED, action.reason)
        elif action.kind is ActionKind.REMOVE:
            outcomes[i] = Outcome(action, Result.OFFERED, action.reason, action.pid)
        else:
            label = action.label
            skipped, replaced = _take_over(action, lane_by_label[label], stopper)
            if skipped is not None:
                outcomes[i] = skipped
                continue
            old_spec = installed_spec(paths, label)
            lane_specs = [s for s in (old_spec, specs[label]) if s is not None]
            outcome = _carry_out(
                action,
                lane_by_label[label],
                want_by_label[label],
                specs=lane_specs,
                paths=paths,
                stopper=stopper,
            )
            if replaced and outcome.result is Result.DONE:
                outcome = replace(outcome, detail=f"{outcome.detail}; {replaced}")
            outcomes[i] = outcome
    return ApplyResult(tuple(outcomes[i] for i in range(len(actions))), notes=notes)


def _this_project_only(
    actions: Sequence[Action], installed: Mapping[str, Installed], project: Path
) -> list[Action]:
    """Removal offers only for lanes this project applied (lanekit.config.provenance): another
    project's lanes are never "no longer in lanes.toml"."""
    return [
        a
        for a in actions
        if a.kind is not ActionKind.REMOVE
        or ours(installed[a.label].snapshot if a.label in installed else None, project)
    ]


def _cannot_start(
    actions: Sequence[Action],
    lanes: Mapping[str, LaneSpec],
    wanted: Mapping[str, Desired],
    paths: Paths,
) -> dict[str, Outcome]:
    """Lanes apply would install or reload although their job command cannot start
    (lanekit.reconcile.preflight): a FAILED outcome each, naming the command and the fix."""
    from lanekit.reconcile.preflight import cannot_start

    refused = {}
    for action in actions:
        if not action.changes or action.label not in wanted:
            continue
        problems = cannot_start(lanes[action.label], wanted[action.label].plist, paths)
        if problems:
            anyway = cmdline("lanekit", "apply", "--force", action.lane)
            error = LanekitError(
                f"lane {action.lane}: {problems[0].message} Not installed (`{anyway}` "
                "installs it anyway)",
                f"{problems[0].fix}; or `lanekit apply --force` to install it anyway",
            )
            refused[action.label] = Outcome(action, Result.FAILED, error.message, error=error)
    return refused


def _still_cannot_start(
    actions: Sequence[Action],
    lanes: Mapping[str, LaneSpec],
    wanted: Mapping[str, Desired],
    paths: Paths,
) -> list[str]:
    """A note for each lane left unchanged whose job command still cannot start (installed
    with `--force`, or its command gone since): "unchanged" must not read as "fine"."""
    from lanekit.reconcile.preflight import cannot_start

    notes = []
    for action in actions:
        if action.kind is not ActionKind.UNCHANGED or action.label not in wanted:
            continue
        problems = cannot_start(lanes[action.label], wanted[action.label].plist, paths)
        if problems:
            notes.append(
                f"lane {action.lane} is installed but its runs cannot start: "
                f"{problems[0].message} ({problems[0].fix})"
            )
    return notes


def _planned(action: Action, replacing: str = "") -> Outcome:
    if action.kind is ActionKind.REMOVE:
        return Outcome(action, Result.OFFERED, action.reason, action.pid)
    if replacing:
        return Outcome(action, Result.PLANNED, f"{action.reason}; {replacing}", action.pid)
    if action.kind is ActionKind.UNCHANGED:
        return Outcome(action, Result.UNCHANGED, action.reason)
    return Outcome(action, Result.PLANNED, action.reason, action.pid)


def _replacing(lane: LaneSpec | None, manager: ServiceManager) -> str:
    """What taking over the lane's `replaces` job would do (empty: nothing left to do)."""
    if lane is None or lane.replaces is None:
        return ""
    label = lane.replaces
    plist = manager.artifact_path(label)
    loaded = manager.loaded()
    steps = []
    if label in loaded:
        pid = loaded[label]
        steps.append(f"boot out {label}" + ("" if pid is None else f" (running pid {pid})"))
    if os.path.lexists(plist):
        steps.append(f"move {plist.name} aside to {plist.name}{ADOPTED_SUFFIX}")
    return f"replaces {label}: {', '.join(steps)}" if steps else ""


def _take_over(action: Action, lane: LaneSpec, stopper: Stopper) -> tuple[Outcome | None, str]:
    """Replace the hand-written job the lane `replaces` (lanekit adopt): boot it out, never
    while it runs unless --wait/--force, and move its plist aside (never deleted), before the
    lane is installed: the two never run side by side. (a SKIPPED outcome, "") when it cannot
    be done now; (None, what was done) otherwise."""
    label = lane.replaces
    if label is None:
        return None, ""
    manager = stopper.manager
    plist = manager.artifact_path(label)
    read = read_regular(plist, "plist") if os.path.lexists(plist) else None
    if read is not None and identify(manager, read[0], fallback=label)[1] is not None:
        error = LanekitError(
            f"lane {lane.name}: replaces = {label!r} names a lanekit lane, not a hand-written job",
            f"remove `replaces` from [lanes.{lane.name}] (`lanekit remove` removes a lane)",
        )
        return Outcome(action, Result.FAILED, error.message, error=error), ""
    loaded = manager.loaded()
    done = []
    if label in loaded:
        pid = loaded[label]
        stop = stopper.stop(label, [], running=pid is not None, pid=pid, lane=lane.name)
        if not stop.stopped:
            return Outcome(
                action,
                Result.SKIPPED,
                f"the job it replaces, {label}, is running (pid {stop.pid}): not replaced, "
                "nothing installed; rerun `lanekit apply` when it is idle, or use --wait "
                "SECONDS / --force",
                stop.pid,
            ), ""
        done.append("booted out")
    if read is not None:
        aside = _move_aside(plist)
        done.append(f"moved its plist to {aside.name}")
    return None, f"replaced {label} ({', '.join(done)})" if done else ""


def _move_aside(plist: Path) -> Path:
    """Rename a replaced job's plist to `<name>.adopted` (launchd loads only *.plist at login),
    never over an existing file: `.adopted.2`, `.3`... when taken."""
    from lanekit.system.fsops import rename_noreplace

    for attempt in range(1, 100):
        suffix = ADOPTED_SUFFIX if attempt == 1 else f"{ADOPTED_SUFFIX}.{attempt}"
        target = plist.with_name(plist.name + suffix)
        try:
            rename_noreplace(str(plist), str(target))
        except FileExistsError:
            continue
        return target
    raise LanekitError(
        f"{plist}: 99 copies moved aside already", f"tidy {plist.parent} and rerun lanekit apply"
    )


def _carry_out(
    action: Action,
    lane: LaneSpec,
    want: Desired,
    *,
    specs: Sequence[RunSpec],
    paths: Paths,
    stopper: Stopper,
) -> Outcome:
    label = action.label
    try:
        if action.kind is ActionKind.SNAPSHOT:
            write_atomic(paths.snapshot_for(label), want.snapshot)
            return Outcome(action, Result.DONE, "snapshot written; the next run reads it")
        refusals = preflight(lane).refusals  # what validate reports, refused before any mkdir
        if refusals:
            raise refusals[0]
        _prepare_dirs(lane)
        notes: list[str] = []
        if action.bootout:
            stop = stopper.stop(
                label, specs, running=action.kind is ActionKind.SKIP_RUNNING, pid=action.pid
            )
            if not stop.stopped:
                logged = _log_skip(lane, stop.pid, clock_for(paths).time)
                who = f"pid {stop.pid}" if stop.pid is not None else "lane lock held"
                pending = action.pending or action.reason
                return Outcome(
                    action,
                    Result.SKIPPED,
                    f"running ({who}): not reloaded, {pending} is pending; {logged};"
                    " rerun `lanekit apply` when it is idle, or use --wait SECONDS / --force",
                    stop.pid,
                )
            notes.extend(stop.notes)
        if action.write_plist:
            # Dated by the launchd backend's clock, as the fires it is compared with are (the
            # emulated domain's runs ahead of the real one after `lanekit emulator tick`).
            mtime = clock_for(paths).time()
            _write_artifacts(stopper.manager, want, mtime)
        if action.write_snapshot:
            write_atomic(paths.snapshot_for(label), want.snapshot)
        if action.enable:
            stopper.manager.enable(label)
            manager_name = action.words.manager
            notes.append(f"it was disabled in {manager_name} (not by `lanekit pause`): enabled it")
        if action.bootstrap:
            stopper.bootstrap(label, stopper.manager.artifact_path(label), exit_timeout(specs))
        elif action.paused:
            notes.append(f"paused: not loaded until `{cmdline('lanekit', 'resume', action.lane)}`")
    except LanekitError as exc:
        return Outcome(action, Result.FAILED, exc.message, action.pid, exc)
    done = {
        ActionKind.CREATE: "installed and loaded",
        ActionKind.UPDATE: "reloaded" if action.bootout else "written and loaded",
        ActionKind.SKIP_RUNNING: "reloaded",
        ActionKind.LOAD: "loaded",
        ActionKind.REWRITE: f"{action.words.artifact} rewritten, no reload needed",
    }[action.kind]
    if action.paused and not action.bootstrap:
        done = f"{action.words.unloaded} and written" if action.bootout else "written"
    # What was carried out: a running lane reloaded after --wait or --force had its change
    # (an update) deferred; `skip-running` is only what the plan would have done.
    carried_out = action.deferred or ActionKind.UPDATE
    kind = carried_out if action.kind is ActionKind.SKIP_RUNNING else action.kind
    _log_applied(lane, kind, clock_for(paths).time)
    return Outcome(action, Result.DONE, "; ".join([done, *notes]))


def _write_artifacts(manager: ServiceManager, want: Desired, mtime: float) -> None:
    """Every file of the lane, the main one last (what `installed()` lists is then whole),
    and those it no longer has (a systemd lane whose schedule went: its timer) deleted."""
    main = manager.artifact_path(want.label)
    for path in manager.artifact_paths(want.label):
        if path != main and path.name not in want.companions:
            path.unlink(missing_ok=True)
    for name, data in want.companions.items():
        write_atomic(main.with_name(name), data, mtime=mtime)
    write_atomic(main, want.plist, mtime=mtime)


def _prepare_dirs(lane: LaneSpec) -> None:
    """Queue dirs and log dirs must exist before launchd starts the job (else exit 78)."""
    from lanekit.queue import open_queue

    open_queue(lane.queue.dir, durable=lane.queue.durable).ensure()
    for path in (lane.stdout_path, lane.stderr_path, lane.log_path):
        make_private_dirs(path.parent)


def _log_skip(lane: LaneSpec, pid: int | None, clock: Callable[[], float]) -> str:
    """Record the skip in the lane log (by the launchd backend's clock, like the runs it sits
    between); returns where (or why not) for the outcome text."""
    from lanekit.run.lanelog import EventName, LaneLog, Reason

    try:
        LaneLog(lane.log_path, lane.name, clock=clock).event(
            EventName.SKIPPED, reason=Reason.RUNNING, pid=pid, by="apply"
        )
    except OSError as exc:
        return f"could not write the lane log {lane.log_path}: {exc.strerror or exc}"
    return f"logged to {lane.log_path}"


def _log_applied(lane: LaneSpec, kind: ActionKind, clock: Callable[[], float]) -> None:
    """Record the (re)load in the lane log (by the launchd backend's clock), so `lanekit
    timeline` can mark it. Best effort: the lane is loaded either way, and a log that cannot
    be written is doctor's finding."""
    from lanekit.run.lanelog import EventName, LaneLog

    try:
        LaneLog(lane.log_path, lane.name, clock=clock).event(
            EventName.APPLIED, action=str(kind), by="apply"
        )
    except OSError:
        return


def _install_guard(paths: Paths, watchdog: LaneSpec) -> None:
    """The watchdog's sh guard, and the heartbeat's failure URL it pings when Python cannot run
    (a private file: the URL is a secret and never goes into the plist), written in its final
    form here (fail_url) so the guard has no URL to take apart; no heartbeat, no file."""
    from lanekit.config.watch import fail_url, heartbeat_path

    install_guard(paths.state)
    path = heartbeat_path(watchdog.queue.dir)
    url = None if watchdog.watch is None else watchdog.watch.heartbeat
    if url is None:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, (fail_url(url) + "\n").encode())


def _refuse_unimportable(health: Interpreter) -> None:
    """Refuse (exit 69, nothing changed) when the interpreter every plist names cannot import
    lanekit as launchd runs it: with -I, which ignores the user site and PYTHONPATH, so a
    `pip install --user` or PYTHONPATH install works in the terminal and every run exits 1."""
    problem = import_problem(health.path)
    if problem is None:
        return
    raise EnvironmentUnusableError(
        f"lanes would run {cmdline(health.path, *IMPORT_CHECK)}, which fails ({problem}): "
        "lanes start their interpreter isolated (-I ignores the user site and PYTHONPATH), "
        "so every run would exit 1",
        "install lanekit into an environment of its own that survives Python upgrades, e.g. "
        f"{stable_python(health)}, then run that install's `lanekit apply` (`--force` "
        "installs anyway)",
    )
