"""`lanekit uninstall`: remove every lane of this project, or everything lanekit installed for
this user (`--all`: every project's lanes, the watchdogs, rescue.sh, the state directory).

Each lane goes the way `lanekit remove` takes it (lanekit.reconcile.remove: bootout, plist and
snapshot deleted, never a running lane unless `wait`/`force`). Queues and their jobs are kept
unless `delete_queues`; then only lanekit's own directories in them go (tmp/ queue/ claimed/
... logs/), and the queue directory itself only when that leaves it empty: a file lanekit did not
put there is never deleted. With `dry_run` nothing changes and each step is listed as it would
be taken.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from lanekit.config import Config
from lanekit.errors import ExitCode, LanekitError, UsageError
from lanekit.reconcile.observe import installed_spec, scan_installed
from lanekit.reconcile.remove import remove
from lanekit.service import manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.system.interpreter import rescue_path

LOGS = "logs"
"""The lanes' directory in a queue (their default logs), deleted with the queue's own."""


class Scope(StrEnum):
    """What `uninstall` removes."""

    PROJECT = "project"
    """The lanes this lanes.toml installed (its watchdog too)."""
    ALL = "all"
    """Every lanekit lane of this user, rescue.sh and the state directory."""


class ItemKind(StrEnum):
    """What one step of `uninstall` is about."""

    LANE = "lane"
    QUEUE = "queue"
    RESCUE = "rescue"
    STATE = "state"


class Done(StrEnum):
    """What became of one item."""

    REMOVED = "removed"
    WOULD_REMOVE = "would-remove"
    """--dry-run: this is what uninstall would do."""
    KEPT = "kept"
    """Left alone on purpose (a queue without --delete-queues)."""
    SKIPPED = "skipped"
    """Not removed: a running lane (without --wait/--force), or what it still needs."""


@dataclass(frozen=True, slots=True)
class Item:
    """One step of `uninstall`."""

    kind: ItemKind
    name: str
    """The lane's name, or the path of the queue, script or directory."""
    done: Done
    detail: str = ""
    """Why, or what was found (the label, a running pid, files left in a queue)."""


@dataclass(frozen=True, slots=True)
class UninstallResult:
    """Every step of one `uninstall`, in the order taken."""

    scope: Scope
    dry_run: bool
    items: tuple[Item, ...]

    @property
    def exit_code(self) -> ExitCode:
        """3 (PENDING) when something was skipped (a running lane), else 0."""
        if any(item.done is Done.SKIPPED for item in self.items):
            return ExitCode.PENDING
        return ExitCode.OK


def uninstall(
    config: Config | None,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    scope: Scope,
    dry_run: bool = False,
    delete_queues: bool = False,
    wait: float | None = None,
    force: bool = False,
) -> UninstallResult:
    """Remove this project's lanes (`config`'s, Scope.PROJECT) or everything lanekit installed
    (Scope.ALL), as described in the module docstring. `wait` is each running lane's budget."""
    if scope is Scope.PROJECT and config is None:
        raise UsageError(
            "uninstall --project needs this project's lanes.toml",
            "run it in the project's directory, or give --config PATH (or --all)",
        )
    manager = manager_of(launchd, paths.launch_agents)
    installed = scan_installed(paths, manager, frozenset())
    project = None if config is None else config.path.resolve()
    running = manager.loaded()
    queues: dict[Path, list[str]] = {}
    """queue dir -> the lanes of this uninstall that use it."""
    others: set[Path] = set()
    """Queue dirs of installed lanes this uninstall leaves alone."""
    items: list[Item] = []
    removed_all = True
    for label, found in sorted(installed.items()):
        if found.lane is None:
            continue
        spec = installed_spec(paths, label)
        mine = scope is Scope.ALL or (spec is not None and spec.project == project)
        if not mine:
            if spec is not None:
                others.add(spec.queue_dir)
            continue
        lane = found.lane
        if spec is not None:
            queues.setdefault(spec.queue_dir, []).append(lane)
        pid = running.get(label)
        if dry_run:
            detail = label if pid is None else f"{label}, running pid {pid}"
            if pid is not None and wait is None and not force:
                items.append(
                    Item(ItemKind.LANE, lane, Done.SKIPPED, f"{detail}: give --wait or --force")
                )
                removed_all = False
            else:
                items.append(Item(ItemKind.LANE, lane, Done.WOULD_REMOVE, detail))
            continue
        try:
            result = remove(None, paths, manager, label, wait=wait, force=force)
        except LanekitError as exc:
            items.append(Item(ItemKind.LANE, lane, Done.SKIPPED, f"{label}: {exc.message}"))
            removed_all = False
            if spec is not None:
                others.add(spec.queue_dir)
            continue
        paths.pause_marker_for(label).unlink(missing_ok=True)
        stopped = "" if result.stopped_pid is None else f", stopped run pid {result.stopped_pid}"
        items.append(Item(ItemKind.LANE, lane, Done.REMOVED, f"{label}{stopped}"))
    for queue_dir, lanes in queues.items():
        items.append(_queue(queue_dir, lanes, delete=delete_queues, dry_run=dry_run, others=others))
    if scope is Scope.ALL:
        items.extend(_state(paths, dry_run=dry_run, complete=removed_all))
    return UninstallResult(scope, dry_run, tuple(items))


def _queue(
    queue_dir: Path, lanes: list[str], *, delete: bool, dry_run: bool, others: set[Path]
) -> Item:
    """A queue of the removed lanes: kept, or (delete) lanekit's directories in it deleted."""
    from lanekit.queue import job_places, own_files

    used_by = ", ".join(lanes)
    if not delete:
        return Item(
            ItemKind.QUEUE, str(queue_dir), Done.KEPT, f"drained by {used_by}; its jobs kept"
        )
    if queue_dir in others:
        return Item(
            ItemKind.QUEUE, str(queue_dir), Done.SKIPPED, "still drained by a lane not uninstalled"
        )
    if not os.path.lexists(queue_dir):
        return Item(ItemKind.QUEUE, str(queue_dir), Done.REMOVED, "already gone")
    if dry_run:
        return Item(ItemKind.QUEUE, str(queue_dir), Done.WOULD_REMOVE, f"drained by {used_by}")
    for place in [*job_places(queue_dir), queue_dir / LOGS]:
        _delete_tree(place)
    for own in own_files(queue_dir):
        with contextlib.suppress(FileNotFoundError):
            own.unlink()
    try:
        queue_dir.rmdir()
    except OSError:
        left = sorted(entry.name for entry in queue_dir.iterdir())
        return Item(
            ItemKind.QUEUE,
            str(queue_dir),
            Done.REMOVED,
            f"its jobs and logs; the directory holds files not lanekit's: {', '.join(left)}",
        )
    return Item(ItemKind.QUEUE, str(queue_dir), Done.REMOVED, f"drained by {used_by}")


def _state(paths: Paths, *, dry_run: bool, complete: bool) -> list[Item]:
    """rescue.sh and the state directory (snapshots, plain lanes' and watchdogs' directories,
    the emulated domain): only once every lane is gone, for a skipped one still needs them."""
    rescue, state = rescue_path(paths.state), paths.state
    found = [(ItemKind.RESCUE, rescue)] if os.path.lexists(rescue) else []
    if os.path.lexists(state):
        found.append((ItemKind.STATE, state))
        refusal = _not_deletable(state, paths.home)
        if refusal is not None:
            return [
                *_state_items(found[:-1], dry_run=dry_run, complete=complete),
                Item(ItemKind.STATE, str(state), Done.SKIPPED, refusal),
            ]
    return _state_items(found, dry_run=dry_run, complete=complete)


def _not_deletable(state: Path, home: Path) -> str | None:
    """Why the state directory must not be deleted whole (None: it may): $LANEKIT_STATE_DIR
    can name any directory, and lanekit deletes only a private directory of its own that
    holds no home directory."""
    resolved, home = state.resolve(), home.resolve()
    if resolved == home or resolved in home.parents or resolved == Path(resolved.anchor):
        return "not deleted: it is, or holds, your home directory ($LANEKIT_STATE_DIR)"
    info = state.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return "not deleted: not a private directory of yours, as lanekit makes it (0700)"
    return None


def _state_items(
    found: list[tuple[ItemKind, Path]], *, dry_run: bool, complete: bool
) -> list[Item]:
    """Delete (or, dry, list) rescue.sh and the state directory, once nothing needs them."""
    if not complete:
        return [
            Item(kind, str(path), Done.SKIPPED, "a lane was not uninstalled and still needs it")
            for kind, path in found
        ]
    if dry_run:
        return [Item(kind, str(path), Done.WOULD_REMOVE) for kind, path in found]
    items = []
    for kind, path in found:
        _delete_tree(path)
        items.append(Item(kind, str(path), Done.REMOVED))
    return items


def _delete_tree(path: Path) -> None:
    """Delete a file or a directory tree of lanekit's. A symlink is removed itself, never
    followed (shutil.rmtree refuses one, and walks by descriptor where the platform can)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
