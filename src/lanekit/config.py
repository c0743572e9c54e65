"""lanes.toml -> validated, frozen lane specs. Errors name the file, the lane and the key.

Every problem is reported as one line, `<file>: <key path>: <what is wrong>`, plus a hint, and
validation collects all of them instead of stopping at the first. `<file>` is the config path
relative to the current directory when it lies inside it (so usually just `lanes.toml`),
otherwise absolute.

launchd expands nothing in a plist, so `~`, `$HOME` and `${HOME}` are expanded here, at load
time, to `Paths.home`: in every path, and at the start of command arguments and env values.
Any other `$VAR` in a path is an error; in env values and arguments it is kept verbatim
(`lanekit doctor` warns about it).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from lanekit.errors import ConfigError, UsageError
from lanekit.ownership import MARKER
from lanekit.paths import Paths
from lanekit.quoting import printable
from lanekit.schedule import (
    Schedule,
    ScheduleError,
    build_schedule,
    find_collisions,
    parse_duration,
    schedule_entry_errors,
)
from lanekit.snapshot import (
    DEFAULT_EXIT_TIMEOUT,
    DEFAULT_KEEP_DONE,
    DEFAULT_KEEP_FAILED,
    RunSpec,
)
from lanekit.watch.spec import WATCH_COMMAND, WATCH_LANE, WatchSpec, read_watch, watch_dir

DEFAULT_PATH = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
DEFAULT_LABEL_PREFIX = "local.lanekit"
CONFIG_NAME = "lanes.toml"
CONFIG_ENV = "LANEKIT_CONFIG"
PROCESS_TYPES = ("Background", "Standard", "Adaptive", "Interactive")
SESSION_TYPES = ("Aqua", "Background", "LoginWindow", "StandardIO")
"""launchd.plist(5) LimitLoadToSessionType values that apply to a per-user agent."""
DEFAULT_SESSION_TYPES = ("Aqua", "Background")
"""Agents default to Aqua (gui/<uid> only); a lane bootstrapped into user/<uid> (SSH, headless)
needs Background (sops-nix #966: 125/134 without it). Listing both loads one plist into either
domain, as Homebrew's service.rb does with its list of every session type."""
RESERVED_LABEL_PREFIX = "com.apple."
# Labels become file names (<Label>.plist, <label>.json, and write_atomic's temp names add ~20
# bytes); 200 keeps every one of them under the 255-byte name limit of APFS and ext4.
MAX_LABEL_BYTES = 200
MAX_NAME_LENGTH = 64
# launchd reads plist integers into C ints; nothing in a lane needs more.
MAX_INT = 2**31 - 1
# Env keys lanekit writes itself: PATH comes from `path`, LANEKIT_LANE marks lanekit's plists.
RESERVED_ENV = {
    "PATH": "set the lane's PATH with path = [...] instead",
    MARKER: "lanekit sets it to the lane name to recognise its own plists",
    "LANEKIT_CLOCK_OFFSET": "the emulated domain sets it for the jobs it starts (lanekit.clock)",
}

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
_HOME_RE = re.compile(r"(~|\$HOME|\$\{HOME\})(?=/|$)")
_ZERO_DURATION_RE = re.compile(r"0+[smhd]?", re.IGNORECASE)
_VAR_RE = re.compile(r"\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)")

TOP_KEYS = ("defaults", "queues", "lanes", "watch")
RETENTION_MINIMUM = 3600
"""keep_done / keep_failed below an hour would purge jobs a person is still looking at."""
QUEUE_KEYS = ("dir", "durable", "keep_done", "keep_failed")
# Lane options that [defaults] may set for every lane.
OPTION_KEYS = (
    "max_jobs",
    "max_seconds",
    "max_attempts",
    "stale_after",
    "timeout",
    "kill_grace",
    "nice",
    "low_priority_io",
    "process_type",
    "session_type",
    "throttle_interval",
    "exit_timeout",
    "run_at_load",
)
DEFAULTS_KEYS = ("path", "label_prefix", "templates", *OPTION_KEYS)
LANE_KEYS = (
    "queue",
    "command",
    "schedule",
    "every",
    "env",
    "path",
    "label",
    "stdout_log",
    "stderr_log",
    "log",
    *OPTION_KEYS,
)


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A directory queue: `dir` holds tmp/ queue/ claimed/ done/ failed/ records/ logs/."""

    name: str
    dir: Path
    durable: bool = True
    """False skips fsyncs on enqueue (faster; a power loss may lose recent jobs)."""
    keep_done: int = DEFAULT_KEEP_DONE
    """Seconds a finished job stays in done/ (with its record) before purging removes it."""
    keep_failed: int = DEFAULT_KEEP_FAILED
    """Seconds a failed job stays in failed/ (with its .error and record)."""


@dataclass(frozen=True, slots=True)
class LaneSpec:
    """One lane: a launchd job that drains `queue` by running `command` once per job."""

    name: str
    label: str
    queue: QueueSpec
    command: tuple[str, ...]
    """argv; `{job}` is replaced by the claimed job file's path."""
    schedule: Schedule
    stdout_path: Path
    """launchd StandardOutPath (the runner's and the jobs' stdout)."""
    stderr_path: Path
    """launchd StandardErrorPath."""
    log_path: Path
    """The runner's logfmt event log (claimed, done, failed, requeued, recovered, skipped)."""
    env: Mapping[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = DEFAULT_PATH
    """The PATH the job gets (launchd would otherwise give /usr/bin:/bin:/usr/sbin:/sbin)."""
    max_jobs: int = 10
    max_seconds: int | None = None
    max_attempts: int = 3
    stale_after: int = 3600
    timeout: int | None = None
    """Seconds one job may run; then SIGTERM to its process group (None: no limit)."""
    kill_grace: int = 5
    """Seconds between a timeout's SIGTERM and SIGKILL."""
    nice: int | None = None
    low_priority_io: bool | None = None
    process_type: str | None = None
    session_type: tuple[str, ...] = DEFAULT_SESSION_TYPES
    """launchd LimitLoadToSessionType: the sessions (domains) the lane may be loaded into."""
    throttle_interval: int | None = None
    exit_timeout: int | None = None
    run_at_load: bool = False
    project: Path | None = field(default=None, compare=False)
    """The lanes.toml the lane comes from (resolved): the project that owns its label. Where
    a lane was read from is not part of what it is, so it does not take part in ==."""
    entrypoint: tuple[str, ...] | None = None
    """lanekit's arguments in the plist instead of `run NAME --snapshot SNAPSHOT`; only the
    watchdog lane has them (`watch --config LANES.TOML`, lanekit.watch)."""


@dataclass(frozen=True, slots=True)
class Config:
    """A loaded lanes.toml."""

    path: Path
    label_prefix: str
    queues: Mapping[str, QueueSpec]
    lanes: Mapping[str, LaneSpec]
    templates: Path | None = None
    """A user template directory overriding the shipped templates/."""
    watch: WatchSpec | None = None
    """`[watch]`: the watchdog (its lane is in `lanes` as `watch`); None without the table."""


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


def display_path(path: Path, cwd: Path) -> str:
    """How messages name a file: relative to `cwd` when it lies inside it, else as is."""
    if path.is_absolute() and path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    return str(path)


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
    reader = _Reader(display, paths)
    config = reader.config(path, document)
    return config, reader.errors


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


def config_warnings(config: Config) -> list[str]:
    """Problems that do not stop a config from loading: schedule collisions, no lanes."""
    if not config.lanes:
        return ["no lanes defined: add a [lanes.NAME] table"]
    return [str(collision) for collision in find_collisions(list(config.lanes.values()))]


def select_lanes(config: Config, names: Sequence[str]) -> list[LaneSpec]:
    """The named lanes in the order given (all lanes when `names` is empty).

    An unknown name is a UsageError with a did-you-mean.
    """
    if not names:
        return list(config.lanes.values())
    chosen: list[LaneSpec] = []
    for name in dict.fromkeys(names):
        lane = config.lanes.get(name)
        if lane is None:
            known = ", ".join(config.lanes) or "(none)"
            suggestion = _did_you_mean(name, config.lanes)
            raise UsageError(
                f"no lane named {_quote(name)} in {config.path.name}{suggestion}",
                f"lanes: {known}",
            )
        chosen.append(lane)
    return chosen


def watchdog_lane(
    watch: WatchSpec,
    *,
    config_path: Path,
    prefix: str,
    paths: Paths,
    path: tuple[str, ...] = DEFAULT_PATH,
    session_type: tuple[str, ...] = DEFAULT_SESSION_TYPES,
) -> LaneSpec:
    """The watchdog as a lane: `<prefix>.watch`, StartInterval `every`, running `lanekit
    watch --config <lanes.toml>` with the same interpreter as every lane. Its directory (an
    empty queue, its logs, its alert memory) is under the state dir; its environment names
    that state dir and LaunchAgents dir, which launchd's bare environment would not give it."""
    label = f"{prefix}.{WATCH_LANE}"
    directory = watch_dir(paths.state, label)
    logs = directory / "logs"
    project = config_path.resolve()
    return LaneSpec(
        name=WATCH_LANE,
        label=label,
        queue=QueueSpec(name=WATCH_LANE, dir=directory),
        command=WATCH_COMMAND,
        schedule=Schedule(interval=watch.every),
        stdout_path=logs / f"{WATCH_LANE}.out.log",
        stderr_path=logs / f"{WATCH_LANE}.err.log",
        log_path=logs / f"{WATCH_LANE}.log",
        env={
            "HOME": str(paths.home),
            "LANEKIT_STATE_DIR": str(paths.state),
            "LANEKIT_LAUNCH_AGENTS": str(paths.launch_agents),
        },
        path=path,
        max_jobs=1,
        session_type=session_type,
        project=project,
        entrypoint=(WATCH_LANE, "--config", str(project)),
    )


def run_spec(lane: LaneSpec) -> RunSpec:
    """What `lanekit run` needs for this lane (written as the lane snapshot by apply)."""
    return RunSpec(
        lane=lane.name,
        label=lane.label,
        queue_dir=lane.queue.dir,
        command=lane.command,
        max_jobs=lane.max_jobs,
        max_seconds=None if lane.max_seconds is None else float(lane.max_seconds),
        max_attempts=lane.max_attempts,
        stale_after=float(lane.stale_after),
        timeout=None if lane.timeout is None else float(lane.timeout),
        kill_grace=float(lane.kill_grace),
        exit_timeout=DEFAULT_EXIT_TIMEOUT if lane.exit_timeout is None else lane.exit_timeout,
        log_path=lane.log_path,
        durable=lane.queue.durable,
        stdout_path=lane.stdout_path,
        stderr_path=lane.stderr_path,
        keep_done=lane.queue.keep_done,
        keep_failed=lane.queue.keep_failed,
        project=lane.project,
    )


def plist_safe(text: str) -> str | None:
    """Why `text` cannot be carried by a plist (None when it can).

    Plists are XML 1.0: control characters other than tab and newline, and U+FFFE/U+FFFF, are
    not allowed; a carriage return would be read back as a newline.
    """
    for char in text:
        code = ord(char)
        if code in (0x09, 0x0A) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD:
            continue
        if code >= 0x10000:
            continue
        return f"contains U+{code:04X}, which a launchd plist cannot carry"
    return None


def one_line(text: str) -> str:
    """Messages are one line even when they quote user text with line breaks in it (and show
    no other control character either: lanekit.quoting owns the escaping)."""
    return printable(text)


def expand_home(text: str, home: Path) -> str:
    """`~`, `$HOME` or `${HOME}` at the start of `text` (alone or before `/`) -> `home`."""
    found = _HOME_RE.match(text)
    return str(home) + text[found.end() :] if found else text


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _did_you_mean(word: str, choices: Sequence[str] | Mapping[str, Any]) -> str:
    """`; did you mean "x"?` for the closest choice (ignoring case), or nothing."""
    by_folded = {choice.casefold(): choice for choice in choices}
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1)
    return f"; did you mean {_quote(by_folded[close[0]])}?" if close else ""


def _keypath(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if _BARE_KEY_RE.fullmatch(part) else _quote(part)
        out += f".{text}" if out else text
    return out


def _describe(value: Any) -> str:
    """A TOML value as the error message names it: its type, and the value when short."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = _quote(value) if len(value) <= 40 else _quote(value[:37] + "...")
        return f"a string ({shown})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime | date | time):
        return f"a date/time ({value.isoformat()})"
    return type(value).__name__


Key = tuple[str | int, ...]


class _Reader:
    """Walks the parsed TOML document, building specs and collecting every error."""

    def __init__(self, display: str, paths: Paths) -> None:
        self.display = display
        self.paths = paths
        self.home = paths.home
        self.failures: list[tuple[Key, ConfigError]] = []

    @property
    def errors(self) -> list[ConfigError]:
        return [error for _, error in self.failures]

    def fail(self, key: Key, message: str, hint: str) -> None:
        where = f"{self.display}: {_keypath(key)}: " if key else f"{self.display}: "
        self.failures.append((key, ConfigError(one_line(where + message), one_line(hint))))

    def in_file_order(self, since: int, table: Mapping[str, Any], depth: int) -> None:
        """Sort the failures recorded since `since` by where their key sits in `table`."""
        order = {name: index for index, name in enumerate(table)}

        def position(failure: tuple[Key, ConfigError]) -> int:
            key = failure[0]
            return order.get(str(key[depth]), len(order)) if len(key) > depth else -1

        self.failures[since:] = sorted(self.failures[since:], key=position)

    # -- structure ---------------------------------------------------------------------------

    def config(self, path: Path, document: dict[str, Any]) -> Config:
        self.known_keys(document, (), TOP_KEYS, "top-level tables")
        defaults = self.table(document, ("defaults",))
        queues_table = self.table(document, ("queues",))
        lanes_table = self.table(document, ("lanes",))

        since = len(self.failures)
        self.known_keys(defaults, ("defaults",), DEFAULTS_KEYS, "keys of [defaults]")
        default_path = self.dir_list(defaults, ("defaults", "path"))
        prefix = self.label_prefix(defaults)
        templates = self.path(defaults, ("defaults", "templates"))
        default_options = self.options(defaults, ("defaults",))
        self.in_file_order(since, defaults, 1)

        queues: dict[str, QueueSpec] = {}
        broken_queues: set[str] = set()
        for name in queues_table:
            queue = self.queue(queues_table, name)
            if queue is None:
                broken_queues.add(name)
            else:
                queues[name] = queue
        self.unique_queue_dirs(queues)

        lanes: dict[str, LaneSpec] = {}
        for name in lanes_table:
            lane = self.lane(
                lanes_table,
                name,
                queues=queues,
                broken_queues=broken_queues,
                prefix=prefix or DEFAULT_LABEL_PREFIX,
                default_path=default_path or DEFAULT_PATH,
                default_options=default_options,
            )
            if lane is not None:
                lanes[name] = replace(lane, project=path.resolve())
        watch = None
        if "watch" in document:
            watch = self.watch(document, queues_table, lanes_table)
            if watch is not None:
                lanes[WATCH_LANE] = watchdog_lane(
                    watch,
                    config_path=path,
                    prefix=prefix or DEFAULT_LABEL_PREFIX,
                    paths=self.paths,
                    path=default_path or DEFAULT_PATH,
                    session_type=default_options.get("session_type", DEFAULT_SESSION_TYPES),
                )
        self.unique_labels(lanes)
        self.unique_log_paths(lanes)
        return Config(
            path=path,
            label_prefix=prefix or DEFAULT_LABEL_PREFIX,
            queues=queues,
            lanes=lanes,
            templates=templates,
            watch=watch,
        )

    def watch(
        self,
        document: Mapping[str, Any],
        queues: Mapping[str, Any],
        lanes: Mapping[str, Any],
    ) -> WatchSpec | None:
        """`[watch]`, and the names it takes: lane `watch` and queue `watch` are the
        watchdog's own while the table exists."""
        table = self.table(document, ("watch",))
        if not isinstance(document["watch"], dict):
            return None
        for section, names in (("lanes", lanes), ("queues", queues)):
            if WATCH_LANE in names:
                self.fail(
                    (section, WATCH_LANE),
                    f"the name {WATCH_LANE} is the watchdog's while lanes.toml has [watch]",
                    f"rename [{section}.{WATCH_LANE}], or remove [watch]",
                )
        return read_watch(self, table)

    def known_keys(
        self, table: Mapping[str, Any], key: Key, allowed: Sequence[str], what: str
    ) -> None:
        for name, value in table.items():
            if name not in allowed:
                kind = "table" if isinstance(value, dict) else "key"
                self.fail(
                    (*key, name),
                    f"unknown {kind}{_did_you_mean(name, allowed)}",
                    f"{what}: {', '.join(allowed)}",
                )

    def table(self, parent: Mapping[str, Any], key: Key) -> dict[str, Any]:
        value = parent.get(str(key[-1]))
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"expected a table, got {_describe(value)}", f"write [{_keypath(key)}]")
            return {}
        return value

    def valid_name(self, key: Key, name: str, what: str) -> bool:
        if _NAME_RE.fullmatch(name) and len(name) <= MAX_NAME_LENGTH:
            return True
        if len(name) > MAX_NAME_LENGTH:
            problem = f"is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
        else:
            problem = "is not a safe name"
        self.fail(
            key,
            f"{what} name {_quote(name)} {problem}",
            f"{what} names become file names: use letters, digits, _ . - "
            "(starting with a letter or digit)",
        )
        return False

    # -- queues ------------------------------------------------------------------------------

    def queue(self, queues: Mapping[str, Any], name: str) -> QueueSpec | None:
        key: Key = ("queues", name)
        before = len(self.failures)
        self.valid_name(key, name, "queue")
        table = self.table(queues, key)
        if not isinstance(queues[name], dict):
            return None
        self.known_keys(table, key, QUEUE_KEYS, "keys of a queue")
        directory = self.path(table, (*key, "dir"))
        if "dir" not in table:
            self.fail(
                key,
                'missing required key "dir"',
                'add dir = "~/path/to/queue" (tmp/ queue/ claimed/ ... are created inside)',
            )
        durable = self.boolean(table, (*key, "durable"))
        keep_done = self.duration(table, (*key, "keep_done"), minimum=RETENTION_MINIMUM)
        keep_failed = self.duration(table, (*key, "keep_failed"), minimum=RETENTION_MINIMUM)
        self.in_file_order(before, table, 2)
        if len(self.failures) > before or directory is None:
            return None
        return QueueSpec(
            name=name,
            dir=directory,
            durable=True if durable is None else durable,
            keep_done=DEFAULT_KEEP_DONE if keep_done is None else keep_done,
            keep_failed=DEFAULT_KEEP_FAILED if keep_failed is None else keep_failed,
        )

    def unique_queue_dirs(self, queues: Mapping[str, QueueSpec]) -> None:
        """Two queues in one directory, or one inside another, would mix their jobs: compared
        by real path (`z/../q` and a symlinked alias are the same directory) and ignoring case
        (macOS volumes usually do)."""
        seen: list[tuple[QueueSpec, Path]] = []
        for queue in queues.values():
            real = _real(queue.dir)
            for other, other_real in seen:
                where = ("queues", queue.name, "dir")
                theirs = f"the dir of queue {_quote(other.name)}"
                if _same_path(real, other_real):
                    alias = "" if queue.dir == other.dir else f" ({other.dir}), as real path {real}"
                    self.fail(
                        where,
                        f"{queue.dir} is already {theirs}{alias}",
                        "several lanes may drain one queue: point their `queue` at the same name",
                    )
                    break
                nesting = (
                    "is inside"
                    if _inside(real, other_real)
                    else "contains"
                    if _inside(other_real, real)
                    else None
                )
                if nesting is not None:
                    self.fail(
                        where,
                        f"{queue.dir} {nesting} {theirs} ({other.dir}): one queue's directories "
                        "would hold the other's jobs",
                        "give each queue a directory of its own, outside every other queue's",
                    )
                    break
            else:
                seen.append((queue, real))

    # -- lanes -------------------------------------------------------------------------------

    def lane(
        self,
        lanes: Mapping[str, Any],
        name: str,
        *,
        queues: Mapping[str, QueueSpec],
        broken_queues: set[str],
        prefix: str,
        default_path: tuple[str, ...],
        default_options: Mapping[str, Any],
    ) -> LaneSpec | None:
        key: Key = ("lanes", name)
        before = len(self.failures)
        name_ok = self.valid_name(key, name, "lane")
        table = self.table(lanes, key)
        if not isinstance(lanes[name], dict):
            return None
        self.known_keys(table, key, LANE_KEYS, "keys of a lane")

        queue = self.lane_queue(table, key, queues, broken_queues)
        command = self.command(table, (*key, "command"))
        for required, example in (
            ("queue", 'queue = "notes"'),
            ("command", 'command = ["/path/to/tool", "{job}"]'),
        ):
            if required not in table:
                self.fail(key, f"missing required key {_quote(required)}", f"add {example}")
        schedule = self.schedule(table, key)
        env = self.env(table, (*key, "env"))
        path = self.dir_list(table, (*key, "path"))
        label = self.label(table, key, name, prefix) if name_ok else None
        logs = {
            field_name: self.path(table, (*key, field_name))
            for field_name in ("stdout_log", "stderr_log", "log")
        }
        options = {**default_options, **self.options(table, key)}

        self.in_file_order(before, table, 2)
        # A lane of a broken queue has no error of its own: the queue's error covers it.
        if len(self.failures) > before or queue is None:
            return None
        assert command is not None and schedule is not None and label is not None
        log_dir = queue.dir / "logs"
        return LaneSpec(
            name=name,
            label=label,
            queue=queue,
            command=command,
            schedule=schedule,
            stdout_path=logs["stdout_log"] or log_dir / f"{name}.out.log",
            stderr_path=logs["stderr_log"] or log_dir / f"{name}.err.log",
            log_path=logs["log"] or log_dir / f"{name}.log",
            env=env or {},
            path=path or default_path,
            **options,
        )

    def lane_queue(
        self,
        table: Mapping[str, Any],
        key: Key,
        queues: Mapping[str, QueueSpec],
        broken_queues: set[str],
    ) -> QueueSpec | None:
        name = self.string(table, (*key, "queue"))
        if name is None or name in broken_queues:
            return None
        queue = queues.get(name)
        if queue is None:
            names = [*queues, *sorted(broken_queues)]
            known = ", ".join(names) if names else "none defined yet"
            self.fail(
                (*key, "queue"),
                f"no queue named {_quote(name)}{_did_you_mean(name, names)}",
                f'define [queues.{name}] with dir = "..." (queues: {known})',
            )
        return queue

    def command(self, table: Mapping[str, Any], key: Key) -> tuple[str, ...] | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = 'write an argv list, e.g. command = ["/usr/local/bin/tool", "--file", "{job}"]'
        if not isinstance(value, list):
            self.fail(key, f"expected an array of strings, got {_describe(value)}", hint)
            return None
        if not value:
            self.fail(key, "is empty", hint)
            return None
        args: list[str] = []
        for index, item in enumerate(value):
            item_key = (*key, index)
            if not isinstance(item, str):
                self.fail(item_key, f"expected a string, got {_describe(item)}", hint)
            elif not item:
                self.fail(item_key, "is an empty string", "remove it, or write the argument")
            elif (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
            else:
                args.append(expand_home(item, self.home))
        return tuple(args) if len(args) == len(value) else None

    def schedule(self, table: Mapping[str, Any], key: Key) -> Schedule | None:
        value = table.get("schedule")
        every = table.get("every")
        ok = True
        if every is not None:
            ok = self.duration(table, (*key, "every"), minimum=1) is not None
        if value is not None and not isinstance(value, str | dict | list):
            self.fail(
                (*key, "schedule"),
                f"expected cron text, a table or an array of them, got {_describe(value)}",
                'write schedule = "40 10 * * *" or schedule = [{Hour = 10, Minute = 40}]',
            )
            ok = False
        if not ok:
            return None
        entry_errors = schedule_entry_errors(value)
        if len(entry_errors) > 1:
            # build_schedule stops at the first bad element: name every one of them.
            for exc in entry_errors:
                index = () if exc.index is None else (exc.index,)
                self.fail((*key, "schedule", *index), exc.message, exc.hint)
            return None
        try:
            return build_schedule(value, every)
        except ScheduleError as exc:
            where: Key = key
            if exc.field == "every":
                where = (*key, "every")
            elif exc.field == "schedule":
                index = () if exc.index is None else (exc.index,)
                where = (*key, "schedule", *index)
            self.fail(where, exc.message, exc.hint)
            return None

    def env(self, table: Mapping[str, Any], key: Key) -> dict[str, str] | None:
        value = table.get("env")
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(
                key,
                f"expected a table of strings, got {_describe(value)}",
                'write env = { NAME = "value" }',
            )
            return None
        env: dict[str, str] = {}
        for name, item in value.items():
            item_key = (*key, name)
            if name in RESERVED_ENV:
                self.fail(item_key, f"{name} is set by lanekit", RESERVED_ENV[name])
            elif not name or "=" in name:
                self.fail(
                    item_key,
                    "is not a valid environment variable name",
                    "use letters, digits and _ (no = sign)",
                )
            elif (problem := plist_safe(name)) is not None:
                self.fail(item_key, f"name {problem}", "remove the character")
            elif not isinstance(item, str):
                self.fail(
                    item_key,
                    f"expected a string, got {_describe(item)}",
                    f'environment values are text: write {_keypath((name,))} = "{item}"'
                    if isinstance(item, int | float) and not isinstance(item, bool)
                    else "environment values are text: quote the value",
                )
            elif (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
            else:
                env[name] = expand_home(item, self.home)
        return env

    def label(self, table: Mapping[str, Any], key: Key, name: str, prefix: str) -> str | None:
        if "label" in table:
            label = self.string(table, (*key, "label"))
            if label is None:
                return None
            problem = _label_problem(label, check_reserved=True)
            if problem is not None:
                self.fail((*key, "label"), f"label {_quote(label)} {problem[0]}", problem[1])
                return None
            return label
        label = f"{prefix}.{name}"
        problem = _label_problem(label, check_reserved=False)
        if problem is not None:
            self.fail(key, f"label {_quote(label)} (label_prefix.name) {problem[0]}", problem[1])
            return None
        return label

    def label_prefix(self, defaults: Mapping[str, Any]) -> str | None:
        key: Key = ("defaults", "label_prefix")
        prefix = self.string(defaults, key)
        if prefix is None:
            return None
        problem = _label_problem(prefix, check_reserved=False)
        if problem is None and f"{prefix}.".lower().startswith(RESERVED_LABEL_PREFIX):
            problem = _reserved_problem()
        if problem is not None:
            self.fail(key, f"{_quote(prefix)} {problem[0]}", problem[1])
            return None
        return prefix

    def unique_log_paths(self, lanes: Mapping[str, LaneSpec]) -> None:
        """Two lanes writing one log file would interleave their lines (and doctor and `logs`
        would read another lane's events): lane `x`'s default stdout log `logs/x.out.log` is
        lane `x.out`'s default event log. Compared like queue dirs, by real path and ignoring
        case; within one lane, stdout and stderr may share a file (launchd allows it)."""
        seen: list[tuple[LaneSpec, str, Path, Path]] = []
        for lane in lanes.values():
            mine: list[tuple[LaneSpec, str, Path, Path]] = []
            for key, path in _log_fields(lane):
                real = _real(path)
                clash = next((c for c in seen if _same_path(real, c[3])), None)
                if clash is None:
                    mine.append((lane, key, path, real))
                    continue
                other, other_key, other_path, _ = clash
                alias = "" if other_path == path else f" at {other_path}"
                self.fail(
                    ("lanes", lane.name, key),
                    f"{path}{_if_default(lane, key, path)} is also "
                    f"{_keypath(('lanes', other.name, other_key))}"
                    f"{_if_default(other, other_key, other_path)}{alias}: two lanes would "
                    "write one file",
                    f"give each lane its own log files: set {key} of lane {lane.name} or "
                    f"{other_key} of lane {other.name} to a path of its own",
                )
            seen.extend(mine)

    def unique_labels(self, lanes: Mapping[str, LaneSpec]) -> None:
        # Case-insensitive: the plist is <Label>.plist and macOS volumes usually ignore case.
        seen: dict[str, LaneSpec] = {}
        for lane in lanes.values():
            other = seen.setdefault(lane.label.casefold(), lane)
            if other is lane:
                continue
            where: Key = ("lanes", lane.name, "label")
            hint = "labels name the plist files (<Label>.plist): give each lane its own label"
            if other.label == lane.label:
                self.fail(
                    where, f"label {_quote(lane.label)} is already used by lane {other.name}", hint
                )
            else:
                self.fail(
                    where,
                    f"label {_quote(lane.label)} differs from lane {other.name}'s "
                    f"{_quote(other.label)} only in case (macOS file names ignore case)",
                    hint,
                )

    # -- options shared by [defaults] and lanes ---------------------------------------------

    def options(self, table: Mapping[str, Any], key: Key) -> dict[str, Any]:
        read: dict[str, Callable[[Key], object]] = {
            "max_jobs": lambda k: self.integer(table, k, 1, MAX_INT),
            "max_seconds": lambda k: self.duration(table, k, minimum=1),
            "max_attempts": lambda k: self.integer(table, k, 1, MAX_INT),
            "stale_after": lambda k: self.duration(table, k, minimum=1),
            "timeout": lambda k: self.duration(table, k, minimum=1),
            "kill_grace": lambda k: self.duration(table, k, minimum=0),
            "nice": lambda k: self.integer(table, k, -20, 20),
            "low_priority_io": lambda k: self.boolean(table, k),
            "process_type": lambda k: self.choice(table, k, PROCESS_TYPES),
            "session_type": lambda k: self.choices(table, k, SESSION_TYPES),
            "throttle_interval": lambda k: self.duration(table, k, minimum=0),
            "exit_timeout": lambda k: self.duration(table, k, minimum=0),
            "run_at_load": lambda k: self.boolean(table, k),
        }
        options: dict[str, Any] = {}
        for name in table:  # file order, so errors come out in the order they are written
            reader = read.get(name)
            if reader is not None and (value := reader((*key, name))) is not None:
                options[name] = value
        return options

    # -- typed values ------------------------------------------------------------------------

    def string(self, table: Mapping[str, Any], key: Key) -> str | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {_describe(value)}", "quote the value")
            return None
        problem = plist_safe(value)
        if problem is not None:
            self.fail(key, problem, "remove the character")
            return None
        return value

    def boolean(self, table: Mapping[str, Any], key: Key) -> bool | None:
        value = table.get(str(key[-1]))
        if value is None or isinstance(value, bool):
            return value
        self.fail(
            key,
            f"expected a boolean, got {_describe(value)}",
            f"write {key[-1]} = true or {key[-1]} = false (no quotes)",
        )
        return None

    def integer(self, table: Mapping[str, Any], key: Key, low: int, high: int) -> int | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            example = value if isinstance(value, str) and value.strip().isdigit() else max(low, 0)
            self.fail(
                key,
                f"expected an integer, got {_describe(value)}",
                f"write a whole number without quotes, e.g. {key[-1]} = {example}",
            )
            return None
        return self.in_range(key, value, low, high)

    def in_range(self, key: Key, value: int, low: int, high: int) -> int | None:
        if low <= value <= high:
            return value
        if high == MAX_INT:
            self.fail(key, f"must be at least {low}, got {value}", f"use a value >= {low}")
        else:
            self.fail(key, f"{value} is out of range {low}..{high}", f"use {low}..{high}")
        return None

    def duration(self, table: Mapping[str, Any], key: Key, *, minimum: int) -> int | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = f'write seconds or a duration, e.g. {key[-1]} = "90s", "15m", "1h" or "2d"'
        if isinstance(value, bool) or not isinstance(value, int | str):
            self.fail(
                key, f"expected a duration (text or whole seconds), got {_describe(value)}", hint
            )
            return None
        if isinstance(value, int):
            return self.in_range(key, value, minimum, MAX_INT)
        if minimum == 0 and _ZERO_DURATION_RE.fullmatch(value.strip()):
            # parse_duration refuses zero, but ThrottleInterval 0 / ExitTimeOut 0 mean something.
            return 0
        try:
            seconds = parse_duration(value)
        except ScheduleError as exc:
            self.fail(key, exc.message, exc.hint or hint)
            return None
        return self.in_range(key, seconds, minimum, MAX_INT)

    def choice(self, table: Mapping[str, Any], key: Key, choices: Sequence[str]) -> str | None:
        value = self.string(table, key)
        if value is None or value in choices:
            return value
        self.fail(
            key,
            f"{_quote(value)} is not one of {', '.join(choices)}" + _did_you_mean(value, choices),
            f"{key[-1]} allows: {', '.join(choices)}",
        )
        return None

    def choices(
        self, table: Mapping[str, Any], key: Key, choices: Sequence[str]
    ) -> tuple[str, ...] | None:
        """One choice or a non-empty array of distinct choices, as a tuple."""
        value = table.get(str(key[-1]))
        if value is None:
            return None
        items = [value] if isinstance(value, str) else value
        first, second = choices[0], choices[1]
        hint = f'write {key[-1]} = "{first}", or an array such as ["{first}", "{second}"]'
        problem = None
        if not isinstance(items, list):
            problem = f"expected a string or an array of strings, got {_describe(value)}"
        elif not items:
            problem = "needs at least one value"
        elif len(set(map(str, items))) != len(items):
            problem = "lists a value twice"
        if problem is not None:
            self.fail(key, problem, hint)
            return None
        picked: list[str] = []
        for item in items:
            chosen = self.choice({str(key[-1]): item}, key, choices)
            if chosen is None:
                return None
            picked.append(chosen)
        return tuple(picked)

    def path(self, table: Mapping[str, Any], key: Key) -> Path | None:
        text = self.string(table, key)
        if text is None:
            return None
        checked = self.absolute(key, text)
        return None if checked is None else Path(checked)

    def absolute(self, key: Key, text: str) -> str | None:
        expanded = expand_home(text, self.home)
        hint = "write the absolute path (launchd expands neither ~ nor $VARIABLES)"
        if expanded.startswith("~"):
            user = expanded.split("/", 1)[0]
            self.fail(key, f"{_quote(text)}: {user} is not expanded, only ~ and ~/...", hint)
            return None
        variable = _VAR_RE.search(expanded)
        if variable is not None:
            self.fail(
                key,
                f"{_quote(text)} uses {variable[0]}; only a leading ~ or $HOME is expanded",
                hint,
            )
            return None
        if not expanded.startswith("/"):
            self.fail(
                key,
                f"{_quote(text)} is relative; launchd runs jobs from / "
                "— use an absolute path or ~/...",
                f'write "~/{text}" or "/full/path/{text}"'
                if text and text not in (".", "..")
                else "write an absolute path",
            )
            return None
        return expanded

    def dir_list(self, table: Mapping[str, Any], key: Key) -> tuple[str, ...] | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = 'write path = ["/opt/homebrew/bin", "/usr/bin", "/bin"]'
        if not isinstance(value, list):
            self.fail(key, f"expected an array of directories, got {_describe(value)}", hint)
            return None
        if not value:
            self.fail(key, "is empty; the job would find no commands", hint)
            return None
        dirs: list[str] = []
        for index, item in enumerate(value):
            item_key = (*key, index)
            if not isinstance(item, str):
                self.fail(item_key, f"expected a string, got {_describe(item)}", hint)
                continue
            if (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
                continue
            checked = self.absolute(item_key, item)
            if checked is None:
                continue
            if ":" in checked:
                self.fail(
                    item_key,
                    f"{_quote(item)} contains ':', the PATH separator",
                    "rename the directory or link it from a path without ':'",
                )
                continue
            dirs.append(checked)
        return tuple(dirs) if len(dirs) == len(value) else None


def _real(path: Path) -> Path:
    """Where `path` really is: `..` and symlinks resolved as far as the path exists."""
    return Path(os.path.realpath(path))


def _same_path(a: Path, b: Path) -> bool:
    # Case-insensitive, as for labels: macOS volumes usually ignore case.
    return str(a).casefold() == str(b).casefold()


def _inside(inner: Path, outer: Path) -> bool:
    folded = Path(str(outer).casefold())
    return folded in Path(str(inner).casefold()).parents


_LOG_KEYS = (("stdout_log", ".out.log"), ("stderr_log", ".err.log"), ("log", ".log"))
"""Each lane's log keys and the default file name suffix `<lane><suffix>` under logs/."""


def _log_fields(lane: LaneSpec) -> list[tuple[str, Path]]:
    paths = {"stdout_log": lane.stdout_path, "stderr_log": lane.stderr_path, "log": lane.log_path}
    return [(key, paths[key]) for key, _ in _LOG_KEYS]


def _if_default(lane: LaneSpec, key: str, path: Path) -> str:
    """` (the default)` when `path` is the lane's default for `key` (not written in the file)."""
    default = lane.queue.dir / "logs" / f"{lane.name}{dict(_LOG_KEYS)[key]}"
    return " (the default)" if path == default else ""


def _reserved_problem() -> tuple[str, str]:
    return (
        f"starts with {RESERVED_LABEL_PREFIX}, which is reserved for Apple",
        'use your own reverse-DNS prefix, e.g. "local.lanekit" or "com.example"',
    )


def _label_problem(label: str, *, check_reserved: bool) -> tuple[str, str] | None:
    """(problem, hint) when `label` cannot be a launchd label lanekit installs."""
    hint = 'use a reverse-DNS name such as "com.example.funnel"'
    if not label:
        return "is empty", hint
    if "/" in label:
        return "contains '/', the separator of launchctl service targets", hint
    for char in label:
        if char.isspace() or not char.isprintable():
            return f"contains U+{ord(char):04X} (whitespace or not printable)", hint
    if check_reserved and label.lower().startswith(RESERVED_LABEL_PREFIX):
        return _reserved_problem()
    size = len(label.encode("utf-8"))
    if size > MAX_LABEL_BYTES:
        return (
            f"is {size} bytes long (at most {MAX_LABEL_BYTES}: it names the plist file)",
            "use a shorter label",
        )
    return None
