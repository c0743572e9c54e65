"""`lanekit retry|requeue|cancel|pause|resume|purge`: operating on jobs and lanes by hand."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lanekit.cli.options import (
    ConfigOption,
    DryRunOption,
    JsonOption,
    ProjectOption,
    complete_delayed_job,
    complete_failed_job,
    complete_lane,
    complete_waiting_job,
)
from lanekit.errors import UsageError

if TYPE_CHECKING:
    from lanekit.config import LaneSpec

# The core and the renderer are imported inside each command (lanekit.cli.registry).

_JOBS_HELP = "Job ids (as `lanekit jobs LANE` shows them)."
FailedJobsArgument = Annotated[
    list[str] | None,
    typer.Argument(help=_JOBS_HELP, show_default=False, autocompletion=complete_failed_job),
]
DelayedJobsArgument = Annotated[
    list[str] | None,
    typer.Argument(help=_JOBS_HELP, show_default=False, autocompletion=complete_delayed_job),
]
WaitingJobsArgument = Annotated[
    list[str] | None,
    typer.Argument(help=_JOBS_HELP, show_default=False, autocompletion=complete_waiting_job),
]
LanesArgument = Annotated[
    list[str],
    typer.Argument(
        help="Lanes (a [lanes.NAME] in lanes.toml).",
        show_default=False,
        autocompletion=complete_lane,
    ),
]
LaneOption = Annotated[
    str | None,
    typer.Option(
        "--lane",
        help="Look for the jobs in this lane's queue only (default: every lane's queue).",
        show_default=False,
        metavar="LANE",
        autocompletion=complete_lane,
    ),
]


def _lanes(option: Path | None, names: list[str], project: Path | None = None) -> list[LaneSpec]:
    """The named lanes (all when none), from lanes.toml or from anywhere
    (lanekit.config.projects)."""
    from lanekit.config.projects import find_configs, lanes_named
    from lanekit.state.paths import Paths

    configs, _ = find_configs(option, Paths.from_env(), os.environ, project=project)
    return lanes_named(configs, names)


def retry(
    jobs: FailedJobsArgument = None,
    *,
    failed: Annotated[
        bool,
        typer.Option(
            "--failed",
            help="Retry every failed job of the queue of LANE (give the lane as the argument).",
        ),
    ] = False,
    lane: LaneOption = None,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Put failed jobs back in their queue with all their attempts again; the reason they
    failed stays in the record. `lanekit retry LANE --failed` retries the lane's whole
    failed/. All or nothing: a job that is not failed changes nothing (exit 2)."""
    from lanekit.cli.render import verbs as show
    from lanekit.jobs import verbs as jobverbs
    from lanekit.service.launchd import command_time
    from lanekit.state.paths import Paths

    with command_time(Paths.from_env()):
        if failed:
            names = list(jobs or [])
            if len(names) != 1 or lane is not None:
                raise UsageError(
                    "--failed takes exactly one LANE argument (and no --lane)",
                    "lanekit retry LANE --failed",
                )
            (spec,) = _lanes(config, names[:1], project)
            result = jobverbs.retry_failed(spec, dry_run=dry_run)
        else:
            result = jobverbs.retry(
                _lanes(config, [lane] if lane else [], project), jobs or [], dry_run=dry_run
            )
    show.moved(result, as_json=as_json)


def requeue(
    jobs: DelayedJobsArgument = None,
    *,
    lane: LaneOption = None,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Run delayed retries now: from delayed/ (waiting out their backoff) into queue/. Their
    spent attempts still count. All or nothing (exit 2)."""
    from lanekit.cli.render import verbs as show
    from lanekit.jobs import verbs as jobverbs
    from lanekit.service.launchd import command_time
    from lanekit.state.paths import Paths

    with command_time(Paths.from_env()):
        moved = jobverbs.requeue(
            _lanes(config, [lane] if lane else [], project), jobs or [], dry_run=dry_run
        )
    show.moved(moved, as_json=as_json)


def cancel(
    jobs: WaitingJobsArgument = None,
    *,
    lane: LaneOption = None,
    stop: Annotated[
        bool,
        typer.Option(
            "--stop",
            help="Also stop running jobs: SIGTERM to the job's process group, SIGKILL after the "
            "lane's kill_grace; each then goes to failed/ as cancelled.",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Move queued or delayed jobs to failed/ with the reason `cancelled`. A running job is
    refused unless `--stop`: its watcher then stops it (SIGTERM, SIGKILL after kill_grace) and
    it goes to failed/ as cancelled, never to run again; the lane's next run goes on. All or
    nothing (exit 2); exit 3 if a stopped job has not ended in time; `lanekit retry` undoes
    it."""
    from lanekit.cli.render import verbs as show
    from lanekit.jobs import verbs as jobverbs
    from lanekit.service.launchd import command_time
    from lanekit.state.paths import Paths

    with command_time(Paths.from_env()):
        moved = jobverbs.cancel(
            _lanes(config, [lane] if lane else [], project),
            jobs or [],
            dry_run=dry_run,
            stop=stop,
        )
    show.moved(moved, as_json=as_json)


def pause(
    lanes: LanesArgument,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Pause lanes: disable them in launchd, and every run claims nothing until `lanekit
    resume`. A pause survives `apply` (which never enables or loads a paused lane); a run in
    progress finishes its current job."""
    from lanekit.cli.render import verbs as show
    from lanekit.reconcile.pause import pause as pause_lanes
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    result = pause_lanes(
        _lanes(config, lanes, project), paths, open_manager(paths), dry_run=dry_run
    )
    show.paused(result, verb="pause", dry_run=dry_run, as_json=as_json)


def resume(
    lanes: LanesArgument,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Resume paused lanes: enable them in launchd, load the installed plist if launchd does
    not have it, and let runs claim jobs again."""
    from lanekit.cli.render import verbs as show
    from lanekit.reconcile.pause import resume as resume_lanes
    from lanekit.service import open_manager
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    result = resume_lanes(
        _lanes(config, lanes, project), paths, open_manager(paths), dry_run=dry_run
    )
    show.paused(result, verb="resume", dry_run=dry_run, as_json=as_json)


def purge(
    lane: Annotated[
        str | None,
        typer.Argument(
            help="Only this lane's queue (default: every lane's).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    *,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Purge what is older than this (e.g. 7d) instead of the queue's keep_done "
            "and keep_failed.",
            show_default=False,
            metavar="D",
        ),
    ] = None,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Remove finished and failed jobs older than their queue's keep_done / keep_failed, with
    their records. An id that succeeded stays refused (a compact index outlives its record).
    The first run of each day does the same."""
    from lanekit.cli.render import verbs as show
    from lanekit.jobs.retention import purge as purge_queues
    from lanekit.service.launchd import command_time
    from lanekit.state.paths import Paths

    seconds = None if older_than is None else _duration("--older-than", older_than)
    with command_time(Paths.from_env()):
        rows = purge_queues(
            _lanes(config, [lane] if lane else [], project), older_than=seconds, dry_run=dry_run
        )
    show.purged(rows, dry_run=dry_run, as_json=as_json)


def _duration(option: str, text: str) -> float:
    from lanekit.schedule import ScheduleError, parse_duration

    try:
        return float(parse_duration(text))
    except ScheduleError as exc:
        raise UsageError(f"{option} {text!r}: {exc.message}", "e.g. --older-than 7d") from None
