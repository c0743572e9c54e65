"""`lanekit plan|apply|remove|kick|status`: lanes.toml against launchd (real or emulated)."""

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
        "apply: also install lanes whose job command is missing from their PATH.",
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
    from lanekit.service.launchd import open_launchd
    from lanekit.state.paths import Paths
    from lanekit.watch.lane import apply_with_watchdog as reconcile

    paths = Paths.from_env()
    result = reconcile(_config(config, paths), paths, open_launchd(paths), dry_run=True)
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
    installed is never taken over without --adopt.

    Exit 3 when a change is still pending because its lane is running (`--json` lists them)."""
    from lanekit.cli.render import launchd as show
    from lanekit.service.launchd import open_launchd
    from lanekit.state.paths import Paths
    from lanekit.watch.lane import apply_with_watchdog as reconcile

    _check_wait_force(wait, force)
    paths = Paths.from_env()
    with show.waiting() as progress:
        result = reconcile(
            _config(config, paths),
            paths,
            open_launchd(paths),
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
            open_manager(paths),
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
    manager = open_manager(paths)
    result = reconcile_kick(_config(config, paths), paths, manager, lane)
    show.kicked(result, emulated=manager.kind == "emulated")
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
    from lanekit.service import open_manager
    from lanekit.service.launchd import clock_for
    from lanekit.state.paths import Paths
    from lanekit.status.lanes import status_of

    paths = Paths.from_env()
    configs, anywhere = find_configs(config, paths, os.environ, project=project)
    manager = open_manager(paths)
    now = clock_for(paths).now()
    rows = status_of(lanes_named(configs, [lane] if lane else []), paths, manager, now=now)
    show.status(
        rows,
        domain=manager.domain,
        reason=manager.domain_reason,
        as_json=as_json,
        emulated=manager.kind == "emulated",
        show_project=anywhere,
    )
