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

    On a Mac it also sends a test notice through Notification Center and says whether you ever
    confirmed that such notices arrive; on a terminal it asks, and remembers the answer as
    `lanekit watch --test` does.
    """
    from datetime import datetime

    from lanekit.cli.render import selftest as view
    from lanekit.cli.render import watch as show
    from lanekit.proof.selftest import NoticeState, run_selftest
    from lanekit.state.paths import Paths
    from lanekit.watch.testnotice import record_answer

    paths = Paths.from_env()
    result = run_selftest(paths, report_path=report, keep=keep)
    view.report(result, as_json=as_json)
    unconfirmed = result.facts.get("test_notice") == NoticeState.UNCONFIRMED
    if unconfirmed and not as_json and show.can_ask():
        arrived = show.ask_arrived("macos")
        record_answer(paths, "macos", arrived, datetime.now())
        show.answered("macos", arrived)
    raise typer.Exit(int(result.exit_code))
