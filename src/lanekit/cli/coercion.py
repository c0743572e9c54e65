"""Plain command-line values without pydantic.

typer 0.29 coerces every parameter that is not a plain flag through a pydantic TypeAdapter, built
the first time the command parses its arguments, even for an option left out. Importing pydantic
and building those adapters costs about as much as importing typer itself, on every call of any
command with an argument or option (`lanekit status`: docs/benchmarks.md, figure (i)).

Most of lanekit's parameters are flags, `str`, `Path`, `list[str]` or `list[Path]` with no
parser: for these, `plain(command)` installs a coercion of its own. A flag's bool stays the bool
(an absent one, None, never reaches coercion); a string stays the string; a path becomes a Path
and then goes through typer's own path checks (`coerce_cli_path`: exists, dir_okay, ...), so
every message is typer's. Any value of another shape (a flag from an environment variable's
text, say) goes to typer's usual coercion, and so do numbers, enums and datetimes. With a typer
whose internals differ, nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer import _click

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path
    from typer._typing import get_args, get_origin
    from typer.core import TyperGroup, _TyperParameter
except ImportError:  # pragma: no cover - another typer: its own coercion stays
    RuntimeParam = None  # type: ignore[assignment,misc]


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):
        """bool / str / Path (or a list of str or Path) coerced without a TypeAdapter."""

        leaf: type[Any]
        """bool, str, or the Path class to build."""
        many: bool

        def _coerce_value(self, value: Any, param: Any, ctx: _click.Context) -> Any:
            if not self.many:
                return self._one(value, param, ctx)
            items = value if isinstance(value, list | tuple) else [value]
            return [self._one(item, param, ctx) for item in items]

        def _one(self, value: Any, param: Any, ctx: _click.Context) -> Any:
            if not isinstance(value, (bool,) if self.leaf is bool else (str, self.leaf)):
                # Not what a command line gives (a default of another type, ...): typer's way.
                leaf_param = build_runtime_param(param.type_descriptor)
                return leaf_param._coerce_value(value, param=param, ctx=ctx)
            if self.leaf in {bool, str}:
                return value
            path = value if isinstance(value, self.leaf) else self.leaf(value)
            return coerce_cli_path(
                path, self.parameter_info, path_type=self.leaf, param=param, ctx=ctx
            )


def _plain_leaf(annotation: Any, info: Any) -> tuple[type[Any], bool] | None:
    """(leaf type, is a list) when `annotation` is one this module coerces, else None."""
    many = get_origin(annotation) is list
    if many:
        (annotation,) = get_args(annotation) or (None,)
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None) is not None:
        return None
    if annotation is bool and not many:
        return bool, False
    if annotation is str:
        return str, many
    if isinstance(annotation, type) and issubclass(annotation, Path):
        path_type = getattr(info, "path_type", None) or annotation
        if isinstance(path_type, type) and issubclass(path_type, Path):
            return path_type, many
    return None


def plain_params(params: Iterable[_click.Parameter]) -> None:
    """Give these parameters (flags, str and Path ones) the plain coercion."""
    if RuntimeParam is None:  # pragma: no cover - another typer
        return
    for param in params:
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        descriptor = param.type_descriptor
        if descriptor.file_annotation is not None:
            continue
        found = _plain_leaf(descriptor.annotation, descriptor.parameter_info)
        if found is not None:
            param._runtime_param = PlainParam(  # typer's lazy slot for it
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                leaf=found[0],
                many=found[1],
            )


def plain(command: _click.Command) -> None:
    """`plain_params` on `command`'s parameters and, for a group, its subcommands' (their
    `--help` options are made when parsing: LanekitGroup.resolve_command sees to those)."""
    plain_params(command.params)
    if RuntimeParam is not None and isinstance(command, TyperGroup):
        for sub in command.commands.values():
            plain(sub)
