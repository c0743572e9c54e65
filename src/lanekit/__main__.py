"""`python -m lanekit`, the `lanekit` console script, and what launchd starts for a lane.

`lanekit run LANE` goes straight to lanekit.run.entry without importing typer, rich or jinja2
(start-up on an empty queue is a benchmark figure); with --config/-c (a developer running a
lane from lanes.toml), --help or --debug it takes the typer app like everything else,
`lanekit watch` included (a pass is doctor's checks plus the watchdog's memory: it needs them).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Dispatch: the runner's fast path, or the full CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"] and not {"--config", "-c", "--help", "-h", "--debug"} & set(args):
        from lanekit.run.entry import main as run_main

        sys.exit(run_main(args[1:]))
    from lanekit.cli import main as cli_main

    cli_main(args)


if __name__ == "__main__":
    main()
