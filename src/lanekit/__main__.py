"""`python -m lanekit`, the `lanekit` console script, and what launchd starts for a lane.

`lanekit run LANE` goes straight to lanekit.run.entry without importing typer, rich or jinja2
(start-up on an empty queue is a benchmark figure); with --config/-c (a developer running a
lane from lanes.toml), --help or --debug it takes the typer app like everything else,
`lanekit watch` included (a pass is doctor's checks plus the watchdog's memory: it needs them).

`lanekit enqueue LANE [FILE|-] [--id ID]` for an installed lane goes to lanekit.jobs.add the
same way (a single enqueue's CPU is a benchmark figure); any other enqueue, and every case that
path does not vouch for, takes the typer command, which adds through the same function. Once
that path has its answer, the objects made so far are frozen out of the shutdown's garbage
collection (gc.freeze).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Dispatch: the runner's fast path, or the full CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"] and not {"--config", "-c", "--help", "-h", "--debug"} & set(args):
        from lanekit.run.entry import main as run_main

        sys.exit(run_main(args[1:]))
    if args[:1] == ["enqueue"]:
        import gc

        # A single enqueue lasts a few milliseconds and makes no garbage worth collecting: no
        # collection while it imports (the CLI's path turns it back on), and at the end its
        # objects are frozen out of the one full collection the interpreter's shutdown runs,
        # which costs a tenth of an interpreter's start (figure (l)). The process ends there;
        # none of those objects holds anything to flush or close (the queue's files are
        # closed, stdout is flushed by the shutdown as always, atexit handlers run).
        gc.disable()
        code = _enqueue(args[1:])
        if code is not None:
            gc.freeze()
            sys.exit(code)
        gc.enable()
    from lanekit.cli import main as cli_main

    cli_main(args)


def _enqueue(args: list[str]) -> int | None:
    """The single enqueue's fast path: its exit code, having printed the new id (as the
    command's `lanekit.cli.render.queue.enqueued` does) or the refusal (as the CLI's error
    handler does); None to leave the call to the typer command."""
    from lanekit.jobs.add import quick_enqueue

    try:
        job_id = quick_enqueue(args)
    except Exception as exc:
        from lanekit.errors import LanekitError

        if not isinstance(exc, LanekitError):
            raise
        from lanekit.cli import render

        render.error(exc.message, exc.hint)
        return int(exc.exit_code)
    if job_id is None:
        return None
    # As render.queue.enqueued, without lanekit.system.quoting: an id passed validate_job_id
    # (letters, digits, '.', '_', '-': lanekit.queue.ids), so printable() leaves it unchanged.
    sys.stdout.write(job_id + "\n")
    return 0


if __name__ == "__main__":
    main()
