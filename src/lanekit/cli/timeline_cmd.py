"""`lanekit timeline`: a day of lanes in the terminal, as JSON, or as a self-contained page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lanekit.cli.options import ConfigOption, JsonOption, complete_job, complete_lane
from lanekit.errors import UsageError


def timeline_cmd(
    lanes: Annotated[
        list[str] | None,
        typer.Argument(
            help="Lanes to show (default: every lane in lanes.toml).",
            show_default=False,
            autocompletion=complete_lane,
        ),
    ] = None,
    *,
    day: Annotated[
        str | None,
        typer.Option(
            "--day",
            metavar="YYYY-MM-DD",
            help="The local day to show (default: today).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="YYYY-MM-DD",
            help="Show from this day's start until now.",
            show_default=False,
        ),
    ] = None,
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="ID",
            help="Also trace one job: each claim, attempt and outcome.",
            show_default=False,
            autocompletion=complete_job,
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Write a self-contained page (a directory gets timeline-YYYY-MM-DD.html).",
            show_default=False,
        ),
    ] = None,
    open_page: Annotated[bool, typer.Option("--open", help="Open the page (with --html).")] = False,
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=60,
            help="Columns to draw in (default: the terminal's).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Show each lane's day: scheduled fires, runs by outcome, missed runs, reloads, and
    bursts of lanes draining one queue at once. Reads only the span asked for."""
    if open_page and html is None:
        raise UsageError("--open needs --html FILE", "e.g. lanekit timeline --html day.html --open")
    from lanekit.cli.render import timeline as view
    from lanekit.service import clock_for, open_manager
    from lanekit.state.paths import Paths
    from lanekit.timeline.build import TimelineRequest, parse_day, timeline

    paths = Paths.from_env()
    now = clock_for(paths).now()
    request = TimelineRequest(
        lanes=tuple(lanes or ()),
        day=None if day is None else parse_day(day, "--day", now.date()),
        since=None if since is None else parse_day(since, "--since", now.date()),
        job=job,
        config_path=config,
    )
    result = timeline(request, paths, open_manager(paths), now=now)
    if html is not None:
        from lanekit.timeline.html import save

        written = save(result, html)
        view.written(str(written), to_stderr=as_json)
        if open_page:
            from lanekit.system.opener import open_file

            open_file(written)
        if not as_json:
            return
    view.show(result, width, as_json=as_json)
