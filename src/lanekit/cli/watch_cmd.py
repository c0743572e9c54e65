"""`lanekit watch`: one watchdog pass, what launchd runs every `[watch] every`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from lanekit.cli.options import ConfigOption, DryRunOption, JsonOption


def watch(
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    test: Annotated[
        bool,
        typer.Option(
            "--test",
            help="Send one test notice through every channel instead of a pass; on a "
            "terminal, ask whether it arrived and remember the answer per channel.",
        ),
    ] = False,
) -> None:
    """Run one watchdog pass: alert once on each silent failure, through [watch]'s channels.

    Runs doctor's checks on every lane and queue of lanes.toml; a problem is sent once when it
    appears, again after `repeat` while it stays, and once more when it is resolved. A channel
    that fails keeps its notices for the next pass. `lanekit apply` installs this as a lane of
    its own (`<label_prefix>.watch`), so launchd runs it every `every`; run by hand, its
    channels get that lane's environment as launchd gives it (the [defaults] PATH), not this
    terminal's. --dry-run shows what would be sent, without sending or remembering it. Exit 1
    when a channel refused a notice.

    --test proves delivery: a channel that takes a notice may not show it (macOS drops
    osascript's notices until Script Editor may notify, and osascript still succeeds), and a
    notice sent while nobody is logged in at the screen is not shown at all. The answers are
    what doctor's watch.channel-unconfirmed reads.
    """
    from lanekit.cli.render import watch as show
    from lanekit.state.paths import Paths
    from lanekit.watch.watchdog import WatchRequest, run_pass

    if test:
        _test(config, as_json=as_json)
        return
    request = WatchRequest(config_path=config, dry_run=dry_run)
    result = run_pass(request, Paths.from_env(), env=os.environ)
    show.result(result, as_json=as_json)
    raise typer.Exit(int(result.exit_code))


def _test(config: Path | None, *, as_json: bool) -> None:
    from datetime import datetime

    from lanekit.cli.render import watch as show
    from lanekit.state.paths import Paths
    from lanekit.watch.testnotice import record_answer, send_test
    from lanekit.watch.watchdog import WatchRequest, watch_config

    paths = Paths.from_env()
    loaded = watch_config(WatchRequest(config_path=config), paths, os.environ)
    result = send_test(loaded, paths, env=os.environ)
    show.test_result(result, as_json=as_json)
    sent = [test.channel for test in result.channels if test.sent]
    if sent and not as_json:
        if show.can_ask():
            for channel in sent:
                arrived = show.ask_arrived(channel)
                record_answer(paths, channel, arrived, datetime.now())
                show.answered(channel, arrived)
        else:
            show.not_asked()
    raise typer.Exit(int(result.exit_code))
