"""LaneSpec -> a systemd user service, timer and path unit, through the jinja2 templates in
templates/.

A lane is `<label>.service` (Type=oneshot: one lane run per start), `<label>.timer` when it has
a schedule or runs at load, and `<label>.path` when it starts on enqueue. Each template renders
text that is parsed back (`parse_unit`) and checked against `lane_units()` (the model): a user
template may add keys, never change or drop one of the model's. What is written is the
canonical form (`Unit.to_bytes`): comments and blank lines dropped, one blank line between
sections.

How launchd's words become systemd's (docs/configuration.md has the table):
- StartCalendarInterval: one `OnCalendar=` per entry, in local time, with `Persistent=true`; an
  entry with both Day and Weekday is TWO lines, since launchd fires on either (OR) and
  systemd's one expression wants both (AND); Weekday 0 and 7 are `Sun`.
- StartInterval: an `OnCalendar=` aligned to the clock when the interval divides a minute, an
  hour or a day (`*:*:0/2`, `*:0/15`), else `OnActiveSec=` + `OnUnitActiveSec=`: OnUnitActiveSec
  alone is anchored to a last activation that a fresh boot does not have, so it never fires.
- RunAtLoad: `OnStartupSec=0`. ExitTimeOut: `TimeoutStopSec=`. LowPriorityIO:
  `IOSchedulingClass=idle`. ProcessType=Background: `CPUSchedulingPolicy=idle`.
- What means nothing under systemd is refused with the reason (`refusals`): ThrottleInterval,
  a LimitLoadToSessionType other than the default, an interactive ProcessType.
- start = [..., "enqueue"] (launchd's QueueDirectories): a path unit with
  `DirectoryNotEmpty=` on the queue's ready directory. systemd.path(5): when the service it
  started ends, successfully or not, the directory is checked again at once and the service
  started again while it is not empty, so a run that leaves its jobs there would be restarted
  for ever. Two limits stop that: the service's own start limit (`StartLimitBurst=` starts per
  `StartLimitIntervalSec=`; past it the start is refused, the service fails with
  `start-limit-hit` and the path unit with `unit-start-limit-hit`) and the path unit's trigger
  limit (`TriggerLimitBurst=` per `TriggerLimitIntervalSec=`; past it the path unit fails with
  `trigger-limit-hit`); either way the path unit stops watching until it is started again
  (`lanekit apply`, `resume`, `restart`), while the timer keeps the lane's schedule. Both are
  ENQUEUE_BURST per ENQUEUE_INTERVAL: a backlog of ENQUEUE_BURST x max_jobs drains in one go,
  a lane whose runs take nothing stops after ENQUEUE_BURST quick starts. lanekit's own runs
  leave nothing in ready/ they cannot take (a missing command defers the job to delayed/), and
  a pause stops the path unit.
- `KillMode=mixed`: a stop sends SIGTERM to the runner (the main process) alone, so it puts its
  job back and exits 75 before the SIGKILL that `TimeoutStopSec` later sends to the rest of the
  cgroup (its job watcher, the job); `control-group` would SIGTERM the watcher and the job at
  the same moment, racing the runner's hand-back (systemd.kill(5)).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.config.model import DEFAULT_SESSION_TYPES, StartOn
from lanekit.errors import ConfigError
from lanekit.schedule.model import WEEKDAY_NAMES, CalendarEntry
from lanekit.service.systemd.names import path_name, unit_names
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT

if TYPE_CHECKING:
    from lanekit.config import LaneSpec
    from lanekit.service.artifacts import JobDefinition

# jinja2 and the plist module (templates, the lane's argv) are imported when a lane is
# rendered: `lanekit status` on systemd reads unit names from here and renders nothing.

SERVICE_TEMPLATE = "lane.service.j2"
TIMER_TEMPLATE = "lane.timer.j2"
PATH_TEMPLATE = "lane.path.j2"
KILL_MODE = "mixed"
"""SIGTERM to the runner alone, SIGKILL to the rest of the cgroup after TimeoutStopSec (see the
module docstring)."""

ENQUEUE_INTERVAL = "10s"
ENQUEUE_BURST = 20
"""A lane started on enqueue: at most ENQUEUE_BURST starts per ENQUEUE_INTERVAL, for the
service and for its path unit (see the module docstring)."""
READY_DIR_MODE = "0700"
"""MakeDirectory='s mode for a ready directory that went missing: lanekit's dirs are private."""

Entry = tuple[str, str]
"""One `Key=value` line of a section."""


@dataclass(frozen=True, slots=True)
class Unit:
    """A unit file as systemd reads it: sections in order, each a list of `Key=value` lines
    (a key may repeat: OnCalendar, Environment)."""

    sections: tuple[tuple[str, tuple[Entry, ...]], ...]

    def values(self, section: str, key: str) -> list[str]:
        """Every value of `key` in `section`, in order (empty: not set)."""
        return [
            v for name, entries in self.sections if name == section for k, v in entries if k == key
        ]

    def value(self, section: str, key: str) -> str | None:
        """The last value of `key` in `section` (systemd's rule for single-valued keys)."""
        found = self.values(section, key)
        return found[-1] if found else None

    def to_bytes(self) -> bytes:
        """The canonical text: `[Section]` then its lines, one blank line between sections."""
        blocks = [
            "\n".join([f"[{name}]", *(f"{k}={v}" for k, v in entries)])
            for name, entries in self.sections
        ]
        return ("\n\n".join(blocks) + "\n").encode("utf-8")


_SECTION = re.compile(r"\[([^\[\]]+)\]")
_KEY = re.compile(r"[A-Za-z0-9-]+")


def parse_unit(data: bytes) -> Unit:
    """A unit file's sections and lines (systemd.syntax(7): `#`/`;` comments, `[Section]`,
    `Key=value`, a trailing backslash continues a line). ValueError (why) for text systemd
    would not read as a unit."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("is not a valid unit file (not UTF-8 text)") from None
    sections: list[tuple[str, list[Entry]]] = []
    pending = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip() if pending else raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line[0] in "#;":
            continue
        head = _SECTION.fullmatch(line)
        if head is not None:
            sections.append((head.group(1), []))
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise ValueError(
                f"is not a valid unit file (line {number}: neither [Section] nor Key=value)"
            )
        if not sections:
            raise ValueError(
                f"is not a valid unit file (line {number}: {key} outside any [Section])"
            )
        sections[-1][1].append((key, value.strip()))
    if not sections:
        raise ValueError("is not a valid unit file (no [Section])")
    return Unit(tuple((name, tuple(entries)) for name, entries in sections))


# --- quoting (systemd.service(5) "Command lines", systemd.syntax(7) "Quoting") ---

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quoted(value: str) -> str:
    """One double-quoted word: backslash, quote and control characters C-escaped."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def specifiers(value: str) -> str:
    """`%` doubled: systemd expands `%h`, `%n`... in nearly every setting."""
    return value.replace("%", "%%")


def exec_line(argv: Sequence[str]) -> str:
    """ExecStart's value: every argument quoted, `%` as `%%` and `$` as `$$` (systemd
    expands `$VAR` in command lines, and a lane's arguments are meant literally)."""
    return " ".join(specifiers(_quoted(arg)).replace("$", "$$") for arg in argv)


def environment_word(name: str, value: str) -> str:
    """One `Environment=` word, `"NAME=value"` (no `$` expansion happens there)."""
    return specifiers(_quoted(f"{name}={value}"))


_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "s": " "}


def split_words(value: str, *, command: bool = False) -> list[str]:
    """The words of a setting as systemd splits them: whitespace apart, quotes joined, C
    escapes read, `%%` as `%` (and in a command line `$$` as `$`). The inverse of
    `exec_line` and `environment_word`; ValueError on an unterminated quote."""
    words: list[str] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and value[i] in " \t":
            i += 1
        if i >= n:
            break
        word: list[str] = []
        quote = None
        while i < n and (quote is not None or value[i] not in " \t"):
            char = value[i]
            if quote is None and char in "\"'":
                quote = char
            elif quote is not None and char == quote:
                quote = None
            elif char == "\\" and i + 1 < n:
                i += 1
                code = value[i]
                if code == "x" and i + 2 < n:
                    word.append(chr(int(value[i + 1 : i + 3], 16)))
                    i += 2
                else:
                    word.append(_UNESCAPE.get(code, code))
            elif char == "%" and i + 1 < n and value[i + 1] == "%":
                word.append("%")
                i += 1
            elif command and char == "$" and i + 1 < n and value[i + 1] == "$":
                word.append("$")
                i += 1
            else:
                word.append(char)
            i += 1
        if quote is not None:
            raise ValueError(f"has an unterminated {quote} quote")
        words.append("".join(word))
    return words


# --- schedules ---


def _field(value: int | None, width: int = 2) -> str:
    return "*" if value is None else f"{value:0{width}d}"


def on_calendar(entry: CalendarEntry) -> list[str]:
    """One calendar entry as `OnCalendar=` values: one, or two when the entry has both a Day
    and a Weekday (launchd fires on either; one systemd expression would want both)."""
    time = f"{_field(entry.hour)}:{_field(entry.minute)}:00"
    month = _field(entry.month)
    by_day = f"*-{month}-{_field(entry.day)} {time}"
    if entry.weekday is None:
        return [by_day]
    by_weekday = f"{WEEKDAY_NAMES[entry.weekday % 7][:3]} *-{month}-* {time}"
    return [by_day, by_weekday] if entry.day is not None else [by_weekday]


def interval_triggers(seconds: int) -> list[Entry]:
    """StartInterval's triggers: aligned to the clock when `seconds` divides a minute, an hour
    or a day, else every `seconds` from the timer's activation and then from each start."""
    if seconds < 60 and 60 % seconds == 0:
        return [("OnCalendar", f"*-*-* *:*:00/{seconds}")]
    if seconds % 60 == 0 and seconds < 3600 and 3600 % seconds == 0:
        return [("OnCalendar", f"*-*-* *:00/{seconds // 60}:00")]
    if seconds % 3600 == 0 and seconds <= 86400 and 86400 % seconds == 0:
        step = seconds // 3600
        return [("OnCalendar", "*-*-* 00:00:00" if step == 24 else f"*-*-* 00/{step}:00:00")]
    return [("OnActiveSec", f"{seconds}s"), ("OnUnitActiveSec", f"{seconds}s")]


def triggers(lane: LaneSpec) -> list[Entry]:
    """The timer's trigger lines for a lane (empty: it runs only when started)."""
    found: list[Entry] = []
    for entry in lane.schedule.calendar:
        for expression in on_calendar(entry):
            if ("OnCalendar", expression) not in found:
                found.append(("OnCalendar", expression))
    if lane.schedule.interval is not None:
        found.extend(interval_triggers(lane.schedule.interval))
    if lane.run_at_load:
        found.append(("OnStartupSec", "0"))
    return found


# --- the model ---

PROCESS_TYPES = {"Standard": None, "Background": "idle"}
"""launchd ProcessType -> systemd CPUSchedulingPolicy (None: the default); the interactive
types (Adaptive, Interactive) describe UI boosts a timer's job never gets, so they are refused."""


def refusals(lane: LaneSpec) -> list[ConfigError]:
    """The lane's launchd-only settings, each refused with the reason and the fix."""
    where = f"lane {lane.name}"
    found: list[ConfigError] = []
    if lane.throttle_interval is not None:
        found.append(
            ConfigError(
                f"{where}: throttle_interval means nothing under systemd (a timer never starts"
                " a oneshot that is still running, and starts are not throttled)",
                f"remove throttle_interval from lanes.{lane.name} (or [defaults])",
            )
        )
    if tuple(lane.session_type) != DEFAULT_SESSION_TYPES:
        found.append(
            ConfigError(
                f"{where}: session_type means nothing under systemd (a user's units run in"
                " the user manager, at login or, with linger, from boot)",
                f"remove session_type from lanes.{lane.name}; `loginctl enable-linger` keeps"
                " lanes running without a login",
            )
        )
    if lane.process_type is not None and lane.process_type not in PROCESS_TYPES:
        found.append(
            ConfigError(
                f"{where}: process_type {lane.process_type!r} means nothing under systemd"
                " (it is a UI boost of macOS)",
                f'remove process_type from lanes.{lane.name}, or use "Background" or "Standard"',
            )
        )
    return found


def lane_units(lane: LaneSpec, *, interpreter: str, snapshot: Path) -> dict[str, Unit]:
    """The units a lane must have (file name -> Unit): the model the templates are checked
    against. ConfigError for a launchd-only setting (`refusals`)."""
    from lanekit.config import lane_environment
    from lanekit.service.launchd.plist import program_arguments

    refused = refusals(lane)
    if refused:
        raise refused[0]
    service_name, timer_name = unit_names(lane.label)
    description = specifiers(f"lanekit lane {lane.name}")
    argv = program_arguments(lane, interpreter=interpreter, snapshot=snapshot)
    service: list[Entry] = [
        ("Type", "oneshot"),
        ("SyslogIdentifier", specifiers(lane.label)),
        ("ExecStart", exec_line(argv)),
        *(
            ("Environment", environment_word(k, v))
            for k, v in sorted(lane_environment(lane).items())
        ),
        ("WorkingDirectory", specifiers(str(lane.start_directory))),
        ("StandardOutput", "append:" + specifiers(str(lane.stdout_path))),
        ("StandardError", "append:" + specifiers(str(lane.stderr_path))),
        ("TimeoutStartSec", "infinity"),
        ("TimeoutStopSec", f"{_exit_timeout(lane)}s"),
        ("KillMode", KILL_MODE),
    ]
    if lane.nice is not None:
        service.append(("Nice", str(lane.nice)))
    if lane.low_priority_io:
        service.append(("IOSchedulingClass", "idle"))
    policy = PROCESS_TYPES.get(lane.process_type or "Standard")
    if policy is not None:
        service.append(("CPUSchedulingPolicy", policy))
    head: list[Entry] = [("Description", description)]
    watched = watched_dir(lane)
    if watched is not None:
        head += [
            ("StartLimitIntervalSec", ENQUEUE_INTERVAL),
            ("StartLimitBurst", str(ENQUEUE_BURST)),
        ]
    units = {service_name: Unit((("Unit", tuple(head)), ("Service", tuple(service))))}
    fires = triggers(lane)
    if fires:
        timer: list[Entry] = [("Unit", service_name), *fires, ("AccuracySec", "1s")]
        if lane.schedule.calendar:
            timer.append(("Persistent", "true"))
        units[timer_name] = Unit(
            (
                ("Unit", (("Description", description + " timer"),)),
                ("Timer", tuple(timer)),
                ("Install", (("WantedBy", "timers.target"),)),
            )
        )
    if watched is not None:
        units[path_name(lane.label)] = Unit(
            (
                ("Unit", (("Description", description + " on enqueue"),)),
                (
                    "Path",
                    (
                        ("DirectoryNotEmpty", specifiers(str(watched))),
                        ("Unit", service_name),
                        ("MakeDirectory", "true"),
                        ("DirectoryMode", READY_DIR_MODE),
                        ("TriggerLimitIntervalSec", ENQUEUE_INTERVAL),
                        ("TriggerLimitBurst", str(ENQUEUE_BURST)),
                    ),
                ),
                ("Install", (("WantedBy", "paths.target"),)),
            )
        )
    return units


def watched_dir(lane: LaneSpec) -> Path | None:
    """The directory whose jobs start the lane (its queue's ready directory) when it starts
    on enqueue; None otherwise, or when its queue keeps no jobs in a directory."""
    if StartOn.ENQUEUE not in lane.start:
        return None
    from lanekit.queue import ready_dir

    return ready_dir(lane.queue.dir)


def _exit_timeout(lane: LaneSpec) -> int:
    return DEFAULT_EXIT_TIMEOUT if lane.exit_timeout is None else lane.exit_timeout


def rendered_units(
    lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
) -> dict[str, bytes]:
    """The lane's unit files in canonical bytes, rendered through the templates and checked
    (ConfigError when a template is broken or renders something other than the model)."""
    model = lane_units(lane, interpreter=interpreter, snapshot=snapshot)
    service_name, timer_name = unit_names(lane.label)
    service = model[service_name]
    context = {
        "lane": lane,
        "label": service.value("Service", "SyslogIdentifier"),
        "description": service.value("Unit", "Description"),
        "exec_start": service.value("Service", "ExecStart"),
        "environment": service.values("Service", "Environment"),
        "working_directory": service.value("Service", "WorkingDirectory"),
        "stdout": service.value("Service", "StandardOutput"),
        "stderr": service.value("Service", "StandardError"),
        "timeout_stop": service.value("Service", "TimeoutStopSec"),
        "kill_mode": KILL_MODE,
        "nice": service.value("Service", "Nice"),
        "io_class": service.value("Service", "IOSchedulingClass"),
        "cpu_policy": service.value("Service", "CPUSchedulingPolicy"),
        "unit": service_name,
        "triggers": triggers(lane),
        "persistent": bool(lane.schedule.calendar),
        "start_limit_interval": service.value("Unit", "StartLimitIntervalSec"),
        "start_limit_burst": service.value("Unit", "StartLimitBurst"),
        "watched": None,
        "directory_mode": READY_DIR_MODE,
        "trigger_interval": ENQUEUE_INTERVAL,
        "trigger_burst": ENQUEUE_BURST,
    }
    path = model.get(path_name(lane.label))
    if path is not None:
        context["watched"] = path.value("Path", "DirectoryNotEmpty")
    templates_of = {timer_name: TIMER_TEMPLATE, path_name(lane.label): PATH_TEMPLATE}
    files: dict[str, bytes] = {}
    for name, want in model.items():
        template = templates_of.get(name, SERVICE_TEMPLATE)
        files[name] = _render_checked(lane, template, context, want, templates)
    return files


def _render_checked(
    lane: LaneSpec,
    name: str,
    context: Mapping[str, object],
    want: Unit,
    templates: Path | None,
) -> bytes:
    from lanekit.service.launchd.plist import render_template, template_hint

    text, source = render_template(lane, name, context, templates)
    try:
        got = parse_unit(text.encode("utf-8"))
    except ValueError as exc:
        raise ConfigError(
            f"lane {lane.name}: template {source} does not render a unit file ({exc})",
            template_hint(templates),
        ) from None
    for section, entries in want.sections:
        for key in dict.fromkeys(k for k, _ in entries):
            expected = [v for k, v in entries if k == key]
            actual = got.values(section, key)
            if not actual:
                raise ConfigError(
                    f"lane {lane.name}: template {source} drops {section}.{key}",
                    template_hint(templates),
                )
            if actual != expected:
                raise ConfigError(
                    f"lane {lane.name}: template {source} renders {section}.{key} differently"
                    " from the lane spec",
                    template_hint(templates),
                )
    return got.to_bytes()


# --- reading a unit back ---


def service_definition(service: Unit, timer: Unit | None, text: str = "") -> JobDefinition:
    """The job a lane's service (and timer) define, as systemd reads them; ValueError (why)
    when the service is not one systemd would run."""
    from lanekit.service.artifacts import JobDefinition

    exec_start = service.value("Service", "ExecStart")
    if not exec_start:
        raise ValueError("is not a valid service (no ExecStart=)")
    argv = tuple(split_words(exec_start, command=True))
    env: dict[str, str] = {}
    for value in service.values("Service", "Environment"):
        for word in split_words(value):
            name, sep, setting = word.partition("=")
            if sep:
                env[name] = setting
    calendar: list[Mapping[str, int]] = []
    interval = None
    if timer is not None:
        calendar = [
            parsed for v in timer.values("Timer", "OnCalendar") if (parsed := calendar_table(v))
        ]
        every = timer.value("Timer", "OnUnitActiveSec")
        if every and every.endswith("s") and every[:-1].isdigit():
            interval = int(every[:-1])
    stop = service.value("Service", "TimeoutStopSec")
    return JobDefinition(
        label=_unspecified(service.value("Service", "SyslogIdentifier")) or "",
        argv=argv,
        program=argv[0] if argv else None,
        env=env,
        cwd=_unspecified(service.value("Service", "WorkingDirectory")),
        stdout=_append_path(service.value("Service", "StandardOutput")),
        stderr=_append_path(service.value("Service", "StandardError")),
        calendar=tuple(calendar),
        interval=interval,
        exit_timeout=int(stop[:-1])
        if stop and stop.endswith("s") and stop[:-1].isdigit()
        else None,
        text=text,
    )


def _unspecified(value: str | None) -> str | None:
    return value.replace("%%", "%") if value else None


def _append_path(value: str | None) -> str | None:
    if value is None:
        return None
    for prefix in ("append:", "file:", "truncate:"):
        if value.startswith(prefix):
            return _unspecified(value[len(prefix) :])
    return None


_CALENDAR = re.compile(
    r"(?:(?P<weekday>[A-Z][a-z]{2}) )?\*-(?P<month>\*|\d\d)-(?P<day>\*|\d\d)"
    r" (?P<hour>\*|\d\d):(?P<minute>\*|\d\d):00"
)


def calendar_table(expression: str) -> dict[str, int] | None:
    """An `OnCalendar=` value lanekit writes (`on_calendar`) as launchd's table
    (`{"Hour": 9}`); None for any other form (an interval's step, a user's own)."""
    found = _CALENDAR.fullmatch(expression)
    if found is None:
        return None
    table: dict[str, int] = {}
    for key, group in (("Month", "month"), ("Day", "day"), ("Hour", "hour"), ("Minute", "minute")):
        if found.group(group) != "*":
            table[key] = int(found.group(group))
    weekday = found.group("weekday")
    if weekday is not None:
        short = [name[:3] for name in WEEKDAY_NAMES]
        if weekday not in short:
            return None
        table["Weekday"] = short.index(weekday)
    return table
