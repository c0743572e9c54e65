"""`lanekit doctor`, `lanekit try`, `lanekit logs`: explain, reproduce and watch a lane's
silent failures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from lanekit.cli.options import ConfigOption, JsonOption, ProjectOption, complete_lane
from lanekit.errors import ExitCode, UsageError

# The core and the renderer are imported inside each command (lanekit.cli.registry).

PlistOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--plist",
        help="Examine this plist file (any job, not only lanekit's); repeatable.",
        show_default=False,
        dir_okay=False,
        metavar="FILE",
    ),
]


def doctor(
    *,
    lanes: Annotated[
        list[str] | None,
        typer.Argument(
            help="Lanes to examine (default: all lanes in lanes.toml).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    plist: PlistOption = None,
    all_plists: Annotated[
        bool, typer.Option("--all", help="Examine every plist in the LaunchAgents directory.")
    ] = False,
    check: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            help="Run only this check (repeatable; see --list-checks).",
            show_default=False,
            metavar="ID",
        ),
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list-checks", help="List every check id and what it looks for.")
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Explain why lanes (or any launchd job) stay silent: each finding names its fix.

    Exit 1 when any error is found.
    """
    from lanekit.cli.render import doctor as show
    from lanekit.doctor import DoctorRequest, diagnose, list_checks
    from lanekit.state.paths import Paths

    if list_only:
        show.checks(list_checks(), as_json=as_json)
        return
    paths = Paths.from_env()
    request = DoctorRequest(
        lanes=tuple(lanes or ()),
        plists=tuple(paths.cwd / p for p in plist or ()),
        all_plists=all_plists,
        checks=tuple(check or ()),
        config_path=config,
        project=project,
    )
    report = diagnose(request, paths, env=os.environ)
    show.report(report, as_json=as_json)
    raise typer.Exit(int(report.exit_code))


def try_(
    *,
    lane: Annotated[
        str | None,
        typer.Argument(
            help="The lane to run once (its installed entrypoint).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    plist: Annotated[
        Path | None,
        typer.Option(
            "--plist",
            help="Run the job of this plist file instead of a lane.",
            dir_okay=False,
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    job: Annotated[
        Path | None,
        typer.Option(
            "--job",
            help="Run the lane's job command once on this file, without the queue.",
            dir_okay=False,
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Stop the job (SIGTERM, then SIGKILL) after this many seconds.",
            show_default=False,
            metavar="SECONDS",
        ),
    ] = None,
    here: Annotated[
        bool,
        typer.Option(
            "--here",
            help="On a Mac, run in this terminal's session instead of as a one-shot launchd job "
            "(it then has the terminal's privacy grants, which launchd jobs lack).",
        ),
    ] = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Run a job once in the foreground exactly as launchd would start it.

    Bare environment plus the plist's EnvironmentVariables (launchd's default PATH when none),
    its WorkingDirectory, stdout/stderr files and Nice. Problems launchd would hit (a program
    or command missing under that PATH, a log directory missing) are reported before running.
    For a lanekit lane this runs the installed entrypoint, which drains real jobs from the
    queue; use --job FILE to run the job command on one file without the queue. On a Mac it
    runs as a one-shot launchd job (label local.lanekit.try, the same for every run, booted
    out afterwards; a second try at the same time is refused), so privacy (TCC) and session
    limits apply as they will to the lane; --here runs it in this terminal.
    From any directory, a LANE is looked up in the installed projects (`--project PATH`).
    """
    from lanekit.cli.render import doctor as show
    from lanekit.proof.tryrun import TryRequest, try_run
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    request = TryRequest(
        lane=lane,
        plist=None if plist is None else paths.cwd / plist,
        job=None if job is None else paths.cwd / job,
        config_path=config,
        project=project,
        timeout=timeout,
        here=here,
    )
    result = try_run(request, paths, os.environ)
    show.tried(result)
    raise typer.Exit(int(result.exit_status))


def logs(
    *,
    lane: Annotated[
        str,
        typer.Argument(
            help="The lane whose logs to show.", metavar="LANE", autocompletion=complete_lane
        ),
    ],
    err: Annotated[
        bool, typer.Option("--err", help="Show the job's stderr file (StandardErrorPath).")
    ] = False,
    out: Annotated[
        bool, typer.Option("--out", help="Show the job's stdout file (StandardOutPath).")
    ] = False,
    lines: Annotated[
        int, typer.Option("-n", "--lines", help="How many last lines to show.", metavar="N")
    ] = 20,
    follow: Annotated[
        bool,
        typer.Option("-f", "--follow", help="Keep printing new lines, across rotation (Ctrl-C)."),
    ] = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Show a lane's event log (default), or launchd's stdout/stderr files of its job. From
    any directory: without a lanes.toml here, the lane is looked up in the installed projects
    (`--project PATH` to say which)."""
    from lanekit.cli.render import doctor as show
    from lanekit.state.paths import Paths
    from lanekit.status.logs import LogsRequest, LogStream, lane_logs

    if err and out:
        raise UsageError("--err and --out: choose one log", "e.g. `lanekit logs LANE --err`")
    stream = LogStream.ERR if err else LogStream.OUT if out else LogStream.EVENTS
    request = LogsRequest(
        lane=lane,
        stream=stream,
        lines=lines,
        follow=follow,
        config_path=config,
        project=project,
    )
    try:
        show.log_lines(lane_logs(request, Paths.from_env(), os.environ))
    except KeyboardInterrupt:
        raise typer.Exit(int(ExitCode.OK)) from None
