"""`lanekit enqueue|run|recover|jobs|job`: the queue of a lane, from the command line."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lanekit import PROMISE
from lanekit.cli.options import (
    ConfigOption,
    DryRunOption,
    JsonOption,
    ProjectOption,
    complete_job,
    complete_lane,
)
from lanekit.errors import ExitCode, LanekitError, UsageError
from lanekit.queue.records import ListedState  # the --state vocabulary

if TYPE_CHECKING:
    from lanekit.config import Config, LaneSpec, QueueSpec
    from lanekit.queue.protocol import JobQueue
    from lanekit.state.paths import Paths

# The core and the renderer are imported inside each command (lanekit.cli.registry).

LaneArgument = Annotated[
    str,
    typer.Argument(
        help="The lane (a [lanes.NAME] in lanes.toml).",
        metavar="LANE",
        autocompletion=complete_lane,
    ),
]


def _config(option: Path | None, paths: Paths) -> Config:
    from lanekit.config import find_config, load_config

    return load_config(find_config(option, os.environ, paths.cwd), paths)


def _lane(option: Path | None, name: str, project: Path | None = None) -> LaneSpec:
    """The lane from lanes.toml, or from anywhere (the installed projects,
    lanekit.config.projects)."""
    from lanekit.config.projects import find_configs, lanes_named
    from lanekit.state.paths import Paths

    configs, _ = find_configs(option, Paths.from_env(), os.environ, project=project)
    return lanes_named(configs, [name])[0]


def _open(spec: QueueSpec) -> JobQueue:
    """The queue, on the launchd backend's clock (lanekit.state.clock): what it records is judged by
    the time the lanes run by."""
    from lanekit.queue import open_queue
    from lanekit.service import clock_for
    from lanekit.state.paths import Paths

    return open_queue(
        spec.dir,
        durable=spec.durable,
        clock=clock_for(Paths.from_env()).time,
        max_job_bytes=spec.max_job_bytes,
    )


def _queue_named(config: Config, name: str) -> QueueSpec:
    found = config.queues.get(name)
    if found is None:
        known = ", ".join(config.queues) or "(none)"
        raise UsageError(f"no queue named {name!r} in {config.path.name}", f"queues: {known}")
    return found


def _refuse_watchdog_queue(config: Config, spec: QueueSpec) -> None:
    """The watchdog's lane runs `lanekit watch`, never a job: a job put in its queue would wait
    there for ever (and show up as a backlog)."""
    drainers = [lane.name for lane in config.lanes.values() if lane.entrypoint is None]
    for lane in config.lanes.values():
        if lane.entrypoint is not None and lane.queue.dir == spec.dir:
            raise UsageError(
                f"lane {lane.name} in {config.path.name} is lanekit's watchdog: it runs no jobs, "
                "so nothing would ever take this one",
                f"enqueue into a lane that runs jobs: {', '.join(drainers) or '(none yet)'}",
            )


def _no_job() -> UsageError:
    return UsageError(
        "no job given: name a FILE, or pipe the job's JSON into stdin",
        "lanekit enqueue LANE job.json   or   echo '{...}' | lanekit enqueue LANE",
    )


def enqueue(
    target: Annotated[
        str | None,
        typer.Argument(
            help="The lane whose queue gets the job (or give --queue).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Argument(
            help="A file holding the job: one JSON object. `-` or nothing reads stdin.",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    *,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            help="Enqueue into this queue instead of a lane's.",
            show_default=False,
            metavar="NAME",
        ),
    ] = None,
    job_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            help="The job id (letters, digits, . _ -; default: time-pid-random). An id that "
            "already succeeded is refused: lanekit never runs it twice.",
            show_default=False,
        ),
    ] = None,
    jsonl: Annotated[
        str | None,
        typer.Option(
            "--jsonl",
            help="Enqueue one job per line of this JSON-lines file (`-`: stdin) and print each "
            "new id. A bad line is reported by number and not enqueued (exit 1); the good "
            "lines are enqueued all the same, so re-run only the fixed lines (or give "
            "--id-field: a re-run then refuses the ids already there instead of adding them "
            "twice).",
            show_default=False,
            metavar="FILE|-",
        ),
    ] = None,
    id_field: Annotated[
        str | None,
        typer.Option(
            "--id-field",
            help="With --jsonl: take each job's id from this field of its line (when present).",
            show_default=False,
            metavar="FIELD",
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Run the job no earlier than TIME, local: HH:MM (the next one), YYYY-MM-DD "
            "HH:MM, or ISO 8601. It waits in delayed/ until then (`lanekit jobs` shows when).",
            show_default=False,
            metavar="TIME",
        ),
    ] = None,
    delay: Annotated[
        str | None,
        typer.Option(
            "--delay",
            help="Run the job no earlier than DURATION from now (90s, 15m, 2h, 1d).",
            show_default=False,
            metavar="DURATION",
        ),
    ] = None,
    at_field: Annotated[
        str | None,
        typer.Option(
            "--at-field",
            help="With --jsonl: take each job's TIME from this field of its line (when "
            "present; else --at or --delay).",
            show_default=False,
            metavar="FIELD",
        ),
    ] = None,
    delay_field: Annotated[
        str | None,
        typer.Option(
            "--delay-field",
            help="With --jsonl: take each job's DURATION from this field of its line (when "
            "present; else --at or --delay).",
            show_default=False,
            metavar="FIELD",
        ),
    ] = None,
    kick: Annotated[
        bool,
        typer.Option(
            "--kick",
            help="Then start the lane now (as `lanekit kick LANE`), instead of at its next fire.",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Add a job (a JSON object) to a lane's queue and print its id. The queue is the one the
    installed lane drains (its snapshot from `apply`) when the lane is installed from this
    lanes.toml (or, with none here, by exactly one project); otherwise, and with --config or
    --queue, the one lanes.toml names."""
    from lanekit.cli.render import queue as show
    from lanekit.config import select_lanes
    from lanekit.jobs.add import QueueTarget, enqueue_one, installed_target
    from lanekit.state.paths import Paths

    if jsonl is None and (id_field or at_field or delay_field):
        raise UsageError(
            "--id-field, --at-field and --delay-field go with --jsonl",
            "lanekit enqueue LANE --jsonl FILE --id-field id",
        )
    if config is None and queue is None and jsonl is None and target and not kick:
        installed = installed_target(target)
        if installed is not None:
            if file is None and sys.stdin.isatty():
                raise _no_job()
            show.enqueued(enqueue_one(installed, file or "-", job_id, at=at, delay=delay))
            return
    paths = Paths.from_env()
    loaded = _config(config, paths)
    if queue is not None:
        if file is not None:
            raise UsageError(
                "give either LANE or --queue NAME, not both",
                "lanekit enqueue --queue NAME [FILE|-]",
            )
        file, spec = target, _queue_named(loaded, queue)
    elif target is None:
        raise UsageError(
            "which queue? give a LANE or --queue NAME", "lanekit enqueue LANE [FILE|-]"
        )
    else:
        lane = select_lanes(loaded, [target])[0]
        if lane.plain:
            raise UsageError(
                f"lane {lane.name} in {loaded.path.name} has no queue: it runs its command once "
                "per fire, and takes no jobs",
                f"`lanekit kick {lane.name}` runs it now; to give it jobs, add "
                f'queue = "NAME" to [lanes.{lane.name}]',
            )
        spec = lane.queue
    _refuse_watchdog_queue(loaded, spec)
    if kick and queue is not None:
        raise UsageError(
            "--kick starts a lane: give the LANE, not --queue", "lanekit enqueue LANE --kick"
        )
    if jsonl is not None:
        from lanekit.jobs.batch import enqueue_jsonl

        if file is not None or job_id is not None:
            raise UsageError(
                "--jsonl reads every job from its file: give no FILE and no --id",
                "lanekit enqueue LANE --jsonl jobs.jsonl [--id-field FIELD]",
            )
        from lanekit.jobs.batch import Timing
        from lanekit.jobs.when import not_before
        from lanekit.service import clock_for

        clock = clock_for(paths)
        timing = Timing(clock, not_before(at, delay, clock), at_field, delay_field)
        result = enqueue_jsonl(_open(spec), jsonl, id_field=id_field, timing=timing)
        show.batch(result, ids_from_lines=id_field is not None)
        if kick and target is not None:
            _kick(loaded, paths, target)
        raise typer.Exit(int(result.exit_code))
    if file is None and sys.stdin.isatty():
        raise _no_job()
    where = QueueTarget(
        str(spec.dir), durable=spec.durable, max_job_bytes=spec.max_job_bytes, name=spec.name
    )
    show.enqueued(enqueue_one(where, file or "-", job_id, at=at, delay=delay))
    if kick and target is not None:
        _kick(loaded, paths, target)


def _kick(config: Config, paths: Paths, lane: str) -> None:
    """`enqueue --kick`: the job is in; now start the lane as `lanekit kick` would (its exit
    code: 4 when launchd postpones the start, 5 when it cannot start it)."""
    from lanekit.cli.render import launchd as show_launchd
    from lanekit.reconcile import kick
    from lanekit.service import open_manager

    manager = open_manager(paths, configured=config.service_manager)
    result = kick(config, paths, manager, lane)
    show_launchd.kicked(result, emulated=manager.kind == "emulated")
    if result.exit_code:
        raise typer.Exit(int(result.exit_code))


def run(
    lane: LaneArgument,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            help="The lane snapshot to run (what launchd passes; default: the installed one).",
            show_default=False,
        ),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Run a lane once, now: claim and run its jobs as launchd would. Jobs get the environment
    launchd gives them (the lane's `path` as PATH, its `env`) and nothing of this terminal's: a
    command found only on your shell's PATH cannot start here either. With --config the lane
    comes from lanes.toml (development); without, from the snapshot `apply` installed."""
    from lanekit.cli.render import queue as show
    from lanekit.config import run_spec
    from lanekit.run.runner import paused_run, run_lane
    from lanekit.run.which_snapshot import load_spec, resolve_snapshot
    from lanekit.service.launchd import command_time
    from lanekit.state.paths import Paths

    if config is not None and snapshot is not None:
        raise UsageError("give either --config or --snapshot, not both", "lanekit run -c FILE LANE")
    with command_time(Paths.from_env()):
        if config is not None:
            spec = run_spec(_lane(config, lane))
            result = run_lane(spec)
        else:
            snapshot = resolve_snapshot(lane, snapshot)
            spec = load_spec(lane, snapshot)
            result = paused_run(spec, snapshot) or run_lane(spec)
    show.run_summary(spec.lane, result)
    if result.exit_code != ExitCode.OK:
        raise typer.Exit(int(result.exit_code))


# The promise is said where a user learns what a run does (tests/test_docs.py pins it).
run.__doc__ = f"{inspect.getdoc(run)}\n\n{PROMISE}"


def recover(
    lane: Annotated[
        str | None,
        typer.Argument(
            help="Only this lane's queue (default: every lane's).",
            show_default=False,
            metavar="LANE",
            autocompletion=complete_lane,
        ),
    ] = None,
    dry_run: DryRunOption = False,
    config: ConfigOption = None,
) -> None:
    """Give back claims whose runner died: to queue/, or failed/ when out of attempts. A job
    that finished after its runner died is settled by its recorded exit status, not run again.
    Every run does this first; this command does it now."""
    from lanekit.cli.render import queue as show
    from lanekit.config import select_lanes
    from lanekit.jobs.recovery import recover_lanes
    from lanekit.state.paths import Paths

    paths = Paths.from_env()
    lanes = select_lanes(_config(config, paths), [lane] if lane else [])
    show.recovered(recover_lanes(lanes, dry_run=dry_run), dry_run=dry_run)


def jobs(
    lane: LaneArgument,
    *,
    state: Annotated[
        ListedState | None,
        typer.Option(
            "--state",
            help="Only jobs in this state (delayed: queued, waiting for their time).",
            show_default=False,
        ),
    ] = None,
    page: Annotated[int, typer.Option("--page", help="Page number (1 = newest).", metavar="N")] = 1,
    per_page: Annotated[
        int, typer.Option("--per-page", help="Jobs per page (0 or less: all).", metavar="M")
    ] = 20,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """List a lane's jobs, newest first, a page at a time. They are the jobs of the lane's
    queue: when other lanes drain it too, their jobs are listed as well (LANE says which lane
    last ran each; a queued job belongs to whichever lane claims it first)."""
    from lanekit.cli.render import queue as show
    from lanekit.config.projects import find_configs, lanes_named
    from lanekit.state.paths import Paths

    configs, _ = find_configs(config, Paths.from_env(), os.environ, project=project)
    spec = lanes_named(configs, [lane])[0]
    sharers = sorted(
        other.name
        for loaded in configs
        for other in loaded.lanes.values()
        if other.queue.dir == spec.queue.dir and other.name != spec.name
    )
    wanted, delayed = (None, None) if state is None else state.page_filter()
    listed = _open(spec.queue).page(page, per_page, wanted, delayed=delayed)
    show.jobs_page(spec.name, listed, as_json=as_json, state=state, shared_with=sharers)


def job(
    lane: LaneArgument,
    job_id: Annotated[
        str, typer.Argument(help="The job id.", metavar="ID", autocompletion=complete_job)
    ],
    *,
    output: Annotated[
        bool,
        typer.Option(
            "--output",
            help="Print the job's output instead: its stdout and stderr, attempt by attempt "
            "(at most 256 KiB an attempt).",
        ),
    ] = False,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    project: ProjectOption = None,
) -> None:
    """Show one job: its record, where its file is, and why it failed."""
    from lanekit.cli.render import queue as show
    from lanekit.jobs.output import job_output
    from lanekit.system.quoting import cmdline

    spec = _lane(config, lane, project)
    queue = _open(spec.queue)
    view = queue.job(job_id)
    if view is None:
        raise LanekitError(
            f"no job {job_id!r} in queue {spec.queue.name} ({spec.queue.dir})",
            f"`{cmdline('lanekit', 'jobs', spec.name)}` lists its jobs",
        )
    kept = job_output(queue, job_id)
    if output:
        if kept is None:
            raise LanekitError(
                f"job {job_id} has no output kept: it has not run yet, or its queue keeps none",
                f"`{cmdline('lanekit', 'job', spec.name, job_id)}` shows where it is",
            )
        show.job_output(kept.text)
        return
    show.job_detail(view, as_json=as_json, output=None if kept is None else kept.path)
