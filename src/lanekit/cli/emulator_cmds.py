"""`lanekit emulator tick`: drive the emulated launchd domain's clock (off macOS nothing fires on
a clock otherwise)."""

from __future__ import annotations

from typing import Annotated

import typer

emulator = typer.Typer(
    help="Drive the emulated launchd domain: off macOS nothing fires on a clock by itself.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@emulator.command("tick")
def tick(
    *,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="Move the emulated clock to TIME (HH:MM, the next one, or an ISO date-time).",
            show_default=False,
        ),
    ] = None,
    span: Annotated[
        str | None,
        typer.Option(
            "--for",
            metavar="DURATION",
            help="Move the emulated clock on by DURATION (90s, 15m, 2h, 1d).",
            show_default=False,
        ),
    ] = None,
    asleep: Annotated[
        bool,
        typer.Option(
            "--asleep",
            help="As if the Mac slept through the span: each calendar lane runs once on wake "
            "(missed fires coalesce), StartInterval fires are missed.",
        ),
    ] = False,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            metavar="SECONDS",
            min=0,
            help="Let each fire's runs end (up to SECONDS) before the next fire.",
        ),
    ] = 60.0,
) -> None:
    """Fire what launchd would fire between the emulated time and --until / --for, with real
    processes: every calendar and StartInterval fire in order (a lane still running misses a
    fire, ThrottleInterval postpones a start, as launchd does)."""
    import os
    import sys
    from datetime import timedelta

    from lanekit.cli.render import emulator as show
    from lanekit.errors import UsageError
    from lanekit.schedule import ScheduleError, parse_duration
    from lanekit.service import clock_for
    from lanekit.service.emulated.clock import advance, parse_until
    from lanekit.state.paths import Paths, backend_name

    if (until is None) == (span is None):
        raise UsageError("give one of --until TIME or --for DURATION", "e.g. `--for 15m`")
    if backend_name(os.environ, sys.platform) != "emulated":
        raise UsageError(
            "lanekit emulator tick drives the emulated launchd domain; this machine uses the real"
            " launchd, which fires lanes on its own clock",
            "set LANEKIT_LAUNCHD=emulated to use the emulated domain",
        )
    paths = Paths.from_env()
    emulated = clock_for(paths).now()
    if span is not None:
        try:
            seconds = parse_duration(span)
        except ScheduleError as exc:
            raise UsageError(f"--for {span}: {exc.message}", exc.hint) from None
        target = emulated + timedelta(seconds=seconds)
    else:
        assert until is not None
        target = parse_until(until, emulated)
    report = advance(paths.emulator, paths.launch_agents, target, asleep=asleep, wait=wait)
    show.ticked(report)
