"""Reconcile lanes.toml with launchd: `plan` (pure) and `apply`, `remove`, `kick` (effects).

The model
---------
Each lane has two installed artefacts: its plist (what launchd runs, in the LaunchAgents dir)
and its run snapshot (what `lanekit run` reads at the start of every run, paths.snapshot_for).
`plan` compares the desired bytes of both with what is on disk and with what launchd has loaded,
and picks exactly one action per lane:

  create        not installed, not loaded: write plist + snapshot, bootstrap
  update        plist differs in meaning (or the plist file is missing while loaded), or
                launchd has an older definition loaded than the rendered plist (its own copy,
                compared on what `launchctl print` shows: lanekit.drift): write what changed;
                bootout + bootstrap when loaded ("update+reload"), bootstrap when not
  rewrite       the plist file differs in bytes only (reformatted) and launchd's loaded copy
                is current: write the file, no bootout
  load          installed plist is current but launchd does not have it: bootstrap
  snapshot      plist current and loaded, only the snapshot differs: write the snapshot. No
                reload: the runner reads the snapshot when a run starts, and the atomic rename
                means a run in progress keeps the copy it already read - so this is safe even
                while the lane is running.
  unchanged     nothing to do
  remove        installed by lanekit (plist marker LANEKIT_LANE) but no longer in lanes.toml:
                OFFERED only; `lanekit remove LANE` carries it out
  skip-running  would need a bootout but the lane is running: nothing is written, so the next
                `apply` still sees the change (and `apply` twice is a no-op only once everything
                has been applied). `--wait S` or `--force` carry out the deferred steps.

Safety of a reload: `apply` takes the lane lock (the same flock the runner holds for a whole
run) before it boots a lane out, re-checks list() for a pid while holding it, and keeps it until
the label has left launchd, so a run that launchd starts in that window finds the lane busy and
claims nothing. The lock is dropped before the bootstrap (a RunAtLoad run must not find the lane
busy). The plist and snapshot are written after the bootout succeeded, so a failed bootout
leaves the old, still-loaded files in place and the next `apply` tries again.

Other decisions:
- bootout is followed by polling list() until the label is gone, bounded by ExitTimeOut + 5 s;
  36 (already stopping) is waited out, 3/113 (not loaded) count as gone. bootstrap failing
  with 5 or 37 (the old instance still draining) is retried once after another drain; every
  other code fails that lane only, with launchctl's meaning and hint.
- A label disabled in launchd by something other than `lanekit pause` is enabled before its
  bootstrap, as `brew services start` does: lanes.toml lists the lane, and apply is the user's
  explicit request to run it. A paused lane stays paused (lanekit.pause has the whole rule).
- `--wait S` is one budget for the whole apply; lanes that need no waiting are done first.
"""

from __future__ import annotations

import functools
import os
import plistlib
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from lanekit import lanelock
from lanekit.applylock import OnWait, apply_lock
from lanekit.atomic import write_atomic
from lanekit.clock import clock_for
from lanekit.config import Config, LaneSpec, run_spec, select_lanes
from lanekit.drift import lane_drift
from lanekit.errors import ExitCode, LanekitError, LaunchdError, NotStartedError, UsageError
from lanekit.exits import describe_exit
from lanekit.interpreter import apply_notes as interpreter_notes
from lanekit.interpreter import inspect as inspect_interpreter
from lanekit.interpreter import install_rescue
from lanekit.launchd import LaunchctlError, Launchd, ListEntry, ServiceInfo
from lanekit.launchd.codes import NOT_LOADED, STILL_LOADED, LaunchctlCode
from lanekit.launchd.domain import domain_notes
from lanekit.owned import (
    PRIVATE_FILE,
    check_private,
    make_private_dirs,
    read_regular,
    unsafe_error,
    unsafe_reason,
)
from lanekit.ownership import MARKER, ours, refuse_takeover
from lanekit.paths import Paths
from lanekit.preflight import preflight
from lanekit.quoting import cmdline
from lanekit.snapshot import DEFAULT_EXIT_TIMEOUT, RunSpec
from lanekit.starts import StartOutcome, classify_start, last_start, postponed_for, throttle_of

APPLY_SCHEMA = 1
"""Version of the `lanekit apply --json` document (docs/json.md)."""


class ActionKind(StrEnum):
    """What `apply` does to one lane."""

    CREATE = "create"
    UPDATE = "update"
    LOAD = "load"
    SNAPSHOT = "snapshot"
    REWRITE = "rewrite"
    UNCHANGED = "unchanged"
    REMOVE = "remove"
    SKIP_RUNNING = "skip-running"


@dataclass(frozen=True, slots=True)
class Desired:
    """A lane as lanes.toml wants it: rendered plist and run snapshot bytes."""

    lane: str
    label: str
    plist: bytes
    snapshot: bytes


@dataclass(frozen=True, slots=True)
class Installed:
    """What is on disk for one label."""

    label: str
    plist: bytes | None
    """The plist file's bytes; None when there is no plist file."""
    snapshot: bytes | None
    """The run snapshot's bytes; None when there is none."""
    lane: str | None = None
    """The LANEKIT_LANE marker's value; None when the plist was not installed by lanekit."""
    plist_mode: int | None = None
    """The plist file's permission bits; None when unknown (no file)."""
    snapshot_mode: int | None = None
    """The snapshot file's permission bits; None when unknown (no file)."""


@dataclass(frozen=True, slots=True)
class Action:
    """One lane's planned action, with the concrete steps `apply` takes for it."""

    kind: ActionKind
    lane: str
    label: str
    reason: str
    write_plist: bool = False
    write_snapshot: bool = False
    bootout: bool = False
    """The loaded job must be booted out first (the step a running lane is protected from)."""
    bootstrap: bool = False
    enable: bool = False
    """The label is disabled in launchd and must be enabled before the bootstrap."""
    pid: int | None = None
    """The running pid, when the lane is running and launchd reported it."""
    deferred: ActionKind | None = None
    """For skip-running: the action that was deferred (update)."""
    pending: str = ""
    """For skip-running: the change that waits for the run to end (e.g. `plist changed (...)`)."""
    paused: bool = False
    """`lanekit pause` holds the lane: apply neither enables nor bootstraps it."""

    @property
    def changes(self) -> bool:
        """True when `apply` would change something for this lane."""
        return self.kind not in {ActionKind.UNCHANGED, ActionKind.REMOVE}

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in the order apply takes them, in words."""
        flags = (
            (self.bootout, "bootout"),
            (self.write_plist, "write plist"),
            (self.write_snapshot, "write snapshot"),
            (self.enable, "enable"),
            (self.bootstrap, "bootstrap"),
        )
        return tuple(step for on, step in flags if on)


def plan(
    desired: Sequence[Desired],
    installed: Mapping[str, Installed],
    loaded: Set[str],
    running: Mapping[str, int | None],
    *,
    disabled: Set[str] = frozenset(),
    definitions: Mapping[str, ServiceInfo] | None = None,
    paused: Set[str] = frozenset(),
) -> list[Action]:
    """One action per desired lane (in order), then removal offers for orphaned lanekit plists.

    `installed` holds lanekit's plists plus any plist at a desired label, `loaded` the labels of
    one `list()` call, `running` label -> pid (None when only the lane lock says it runs),
    `disabled` launchd's disabled overrides, `definitions` label -> `print()` of the loaded
    lanes (what launchd really runs; a label missing there is compared on its file only),
    `paused` the labels `lanekit pause` holds (never enabled nor loaded by apply:
    lanekit.pause). Pure: no I/O.
    """
    definitions = definitions or {}
    actions = [
        _keep_paused(
            _plan_lane(
                d,
                installed.get(d.label),
                loaded=loaded,
                running=running,
                disabled=disabled,
                definition=definitions.get(d.label),
            ),
            paused,
        )
        for d in desired
    ]
    wanted = {d.label for d in desired}
    for label in sorted(installed):
        item = installed[label]
        if label in wanted or item.lane is None or item.plist is None:
            continue
        actions.append(_offer_removal(item, label in loaded, running))
    return actions


def _plan_lane(
    want: Desired,
    have: Installed | None,
    *,
    loaded: Set[str],
    running: Mapping[str, int | None],
    disabled: Set[str],
    definition: ServiceInfo | None,
) -> Action:
    plist = have.plist if have else None
    is_loaded = want.label in loaded
    drift = lane_drift(
        want_plist=want.plist,
        want_snapshot=want.snapshot,
        have_plist=plist,
        have_snapshot=have.snapshot if have else None,
        loaded=definition if is_loaded else None,
    )
    plist_drift = _mode_drift(have.plist_mode if have and plist is not None else None)
    snapshot_drift = _mode_drift(have.snapshot_mode if have and have.snapshot else None)
    snapshot_stale = drift.snapshot or snapshot_drift is not None
    snapshot_change = drift.snapshot_change or snapshot_drift or ""
    enable = want.label in disabled
    note = "; disabled in launchd: enable it first" if enable else ""

    def act(
        kind: ActionKind,
        reason: str,
        *,
        write_plist: bool = False,
        write_snapshot: bool = False,
        bootstrap: bool = False,
        enable: bool = False,
    ) -> Action:
        return Action(
            kind,
            want.lane,
            want.label,
            reason,
            write_plist=write_plist,
            write_snapshot=write_snapshot,
            bootstrap=bootstrap,
            enable=enable,
        )

    if plist is None and not is_loaded:
        return act(
            ActionKind.CREATE,
            "not installed" + note,
            write_plist=True,
            write_snapshot=True,
            bootstrap=True,
            enable=enable,
        )
    foreign = have is not None and plist is not None and have.lane is None
    if is_loaded and drift.rewrite_only and not foreign:
        # launchd's copy is current and the file only looks different: writing it is enough.
        return act(
            ActionKind.REWRITE,
            "plist file differs in formatting only and launchd has the current definition:"
            " rewritten without a reload" + ("; run snapshot changed" if snapshot_stale else ""),
            write_plist=True,
            write_snapshot=snapshot_stale,
        )
    if drift.plist_bytes or (is_loaded and drift.loaded):
        if plist is None:
            what = "loaded but its plist file is missing"
        elif drift.plist_bytes:
            what = f"plist changed ({drift.plist_change})"
        else:
            what = drift.loaded_change
        if drift.plist_bytes and drift.loaded and plist is not None:
            what += f"; {drift.loaded_change}"
        if foreign:
            what += "; replaces a plist lanekit did not install"
        if not is_loaded:
            return act(
                ActionKind.UPDATE,
                f"{what}; not loaded" + note,
                write_plist=True,
                write_snapshot=True,
                bootstrap=True,
                enable=enable,
            )
        reload = Action(
            ActionKind.UPDATE,
            want.lane,
            want.label,
            what + note,
            write_plist=drift.plist_bytes,
            write_snapshot=drift.plist_bytes or snapshot_stale,
            bootout=True,
            bootstrap=True,
            enable=enable,
        )
        if want.label not in running:
            return reload
        pid = running[want.label]
        who = f"pid {pid}" if pid is not None else "lane lock held"
        return replace(
            reload,
            kind=ActionKind.SKIP_RUNNING,
            reason=f"{what}; running ({who}): not reloaded while it runs"
            " (rerun apply when idle, or use --wait SECONDS / --force)",
            pid=pid,
            deferred=ActionKind.UPDATE,
            pending=what,
        )
    if plist_drift is not None:
        # Same bytes, wrong mode (umask 000, a chmod): launchd refuses the plist at its next
        # load, so it is rewritten 0600; launchd's copy is current, so no reload is needed.
        if is_loaded:
            return act(
                ActionKind.REWRITE,
                f"plist {plist_drift}: rewritten without a reload"
                + ("; run snapshot changed" if snapshot_stale else ""),
                write_plist=True,
                write_snapshot=snapshot_stale,
            )
        return act(
            ActionKind.UPDATE,
            f"plist {plist_drift}; not loaded" + note,
            write_plist=True,
            write_snapshot=snapshot_stale,
            bootstrap=True,
            enable=enable,
        )
    if not is_loaded:
        return act(
            ActionKind.LOAD,
            "installed but not loaded"
            + ("; run snapshot changed" if snapshot_stale else "")
            + note,
            write_snapshot=snapshot_stale,
            bootstrap=True,
            enable=enable,
        )
    if snapshot_stale:
        return act(
            ActionKind.SNAPSHOT,
            f"run snapshot {snapshot_change}, plist unchanged: no reload needed",
            write_snapshot=True,
        )
    return act(ActionKind.UNCHANGED, "plist and snapshot up to date, loaded")


def _mode_drift(mode: int | None) -> str | None:
    """`mode 0666, not 0600 ...` when an installed file's mode is not the one apply writes."""
    if mode is None or mode == PRIVATE_FILE:
        return None
    why = " (others may write it: launchd and `lanekit run` refuse it)" if mode & 0o022 else ""
    return f"mode {mode:04o}, not {PRIVATE_FILE:04o}{why}"


def _keep_paused(action: Action, paused: Set[str]) -> Action:
    """A paused lane stays paused (lanekit.pause): its files are still brought up to date, but
    apply neither enables nor bootstraps it, so a reload leaves it unloaded until `resume`."""
    if action.label not in paused:
        return action
    note = f"paused: not loaded until `{cmdline('lanekit', 'resume', action.lane)}`"
    if not action.bootstrap and not action.enable:
        if action.kind is ActionKind.UNCHANGED:
            return replace(action, reason=f"{action.reason}; paused", paused=True)
        return replace(action, paused=True)
    reason = action.reason.replace("; disabled in launchd: enable it first", "")
    if action.kind is ActionKind.LOAD and not action.write_snapshot:
        return replace(
            action,
            kind=ActionKind.UNCHANGED,
            reason=f"{reason}; {note}",
            bootstrap=False,
            enable=False,
            paused=True,
        )
    return replace(action, reason=f"{reason}; {note}", bootstrap=False, enable=False, paused=True)


def _offer_removal(item: Installed, is_loaded: bool, running: Mapping[str, int | None]) -> Action:
    lane = item.lane or item.label
    state = "loaded" if is_loaded else "not loaded"
    if item.label in running:
        pid = running[item.label]
        state = f"running (pid {pid})" if pid is not None else "running (lane lock held)"
    return Action(
        ActionKind.REMOVE,
        lane=lane,
        label=item.label,
        reason=f"installed by lanekit but not in lanes.toml ({state}):"
        f" left alone; `{cmdline('lanekit', 'remove', lane)}` removes it",
        pid=running.get(item.label),
    )


# -- effects: observe, apply, remove, kick ------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class Timing:
    """Injectable time: tests pass a fake clock and sleep; apply polls at `poll` seconds."""

    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll: float = 0.1
    start_grace: float = 5.0
    """How long a pid may linger while apply holds the lane lock: a run launched in that window
    cannot take the lock and exits at once; anything still alive after this is a real run."""


DRAIN_MARGIN = 5.0
"""Seconds beyond ExitTimeOut that apply waits for a booted-out label to leave launchd."""


@dataclass(frozen=True, slots=True)
class Observed:
    """The facts `plan` needs: one list(), one print_disabled(), one print() per loaded lane."""

    installed: Mapping[str, Installed]
    loaded: Mapping[str, ListEntry]
    running: Mapping[str, int | None]
    disabled: frozenset[str]
    definitions: Mapping[str, ServiceInfo] = field(default_factory=dict)
    """label -> what launchd has loaded for it (its own copy, not the file)."""


def desired_lane(
    lane: LaneSpec, paths: Paths, *, interpreter: str, templates: Path | None = None
) -> Desired:
    """Render a lane's plist and snapshot bytes exactly as apply would write them."""
    from lanekit.plist import render_lane  # jinja2: only when rendering, not for status

    snapshot_path = paths.snapshot_for(lane.label)
    plist = render_lane(lane, interpreter=interpreter, snapshot=snapshot_path, templates=templates)
    snapshot = run_spec(lane).to_json().encode("utf-8")
    return Desired(lane=lane.name, label=lane.label, plist=plist, snapshot=snapshot)


def observe(
    paths: Paths, launchd: Launchd, desired: Sequence[Desired], specs: Mapping[str, RunSpec]
) -> Observed:
    """Read the LaunchAgents dir, snapshots, ONE list(), print_disabled() and the lane locks.
    Refuses (UnsafeStateError) state someone else could have written (check_state)."""
    check_state(paths)
    wanted = {d.label for d in desired}
    installed = scan_installed(paths, wanted)
    loaded = {entry.label: entry for entry in launchd.list()}
    disabled = frozenset(k for k, v in launchd.print_disabled().items() if v)
    running: dict[str, int | None] = {}
    for label in wanted | {k for k, v in installed.items() if v.lane is not None}:
        entry = loaded.get(label)
        if entry is not None and entry.pid is not None:
            running[label] = entry.pid
            continue
        # The installed snapshot names the lock a current run holds; the desired one the lock
        # the next run will take (they differ when the queue dir changed).
        candidates = (_installed_spec(paths, label), specs.get(label))
        if any(lock_held(spec) for spec in candidates if spec is not None):
            running[label] = None
    return Observed(
        installed, loaded, running, disabled, loaded_definitions(launchd, wanted, loaded)
    )


def loaded_definitions(
    launchd: Launchd, labels: Set[str], loaded: Mapping[str, ListEntry]
) -> dict[str, ServiceInfo]:
    """`print()` of each loaded label among `labels`; one that left meanwhile is skipped (the
    plan then judges it on its files alone)."""
    found: dict[str, ServiceInfo] = {}
    for label in sorted(labels & loaded.keys()):
        try:
            found[label] = launchd.print(label)
        except LanekitError:
            continue
    return found


def check_state(paths: Paths) -> None:
    """Refuse lanekit's directories (state, snapshots, emulated domain, LaunchAgents) when they
    are not ours or others may write them: whoever can write there can make the owner's next
    run execute their command."""
    for directory in (paths.state, paths.snapshots, paths.emulator, paths.launch_agents):
        check_private(directory, "state directory", directory=True)


def scan_installed(paths: Paths, wanted: Set[str]) -> dict[str, Installed]:
    """lanekit's plists (marker present) and any plist at a wanted label, keyed by label.

    Files are read without blocking and only when regular (a FIFO named *.plist is refused,
    naming it); a plist lanekit would manage that someone else owns is refused too. A plist
    may be a symlink (users link agents in); the target is then what is judged."""
    found: dict[str, Installed] = {}
    directory = paths.launch_agents
    files = sorted(directory.glob("*.plist")) if directory.is_dir() else []
    for file in files:
        try:
            read = read_regular(file, "plist", follow=True)
        except LanekitError:
            raise
        except OSError:
            continue  # vanished or unreadable: not something apply may overwrite blindly
        if read is None:
            continue
        data, info = read
        label, lane = _identify(data, fallback=file.stem)
        if lane is None and label not in wanted:
            continue
        if file != paths.plist_for(label) and label in found:
            continue  # the canonical file name wins over a stray copy
        if info.st_uid != os.geteuid():
            raise unsafe_error(file, unsafe_reason(info) or "is not yours", "plist", info)
        snapshot, snapshot_mode = _read_snapshot(paths.snapshot_for(label))
        found[label] = Installed(
            label,
            data,
            snapshot,
            lane=lane,
            plist_mode=stat.S_IMODE(info.st_mode),
            snapshot_mode=snapshot_mode,
        )
    for label in wanted - found.keys():
        snapshot, snapshot_mode = _read_snapshot(paths.snapshot_for(label))
        if snapshot is not None:
            found[label] = Installed(label, None, snapshot, snapshot_mode=snapshot_mode)
    return found


def _read_snapshot(path: Path) -> tuple[bytes | None, int | None]:
    """A lane snapshot's bytes and mode; someone else's snapshot is refused, not replaced."""
    read = read_regular(path, "lane snapshot")
    if read is None:
        return None, None
    data, info = read
    if info.st_uid != os.geteuid():
        raise unsafe_error(path, unsafe_reason(info) or "is not yours", "lane snapshot", info)
    return data, stat.S_IMODE(info.st_mode)


def _identify(data: bytes, *, fallback: str) -> tuple[str, str | None]:
    try:
        parsed = plistlib.loads(data)
    except Exception:  # plistlib raises several unrelated types on bad input
        return fallback, None
    if not isinstance(parsed, dict):
        return fallback, None
    label = parsed.get("Label")
    env = parsed.get("EnvironmentVariables")
    lane = env.get(MARKER) if isinstance(env, dict) else None
    return (
        label if isinstance(label, str) and label else fallback,
        lane if isinstance(lane, str) else None,
    )


def _read(path: Path) -> bytes | None:
    read = read_regular(path, "plist")
    return None if read is None else read[0]


def _installed_spec(paths: Paths, label: str) -> RunSpec | None:
    try:
        return RunSpec.load(paths.snapshot_for(label))
    except LanekitError:
        return None


def lock_held(spec: RunSpec) -> bool:
    """True when a run holds the lane lock (a shared, non-blocking flock probe)."""
    return lanelock.lane_busy(_lock_path(spec))


def _lock_path(spec: RunSpec) -> Path:
    return lanelock.lane_lock_path(spec.queue_dir, spec.lane)


def apply(
    config: Config,
    paths: Paths,
    launchd: Launchd,
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
    (lanekit.preflight; refused otherwise, as FAILED outcomes). Removal offers are listed only
    when no lanes are named, and only for this project's lanes. A label applied from another
    lanes.toml is refused (UsageError, nothing changed) unless `adopt` (lanekit.ownership).

    Unless `dry_run`, the domain's apply lock (applylock) is held from observing to the last
    step, so concurrent applies queue up; `on_wait` is told once who holds it.
    """
    run = functools.partial(
        _apply,
        config,
        paths,
        launchd,
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
    launchd: Launchd,
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
    interpreter = interpreter or sys.executable
    desired = [
        desired_lane(lane, paths, interpreter=interpreter, templates=config.templates)
        for lane in selected
    ]
    specs = {lane.label: run_spec(lane) for lane in selected}
    seen = observe(paths, launchd, desired, specs)
    if not adopt:
        refuse_takeover(
            config.path,
            [(lane.name, lane.label) for lane in selected],
            {label: item.snapshot for label, item in seen.installed.items()},
        )
    from lanekit.pause import paused_labels

    paused = paused_labels(paths, [d.label for d in desired])
    actions = plan(
        desired,
        seen.installed,
        seen.loaded.keys(),
        seen.running,
        disabled=seen.disabled,
        definitions=seen.definitions,
        paused=paused,
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
    notes = (*domain_notes(launchd.domain), *interpreter_notes(health))
    if dry_run:
        return ApplyResult(
            tuple(refused.get(a.label) or _planned(a) for a in actions),
            dry_run=True,
            notes=notes,
        )
    if health.exists and any(a.kind is not ActionKind.REMOVE for a in actions):
        # Written while the CLI surely works, for the day its interpreter is gone.
        install_rescue(paths.state, health)

    deadline = None if wait is None else timing.clock() + max(wait, 0.0)
    stopper = _Stopper(launchd, timing, deadline=deadline, force=force, progress=progress)
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
            old_spec = _installed_spec(paths, label)
            lane_specs = [s for s in (old_spec, specs[label]) if s is not None]
            outcomes[i] = _carry_out(
                action,
                lane_by_label[label],
                want_by_label[label],
                specs=lane_specs,
                paths=paths,
                stopper=stopper,
            )
    return ApplyResult(tuple(outcomes[i] for i in range(len(actions))), notes=notes)


def _this_project_only(
    actions: Sequence[Action], installed: Mapping[str, Installed], project: Path
) -> list[Action]:
    """Removal offers only for lanes this project applied (lanekit.ownership): another
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
    (lanekit.preflight): a FAILED outcome each, naming the command and the fix."""
    from lanekit.preflight import cannot_start

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


def _planned(action: Action) -> Outcome:
    if action.kind is ActionKind.UNCHANGED:
        return Outcome(action, Result.UNCHANGED, action.reason)
    if action.kind is ActionKind.REMOVE:
        return Outcome(action, Result.OFFERED, action.reason, action.pid)
    return Outcome(action, Result.PLANNED, action.reason, action.pid)


def _carry_out(
    action: Action,
    lane: LaneSpec,
    want: Desired,
    *,
    specs: Sequence[RunSpec],
    paths: Paths,
    stopper: _Stopper,
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
            from lanekit.plist import write_plist

            write_plist(paths.plist_for(label), want.plist)
        if action.write_snapshot:
            write_atomic(paths.snapshot_for(label), want.snapshot)
        if action.enable:
            stopper.launchd.enable(label)
            notes.append("it was disabled in launchd (not by `lanekit pause`): enabled it")
        if action.bootstrap:
            stopper.bootstrap(label, paths.plist_for(label), _exit_timeout(specs))
        elif action.paused:
            notes.append(f"paused: not loaded until `{cmdline('lanekit', 'resume', action.lane)}`")
    except LanekitError as exc:
        return Outcome(action, Result.FAILED, exc.message, action.pid, exc)
    done = {
        ActionKind.CREATE: "installed and loaded",
        ActionKind.UPDATE: "reloaded" if action.bootout else "written and loaded",
        ActionKind.SKIP_RUNNING: "reloaded",
        ActionKind.LOAD: "loaded",
        ActionKind.REWRITE: "plist rewritten, no reload needed",
    }[action.kind]
    if action.paused and not action.bootstrap:
        done = "booted out and written" if action.bootout else "written"
    _log_applied(lane, action.kind, clock_for(paths).time)
    return Outcome(action, Result.DONE, "; ".join([done, *notes]))


def _prepare_dirs(lane: LaneSpec) -> None:
    """Queue dirs and log dirs must exist before launchd starts the job (else exit 78)."""
    from lanekit.queue import Queue

    Queue(lane.queue.dir, durable=lane.queue.durable).ensure()
    for path in (lane.stdout_path, lane.stderr_path, lane.log_path):
        make_private_dirs(path.parent)


def _log_skip(lane: LaneSpec, pid: int | None, clock: Callable[[], float]) -> str:
    """Record the skip in the lane log (by the launchd backend's clock, like the runs it sits
    between); returns where (or why not) for the outcome text."""
    from lanekit.lanelog import LaneLog

    try:
        LaneLog(lane.log_path, lane.name, clock=clock).event(
            "skipped", reason="running", pid=pid, by="apply"
        )
    except OSError as exc:
        return f"could not write the lane log {lane.log_path}: {exc.strerror or exc}"
    return f"logged to {lane.log_path}"


def _log_applied(lane: LaneSpec, kind: ActionKind, clock: Callable[[], float]) -> None:
    """Record the (re)load in the lane log (by the launchd backend's clock), so `lanekit
    timeline` can mark it. Best effort: the lane is loaded either way, and a log that cannot
    be written is doctor's finding."""
    from lanekit.lanelog import LaneLog

    try:
        LaneLog(lane.log_path, lane.name, clock=clock).event(
            "applied", action=str(kind), by="apply"
        )
    except OSError:
        return


def _exit_timeout(specs: Sequence[RunSpec]) -> float:
    timeouts = [s.exit_timeout for s in specs if s.exit_timeout > 0]
    return float(max(timeouts, default=DEFAULT_EXIT_TIMEOUT))


@dataclass(frozen=True, slots=True)
class Waiting:
    """What `apply --wait` / `remove --wait|--force` is waiting for right now (a progress
    report; the CLI draws it as one line updating in place, on a terminal only)."""

    lane: str
    label: str
    pid: int | None
    """The run's pid, when launchd reports one (None: only the lane lock says it runs)."""
    elapsed: float
    """Seconds since this wait began."""
    what: str
    """`for its run to end`, or `for launchd to let it go` (after a bootout)."""


Progress = Callable[[Waiting], None]


@dataclass(frozen=True, slots=True)
class _Stop:
    stopped: bool
    pid: int | None = None
    notes: tuple[str, ...] = ()


class _Stopper:
    """Boots lanes out safely: never a running lane unless forced; waits within a deadline."""

    def __init__(
        self,
        launchd: Launchd,
        timing: Timing,
        *,
        deadline: float | None,
        force: bool,
        progress: Progress | None = None,
    ) -> None:
        self.launchd = launchd
        self.timing = timing
        self.deadline = deadline
        self.force = force
        self.progress = progress
        self.lanes: dict[str, str] = {}
        """label -> lane name, for progress reports."""

    def _report(self, label: str, pid: int | None, started: float, what: str) -> None:
        if self.progress is not None:
            lane = self.lanes.get(label, label)
            elapsed = self.timing.clock() - started
            self.progress(Waiting(lane, label, pid, elapsed, what))

    def stop(
        self,
        label: str,
        specs: Sequence[RunSpec],
        *,
        running: bool,
        pid: int | None,
        lane: str | None = None,
    ) -> _Stop:
        """Boot `label` out and wait until launchd has let go of it.

        Without force: only while holding the lane lock(s) and with no live pid, so a run
        launched meanwhile finds the lane busy and claims nothing. `running` (the plan saw the
        lane running, with `pid` when launchd reported one) skips at once unless there is a
        --wait budget.
        """
        timeout = _exit_timeout(specs)
        if lane is not None:
            self.lanes[label] = lane
        if self.force:
            pid = self._pid(label)
            self._bootout(label, timeout)
            return _Stop(True, pid, (f"--force stopped run pid {pid}",) if pid else ())
        if running and self.deadline is None:
            return _Stop(False, pid)
        started = self.timing.clock()
        waited = running
        while True:
            locks = lanelock.LaneLocks(_lock_path(spec) for spec in specs)
            try:
                if locks.acquire():
                    pid = self._settle(label, started)
                    if pid is None:
                        self._bootout(label, timeout)
                        took = self.timing.clock() - started
                        notes = (f"waited {took:.1f} s for the run to end",) if waited else ()
                        return _Stop(True, notes=notes)
                else:
                    pid = self._pid(label)
            finally:
                locks.release()
            if self.deadline is None or self.timing.clock() >= self.deadline:
                return _Stop(False, pid)
            waited = True
            self._report(label, pid, started, "for its run to end")
            self.timing.sleep(self.timing.poll)

    def bootstrap(self, label: str, plist: Path, exit_timeout: float) -> None:
        """Load the plist; on 5/37 (previous instance still draining) drain and retry once."""
        try:
            self.launchd.bootstrap(plist)
        except LaunchctlError as exc:
            if exc.code not in STILL_LOADED:
                raise
            self._drain(label, exit_timeout)
            self.launchd.bootstrap(plist)

    def _pid(self, label: str) -> int | None:
        for entry in self.launchd.list():
            if entry.label == label:
                return entry.pid
        return None

    def _settle(self, label: str, started: float) -> int | None:
        """With the lock held: wait (briefly) for a just-launched run to give up and exit."""
        limit = self.timing.clock() + self.timing.start_grace
        while True:
            pid = self._pid(label)
            if pid is None or self.timing.clock() >= limit:
                return pid
            self._report(label, pid, started, "for its run to end")
            self.timing.sleep(self.timing.poll)

    def _bootout(self, label: str, exit_timeout: float) -> None:
        try:
            self.launchd.bootout(label)
        except LaunchctlError as exc:
            if exc.code in NOT_LOADED:
                return
            if exc.code != LaunchctlCode.STILL_STOPPING:  # on its way out already: wait below
                raise
        self._drain(label, exit_timeout)

    def _drain(self, label: str, exit_timeout: float) -> None:
        """Poll list() until `label` is gone, bounded by its ExitTimeOut plus a margin."""
        started = self.timing.clock()
        limit = started + exit_timeout + DRAIN_MARGIN
        while True:
            entry = next((e for e in self.launchd.list() if e.label == label), None)
            if entry is None:
                return
            if self.timing.clock() >= limit:
                raise LaunchdError(
                    f"{label}: still loaded {exit_timeout + DRAIN_MARGIN:.0f} s after bootout",
                    f"check `{cmdline('launchctl', 'print', f'{self.launchd.domain}/{label}')}`,"
                    " then rerun `lanekit apply`",
                )
            self._report(label, entry.pid, started, "for launchd to let it go (bootout)")
            self.timing.sleep(self.timing.poll)


# -- remove and kick -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoveResult:
    """What `remove` did: the lane is booted out and its plist and snapshot are gone."""

    lane: str
    label: str
    booted_out: bool
    deleted: tuple[Path, ...]
    stopped_pid: int | None = None
    """The run --force stopped, if any."""
    still_configured: bool = False
    """The lane is still in lanes.toml, so the next `apply` installs it again."""


def remove(
    config: Config | None,
    paths: Paths,
    launchd: Launchd,
    name: str,
    *,
    wait: float | None = None,
    force: bool = False,
    timing: Timing | None = None,
    progress: Progress | None = None,
) -> RemoveResult:
    """Boot out lane `name` (a lane in lanes.toml, or an installed lane/label) and delete its
    plist and snapshot; the queue is never touched. Refuses a running lane unless wait/force,
    and plists that lanekit did not install."""
    timing = timing or Timing()
    lane, label = _resolve_installed(config, paths, name)
    plist = paths.plist_for(label)
    data = _read(plist)
    if data is not None and _identify(data, fallback=label)[1] is None:
        raise UsageError(
            f"{plist}: not installed by lanekit (no {MARKER} in EnvironmentVariables); not removed",
            f"if you mean it: {cmdline('launchctl', 'bootout', f'{launchd.domain}/{label}')}"
            f" && {cmdline('rm', plist)}",
        )
    entries = {e.label: e for e in launchd.list()}
    snapshot = paths.snapshot_for(label)
    if data is None and label not in entries and not snapshot.exists():
        raise UsageError(
            f"lane {name!r} is not installed ({label})", "`lanekit status` lists the lanes"
        )
    specs = _remove_specs(config, paths, lane, label)
    booted_out = False
    stopped_pid = None
    if label in entries:
        deadline = None if wait is None else timing.clock() + max(wait, 0.0)
        stopper = _Stopper(launchd, timing, deadline=deadline, force=force, progress=progress)
        pid = entries[label].pid
        stop = stopper.stop(label, specs, running=pid is not None, pid=pid, lane=lane)
        if not stop.stopped:
            who = f"pid {stop.pid}" if stop.pid is not None else "lane lock held"
            raise LaunchdError(
                f"lane {lane!r} is running ({who}): not removed",
                "let the run finish, or use --wait SECONDS, or --force (its jobs go back to"
                " the queue)",
            )
        booted_out = True
        stopped_pid = stop.pid
    deleted = []
    for path in (plist, snapshot):
        if path.exists():
            path.unlink()
            deleted.append(path)
    return RemoveResult(
        lane=lane,
        label=label,
        booted_out=booted_out,
        deleted=tuple(deleted),
        stopped_pid=stopped_pid,
        still_configured=config is not None and lane in config.lanes,
    )


def _resolve_installed(config: Config | None, paths: Paths, name: str) -> tuple[str, str]:
    """(lane, label) for a lane name in lanes.toml, or an installed lane name or label."""
    if config is not None and name in config.lanes:
        return name, config.lanes[name].label
    for label, item in scan_installed(paths, frozenset()).items():
        if name in {item.lane, label}:
            return item.lane or label, label
    if paths.plist_for(name).exists() or paths.snapshot_for(name).exists():
        return name, name
    raise UsageError(
        f"no lane named {name!r} in lanes.toml or among installed lanekit plists",
        "`lanekit status` and `lanekit plan` list the lanes",
    )


def _remove_specs(config: Config | None, paths: Paths, lane: str, label: str) -> list[RunSpec]:
    specs = [s for s in (_installed_spec(paths, label),) if s is not None]
    if config is not None and lane in config.lanes:
        specs.append(run_spec(config.lanes[lane]))
    return specs


@dataclass(frozen=True, slots=True)
class KickResult:
    """A kicked lane: what became of the start, and the pid of its run (`kickstart -p`)."""

    lane: str
    label: str
    pid: int | None
    already_running: bool
    outcome: StartOutcome = StartOutcome.STARTED
    throttle: int | None = None
    """For a postponed start: launchd's ThrottleInterval in seconds."""
    starts_in: int | None = None
    """For a postponed start: about how many seconds until launchd starts it."""

    @property
    def exit_code(self) -> ExitCode:
        """4 (POSTPONED) for a start launchd postponed, else 0."""
        return ExitCode.POSTPONED if self.outcome is StartOutcome.POSTPONED else ExitCode.OK


def kick(
    config: Config,
    paths: Paths,
    launchd: Launchd,
    name: str,
    *,
    clock: Callable[[], float] = time.time,
) -> KickResult:
    """Start lane `name` now and return at once; a running lane keeps its current run.
    Refuses (UnsafeStateError) when the lane's plist, snapshot or lanekit's directories could
    have been written by someone else: the run would execute what they say.

    A start launchd postpones (ThrottleInterval) is reported with about when it happens; a
    start launchd could not carry out (exit 78: the program never ran) is a NotStartedError."""
    (lane,) = select_lanes(config, [name])
    check_state(paths)
    check_private(paths.plist_for(lane.label), "plist")
    check_private(paths.snapshot_for(lane.label), "lane snapshot")
    from lanekit.pause import is_paused

    if is_paused(paths, lane.label):
        raise LaunchdError(
            f"lane {name!r} is paused (`lanekit pause`): not started",
            cmdline("lanekit", "resume", name),
        )
    entry = next((e for e in launchd.list() if e.label == lane.label), None)
    if entry is None:
        raise LaunchdError(
            f"lane {name!r} is not loaded ({launchd.domain}/{lane.label})",
            "run `lanekit apply` to install and load it",
        )
    if entry.pid is not None:
        return KickResult(
            name, lane.label, entry.pid, already_running=True, outcome=StartOutcome.ALREADY_RUNNING
        )
    before = _service(launchd, lane.label)
    asked = clock()
    try:
        pid = launchd.kickstart(lane.label)
    except LaunchctlError as exc:
        if exc.code in NOT_LOADED:
            raise LaunchdError(
                f"lane {name!r} is not loaded ({launchd.domain}/{lane.label})",
                "run `lanekit apply` to install and load it",
            ) from None
        raise
    after = _service(launchd, lane.label)
    outcome = classify_start(pid, before, after)
    if outcome is StartOutcome.NOT_STARTED:
        code = after.last_exit_code if after is not None else None
        # "exit 78 (EX_CONFIG: ...)": the words of every other exit status lanekit shows.
        why = (
            describe_exit(code, lanekit_runner=False).replace("exit code", "exit", 1)
            if code is not None
            else "it gave no reason"
        )
        raise NotStartedError(
            f"lane {name!r}: launchd could not start it: {why}; the program never ran",
            f"`lanekit doctor {name}` names the cause (a missing log or working directory, a bad"
            f" interpreter); `launchctl print {launchd.domain}/{lane.label}` shows launchd's view",
        )
    if outcome is StartOutcome.POSTPONED:
        throttle = throttle_of(after)
        started = last_start(lane.log_path, since=asked - throttle - 60)
        return KickResult(
            name,
            lane.label,
            None,
            already_running=False,
            outcome=outcome,
            throttle=throttle,
            starts_in=postponed_for(throttle, started, clock()),
        )
    return KickResult(name, lane.label, pid, already_running=False, outcome=outcome)


def _service(launchd: Launchd, label: str) -> ServiceInfo | None:
    try:
        return launchd.print(label)
    except LanekitError:
        return None
