"""`lanekit plan|apply|remove|kick|stop|restart|status`: lanes.toml against launchd (real or
emulated)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lanekit.cli.options import (
    ConfigOption,
    DryRunOption,
    JsonOption,
    ProjectOption,
    complete_lane,
)
from lanekit.errors import ConfigError, ExitCode, UsageError

if TYPE_CHECKING:
    from lanekit.config import Config
    from lanekit.state.paths import Paths

# The core and the renderer are imported inside each command (lanekit.cli.registry).

WaitOption = Annotated[
    float | None,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        min=0,
        help="Let running lanes finish (up to SECONDS in total), then reload or remove them;"
        " on a terminal one line shows what is awaited (lane, pid, elapsed).",
        show_default=False,
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Boot out running lanes anyway (their runner puts the jobs back in the queue); "
        "apply: also install lanes whose job command is missing from their PATH, or whose "
        "interpreter cannot import lanekit with -I.",
    ),
]


def _config(option: Path | None, paths: Paths) -> Config:
    from lanekit.config import find_config, load_config

    return load_config(find_config(option, os.environ, paths.cwd), paths)


def _check_wait_force(wait: float | None, force: bool) -> None:
    if wait is not None and force:
        raise UsageError("--wait and --force cannot be combined", "choose one of them")


def plan(config: ConfigOption = None) -> None:
    """Show what `lanekit apply` would do to each lane, and why. Changes nothing.

    Exit 1 when apply would fail a lane (its command cannot start: `apply --force` installs it
    anyway), as apply itself would."""
    from lanekit.cli.render import launchd as show
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths
    from lanekit.watch.lane import apply_with_watchdog as reconcile

    paths = Paths.from_env()
    loaded = _config(config, paths)
    manager = open_manager(paths, configured=loaded.service_manager)
    result = reconcile(loaded, paths, manager, dry_run=True)
    show.plan(result)
    if result.exit_code != ExitCode.OK:
        raise typer.Exit(int(result.exit_code))


def apply(
    lanes: Annotated[
        list[str] | None,
        typer.Argument(
            help="Lanes to apply (default: all lanes in lanes.toml).",
            show_default=False,
            autocompletion=complete_lane,
        ),
    ] = None,
    *,
    wait: WaitOption = None,
    force: ForceOption = False,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Take over labels that another project's lanes.toml installed (refused "
            "otherwise, naming both files).",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Install and (re)load lanes so launchd matches lanes.toml. A running lane is never
    reloaded: it is skipped and logged, unless --wait or --force. A label another project
    installed is never taken over without --adopt. Refused (exit 69) when the interpreter the
    lanes would run cannot `import lanekit` with -I, as launchd runs it (a `pip install
    --user` or PYTHONPATH install works in the terminal only).

    Exit 3 when a change is still pending because its lane is running (`--json` lists them)."""
    from lanekit.cli.render import launchd as show
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths
    from lanekit.watch.lane import apply_with_watchdog as reconcile

    _check_wait_force(wait, force)
    paths = Paths.from_env()
    loaded = _config(config, paths)
    with show.waiting() as progress:
        result = reconcile(
            loaded,
            paths,
            open_manager(paths, configured=loaded.service_manager),
            lanes=lanes or (),
            wait=wait,
            force=force,
            dry_run=dry_run,
            on_wait=show.waiting_for_apply,
            progress=progress,
            adopt=adopt,
        )
    show.applied(result, as_json=as_json)
    raise typer.Exit(int(result.exit_code))


def remove(
    lane: Annotated[
        str,
        typer.Argument(
            help="Lane name (or launchd label) of an installed lanekit lane.",
            autocompletion=complete_lane,
        ),
    ],
    wait: WaitOption = None,
    force: ForceOption = False,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Remove a lane that another project's lanes.toml installed (refused "
            "otherwise, naming both files).",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Boot out a lane and delete its plist and snapshot. Its queue is left untouched. A lane
    another project installed is never removed from this one without --adopt."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile import remove as reconcile_remove
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    _check_wait_force(wait, force)
    paths = Paths.from_env()
    try:
        loaded: Config | None = _config(config, paths)
    except ConfigError:
        # Removing a lane that is gone from lanes.toml (or whose lanes.toml is gone) is the
        # normal case; only an explicit --config must exist and be valid.
        if config is not None:
            raise
        loaded = None
    with show.waiting() as progress:
        result = reconcile_remove(
            loaded,
            paths,
            open_manager(paths, configured=loaded.service_manager if loaded else None),
            lane,
            wait=wait,
            force=force,
            adopt=adopt,
            on_wait=show.waiting_for_remove,
            progress=progress,
        )
    show.removed(result)


def kick(
    lane: Annotated[
        str, typer.Argument(help="The lane to start now.", autocompletion=complete_lane)
    ],
    config: ConfigOption = None,
) -> None:
    """Start a lane now and return at once; prints the pid of its run.

    Exit 4 when launchd postpones the start (ThrottleInterval: it runs by itself in a few
    seconds), 5 when launchd could not start it (e.g. exit 78: the program never ran)."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile import kick as reconcile_kick
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    loaded = _config(config, paths)
    manager = open_manager(paths, configured=loaded.service_manager)
    result = reconcile_kick(loaded, paths, manager, lane)
    show.kicked(result, emulated=manager.kind == "emulated")
    raise typer.Exit(int(result.exit_code))


def uninstall(
    *,
    project: Annotated[
        bool,
        typer.Option(
            "--project", help="Remove every lane this lanes.toml installed (its watchdog too)."
        ),
    ] = False,
    everything: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Remove everything lanekit installed for you: every project's lanes, the "
            "watchdogs, rescue.sh and the state directory.",
        ),
    ] = False,
    delete_queues: Annotated[
        bool,
        typer.Option(
            "--delete-queues",
            help="Also delete the removed lanes' queues with their jobs (only lanekit's "
            "directories in them; a queue another lane still drains is kept).",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    wait: WaitOption = None,
    force: ForceOption = False,
    config: ConfigOption = None,
) -> None:
    """Remove lanekit's lanes: this project's (--project) or everything (--all).

    Queues and their jobs are kept unless --delete-queues. A running lane is skipped (exit 3)
    unless --wait lets it finish or --force stops it (its job goes back to the queue)."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile.uninstall import Scope
    from lanekit.reconcile.uninstall import uninstall as reconcile_uninstall
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    _check_wait_force(wait, force)
    if project == everything:
        raise UsageError(
            "say what to uninstall: --project or --all (one of them)",
            "lanekit uninstall --project --dry-run   lists what it would remove",
        )
    paths = Paths.from_env()
    loaded = _config(config, paths) if project else _optional_config(config, paths)
    result = reconcile_uninstall(
        loaded,
        paths,
        open_manager(paths, configured=loaded.service_manager if loaded else None),
        scope=Scope.ALL if everything else Scope.PROJECT,
        dry_run=dry_run,
        delete_queues=delete_queues,
        wait=wait,
        force=force,
    )
    show.uninstalled(result)
    raise typer.Exit(int(result.exit_code))


def adopt(
    plists: Annotated[
        list[Path],
        typer.Argument(help="Hand-written launchd plist files to adopt.", show_default=False),
    ],
    *,
    lane: Annotated[
        str | None,
        typer.Option("--lane", help="The new lane's name (one PLIST only).", show_default=False),
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            help="Make the lane drain this queue of lanes.toml (default: a plain lane, run "
            "once per fire).",
            show_default=False,
            metavar="NAME",
        ),
    ] = None,
    keep_unknown: Annotated[
        bool,
        typer.Option(
            "--keep-unknown",
            help="Carry plist keys no lane key expresses into the lane's plist through a "
            "template lanekit writes (refused otherwise).",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    config: ConfigOption = None,
) -> None:
    """Turn hand-written launchd plists into lanes of lanes.toml (its comments kept).

    Each plist becomes a [lanes.NAME] table: its program and arguments, schedule, environment,
    logs and launchd options. Keys no lane key expresses are listed and refused unless
    --keep-unknown. `lanekit apply` then boots the hand-written job out (never while it runs),
    moves its plist aside (never deleted) and installs the lane in its place. Refused (exit 2)
    where systemd runs the lanes: there is no launchd job to take over."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile.adopt import adopt as reconcile_adopt
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    loaded = _config(config, paths)
    manager = open_manager(paths, configured=loaded.service_manager)
    result = reconcile_adopt(
        loaded,
        paths,
        plists,
        lane=lane,
        queue=queue,
        keep_unknown=keep_unknown,
        dry_run=dry_run,
        install_dir=manager.install_dir,
        manager=manager.kind,
    )
    show.adopted(result)


def _optional_config(config: Path | None, paths: Paths) -> Config | None:
    """lanes.toml when there is one (or --config names it); --all needs none."""
    try:
        return _config(config, paths)
    except ConfigError:
        if config is not None:
            raise
        return None


StopWaitOption = Annotated[
    float | None,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        min=0,
        help="Wait at most SECONDS for the run to end (default: the lane's exit_timeout, when "
        "it gets SIGKILL, plus 5 s); exit 3 if it is still running then.",
        show_default=False,
    ),
]


def stop(
    lane: Annotated[str, typer.Argument(help="The lane whose current run to stop.")],
    wait: StopWaitOption = None,
    config: ConfigOption = None,
) -> None:
    """Stop a lane's current run the way a bootout would, and leave the lane loaded.

    The run gets SIGTERM (SIGKILL after the lane's exit_timeout): it stops its job, puts the
    job back in its queue without spending an attempt, and exits 75. The lane keeps its
    schedule. Exit 3 when the run has not ended within the wait."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile.stoprun import stop as reconcile_stop
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    loaded = _config(config, paths)
    manager = open_manager(paths, configured=loaded.service_manager)
    result = reconcile_stop(loaded, paths, manager, lane, wait=wait)
    show.stopped(result)
    raise typer.Exit(int(result.exit_code))


def restart(
    lane: Annotated[str, typer.Argument(help="The lane to restart.")],
    wait: StopWaitOption = None,
    config: ConfigOption = None,
) -> None:
    """Stop a lane's current run (as `lanekit stop`), then start it again (as `lanekit kick`).

    Exit 3 when the run has not ended within the wait (nothing is started), 4 when launchd
    postpones the new start (ThrottleInterval)."""
    from lanekit.cli.render import launchd as show
    from lanekit.reconcile.stoprun import restart as reconcile_restart
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    loaded = _config(config, paths)
    manager = open_manager(paths, configured=loaded.service_manager)
    result = reconcile_restart(loaded, paths, manager, lane, wait=wait)
    show.stopped(result.stop)
    if result.start is not None:
        show.kicked(result.start, emulated=manager.kind == "emulated")
    raise typer.Exit(int(result.exit_code))


def status(
    lane: Annotated[
        str | None,
        typer.Argument(
            help="Show only this lane.", show_default=False, autocompletion=complete_lane
        ),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Per lane: state, pid, last exit, runs, schedule, next fire and queue counts. Without a
    lanes.toml here: every installed project's lanes, with the project shown."""
    from lanekit.cli.render import status as show
    from lanekit.config.projects import find_configs, lanes_named
    from lanekit.service import clock_for, open_manager
    from lanekit.state.paths import Paths
    from lanekit.status.lanes import status_of

    paths = Paths.from_env()
    configs, anywhere = find_configs(config, paths, os.environ, project=project)
    chosen = {c.service_manager for c in configs if c.service_manager is not None}
    manager = open_manager(paths, configured=chosen.pop() if len(chosen) == 1 else None)
    now = clock_for(paths).now()
    rows = status_of(lanes_named(configs, [lane] if lane else []), paths, manager, now=now)
    show.status(
        rows,
        domain=manager.domain,
        reason=manager.domain_reason,
        as_json=as_json,
        emulated=manager.kind == "emulated",
        show_project=anywhere,
        manager=manager.kind,
    )
