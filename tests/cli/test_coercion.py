"""lanekit.cli.coercion: flags, str and Path parameters coerced without pydantic give exactly
what typer's own coercion gives (values, path checks, messages, exit codes)."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from lanekit.cli.coercion import plain, plain_kind


def _app() -> typer.Typer:
    """A command with one parameter of each shape lanekit uses, printing what it received."""
    app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)

    @app.command()
    def show(
        name: Annotated[str | None, typer.Argument()] = None,
        flag: Annotated[bool, typer.Option("--flag")] = False,
        where: Annotated[Path | None, typer.Option("--where")] = None,
        plist: Annotated[Path | None, typer.Option("--plist", dir_okay=False)] = None,
        existing: Annotated[Path | None, typer.Option("--existing", exists=True)] = None,
        tags: Annotated[list[str] | None, typer.Option("--tag")] = None,
        files: Annotated[list[Path] | None, typer.Option("--file")] = None,
        count: Annotated[int, typer.Option("--count")] = 1,
    ) -> None:
        values = (name, flag, where, plist, existing, tags, files, count)
        typer.echo(repr(tuple((type(v).__name__, v) for v in values)))

    return app


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, *, lightened: bool) -> tuple[int, str]:
    """(exit code, output) of the test command, with or without the plain coercion."""
    import typer.testing

    app = _app()
    command = typer.main.get_command(app)
    if lightened:
        plain(command)
    with monkeypatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", lambda _app: command)
        result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["lane", "--flag"],
        ["--where", "some/dir", "--tag", "a", "--tag", "b"],
        ["--file", "x.json", "--file", "/abs/y.json"],
        ["--plist", "{tmp}"],  # a directory where a file is wanted: typer's error
        ["--plist", "{tmp}/a.plist"],
        ["--existing", "{tmp}/missing"],  # does not exist: typer's error
        ["--existing", "{tmp}"],
        ["--count", "x"],  # not plain: typer's own coercion, its message
    ],
)
def test_plain_coercion_is_typers(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command line gives the same exit code and output with and without the plain
    coercion: the same values and types, and typer's own messages for bad paths."""
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    ours = _run(args, monkeypatch, lightened=True)
    assert ours == _run(args, monkeypatch, lightened=False)
    if args and args[0] == "--plist" and args[1] == str(tmp_path):
        assert ours[0] == 2  # the check did run


def test_plain_covers_flags_str_and_paths_only() -> None:
    """Flags, str, Path and lists of str or Path get the plain coercion; an int keeps typer's."""
    app = _app()
    (show,) = (info.callback for info in app.registered_commands)
    hints = typing.get_type_hints(show, include_extras=True)
    kinds = {name: plain_kind(hint) is not None for name, hint in hints.items() if name != "return"}
    assert kinds == {
        "name": True,
        "flag": True,
        "where": True,
        "plist": False,  # path checks: typer's
        "existing": False,
        "tags": True,
        "files": True,
        "count": False,
    }
