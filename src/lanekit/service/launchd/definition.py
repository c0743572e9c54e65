"""Is the job launchd has loaded the job a plist describes? Compared on what `print` shows.

launchd keeps its own copy of a job from the moment it was bootstrapped: writing a new plist file
changes nothing until the label is booted out and bootstrapped again. `apply`, `plan` and doctor's
`plist.drift` therefore compare the rendered plist with the loaded definition as
`launchctl print` reports it (parsed into a `ServiceInfo` by launchd/parse.py, or given by the
emulator from the copy it loaded), never with the file alone.

Only facts that `print` really shows are compared, and only when the output shows them (a
trimmed capture or a fragment lacks blocks; a missing fact is "not visible", never a
difference). From the captures in tests/launchd/samples and launchd-semantics.md section 6:

- `program` (Program, else argv[0]: launchd infers it) and `arguments {}` (ProgramArguments);
- `environment {}`: EnvironmentVariables plus what launchd adds itself (XPC_SERVICE_NAME on every
  capture, OSLogRateLimit on recent macOS, print-03); only the plist's own variables are compared;
- `stdout path`, `stderr path`, `working directory`, `run interval` (StartInterval), `nice`:
  printed only when set, so they are compared only when the output is complete (it has the
  `environment` block, which every full capture has);
- `exit timeout` (ExitTimeOut; without one, 5 on modern macOS, 20 on 10.9) and `minimum runtime`
  (ThrottleInterval, default 10), printed on every full capture;
- `spawn type`: `daemon (3)` for ProcessType Standard or unset, reportedly `background (5)` for
  Background, `adaptive` (print-09); a loaded background/adaptive job is compared, a plist
  asking for Background that prints as daemon is not (unconfirmed, see `differences`);
- StartCalendarInterval: one `event triggers` entry per dict on stream
  `com.apple.launchd.calendarinterval`, with the dict as its `descriptor` (print-02); compared only
  when the output has an `event triggers` block.

Not visible in `print`, so not compared (a change to one of these alone is found by comparing the
installed file with the rendered one instead): RunAtLoad (the `properties` line is missing from
truncated output, so its absence proves nothing), LowPriorityIO (only the pre-11 `properties`
dict names it), Umask, KeepAlive, AbandonProcessGroup, LimitLoadToSessionType.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lanekit.service.launchd.launch import launch_for
from lanekit.service.launchd.model import ServiceInfo

DEFAULT_THROTTLE_INTERVAL = 10
"""launchd's ThrottleInterval default (`minimum runtime = 10` in print)."""

DEFAULT_EXIT_TIMEOUTS = frozenset({5, 20})
"""`exit timeout` of a job whose plist sets none: 5 on modern macOS, 20 on 10.9."""

LAUNCHD_ADDED_ENV = frozenset({"XPC_SERVICE_NAME", "OSLogRateLimit"})
"""Variables launchd puts into a job's printed `environment` itself."""

CALENDAR_STREAM = "com.apple.launchd.calendarinterval"
CALENDAR_KEYS = ("Minute", "Hour", "Day", "Weekday", "Month")

SPAWN_TYPES = {"Standard": "daemon", "Background": "background", "Adaptive": "adaptive"}
"""ProcessType -> the first word of `spawn type` in print (unset prints as Standard does)."""
_KNOWN_SPAWN_WORDS = frozenset(SPAWN_TYPES.values())

CalendarFacts = tuple[tuple[tuple[str, int], ...], ...]
"""StartCalendarInterval as a sorted tuple of sorted (key, value) items, one per dict."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One fact on which the loaded job and the plist disagree."""

    fact: str
    """The plist key (or keys) the fact comes from, e.g. `Nice`."""
    loaded: str
    """The value launchd has, in words."""
    wanted: str
    """The value the plist gives."""

    def __str__(self) -> str:
        return f"{self.fact} {self.loaded} -> {self.wanted}"


def calendar_facts(value: object) -> CalendarFacts:
    """StartCalendarInterval (a dict or an array of dicts) in comparable form."""
    tables = value if isinstance(value, list) else [] if value is None else [value]
    entries = []
    for table in tables:
        if not isinstance(table, Mapping):
            continue
        items = tuple(
            sorted(
                (key, number)
                for key, number in table.items()
                if key in CALENDAR_KEYS and isinstance(number, int) and not isinstance(number, bool)
            )
        )
        entries.append(items)
    return tuple(sorted(entries))


def _calendar_words(facts: CalendarFacts) -> str:
    if not facts:
        return "none"
    return "; ".join(", ".join(f"{k}={v}" for k, v in entry) or "every minute" for entry in facts)


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    head = text.strip().split(" ", 1)[0]
    try:
        return int(head)
    except ValueError:
        return None


def _words(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
    return str(value)


def differences(plist: Mapping[str, Any], info: ServiceInfo) -> tuple[Difference, ...]:
    """The facts `print` shows on which the loaded job differs from `plist` (empty: same)."""
    launch = launch_for(plist)
    complete = bool(info.environment)
    found: list[Difference] = []

    def compare(fact: str, loaded: object, wanted: object) -> None:
        if loaded != wanted:
            found.append(Difference(fact, _words(loaded), _words(wanted)))

    if info.program is not None:
        compare("Program", info.program, launch.executable or None)
    if info.arguments:
        compare("ProgramArguments", info.arguments, launch.argv)
    if complete:
        variables = plist.get("EnvironmentVariables")
        wanted_env = {
            k: v
            for k, v in (variables.items() if isinstance(variables, Mapping) else ())
            if isinstance(k, str) and isinstance(v, str) and k not in LAUNCHD_ADDED_ENV
        }
        # Only the plist's own variables are compared: launchd adds some of its own to the
        # printed block (the two known ones, and maybe others on releases not captured), and
        # an extra one must never make apply reload on every run. A variable dropped from
        # lanes.toml changes the plist file, which the file comparison catches.
        loaded_env = {k: info.environment[k] for k in wanted_env if k in info.environment}
        compare("EnvironmentVariables", loaded_env, wanted_env)
        compare("StandardOutPath", info.stdout_path, launch.stdout_path)
        compare("StandardErrorPath", info.stderr_path, launch.stderr_path)
        workdir = plist.get("WorkingDirectory")
        compare("WorkingDirectory", info.working_directory, workdir or None)
        interval = plist.get("StartInterval")
        compare("StartInterval", info.run_interval, interval if isinstance(interval, int) else None)
        # `nice = 0` and no nice line both mean unchanged priority.
        compare("Nice", _int(info.extra.get("nice")) or None, launch.nice or None)
    timeout = plist.get("ExitTimeOut")
    if info.exit_timeout is not None and isinstance(timeout, int):
        compare("ExitTimeOut", info.exit_timeout, launch.exit_timeout)
    elif info.exit_timeout is not None and info.exit_timeout not in DEFAULT_EXIT_TIMEOUTS:
        compare("ExitTimeOut", info.exit_timeout, "unset")
    if info.minimum_runtime is not None:
        throttle = plist.get("ThrottleInterval")
        wanted_throttle = throttle if isinstance(throttle, int) else DEFAULT_THROTTLE_INTERVAL
        compare("ThrottleInterval", info.minimum_runtime, wanted_throttle)
    spawn = (info.extra.get("spawn type") or "").split(" ", 1)[0]
    process_type = plist.get("ProcessType")
    name = process_type if isinstance(process_type, str) else "Standard"
    # Only `daemon (3)` for Standard is seen in captures; `background (5)` is a claim. So a
    # loaded job printed as background or adaptive, with a plist that says otherwise, is a
    # difference; a Background plist printed as daemon is not trusted to be one (it could
    # be how some release prints it, and apply would then reload forever).
    if spawn in _KNOWN_SPAWN_WORDS - {"daemon"} and SPAWN_TYPES.get(name) != spawn:
        compare("ProcessType", spawn, SPAWN_TYPES.get(name, name))
    if info.calendar is not None:
        loaded_cal = calendar_facts(list(info.calendar))
        wanted_cal = calendar_facts(plist.get("StartCalendarInterval"))
        if loaded_cal != wanted_cal:
            found.append(
                Difference(
                    "StartCalendarInterval",
                    _calendar_words(loaded_cal),
                    _calendar_words(wanted_cal),
                )
            )
    return tuple(found)


def spawn_type(plist: Mapping[str, Any]) -> str:
    """What `print` shows as `spawn type` for this plist's ProcessType (the emulator's copy)."""
    process_type = plist.get("ProcessType")
    word = SPAWN_TYPES.get(process_type if isinstance(process_type, str) else "", "daemon")
    return {"daemon": "daemon (3)", "background": "background (5)"}.get(word, word)
