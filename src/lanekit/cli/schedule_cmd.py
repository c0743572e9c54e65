"""`lanekit schedule EXPR...`: what launchd will make of a schedule, before it is installed."""

from __future__ import annotations

from typing import Annotated

import typer

from lanekit.cli.options import ConfigOption, JsonOption, complete_lane


def schedule(
    exprs: Annotated[
        list[str],
        typer.Argument(
            metavar="EXPR",
            help=(
                'Cron text (quote it: "40 10 * * *", "@daily"), a launchd table '
                "(Hour=10,Minute=40 or {Hour=10, Minute=40}), or every=15m."
            ),
            show_default=False,
        ),
    ],
    *,
    next_count: Annotated[
        int,
        typer.Option("--next", "-n", min=0, max=1000, help="How many upcoming fire times to show."),
    ] = 5,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            help="Count fires from this ISO 8601 time (no offset = local time; default: now).",
            show_default=False,
        ),
    ] = None,
    lane: Annotated[
        str | None,
        typer.Option(
            "--lane",
            help="Take the schedule as this lane's (of lanes.toml): show where it can start in "
            "the same minute as another lane of its queue.",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Show the StartCalendarInterval entries, a plain-English description and the next fires.

    With --config or --lane, also where the schedule can start in the same minute as a lane of
    lanes.toml (as validate and doctor report lanes of one queue): with --lane, the other lanes
    of that lane's queue; without, every lane with a calendar."""
    from lanekit.cli.render import schedule as show
    from lanekit.schedule import explain

    lanes = None
    if config is not None or lane is not None:
        import os

        from lanekit.config import find_config, load_config, select_lanes
        from lanekit.state.paths import Paths

        paths = Paths.from_env()
        loaded = load_config(find_config(config, os.environ, paths.cwd), paths)
        if lane is not None:
            select_lanes(loaded, [lane])  # an unknown lane is named, with the known ones
        lanes = list(loaded.lanes.values())
    result = explain(exprs, n=next_count, after=after, lanes=lanes, lane=lane)
    show.explanation(result, as_json=as_json)
