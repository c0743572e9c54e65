"""lanes.toml -> validated, frozen lane specs. Errors name the file, the lane and the key.

Every problem is reported as one line, `<file>: <key path>: <what is wrong>`, plus a hint, and
validation collects all of them instead of stopping at the first. `<file>` is the config path
relative to the current directory when it lies inside it (so usually just `lanes.toml`),
otherwise absolute. A lanes.toml someone other than you or root could have written (the file,
or a directory on its path) is refused before a byte is read (`refuse_untrusted`: exit 69).

launchd expands nothing in a plist, so `~`, `$HOME` and `${HOME}` are expanded here, at load
time, to `Paths.home`: in every path, and at the start of command arguments and env values.
Any other `$VAR` in a path is an error; in env values and arguments it is kept verbatim
(`lanekit doctor` warns about it).

The package: `model` (QueueSpec, LaneSpec, Config, the keys and limits), `text` (how values and
errors are worded), `values` (ConfigReader: typed values, each problem with its key path),
`reader` (DocumentReader: the document to a Config, with the checks across tables), `lanes`
(what callers ask of a loaded config) and, here, finding, reading and validating lanes.toml.
Import from `lanekit.config`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from lanekit.config.lanes import (
    config_warnings,
    is_watchdog,
    lane_environment,
    run_spec,
    select_lanes,
    watchdog_lane,
)
from lanekit.config.model import (
    CONFIG_ENV,
    CONFIG_NAME,
    DEFAULT_LABEL_PREFIX,
    DEFAULT_PATH,
    DEFAULT_SESSION_TYPES,
    DEFAULTS_KEYS,
    LANE_KEYS,
    MAX_INT,
    MAX_LABEL_BYTES,
    MAX_NAME_LENGTH,
    OPTION_KEYS,
    PROCESS_TYPES,
    QUEUE_KEYS,
    RESERVED_ENV,
    RESERVED_LABEL_PREFIX,
    RETENTION_MINIMUM,
    SESSION_TYPES,
    TOP_KEYS,
    Config,
    LaneSpec,
    QueueSpec,
)
from lanekit.config.reader import DocumentReader
from lanekit.config.text import (
    Key,
    display_path,
    expand_home,
    one_line,
    plist_safe,
)
from lanekit.errors import ConfigError
from lanekit.state.paths import Paths

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "DEFAULTS_KEYS",
    "DEFAULT_LABEL_PREFIX",
    "DEFAULT_PATH",
    "DEFAULT_SESSION_TYPES",
    "LANE_KEYS",
    "MAX_INT",
    "MAX_LABEL_BYTES",
    "MAX_NAME_LENGTH",
    "OPTION_KEYS",
    "PROCESS_TYPES",
    "QUEUE_KEYS",
    "RESERVED_ENV",
    "RESERVED_LABEL_PREFIX",
    "RETENTION_MINIMUM",
    "SESSION_TYPES",
    "TOP_KEYS",
    "Config",
    "Key",
    "LaneSpec",
    "QueueSpec",
    "config_warnings",
    "display_path",
    "expand_home",
    "find_config",
    "is_watchdog",
    "lane_environment",
    "load_config",
    "one_line",
    "plist_safe",
    "read_config",
    "run_spec",
    "select_lanes",
    "validate_config",
    "watchdog_lane",
]


def find_config(option: Path | None, env: Mapping[str, str], cwd: Path) -> Path:
    """The lanes.toml to use: `--config`, else `$LANEKIT_CONFIG`, else `./lanes.toml`.

    Relative paths are taken relative to `cwd`. A missing file is a ConfigError that suggests
    `lanekit init`.
    """
    if option is not None:
        path, source = cwd / option, "--config"
    elif env.get(CONFIG_ENV):
        path, source = cwd / env[CONFIG_ENV], f"${CONFIG_ENV}"
    else:
        path, source = cwd / CONFIG_NAME, ""
    if not path.is_file():
        what = "is not a file" if path.exists() else "no such file"
        where = f" (from {source})" if source else ""
        raise ConfigError(
            f"{display_path(path, cwd)}: {what}{where}",
            "run `lanekit init` to write an example lanes.toml, or pass --config PATH",
        )
    return path


def load_config(path: Path, paths: Paths) -> Config:
    """Load and validate lanes.toml; the first problem is raised as a ConfigError."""
    config, errors = validate_config(path, paths)
    if errors:
        first = errors[0]
        more = len(errors) - 1
        if more:
            suffix = f"{more} more error{'s' if more > 1 else ''}: run `lanekit validate`"
            hint = f"{first.hint} ({suffix})" if first.hint else suffix
            raise ConfigError(first.message, hint)
        raise first
    assert config is not None  # no errors means a config was built
    return config


def validate_config(path: Path, paths: Paths) -> tuple[Config | None, list[ConfigError]]:
    """Validate lanes.toml completely: the Config (None on any error) and ALL errors."""
    config, errors = read_config(path, paths)
    return (None if errors else config), errors


def read_config(path: Path, paths: Paths) -> tuple[Config | None, list[ConfigError]]:
    """Like validate_config, but returns the partial Config (only the lanes and queues that are
    valid) alongside the errors; None only when the file cannot be read or parsed at all.

    For checks that want to go on with the good lanes (`lanekit validate` renders them).
    Never install a partial config.
    """
    display = display_path(path, paths.cwd)
    refuse_untrusted(path, display)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, [
            ConfigError(
                f"{display}: no such file",
                "run `lanekit init` to write an example lanes.toml, or pass --config PATH",
            )
        ]
    except OSError as exc:
        return None, [ConfigError(f"{display}: cannot read ({exc.strerror})", "check the path")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, [
            ConfigError(
                f"{display}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                "save lanes.toml as UTF-8",
            )
        ]
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [_syntax_error(display, str(exc))]
    except RecursionError:
        return None, [_too_deep(display)]
    reader = DocumentReader(display, paths)
    config = reader.config(path, document)
    return config, reader.errors


def refuse_untrusted(path: Path, display: str) -> None:
    """Refuse (UnsafeStateError, exit 69) a lanes.toml someone other than you or root could
    have written: the file, or a directory above it up to your home (lanekit.system.owned.
    untrusted_part). It says what every lane and the watchdog run, as you: a neighbour who
    may rewrite it would run their command as you on the next apply or pass."""
    from lanekit.system.owned import check_trusted, home_directory
    from lanekit.system.quoting import shell_quote

    home = shell_quote(home_directory())
    check_trusted(
        path,
        "configuration",
        elsewhere=f"keep lanes.toml in a directory of your own (under {home})",
        shown=display,
    )


def _too_deep(display: str) -> ConfigError:
    """tomllib parses nested arrays and inline tables by recursion: thousands of levels exhaust
    the interpreter's stack. No lanes.toml needs more than a few, so this is refused as input,
    not reported as a crash."""
    return ConfigError(
        f"{display}: arrays or inline tables are nested too deeply to read",
        "lanes.toml needs at most a few levels of [...] and {...}: flatten the nesting",
    )


def _syntax_error(display: str, message: str) -> ConfigError:
    hint = "fix the TOML syntax (https://toml.io)"
    found = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", message, re.DOTALL)
    if found:
        return ConfigError(f"{display}:{found[2]}:{found[3]}: {found[1]}", hint)
    return ConfigError(f"{display}: {message}", hint)
