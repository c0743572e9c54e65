"""LaneSpec -> launchd plist, through the jinja2 templates in templates/.

The template renders the XML; the result is parsed back with plistlib and checked against
`lane_plist()` (the model), and what is written is the canonical form `plistlib.dumps(parsed)`:
sorted keys and tabs, the way Apple's tools and Homebrew write plists. A user template may add
keys, never change or drop one of the model's.

Template lookup: the user's directory (`[defaults] templates` or `--templates DIR`) first, then
the shipped templates, which are also reachable as `lanekit/<name>` so a user template can
`{% extends "lanekit/lane.plist.j2" %}`.
"""

from __future__ import annotations

import functools
import json
import os
import plistlib
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import jinja2

import lanekit
from lanekit.config import (
    CONFIG_NAME,
    LaneSpec,
    display_path,
    lane_environment,
    load_config,
    one_line,
    select_lanes,
)
from lanekit.config.model import StartOn
from lanekit.errors import ConfigError, EnvironmentUnusableError
from lanekit.service.launchd.model import PlistError, load_plist
from lanekit.state.paths import Paths
from lanekit.system.atomic import write_atomic
from lanekit.system.owned import PRIVATE_FILE

LANE_TEMPLATE = "lane.plist.j2"
INIT_TEMPLATE = "lanes.toml.j2"
SHIPPED_PREFIX = "lanekit"
PLIST_MODE = PRIVATE_FILE
"""0600, like every file lanekit writes. launchctl(1) asks only that a per-user agent be owned by
the loading user and not group- or world-writable (launchd refuses it otherwise); launchd reads
agents as the user, and 0600 keeps a lane's EnvironmentVariables (tokens) private."""


def templates_dir(package: Path | None = None) -> Path:
    """The shipped templates: inside the installed package (the wheel force-includes them
    there), else `<checkout>/templates` for an editable install or a source tree.

    `package` is the lanekit package directory (default: where lanekit was imported from).
    """
    package = package or Path(lanekit.__file__).resolve().parent
    for candidate in (package / "templates", package.parent.parent / "templates"):
        if (candidate / LANE_TEMPLATE).is_file():
            return candidate
    raise EnvironmentUnusableError(
        f"lanekit's templates are missing (looked in {package / 'templates'})",
        "reinstall lanekit: the wheel ships them as lanekit/templates/",
    )


def lane_plist(lane: LaneSpec, *, interpreter: str, snapshot: Path) -> dict[str, Any]:
    """The plist a lane must have, as plistlib values (the model the template is checked
    against). Optional keys appear only when set.
    """
    plist: dict[str, Any] = {
        "Label": lane.label,
        "ProgramArguments": program_arguments(lane, interpreter=interpreter, snapshot=snapshot),
        "EnvironmentVariables": lane_environment(lane),
        "WorkingDirectory": str(lane.start_directory),
        "StandardOutPath": str(lane.stdout_path),
        "StandardErrorPath": str(lane.stderr_path),
        "RunAtLoad": lane.run_at_load,
        "LimitLoadToSessionType": session_types(lane),
    }
    calendar = [entry.to_plist() for entry in lane.schedule.calendar]
    if len(calendar) == 1:
        plist["StartCalendarInterval"] = calendar[0]
    elif calendar:
        plist["StartCalendarInterval"] = calendar
    if lane.schedule.interval is not None:
        plist["StartInterval"] = lane.schedule.interval
    watched = queue_directories(lane)
    if watched:
        plist["QueueDirectories"] = watched
    optional = {
        "ThrottleInterval": lane.throttle_interval,
        "ExitTimeOut": lane.exit_timeout,
        "Nice": lane.nice,
        "LowPriorityIO": lane.low_priority_io,
        "ProcessType": lane.process_type,
    }
    plist.update({key: value for key, value in optional.items() if value is not None})
    return plist


ENTRYPOINT_CODE = "from lanekit.__main__ import main; main()"
"""What the lane's interpreter runs with `-c`: exactly what `python -m lanekit` runs, minus
runpy. `-m` imports runpy (importlib.util, contextlib, functools, collections) on every
scheduled run; measured on an empty queue (scripts/bench.py figure (c), target <= 1.5x
`python -c pass`), `-m lanekit run` was 1.51x and this form 1.14x, bytecode cached."""


INTERPRETER_FLAGS = ("-I",)
"""Isolated mode: with plain `-c`, sys.path[0] is the working directory, which is the lane's
queue dir, so a `json.py` dropped there would be imported by the runner; -I also ignores
PYTHON* variables and the user site. The job's own environment is untouched."""


def program_arguments(lane: LaneSpec, *, interpreter: str, snapshot: Path) -> list[str]:
    """`[interpreter, -I, -c, ENTRYPOINT_CODE, run, LANE, --snapshot, SNAPSHOT]`: launchd
    execs it directly; it means `lanekit run LANE --snapshot SNAPSHOT`. A lane with its own
    `entrypoint` (the watchdog) runs those lanekit arguments instead, with the same interpreter,
    after its `guard` (`/bin/sh GUARD HEARTBEAT LABEL`)."""
    if not Path(interpreter).is_absolute():
        raise EnvironmentUnusableError(
            f"the Python interpreter path {interpreter!r} is not absolute",
            "run lanekit with an absolute interpreter path (launchd resolves nothing)",
        )
    command = (
        list(lane.entrypoint)
        if lane.entrypoint is not None
        else ["run", lane.name, "--snapshot", str(snapshot)]
    )
    # The watchdog starts through its sh guard, which execs the rest when the interpreter can
    # import lanekit and otherwise tells the owner without Python (notice, heartbeat /fail).
    guard = list(lane.guard) if lane.guard is not None else []
    return [*guard, interpreter, *INTERPRETER_FLAGS, "-c", ENTRYPOINT_CODE, *command]


def queue_directories(lane: LaneSpec) -> list[str]:
    """The directories launchd watches to start the lane (QueueDirectories): the queue's
    queue/ for a lane started on enqueue, none otherwise."""
    if StartOn.ENQUEUE not in lane.start:
        return []
    from lanekit.queue import ready_dir

    ready = ready_dir(lane.queue.dir)
    return [] if ready is None else [str(ready)]


def session_types(lane: LaneSpec) -> str | list[str]:
    """LimitLoadToSessionType: a string for one session, an array for several (plist(5))."""
    return lane.session_type[0] if len(lane.session_type) == 1 else list(lane.session_type)


def render_lane(
    lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
) -> bytes:
    """The lane's plist in canonical bytes, rendered through the template and checked.

    ConfigError when the template is broken or renders something other than the model.
    """
    return rendered_lane(lane, interpreter=interpreter, snapshot=snapshot, templates=templates)[0]


def rendered_lane(
    lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
) -> tuple[bytes, dict[str, Any]]:
    """`render_lane`'s bytes and the job they hold (parsed once, here: comparing a lane
    with what launchd loaded needs both, for every lane doctor examines)."""
    model = lane_plist(lane, interpreter=interpreter, snapshot=snapshot)
    context = {
        "lane": lane,
        "label": lane.label,
        "program_arguments": model["ProgramArguments"],
        "environment": lane_environment(lane),
        "calendar": [entry.to_plist() for entry in lane.schedule.calendar],
        "interval": lane.schedule.interval,
        "queue_directories": queue_directories(lane),
        "working_directory": str(lane.start_directory),
        "stdout_path": str(lane.stdout_path),
        "stderr_path": str(lane.stderr_path),
        "run_at_load": lane.run_at_load,
        "throttle_interval": lane.throttle_interval,
        "exit_timeout": lane.exit_timeout,
        "nice": lane.nice,
        "low_priority_io": lane.low_priority_io,
        "process_type": lane.process_type,
        "session_type": session_types(lane),
    }
    text, source = render_template(lane, LANE_TEMPLATE, context, templates)
    try:
        parsed = load_plist(text.encode("utf-8"))
    except PlistError as exc:
        raise ConfigError(
            f"lane {lane.name}: template {source} does not render a valid plist ({exc})",
            template_hint(templates),
        ) from None
    if not isinstance(parsed, dict):
        raise ConfigError(
            f"lane {lane.name}: template {source} renders no top-level <dict>",
            template_hint(templates),
        )
    for key, expected in model.items():
        if key not in parsed:
            raise ConfigError(
                f"lane {lane.name}: template {source} drops {key}", template_hint(templates)
            )
        if not _same(parsed[key], expected):
            raise ConfigError(
                f"lane {lane.name}: template {source} renders {key} differently from the lane spec",
                template_hint(templates),
            )
    return plistlib.dumps(parsed), parsed


def write_plist(path: Path, data: bytes, *, mtime: float | None = None) -> bool:
    """Write atomically with mode 0600, dated `mtime` when given; False when the file already
    is a regular file of ours with exactly these bytes and that mode (nothing written).
    """
    try:
        info = path.lstat()
        unchanged = (
            stat.S_ISREG(info.st_mode)
            and info.st_uid == os.geteuid()
            and stat.S_IMODE(info.st_mode) == PLIST_MODE
            and path.read_bytes() == data
        )
    except FileNotFoundError:
        unchanged = False
    if unchanged:
        return False
    write_atomic(path, data, PLIST_MODE, mtime=mtime)
    return True


class UnitsRenderer(Protocol):
    """Another manager's renderer of a lane (systemd's rendered_units): file name -> bytes."""

    def __call__(
        self, lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
    ) -> dict[str, bytes]:
        """The lane's files."""
        ...


@dataclass(frozen=True, slots=True)
class RenderedLane:
    """One lane's canonical plist, and where it was written (None: not written)."""

    lane: LaneSpec
    data: bytes
    path: Path | None = None
    changed: bool = False
    """True when the file was created or replaced; False when it already had these bytes."""
    name: str | None = None
    """The file's name when it is not the lane's plist (a systemd unit, `<label>.timer`)."""

    @property
    def file_name(self) -> str:
        """`<Label>.plist`, the name launchd's convention and `--out` use (or `name`)."""
        return self.name or f"{self.lane.label}.plist"


def render_config(
    config_path: Path,
    paths: Paths,
    *,
    names: Sequence[str] = (),
    interpreter: str,
    templates: Path | None = None,
    out: Path | None = None,
    units: Callable[[str | None], UnitsRenderer | None] | None = None,
) -> list[RenderedLane]:
    """`lanekit render`: the named lanes (all when none) as canonical plists, or, when
    `units` (given the config's service_manager) gives a renderer, as the files it renders
    (systemd's `<label>.service` and `<label>.timer`).

    With `out`, each is written to `out/<Label>.plist` -- only after every lane rendered, so a
    bad lane leaves no file behind. `templates` overrides `[defaults] templates`.
    """
    config = load_config(config_path, paths)
    lanes = select_lanes(config, names)
    user_templates = templates or config.templates
    renderer = units(config.service_manager) if units is not None else None
    if renderer is not None:
        # Another manager runs the lanes here (systemd): its units are what apply installs.
        rendered = [
            RenderedLane(lane, data, name=name)
            for lane in lanes
            for name, data in renderer(
                lane,
                interpreter=interpreter,
                snapshot=paths.snapshot_for(lane.label),
                templates=user_templates,
            ).items()
        ]
    else:
        rendered = [
            RenderedLane(
                lane,
                render_lane(
                    lane,
                    interpreter=interpreter,
                    snapshot=paths.snapshot_for(lane.label),
                    templates=user_templates,
                ),
            )
            for lane in lanes
        ]
    if out is None:
        return rendered
    written: list[RenderedLane] = []
    for item in rendered:
        target = out / item.file_name
        changed = write_plist(target, item.data)
        written.append(RenderedLane(item.lane, item.data, target, changed, item.name))
    return written


def init_config(directory: Path, paths: Paths) -> Path:
    """`lanekit init`: write `directory/lanes.toml` from templates/lanes.toml.j2, with a label
    prefix unique to the user and the directory (lanekit.config.provenance.label_prefix_for).

    Never overwrites: an existing file is a ConfigError and stays untouched.
    """
    target = directory / CONFIG_NAME
    shown = display_path(target, paths.cwd)
    if target.exists():
        raise ConfigError(
            f"{shown}: already exists; lanekit init never overwrites it",
            "edit it, or run `lanekit init DIR` to write one in another directory",
        )
    import getpass

    from lanekit.config.provenance import label_prefix_for

    prefix = label_prefix_for(getpass.getuser(), directory.resolve())
    template = _template(None, INIT_TEMPLATE)
    try:
        text = template.render(home=str(paths.home), label_prefix=prefix)
    except jinja2.TemplateError as exc:
        raise _template_error(exc, None, None) from None
    _write_new(target, text.encode("utf-8"), shown)
    return target


def _write_new(path: Path, data: bytes, shown: str) -> None:
    # link(2) refuses an existing target, so a file created since the check is never replaced,
    # and readers see either no file or the whole one.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    write_atomic(tmp, data, 0o644)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:
            # No hard links on this file system: O_EXCL still never replaces a file.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
    except FileExistsError:
        raise ConfigError(
            f"{shown}: already exists; lanekit init never overwrites it",
            "edit it, or run `lanekit init DIR` to write one in another directory",
        ) from None
    finally:
        tmp.unlink(missing_ok=True)


def _toml_string(value: object) -> str:
    # A JSON string is a TOML basic string (same escapes, \uXXXX included), except that TOML
    # also wants DEL escaped.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def _refuse_untrusted(path: Path | str, what: str) -> None:
    """Refuse (UnsafeStateError, exit 69) a user template, or its directory, that someone
    other than you or root could have written (lanekit.system.owned.untrusted_part): a template
    renders the plist, so it says what launchd runs as you."""
    from lanekit.system.owned import check_trusted, home_directory
    from lanekit.system.quoting import shell_quote

    check_trusted(
        path,
        what,
        elsewhere="keep your templates in a directory of your own (under "
        f"{shell_quote(home_directory())}) and point `templates` in [defaults] at it",
    )


class _UserTemplates(jinja2.FileSystemLoader):
    """The user's template directory; each template it loads (extended and included ones
    too) is refused when someone else could have written it."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        _refuse_untrusted(filename, "template")
        return source, filename, uptodate


@functools.lru_cache(maxsize=8)
def _environment(user_dir: Path | None) -> jinja2.Environment:
    shipped = jinja2.FileSystemLoader(templates_dir())
    loaders: list[jinja2.BaseLoader] = []
    if user_dir is not None:
        loaders.append(_UserTemplates(user_dir))
    loaders += [jinja2.PrefixLoader({SHIPPED_PREFIX: shipped}, delimiter="/"), shipped]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        # With a user directory nothing is cached: every template and include is loaded,
        # and judged (_UserTemplates), at each render; jinja would reuse a compiled one made
        # writable since (its cache checks the mtime only).
        cache_size=400 if user_dir is None else 0,
        # XML escaping for plists; TOML templates quote values with the `toml` filter instead,
        # and systemd units get values already quoted (lanekit.service.systemd.units).
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("plist.j2", "xml"),
            disabled_extensions=("toml.j2", "service.j2", "timer.j2"),
            default=True,
            default_for_string=True,
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["toml"] = _toml_string
    return env


def render_template(
    lane: LaneSpec, name: str, context: Mapping[str, Any], templates: Path | None
) -> tuple[str, str]:
    """Render the template `name` (the user's in `templates`, else the shipped one) for `lane`:
    (its text, the file it came from, for messages). Every artifact of every service manager
    renders through here: one place words a broken template (ConfigError naming the lane, the
    template and the fix)."""
    template = _template(templates, name)
    source = template.filename or name
    try:
        return template.render(context), source
    except jinja2.TemplateError as exc:
        raise _template_error(exc, lane.name, templates) from None
    except RecursionError:
        raise ConfigError(
            f"lane {lane.name}: template {source} extends or includes itself",
            f'extend the shipped template as "{SHIPPED_PREFIX}/{name}"',
        ) from None


def _template(user_dir: Path | None, name: str) -> jinja2.Template:
    if user_dir is not None and not user_dir.is_dir():
        raise ConfigError(
            f"templates directory {user_dir} does not exist",
            "fix `templates` in [defaults] or --templates, or drop it to use the shipped ones",
        )
    if user_dir is not None:
        _refuse_untrusted(user_dir, "templates directory")
    try:
        template = _environment(user_dir).get_template(name)
    except jinja2.TemplateError as exc:
        raise _template_error(exc, None, user_dir) from None
    return template


def _template_error(
    exc: jinja2.TemplateError, lane: str | None, user_dir: Path | None
) -> ConfigError:
    """`<file>:<line>: <what jinja says>`, prefixed with the lane when one was rendering."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        where = f"{exc.filename or exc.name}:{exc.lineno}"
    else:
        where = _template_frame(exc.__traceback__) or "template"
    message = exc.message or type(exc).__name__
    if isinstance(exc, jinja2.TemplateNotFound):
        message = f"template {exc.message} not found"
    prefix = f"lane {lane}: " if lane else ""
    return ConfigError(one_line(f"{prefix}{where}: {message}"), template_hint(user_dir))


def _template_frame(tb: TracebackType | None) -> str | None:
    # jinja rewrites tracebacks so template code shows its own file and line; the innermost
    # such frame is where the template failed.
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.endswith(".py") and not filename.startswith("<"):
            found = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def template_hint(user_dir: Path | None) -> str:
    if user_dir is None:
        return "this is a bug in lanekit's shipped template: please report it"
    return f"fix the template in {user_dir}, or remove it to use the shipped one"


def _same(actual: Any, expected: Any) -> bool:
    # Strict: plistlib gives True for <true/> and 1 for <integer>1</integer>, and True == 1.
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(
            _same(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(map(_same, actual, expected))
    return bool(actual == expected)
