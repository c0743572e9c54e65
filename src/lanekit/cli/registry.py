"""The one list of lanekit's commands, from which the typer app is built, one command at a time.

Every `lanekit` call is a fresh interpreter and most do under a millisecond of work, so start-up
is what they cost (benchmark figure (g)). `lanekit --version`, `lanekit --help` and shell
completion of command names import no command module at all: the names and one-line summaries
are here. `lanekit status` imports lanekit.cli.launchd_cmds and builds `status` alone, nothing
else.

To add a command: write its function in a command module under lanekit/cli/ (or a typer.Typer
for a group), then add a row here: `"NAME": ("module_name", "attribute", "Its summary.")`.
The summary is the first sentence of the command's docstring; tests/cli/test_registry.py fails
when a module holds a command no row names, or a summary differs. A command module imports only
typer, lanekit.cli.options and the vocabularies its options need at module level; the core it
calls is imported inside the command function, so completing its options stays cheap (the same
test pins that).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer

from lanekit.cli.coercion import plain

COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("config_cmds", "init", "Write a commented example lanes.toml."),
    "validate": (
        "config_cmds",
        "validate",
        "Check lanes.toml, its schedules and its rendered plists; list every error (exit 1).",
    ),
    "render": (
        "config_cmds",
        "render",
        "Print the launchd plist of each lane (or write them with --out).",
    ),
    "schedule": (
        "schedule_cmd",
        "schedule",
        "Show the StartCalendarInterval entries, a plain-English description and the next fires.",
    ),
    "enqueue": (
        "queue_cmds",
        "enqueue",
        "Add a job (a JSON object) to a lane's queue and print its id.",
    ),
    "run": ("queue_cmds", "run", "Run a lane once, now: claim and run its jobs as launchd would."),
    "recover": (
        "queue_cmds",
        "recover",
        "Give back claims whose runner died: to queue/, or failed/ when out of attempts.",
    ),
    "jobs": ("queue_cmds", "jobs", "List a lane's jobs, newest first, a page at a time."),
    "job": ("queue_cmds", "job", "Show one job: its record, where its file is, and why it failed."),
    "retry": (
        "job_cmds",
        "retry",
        "Put failed jobs back in their queue with all their attempts again; the reason they "
        "failed stays in the record.",
    ),
    "requeue": (
        "job_cmds",
        "requeue",
        "Run delayed retries now: from delayed/ (waiting out their backoff) into queue/.",
    ),
    "cancel": (
        "job_cmds",
        "cancel",
        "Move queued or delayed jobs to failed/ with the reason `cancelled`.",
    ),
    "pause": (
        "job_cmds",
        "pause",
        "Pause lanes: disable them in launchd, and every run claims nothing until `lanekit "
        "resume`.",
    ),
    "resume": (
        "job_cmds",
        "resume",
        "Resume paused lanes: enable them in launchd, load the installed plist if launchd does "
        "not have it, and let runs claim jobs again.",
    ),
    "purge": (
        "job_cmds",
        "purge",
        "Remove finished and failed jobs older than their queue's keep_done / keep_failed, "
        "with their records.",
    ),
    "db": (
        "db_cmds",
        "db",
        "PostgreSQL queues: create or upgrade their schema (`lanekit db migrate`).",
    ),
    "plan": ("launchd_cmds", "plan", "Show what `lanekit apply` would do to each lane, and why."),
    "apply": ("launchd_cmds", "apply", "Install and (re)load lanes so launchd matches lanes.toml."),
    "adopt": (
        "launchd_cmds",
        "adopt",
        "Turn hand-written launchd plists into lanes of lanes.toml (its comments kept).",
    ),
    "remove": ("launchd_cmds", "remove", "Boot out a lane and delete its plist and snapshot."),
    "uninstall": (
        "launchd_cmds",
        "uninstall",
        "Remove lanekit's lanes: this project's (--project) or everything (--all).",
    ),
    "kick": (
        "launchd_cmds",
        "kick",
        "Start a lane now and return at once; prints the pid of its run.",
    ),
    "stop": (
        "launchd_cmds",
        "stop",
        "Stop a lane's current run the way a bootout would, and leave the lane loaded.",
    ),
    "restart": (
        "launchd_cmds",
        "restart",
        "Stop a lane's current run (as `lanekit stop`), then start it again (as `lanekit kick`).",
    ),
    "status": (
        "launchd_cmds",
        "status",
        "Per lane: state, pid, last exit, runs, schedule, next fire and queue counts.",
    ),
    "watch": (
        "watch_cmd",
        "watch",
        "Run one watchdog pass: alert once on each silent failure, through [watch]'s channels.",
    ),
    "doctor": (
        "doctor_cmds",
        "doctor",
        "Explain why lanes (or any launchd job) stay silent: each finding names its fix.",
    ),
    "try": (
        "doctor_cmds",
        "try_",
        "Run a job once in the foreground exactly as launchd would start it.",
    ),
    "logs": (
        "doctor_cmds",
        "logs",
        "Show a lane's event log (default), or launchd's stdout/stderr files of its job.",
    ),
    "selftest": (
        "selftest_cmd",
        "selftest",
        "Check this Mac's launchd with a temporary lane: load, run, throttle, stop, clean up.",
    ),
    "emulator": (
        "emulator_cmds",
        "emulator",
        "Drive the emulated launchd domain: off macOS nothing fires on a clock by itself.",
    ),
    "demo": (
        "demo_cmd",
        "demo",
        "Five lanes fire at once on a 57-job backlog: count duplicates and losses (both 0).",
    ),
    "timeline": (
        "timeline_cmd",
        "timeline_cmd",
        "Show each lane's day: scheduled fires, runs by outcome, missed runs, reloads, and"
        " bursts of lanes draining one queue at once.",
    ),
}
"""Command name -> (module under lanekit.cli, the command's function or typer group there,
summary shown by `lanekit --help`), in the order `lanekit --help` lists them."""


def module_commands(module_name: str, only: str | None = None) -> dict[str, Any]:
    """The click commands of lanekit.cli.MODULE's rows, built by typer (with `only`, that
    command alone: building a command reads its signature, which costs)."""
    module = importlib.import_module(f"lanekit.cli.{module_name}")
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
    for name, (row_module, attribute, _) in COMMANDS.items():
        if row_module != module_name or only not in (None, name):
            continue
        target = getattr(module, attribute)
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=name)
        else:
            holder.command(name)(target)
    group = typer.main.get_group(holder)
    for command in group.commands.values():
        plain(command)  # str and Path options without pydantic (lanekit.cli.coercion)
    return dict(group.commands)


class LazyCommands(MutableMapping[str, Any]):
    """The root group's commands (click's): every name in COMMANDS is listed, and a command's
    module is imported the first time the command itself is asked for (running it, its --help,
    or completing its options)."""

    def __init__(self, table: dict[str, tuple[str, str, str]]) -> None:
        self._table = table
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in self._table:
                raise KeyError(name)
            self._loaded.update(module_commands(self._table[name][0], only=name))
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._table, *(name for name in self._loaded if name not in self._table)])

    def __len__(self) -> int:
        return len(set(self._table) | set(self._loaded))

    def __contains__(self, name: object) -> bool:
        return name in self._table or name in self._loaded

    def summary(self, name: str) -> str:
        """The one-line help of `name` without importing its module."""
        if name in self._table:
            return self._table[name][2]
        return str(self._loaded[name].get_short_help_str(limit=1000))
