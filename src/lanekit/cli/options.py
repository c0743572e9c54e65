"""Option types shared by every command, so the same thing has the same name everywhere."""

from __future__ import annotations

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
