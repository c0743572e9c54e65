"""The typer app. Commands are thin: parse options, call one core function, hand the result to
`lanekit.cli.render`. LanekitError is caught here, once, and shown as `error:` + `hint:` lines.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer import _click  # typer >= 0.29 vendors click; its Context is the base type
from typer.core import TyperGroup

from lanekit import __version__
from lanekit.cli import render
from lanekit.errors import ExitCode, LanekitError


class LanekitGroup(TyperGroup):
    """Turns LanekitError into two stderr lines and its exit code (traceback only with --debug)."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LanekitError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            render.error(exc.message, exc.hint)
            raise typer.Exit(int(exc.exit_code)) from None


CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    cls=LanekitGroup,
    name="lanekit",
    help="launchd lanes: scheduled jobs that drain a directory queue, exactly once.",
    context_settings=CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
        render.line(f"lanekit {__version__}")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def _root(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """launchd lanes: scheduled jobs that drain a directory queue, exactly once."""
    ctx.obj = {"debug": debug}


def _register() -> None:
    # Each command group lives in its own module and adds its commands to `app`.
    import importlib

    for name in (
        "config_cmds",
        "schedule_cmd",
        "queue_cmds",
        "launchd_cmds",
        "doctor_cmds",
        "demo_cmd",
    ):
        try:
            module = importlib.import_module(f"lanekit.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lanekit.cli.{name}":
                raise
            continue
        module.register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    args = sys.argv[1:] if argv is None else argv
    app(args=args, prog_name="lanekit")
