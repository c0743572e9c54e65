"""Plain command-line values without pydantic, through typer's and click's public surface.

typer 0.29 coerces every parameter that is not a flag already holding a bool through a pydantic
TypeAdapter, built the first time the command parses its arguments, even for an option left
out. Importing pydantic and building those adapters costs about as much as importing typer
itself, on every call of any command with an argument or option (`lanekit status`:
docs/benchmarks.md, figure (i)).

Most of lanekit's parameters are flags, `str`, `Path`, `list[str]` or `list[Path]` with no
parser: `plain(command)` gives each parameter a `process_value` (click's public per-parameter
hook) that settles the values whose coercion is certain and hands every other one to typer's
own. Certain are: an option left out (None, or () when it takes many: what typer gives); a
bool for a flag; a string for a `str`; a string or path for a `Path` without typer's path
checks (exists, file_okay, dir_okay, writable, resolve_path, allow_dash), when it names
nothing or something readable (the one check typer makes by default); lists of those. Which
shape a parameter has is read from the command function's own annotations (`typer.Option` and
`typer.Argument` give public `typer.models.ParameterInfo` objects). Numbers, enums, datetimes,
parsers, paths with checks and anything unexpected (a flag's value from an environment
variable's text) go to typer, so every message is typer's. Nothing here imports a private
module of typer: with another typer the hook stays click's documented one.
"""

from __future__ import annotations

import inspect
import os
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any

from typer.models import ParameterInfo

_PATH_CHECKS = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "resolve_path": False,
    "allow_dash": False,
}
"""typer's path checks at their defaults: a Path parameter with any other is typer's."""


def plain_kind(annotation: Any) -> tuple[type[Any], bool] | None:
    """(bool, str or the Path class, takes many) for a flag, or a parameter annotated `str`,
    `Path` or a list of either (optional or not) with no parser and no path check, else None
    (typer's)."""
    info: Any = None
    if typing.get_origin(annotation) is Annotated:
        annotation, *extras = typing.get_args(annotation)
        info = next((extra for extra in extras if isinstance(extra, ParameterInfo)), None)
    if typing.get_origin(annotation) in (typing.Union, UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not NoneType]
        annotation = members[0] if len(members) == 1 else None
    many = typing.get_origin(annotation) is list
    if many:
        (annotation,) = typing.get_args(annotation) or (None,)
    if info is not None and (
        getattr(info, "parser", None) is not None or getattr(info, "click_type", None) is not None
    ):
        return None
    if annotation is bool and not many:
        return bool, False
    if annotation is str:
        return str, many
    if isinstance(annotation, type) and issubclass(annotation, Path):
        checks = {name: getattr(info, name, default) for name, default in _PATH_CHECKS.items()}
        path_type = getattr(info, "path_type", None) or annotation
        if checks == _PATH_CHECKS and isinstance(path_type, type) and issubclass(path_type, Path):
            return path_type, many
    return None


def _annotations(callback: Callable[..., Any] | None) -> dict[str, Any]:
    """The command function's annotations (typer keeps it as its callback's __wrapped__)."""
    if callback is None:
        return {}
    try:
        return typing.get_type_hints(inspect.unwrap(callback), include_extras=True)
    except (NameError, TypeError):  # an annotation only a type checker can resolve
        return {}


def _readable_or_absent(path: str | os.PathLike[str]) -> bool:
    return os.access(path, os.R_OK) or not os.path.lexists(path)


def _plain_process(param: Any, kind: tuple[type[Any], bool] | None) -> Callable[[Any, Any], Any]:
    """`param`'s process_value: the certain cases here, every other one typer's own."""
    typers = param.process_value
    many = param.multiple or param.nargs == -1

    def leaf(value: Any) -> Any:
        assert kind is not None
        if kind[0] in {bool, str}:
            return value if isinstance(value, kind[0]) else None
        if isinstance(value, str | Path) and _readable_or_absent(value):
            return value if isinstance(value, kind[0]) else kind[0](value)
        return None

    def process_value(ctx: Any, value: Any) -> Any:
        if value is None and not param.required:
            result: Any = () if many else None
        elif kind is None or (many and isinstance(value, str)):
            return typers(ctx, value)
        elif kind[1]:
            items = value if isinstance(value, list | tuple) else [value]
            result = [leaf(item) for item in items]
            if None in result or (param.required and result == []):
                return typers(ctx, value)
        else:
            result = leaf(value)
            if result is None:
                return typers(ctx, value)
        if param.callback is not None:
            result = param.callback(ctx, param, result)
        return result

    return process_value


def is_plain(param: Any) -> bool:
    """Whether `plain` gave `param` its process_value."""
    return "process_value" in vars(param)


def plain_params(params: Iterable[Any], callback: Callable[..., Any] | None = None) -> None:
    """Give these parameters (of the command whose function is `callback`) the plain
    process_value; one already given it keeps it."""
    annotations = _annotations(callback)
    for param in params:
        if is_plain(param) or not hasattr(param, "process_value"):
            continue
        kind = plain_kind(annotations[param.name]) if param.name in annotations else None
        param.process_value = _plain_process(param, kind)


def plain(command: Any) -> None:
    """`plain_params` on `command`'s parameters and, for a group, its subcommands' (their
    `--help` options are made when parsing: LanekitGroup.resolve_command sees to those)."""
    plain_params(command.params, command.callback)
    for sub in getattr(command, "commands", {}).values():
        plain(sub)
