"""`python -m lanekit`, the `lanekit` console script, and what launchd starts for a lane.

`lanekit run LANE` goes straight to lanekit.run.entry without importing typer, rich or jinja2
(start-up on an empty queue is a benchmark figure); with --config/-c (a developer running a
lane from lanes.toml), --help or --debug it takes the typer app like everything else.
`lanekit watch --config X` (what launchd runs for the watchdog) goes to lanekit.watch.entry
first, which finishes a pass whose inputs did not move without them either; any other watch
(--dry-run, --json, --help, --debug) and any pass it cannot vouch for takes the typer app.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Dispatch: the runner's fast path, or the full CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"] and not {"--config", "-c", "--help", "-h", "--debug"} & set(args):
        from lanekit.run.entry import main as run_main

        sys.exit(run_main(args[1:]))
    if args[:1] == ["watch"]:
        from lanekit.watch.entry import main as watch_main

        code = watch_main(args)
        if code is not None:
            sys.exit(code)
    from lanekit.cli import main as cli_main

    cli_main(args)


if __name__ == "__main__":
    main()
