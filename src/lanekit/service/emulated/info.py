"""What the emulated domain's `print` says of a loaded job, and the plist facts it reads.

launchd parses a plist once, when it is loaded; so does the emulated domain: at bootstrap the
definition part of `print` (program, arguments, environment, log paths, timeouts, calendar, ...)
is worked out from the plist and kept in the job's entry in domain.json, as plain JSON values.
A read of the domain (`lanekit status`, doctor, plan) then builds its ServiceInfo from that
entry and the job's run state, without a plist parser or the spawning code (figure (i) in
docs/benchmarks.md). An entry kept by an earlier version (no definition, or another
EMULATED_DEFINITION_VERSION) is worked out from its plist on each read instead, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from lanekit.service.launchd.model import ServiceInfo
from lanekit.state.schemas import EMULATED_DEFINITION_VERSION


class Definition(TypedDict):
    """The definition part of `print`, as kept in a job's entry (JSON: lists, not tuples)."""

    version: int
    program: str | None
    arguments: list[str]
    environment: dict[str, str]
    default_environment: dict[str, str]
    stdout_path: str | None
    stderr_path: str | None
    working_directory: str | None
    exit_timeout: int
    minimum_runtime: int
    run_interval: int | None
    properties: list[str]
    calendar: list[dict[str, int]]
    extra: dict[str, str]


def positive_int(value: object) -> int | None:
    """A plist integer above 0 (StartInterval), else None: what launchd acts on."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def throttle(plist: Mapping[str, object]) -> int:
    """ThrottleInterval as launchd applies it (its default when absent or invalid)."""
    from lanekit.service.launchd.definition import DEFAULT_THROTTLE_INTERVAL

    value = plist.get("ThrottleInterval")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return DEFAULT_THROTTLE_INTERVAL


def exit_timeout(plist: Mapping[str, object]) -> int:
    """ExitTimeOut as launchd applies it."""
    from lanekit.service.launchd.launch import launch_for

    return launch_for(plist).exit_timeout


def definition_of(plist: Mapping[str, object]) -> Definition:
    """What `print` says of the job `plist` defines, whatever its run state."""
    # The spawning code and the plist readers only here: at bootstrap, or for an old entry.
    from lanekit.service.launchd.definition import calendar_facts, spawn_type
    from lanekit.service.launchd.launch import DEFAULT_PATH, launch_environment, launch_for

    launch = launch_for(plist)
    environment = dict(launch_environment(plist))
    variables = plist.get("EnvironmentVariables")
    if not (isinstance(variables, Mapping) and isinstance(variables.get("PATH"), str)):
        del environment["PATH"]
    properties = []
    if plist.get("RunAtLoad") is True:
        properties.append("runatload")
    if launch.program is None:
        properties.append("inferred program")
    extra = {"nice": str(launch.nice)} if launch.nice is not None else {}
    extra["spawn type"] = spawn_type(plist)
    workdir = plist.get("WorkingDirectory")
    return Definition(
        version=EMULATED_DEFINITION_VERSION,
        program=launch.executable or None,
        arguments=list(launch.argv),
        environment=environment,
        default_environment={"PATH": DEFAULT_PATH},
        stdout_path=launch.stdout_path,
        stderr_path=launch.stderr_path,
        working_directory=workdir if isinstance(workdir, str) else None,
        exit_timeout=launch.exit_timeout,
        minimum_runtime=throttle(plist),
        run_interval=positive_int(plist.get("StartInterval")),
        properties=properties,
        calendar=[dict(entry) for entry in calendar_facts(plist.get("StartCalendarInterval"))],
        extra=extra,
    )


def kept_definition(value: object) -> Definition | None:
    """A job entry's kept definition, or None when there is none of this version with every
    key (the entry is then worked out from its plist, as an older one is)."""
    if (
        isinstance(value, dict)
        and value.get("version") == EMULATED_DEFINITION_VERSION
        and value.keys() == Definition.__required_keys__
    ):
        # Written by definition_of() through JSON (domain.json is ours: refused otherwise).
        return cast(Definition, value)
    return None


def service_info(
    definition: Definition,
    *,
    label: str,
    state: str,
    pid: int | None,
    last_exit_code: int | None,
    last_signal: int | None,
    last_exit_reason: str | None,
    runs: int,
    path: str,
    domain: str,
) -> ServiceInfo:
    """`print` of a job: its definition plus its run state."""
    return ServiceInfo(
        label=label,
        state=state,
        pid=pid,
        last_exit_code=last_exit_code,
        last_signal=last_signal,
        last_exit_reason=last_exit_reason,
        runs=runs,
        program=definition["program"],
        arguments=tuple(definition["arguments"]),
        environment=dict(definition["environment"]),
        default_environment=dict(definition["default_environment"]),
        stdout_path=definition["stdout_path"],
        stderr_path=definition["stderr_path"],
        working_directory=definition["working_directory"],
        exit_timeout=definition["exit_timeout"],
        minimum_runtime=definition["minimum_runtime"],
        run_interval=definition["run_interval"],
        path=path,
        type="LaunchAgent",
        domain=domain,
        properties=tuple(definition["properties"]),
        calendar=tuple(dict(entry) for entry in definition["calendar"]),
        extra=dict(definition["extra"]),
    )
