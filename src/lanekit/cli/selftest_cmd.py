"""`lanekit selftest`: prove the install against the real launchd in about a minute."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lanekit.cli.options import JsonOption


def selftest(
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="FILE",
            help="Write the JSON report here (default: selftest.json in lanekit's state dir).",
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave the temporary lane's directory behind.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check this Mac's launchd with a temporary lane: load, run, throttle, stop, clean up.

    A lane labelled local.lanekit.selftest (the same every run, so macOS lists it once under
    Allow in the Background; a second selftest at the same time is refused), its queue in a
    temp dir, goes through bootstrap, print, a
    no-replace rename on that volume, a durable enqueue, a kickstart, a throttled second kick
    and a bootout while a job runs (the job must come back to the queue). Prints a table and
    writes a JSON report to attach to an issue. Off macOS it runs against a private emulated
    domain. Exit 1 when any step fails.
    """
    from lanekit.cli.render import selftest as view
    from lanekit.proof.selftest import run_selftest
    from lanekit.state.paths import Paths

    result = run_selftest(Paths.from_env(), report_path=report, keep=keep)
    view.report(result, as_json=as_json)
    raise typer.Exit(int(result.exit_code))
