"""The typer app. Commands are thin: parse options, call one core function, hand the result to
`lanekit.cli.render`. LanekitError is caught here, once, and shown as `error:` + `hint:` lines.
Commands are loaded lazily, per command (lanekit.cli.registry says how to add one).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from lanekit import PROMISE, __version__
from lanekit.cli import render
from lanekit.cli.coercion import plain_params
from lanekit.cli.registry import COMMANDS, LazyCommands
from lanekit.errors import ExitCode, LanekitError


class LanekitGroup(TyperGroup):
    """Turns LanekitError into two stderr lines and its exit code (traceback only with --debug).
    Its commands come from lanekit.cli.registry, each imported only when it is asked for."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.lazy = LazyCommands(COMMANDS)
        self.commands = self.lazy

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """The root's flags (`--debug`, `--help`, completion) coerced without pydantic."""
        plain_params(self.get_params(ctx), self.callback)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """The command, its `--help` included, coerced without pydantic (lanekit.cli.coercion;
        its other parameters were seen to when lanekit.cli.registry built it)."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            plain_params(command.get_params(ctx), command.callback)
        return name, command, rest

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command name, without importing any command module."""
        return list(self.lazy)

    @contextmanager
    def _summaries(self) -> Iterator[None]:
        """Within: each command is a stand-in holding the registry's summary, so `--help` and
        completing a command name (click's own code, which asks for every command) import no
        command module."""
        lazy = self.commands
        self.commands = {
            name: TyperCommand(name=name, help=self.lazy.summary(name)) for name in self.lazy
        }
        try:
            yield
        finally:
            self.commands = lazy

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list of `lanekit --help`, from the registry's summaries."""
        with self._summaries():
            super().format_commands(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        """Command names (from the registry) and the root's own options."""
        with self._summaries():
            return list(super().shell_complete(ctx, incomplete))

    def invoke(self, ctx: Any) -> Any:
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
    help=f"launchd lanes: scheduled jobs that drain a directory queue.\n\n{PROMISE}",
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
    """launchd lanes: scheduled jobs that drain a directory queue (help: see `app`)."""
    ctx.obj = {"debug": debug}


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    args = sys.argv[1:] if argv is None else argv
    app(args=args, prog_name="lanekit")
