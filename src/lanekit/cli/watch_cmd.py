"""`lanekit watch`: one watchdog pass, what launchd runs every `[watch] every`."""

from __future__ import annotations

import os

import typer

from lanekit.cli.options import ConfigOption, DryRunOption, JsonOption


def watch(
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Run one watchdog pass: alert once on each silent failure, through [watch]'s channels.

    Runs doctor's checks on every lane and queue of lanes.toml; a problem is sent once when it
    appears, again after `repeat` while it stays, and once more when it is resolved. A channel
    that fails keeps its notices for the next pass. `lanekit apply` installs this as a lane of
    its own (`<label_prefix>.watch`), so launchd runs it every `every`; run by hand, its
    channels get that lane's environment as launchd gives it (the [defaults] PATH), not this
    terminal's. --dry-run shows what would be sent, without sending or remembering it. Exit 1
    when a channel refused a notice.
    """
    from lanekit.cli.render import watch as show
    from lanekit.state.paths import Paths
    from lanekit.watch.watchdog import WatchRequest, run_pass

    request = WatchRequest(config_path=config, dry_run=dry_run)
    result = run_pass(request, Paths.from_env(), env=os.environ)
    show.result(result, as_json=as_json)
    raise typer.Exit(int(result.exit_code))
