"""`lanekit db migrate`: the schema of PostgreSQL queues."""

from __future__ import annotations

from typing import Annotated

import typer

from lanekit.cli.options import ConfigOption

db = typer.Typer(
    help="PostgreSQL queues: create or upgrade their schema (`lanekit db migrate`).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@db.command("migrate")
def migrate(
    queue: Annotated[
        str | None,
        typer.Argument(
            help='Only this queue (a [queues.NAME] with backend = "postgres"; default: all).',
            show_default=False,
            metavar="QUEUE",
        ),
    ] = None,
    *,
    config: ConfigOption = None,
) -> None:
    """Create or upgrade the schema of lanes.toml's postgres queues, from any one machine.
    Runs never migrate: a lane on an older schema stops with this command as its fix; a schema
    newer than this lanekit is refused (exit 69) until lanekit is upgraded here."""
    import os

    from lanekit.cli.render import queue as show
    from lanekit.config import find_config, load_config
    from lanekit.jobs.migrate import migrate as migrate_queues
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    loaded = load_config(find_config(config, os.environ, paths.cwd), paths)
    show.migrated(migrate_queues(loaded.queues, queue))
