"""`lanekit demo`: replay the seed-001 incident for real and show lanekit preventing it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lanekit.errors import ExitCode


def demo(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Work in this (new or empty) directory instead of a temp dir."),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave the lanes, queue and ledger behind to inspect.")
    ] = False,
) -> None:
    """Five lanes fire at once on a 57-job backlog: count duplicates and losses (both 0)."""
    from lanekit.cli.render import demo as view
    from lanekit.proof.demo import run_demo

    with view.progress() as show:
        report = run_demo(directory=directory, keep=keep, progress=show)
    view.report(report)
    ok = report.drain.duplicates == 0 and report.drain.lost == 0
    raise typer.Exit(int(ExitCode.OK if ok else ExitCode.FAILURE))
