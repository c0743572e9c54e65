"""`lanekit init`, `lanekit validate`, `lanekit render`: lanes.toml and the plists it describes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lanekit.cli.options import ConfigOption, JsonOption, complete_lane
from lanekit.errors import ExitCode

if TYPE_CHECKING:
    from lanekit.service.launchd.plist import UnitsRenderer
    from lanekit.state.paths import Paths

# The core and the renderer are imported inside each command (lanekit.cli.registry).

TemplatesOption = Annotated[
    Path | None,
    typer.Option(
        "--templates",
        help="Directory of templates overriding the shipped ones (else [defaults] templates).",
        show_default=False,
        file_okay=False,
    ),
]


def init(
    directory: Annotated[
        Path | None,
        typer.Argument(
            help="Where to write lanes.toml (default: the current directory).",
            show_default=False,
            metavar="DIR",
        ),
    ] = None,
) -> None:
    """Write a commented example lanes.toml. Never overwrites an existing one."""
    from lanekit.cli.render import config as show
    from lanekit.service.launchd.plist import init_config
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    written = init_config(paths.cwd / (directory or Path()), paths)
    show.initialized(written, paths.cwd)


def validate(
    config: ConfigOption = None,
    templates: TemplatesOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check lanes.toml, its schedules and its rendered plists; list every error (exit 1)."""
    from lanekit.cli.render import config as show
    from lanekit.config import find_config
    from lanekit.reconcile.validate import check_config
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    path = find_config(config, os.environ, paths.cwd)
    check = check_config(
        path, paths, interpreter=sys.executable, templates=_absolute(templates, paths)
    )
    show.validation(check, as_json=as_json)
    if not check.ok:
        raise typer.Exit(int(ExitCode.FAILURE))


def render(
    lanes: Annotated[
        list[str] | None,
        typer.Argument(
            help="Lanes to render (default: all).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write <Label>.plist files (systemd: <label>.service and .timer) into this"
            " directory instead of printing them.",
            show_default=False,
            file_okay=False,
        ),
    ] = None,
    templates: TemplatesOption = None,
    config: ConfigOption = None,
) -> None:
    """Print the launchd plist of each lane (or write them with --out).

    Where systemd runs the lanes (`[defaults] service_manager`, or a Linux user manager that
    answers), each lane's systemd units instead."""
    from lanekit.cli.render import config as show
    from lanekit.config import find_config
    from lanekit.service.launchd.plist import render_config
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    path = find_config(config, os.environ, paths.cwd)
    rendered = render_config(
        path,
        paths,
        names=lanes or (),
        interpreter=sys.executable,
        templates=_absolute(templates, paths),
        out=_absolute(out, paths),
        units=_units_renderer,
    )
    show.rendered(rendered, paths.cwd)


def _units_renderer(configured: str | None) -> UnitsRenderer | None:
    """systemd's renderer when systemd runs the lanes of a lanes.toml that says `configured`
    (its service_manager) on this machine, else None (the plist)."""
    from lanekit.state.backend import manager_choice

    if manager_choice(os.environ, sys.platform, configured)[0] != "systemd":
        return None
    from lanekit.service.systemd.units import rendered_units

    return rendered_units


def _absolute(path: Path | None, paths: Paths) -> Path | None:
    return None if path is None else paths.cwd / path
