"""`lanekit remove`: boot one lane out and delete its plist and snapshot (never its queue)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lanekit.config import Config, run_spec
from lanekit.config.provenance import MARKER, refuse_removal
from lanekit.errors import LaunchdError, UsageError
from lanekit.reconcile.applylock import OnWait, apply_lock
from lanekit.reconcile.observe import identify, installed_spec, scan_installed
from lanekit.reconcile.stopper import Progress, Stopper, Timing
from lanekit.service import manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec
from lanekit.system.owned import read_regular
from lanekit.system.quoting import cmdline


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
    launchd: Launchd | ServiceManager,
    name: str,
    *,
    wait: float | None = None,
    force: bool = False,
    adopt: bool = False,
    timing: Timing | None = None,
    on_wait: OnWait | None = None,
    progress: Progress | None = None,
) -> RemoveResult:
    """Boot out lane `name` (a lane in lanes.toml, or an installed lane/label) and delete its
    plist and snapshot; the queue is never touched. Refuses a running lane unless wait/force,
    plists that lanekit did not install, and (given this project's `config`) a lane another
    project's lanes.toml installed, unless `adopt` (lanekit.config.provenance). Holds the domain's
    apply lock (applylock) throughout, as apply does, so a concurrent apply never reinstalls
    what is half removed; `on_wait` is told once who holds it."""
    with apply_lock(paths.state, on_wait):
        return _remove(
            config,
            paths,
            manager_of(launchd, paths.launch_agents),
            name,
            wait=wait,
            force=force,
            adopt=adopt,
            timing=timing or Timing(),
            progress=progress,
        )


def _remove(
    config: Config | None,
    paths: Paths,
    manager: ServiceManager,
    name: str,
    *,
    wait: float | None,
    force: bool,
    adopt: bool,
    timing: Timing,
    progress: Progress | None,
) -> RemoveResult:
    lane, label = _resolve_installed(config, paths, manager, name)
    plist = manager.artifact_path(label)
    read = read_regular(plist, "plist")
    data = None if read is None else read[0]
    if data is not None and identify(manager, data, fallback=label)[1] is None:
        raise UsageError(
            f"{plist}: not installed by lanekit (no {MARKER} in EnvironmentVariables); not removed",
            f"if you mean it: {cmdline('launchctl', 'bootout', f'{manager.domain}/{label}')}"
            f" && {cmdline('rm', plist)}",
        )
    snapshot = paths.snapshot_for(label)
    if config is not None and not adopt:
        installed = read_regular(snapshot, "lane snapshot")
        refuse_removal(config.path, lane, label, None if installed is None else installed[0])
    entries = manager.loaded()
    if data is None and label not in entries and not snapshot.exists():
        raise UsageError(
            f"lane {name!r} is not installed ({label})", "`lanekit status` lists the lanes"
        )
    specs = _remove_specs(config, paths, lane, label)
    booted_out = False
    stopped_pid = None
    if label in entries:
        deadline = None if wait is None else timing.clock() + max(wait, 0.0)
        stopper = Stopper(manager, timing, deadline=deadline, force=force, progress=progress)
        pid = entries[label]
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
    for path in (*manager.artifact_paths(label), snapshot):
        if path.exists():
            path.unlink()
            deleted.append(path)
    if deleted:
        manager.forget(label)
    return RemoveResult(
        lane=lane,
        label=label,
        booted_out=booted_out,
        deleted=tuple(deleted),
        stopped_pid=stopped_pid,
        still_configured=config is not None and lane in config.lanes,
    )


def _resolve_installed(
    config: Config | None, paths: Paths, manager: ServiceManager, name: str
) -> tuple[str, str]:
    """(lane, label) for a lane name in lanes.toml, or an installed lane name or label."""
    if config is not None and name in config.lanes:
        return name, config.lanes[name].label
    for label, item in scan_installed(paths, manager, frozenset()).items():
        if name in {item.lane, label}:
            return item.lane or label, label
    if manager.artifact_path(name).exists() or paths.snapshot_for(name).exists():
        return name, name
    raise UsageError(
        f"no lane named {name!r} in lanes.toml or among installed lanekit plists",
        "`lanekit status` and `lanekit plan` list the lanes",
    )


def _remove_specs(config: Config | None, paths: Paths, lane: str, label: str) -> list[RunSpec]:
    specs = [s for s in (installed_spec(paths, label),) if s is not None]
    if config is not None and lane in config.lanes:
        specs.append(run_spec(config.lanes[lane]))
    return specs
