"""`lanekit adopt PLIST...`: hand-written launchd plists become `[lanes.*]` tables of lanes.toml.

Each plist key is either expressed by a lane key (`translate`, one table: KEYS), dropped because
it means what lanekit does anyway (KeepAlive false, Disabled false, RunAtLoad false, the System
session type of daemons), or unknown: then `adopt` refuses, naming every such key, unless
`keep_unknown`, which carries them into the plist through a user template lanekit writes
(`{% if lane.name == ... %}` in the extra_keys block of templates/lane.plist.j2). lanes.toml is
edited with tomlkit, so its comments and layout stay; the new text is validated as a whole
before it replaces the file (atomically), so a failed adopt changes nothing. Each lane records
the label it `replaces`: `apply` then boots the hand-written job out (never while it runs),
moves its plist aside (`<label>.plist.adopted`, never deleted) and installs the lane.

Where systemd runs the lanes, `adopt` is refused: there is no launchd job to take over, and a
`replaces` label would name a unit `apply` must not move aside. A Mac's plist becomes a lane
there by writing its `[lanes.NAME]` table (or by adopting it on the Mac and copying the table).
"""

from __future__ import annotations

import plistlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lanekit.config import (
    PROCESS_TYPES,
    RESERVED_ENV,
    SESSION_TYPES,
    Config,
    validate_config,
)
from lanekit.config.provenance import MARKER
from lanekit.errors import UsageError
from lanekit.reconcile.apply import ADOPTED_SUFFIX
from lanekit.service.launchd.model import PlistError, load_plist
from lanekit.service.manager import ManagerKind
from lanekit.state.paths import Paths
from lanekit.system.atomic import write_atomic

TEMPLATE_MARK = "{#- lanekit adopt: keys of adopted plists lanekit cannot express -#}"
"""The first line of a template `adopt` wrote, so it may add to it (and to no other)."""
TEMPLATE_END = "{% endblock %}"

SIMPLE = {
    "Nice": ("nice", int),
    "LowPriorityIO": ("low_priority_io", bool),
    "ExitTimeOut": ("exit_timeout", int),
    "ThrottleInterval": ("throttle_interval", int),
    "RunAtLoad": ("run_at_load", bool),
    "StartInterval": ("every", int),
    "WorkingDirectory": ("working_directory", str),
    "StandardOutPath": ("stdout_log", str),
    "StandardErrorPath": ("stderr_log", str),
}
"""Plist keys that are one lane key each, with the plist type they must have."""

SAME_AS_LANEKIT = {"KeepAlive": False, "Disabled": False, "OnDemand": True}
"""Keys whose value here means what every lane does anyway (never kept alive, enabled,
started on demand): dropped, with a note."""

HANDLED = {"Label", "Program", "ProgramArguments", "StartCalendarInterval",
           "EnvironmentVariables", "ProcessType", "LimitLoadToSessionType"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Unknown:
    """A plist key (or a value of one) that no lane key expresses."""

    key: str
    value: Any
    why: str


@dataclass(frozen=True, slots=True)
class Translation:
    """One plist as a lane: the lane table, and what did not fit."""

    label: str
    table: dict[str, Any]
    """Lane keys in lanes.toml order, as TOML values (lists, tables, strings, numbers)."""
    unknown: tuple[Unknown, ...] = ()
    notes: tuple[str, ...] = ()
    """What adopting changes on purpose (a dropped key that meant lanekit's default, `~`)."""


@dataclass(frozen=True, slots=True)
class Adopted:
    """One plist adopted as lane `lane`."""

    plist: Path
    lane: str
    translation: Translation
    kept: tuple[str, ...] = ()
    """Unknown keys carried through the template (--keep-unknown)."""


@dataclass(frozen=True, slots=True)
class AdoptResult:
    """What `adopt` wrote (or, dry, would write), and what `apply` will then do."""

    config: Path
    adopted: tuple[Adopted, ...]
    template: Path | None = None
    """The user template that carries unknown keys, when one was written."""
    dry_run: bool = False
    apply_steps: tuple[str, ...] = field(default=())


def translate(job: Mapping[str, Any]) -> Translation:
    """A plist's job dictionary as a lane table (pure); see the module docstring."""
    label = job.get("Label")
    if not isinstance(label, str) or not label:
        raise ValueError("has no Label")
    table: dict[str, Any] = {}
    unknown: list[Unknown] = []
    notes: list[str] = []
    table["command"] = _command(job)
    if any(arg.startswith("~") for arg in table["command"]):
        notes.append(
            "ProgramArguments: a leading ~ is your home in lanes.toml (launchd does not expand "
            "it, so the hand-written job could not start that program)"
        )
    calendar = job.get("StartCalendarInterval")
    if calendar is not None:
        entries = [calendar] if isinstance(calendar, dict) else calendar
        if isinstance(entries, list) and all(_calendar_entry(e) for e in entries):
            table["schedule"] = [dict(entry) for entry in entries]
        else:
            unknown.append(Unknown("StartCalendarInterval", calendar, "not dicts of integers"))
    env = job.get("EnvironmentVariables")
    if env is not None:
        _environment(env, table, unknown)
    for key, (lane_key, kind) in SIMPLE.items():
        if key not in job:
            continue
        value = job[key]
        if isinstance(value, kind) and (kind is not int or not isinstance(value, bool)):
            table[lane_key] = value
        else:
            unknown.append(
                Unknown(key, value, f"not a{'n' if kind is int else ''} {kind.__name__}")
            )
    process_type = job.get("ProcessType")
    if process_type is not None:
        if process_type in PROCESS_TYPES:
            table["process_type"] = process_type
        else:
            unknown.append(Unknown("ProcessType", process_type, "not a ProcessType launchd knows"))
    if "LimitLoadToSessionType" in job:
        _sessions(job["LimitLoadToSessionType"], table, unknown, notes)
    for key, value in job.items():
        if key in HANDLED or key in SIMPLE:
            continue
        if key in SAME_AS_LANEKIT and value == SAME_AS_LANEKIT[key]:
            notes.append(f"{key} {_shown(value)}: every lane does so already (dropped)")
            continue
        unknown.append(Unknown(key, value, "no lane key expresses it"))
    return Translation(label, table, tuple(unknown), tuple(notes))


def _command(job: Mapping[str, Any]) -> list[str]:
    program, arguments = job.get("Program"), job.get("ProgramArguments")
    if arguments is not None and not (
        isinstance(arguments, list) and all(isinstance(a, str) for a in arguments) and arguments
    ):
        raise ValueError("ProgramArguments is not a non-empty array of strings")
    if program is not None and not isinstance(program, str):
        raise ValueError("Program is not a string")
    if program is None and arguments is None:
        raise ValueError("has neither Program nor ProgramArguments")
    # launchd runs Program when given (ProgramArguments[0] is then only argv[0]).
    if program is not None:
        return [program, *(arguments or [program])[1:]]
    assert arguments is not None
    return list(arguments)


def _calendar_entry(entry: object) -> bool:
    return isinstance(entry, dict) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in entry.values()
    )


def _environment(env: object, table: dict[str, Any], unknown: list[Unknown]) -> None:
    if not isinstance(env, dict):
        unknown.append(Unknown("EnvironmentVariables", env, "not a dictionary"))
        return
    kept: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(value, str):
            unknown.append(Unknown(f"EnvironmentVariables.{name}", value, "not a string"))
        elif name == "PATH":
            table["path"] = [part for part in value.split(":") if part]
        elif name in RESERVED_ENV:
            unknown.append(Unknown(f"EnvironmentVariables.{name}", value, RESERVED_ENV[name]))
        else:
            kept[name] = value
    if kept:
        table["env"] = kept


def _sessions(
    value: object, table: dict[str, Any], unknown: list[Unknown], notes: list[str]
) -> None:
    sessions = [value] if isinstance(value, str) else value
    if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
        unknown.append(Unknown("LimitLoadToSessionType", value, "not a string or strings"))
        return
    agent = [s for s in sessions if s in SESSION_TYPES]
    dropped = [s for s in sessions if s not in SESSION_TYPES]
    if dropped:
        notes.append(
            f"LimitLoadToSessionType {', '.join(dropped)}: not a session a user's agent is "
            "loaded into (dropped)"
        )
    if agent:
        table["session_type"] = agent if len(agent) > 1 else agent[0]
    else:
        unknown.append(Unknown("LimitLoadToSessionType", value, "no session of a user's agent"))


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def lane_name(label: str) -> str:
    """A lane name from a label: its last dot-separated part, made a safe name."""
    tail = label.rsplit(".", 1)[-1] or label
    name = "".join(c if c.isalnum() or c in "_-" else "-" for c in tail).strip("-_") or "adopted"
    return name if name[0].isalnum() else f"lane-{name}"


def read_job(plist: Path) -> dict[str, Any]:
    """A plist file's job dictionary (UsageError naming the file when it is none). Its program
    becomes a lane's command that runs as you, so a plist someone other than you or root could
    have written is refused (UnsafeStateError, 69), and only a regular file is read (a FIFO
    named `x.plist` would block the read)."""
    from lanekit.system.owned import check_trusted, read_regular

    check_trusted(
        plist,
        "plist",
        elsewhere="adopt a plist that only you (or root) can write",
        risk="change what the adopted lane runs as you",
    )
    try:
        read = read_regular(plist, "plist", follow=True)
    except OSError as exc:
        raise UsageError(
            f"{plist}: cannot read it ({exc.strerror or exc})", "name a plist file"
        ) from None
    if read is None:
        raise UsageError(f"{plist}: no such file", "name a plist file")
    data = read[0]
    try:
        job = load_plist(data)
    except PlistError as exc:
        raise UsageError(
            f"{plist}: not a property list ({exc})", "name a launchd plist file"
        ) from None
    if not isinstance(job, dict):
        raise UsageError(f"{plist}: holds no job dictionary", "name a launchd plist file")
    return job


def adopt(
    config: Config,
    paths: Paths,
    plists: Sequence[Path],
    *,
    lane: str | None = None,
    queue: str | None = None,
    keep_unknown: bool = False,
    dry_run: bool = False,
    install_dir: Path | None = None,
    manager: ManagerKind = ManagerKind.LAUNCHD,
) -> AdoptResult:
    """Add one `[lanes.NAME]` per plist to `config`'s lanes.toml (see the module docstring).
    `lane` names the lane (one plist only); `queue` makes it drain that queue of lanes.toml
    instead of a plain lane. Refuses (UsageError, nothing written) a plist with keys no lane
    key expresses unless `keep_unknown`, a lane name already taken, and a result lanes.toml
    would not load, and any adopt where `manager` is systemd (see the module docstring)."""
    import tomlkit

    if manager is ManagerKind.SYSTEMD:
        raise UsageError(
            "lanekit adopt takes over hand-written launchd jobs, and systemd runs the lanes"
            " here: there is no launchd job to replace (nothing was changed)",
            "write the job as a [lanes.NAME] table of lanes.toml (docs/configuration.md), or"
            " adopt the plist on the Mac and copy its table here without `replaces`",
        )

    if lane is not None and len(plists) != 1:
        raise UsageError(
            "--lane names one lane: give one PLIST with it", "lanekit adopt PLIST --lane NAME"
        )
    if queue is not None and queue not in config.queues:
        known = ", ".join(config.queues) or "none"
        raise UsageError(
            f"no queue named {queue!r} in {config.path.name} (queues: {known})",
            f"define [queues.{queue}] first",
        )
    adopted = _translated(config, plists, lane=lane, keep_unknown=keep_unknown)
    document = tomlkit.parse(config.path.read_text(encoding="utf-8"))
    template = None
    extra = [item for item in adopted if item.translation.unknown]
    if extra:
        template = _template_dir(config)
        if "defaults" not in document:
            document.add("defaults", tomlkit.table())
        defaults = document["defaults"]
        assert isinstance(defaults, dict)
        if "templates" not in defaults:
            defaults["templates"] = str(template)
    lanes = document.get("lanes")
    if lanes is None:
        lanes = tomlkit.table(is_super_table=True)
        document.add("lanes", lanes)
    for item in adopted:
        lanes[item.lane] = _lane_table(item, queue)
    text = tomlkit.dumps(document)
    template_text = None
    if template is not None:
        template_text = _template_text(template / "lane.plist.j2", extra)
    steps = tuple(_apply_steps(adopted, install_dir))
    if dry_run:
        return AdoptResult(config.path, tuple(adopted), template, True, steps)
    _validated(config.path, paths, text, template, template_text)
    if template is not None and template_text is not None:
        template.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(template / "lane.plist.j2", template_text.encode("utf-8"), 0o600)
    write_atomic(config.path, text.encode("utf-8"), config.path.stat().st_mode & 0o777)
    return AdoptResult(config.path, tuple(adopted), template, False, steps)


def _translated(
    config: Config, plists: Sequence[Path], *, lane: str | None, keep_unknown: bool
) -> list[Adopted]:
    """Each plist translated and named; every unknown key of every plist in one refusal."""
    adopted: list[Adopted] = []
    problems: list[str] = []
    taken = set(config.lanes)
    for plist in plists:
        job = read_job(plist)
        env = job.get("EnvironmentVariables")
        if isinstance(env, dict) and MARKER in env:
            raise UsageError(
                f"{plist}: is the plist of lanekit lane {env[MARKER]!r}, not a hand-written job",
                "it is a lane already: `lanekit status` lists it",
            )
        try:
            translation = translate(job)
        except ValueError as exc:
            raise UsageError(f"{plist}: {exc}", "name a launchd job's plist") from None
        name = lane or lane_name(translation.label)
        if name in taken:
            raise UsageError(
                f"{plist}: lane {name!r} already exists in {config.path.name}",
                "name the new lane with --lane NAME",
            )
        taken.add(name)
        if translation.unknown and not keep_unknown:
            problems.extend(
                f"{plist}: {item.key} = {_shown(item.value)}: {item.why}"
                for item in translation.unknown
            )
        adopted.append(Adopted(plist, name, translation, tuple(u.key for u in translation.unknown)))
    if problems:
        raise UsageError(
            f"{len(problems)} key{'s' if len(problems) != 1 else ''} no lane key expresses: "
            + "; ".join(problems),
            "--keep-unknown carries them into the lane's plist through a template of yours",
        )
    return adopted


def _lane_table(item: Adopted, queue: str | None) -> Any:
    import tomlkit

    table = tomlkit.table()
    table.add(tomlkit.comment(f"adopted from {item.plist} ({item.translation.label})"))
    if queue is not None:
        table.add("queue", queue)
    for key, value in item.translation.table.items():
        if key == "schedule":
            array = tomlkit.array()
            for entry in value:
                inline = tomlkit.inline_table()
                inline.update(entry)
                array.append(inline)
            table.add(key, array)
        elif key == "env":
            inline = tomlkit.inline_table()
            inline.update(value)
            table.add(key, inline)
        else:
            table.add(key, value)
    table.add("replaces", item.translation.label)
    if item.kept:
        table.add(tomlkit.comment(f"kept through the template: {', '.join(item.kept)}"))
    return table


def _template_dir(config: Config) -> Path:
    return config.templates if config.templates is not None else config.path.parent / "templates"


def _template_text(path: Path, adopted: Sequence[Adopted]) -> str:
    """The user template with a section for each adopted lane's unknown keys: written anew,
    or added to one `adopt` wrote (refused for a template of the user's own)."""
    sections = "".join(_section(item) for item in adopted)
    if not path.exists():
        return (
            f"{TEMPLATE_MARK}\n"
            '{% extends "lanekit/lane.plist.j2" %}\n'
            "{% block extra_keys %}\n"
            f"{sections}"
            f"{TEMPLATE_END}\n"
        )
    text = path.read_text(encoding="utf-8")
    if not text.startswith(TEMPLATE_MARK) or TEMPLATE_END not in text:
        raise UsageError(
            f"{path} is a template of yours: lanekit does not edit it",
            "add the adopted keys to its extra_keys block yourself, or adopt without "
            "--keep-unknown",
        )
    head, _, tail = text.rpartition(TEMPLATE_END)
    return f"{head}{sections}{TEMPLATE_END}{tail}"


def _section(item: Adopted) -> str:
    """`{% if lane.name == NAME %}` and the unknown keys as plist XML (raw: a `{{` in a value
    stays text)."""
    keys = {u.key: u.value for u in item.translation.unknown}
    xml = plistlib.dumps(keys, sort_keys=True).decode("utf-8")
    body = xml.split("<dict>", 1)[1].rsplit("</dict>", 1)[0].strip("\n")
    return (
        f'{{% if lane.name == "{item.lane}" %}}{{% raw %}}\n{body}\n{{% endraw %}}{{% endif %}}\n'
    )


def _validated(
    config_path: Path, paths: Paths, text: str, template: Path | None, template_text: str | None
) -> None:
    """Load the new lanes.toml (and render its lanes through the new template) from a scratch
    copy beside it: an error there is the user's to see before anything is written."""
    import tempfile

    from lanekit.service.launchd.plist import render_lane

    with tempfile.TemporaryDirectory(dir=config_path.parent, prefix=".lanekit-adopt-") as scratch:
        copy = Path(scratch) / config_path.name
        if template is not None and template_text is not None:
            scratch_templates = Path(scratch) / "templates"
            scratch_templates.mkdir()
            if template.is_dir():
                for entry in template.iterdir():
                    if entry.is_file():
                        (scratch_templates / entry.name).write_bytes(entry.read_bytes())
            (scratch_templates / "lane.plist.j2").write_text(template_text, encoding="utf-8")
            text = text.replace(f'"{template}"', f'"{scratch_templates}"', 1)
        copy.write_text(text, encoding="utf-8")
        copy.chmod(0o600)
        loaded, errors = validate_config(copy, paths)
        if errors or loaded is None:
            first = errors[0] if errors else None
            raise UsageError(
                "the adopted lanes would not load: "
                + (
                    first.message.replace(str(copy), config_path.name) if first else "unknown error"
                ),
                (first.hint if first else "") or "adopt with --lane NAME, or fix lanes.toml first",
            )
        for spec in loaded.lanes.values():
            render_lane(
                spec,
                interpreter="/usr/bin/python3",
                snapshot=paths.snapshot_for(spec.label),
                templates=loaded.templates,
            )


def _apply_steps(adopted: Sequence[Adopted], install_dir: Path | None) -> list[str]:
    steps = []
    for item in adopted:
        label = item.translation.label
        where = item.plist if install_dir is None else install_dir / f"{label}.plist"
        steps.append(
            f"boot out {label} (only when it is not running), move {where}"
            f" aside to {label}.plist{ADOPTED_SUFFIX} (never deleted), and install lane {item.lane}"
        )
    return steps
