"""`lanekit schedule EXPR...`: what launchd will make of a schedule, before it is installed."""

from __future__ import annotations

from typing import Annotated

import typer

from lanekit.cli.options import JsonOption


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
    as_json: JsonOption = False,
) -> None:
    """Show the StartCalendarInterval entries, a plain-English description and the next fires."""
    from lanekit.cli.render import schedule as show
    from lanekit.schedule import explain

    show.explanation(explain(exprs, n=next_count, after=after), as_json=as_json)
