"""Option types shared by every command, so the same thing has the same name everywhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="lanes.toml to use (else $LANEKIT_CONFIG, else ./lanes.toml).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print versioned JSON.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Show what would be done; change nothing.")
]
ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project",
        help="The project (a directory, or its lanes.toml) to work on, from anywhere. Without "
        "it and without a lanes.toml here, every installed project is used.",
        show_default=False,
        metavar="PATH",
    ),
]


# Shell completion of lane names and job ids: from the installed snapshots and listings of
# their queues (lanekit.jobs.complete, imported on the TAB only), never the command's core.


def complete_lane(incomplete: str) -> list[str]:
    """Completes a lane name: the installed lanes of the project here."""
    from lanekit.jobs.complete import lane_names

    return lane_names(incomplete)


def _typed_lanes(ctx: typer.Context) -> list[str]:
    """The lanes already on the command line (its LANE arguments, or --lane)."""
    found: list[str] = []
    for key in ("lane", "lanes"):
        value = ctx.params.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list | tuple):
            found += [item for item in value if isinstance(item, str)]
    return found


def _job_ids(*states: str) -> Callable[[typer.Context, str], list[str]]:
    """A completion of the ids of the jobs in `states` (lanekit.queue.job_ids) in the queues
    of the lanes typed so far (every installed lane's when none is)."""

    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        from lanekit.jobs.complete import job_ids

        return job_ids(_typed_lanes(ctx), states, incomplete)

    return complete


complete_job = _job_ids("any")
"""Completes any job's id (`job`, `timeline --job`)."""
complete_failed_job = _job_ids("failed")
"""Completes a failed job's id (`retry`)."""
complete_waiting_job = _job_ids("queued", "delayed")
"""Completes a queued or delayed job's id (`cancel`)."""
complete_delayed_job = _job_ids("delayed")
"""Completes a delayed job's id (`requeue`)."""
