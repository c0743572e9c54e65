"""Which module holds each command, so a call imports only the command it runs.

Every `lanekit` call is a fresh interpreter and most do under a millisecond of work, so start-up
is what they cost (benchmark figure (g)). `lanekit --version`, `lanekit --help` and shell
completion of command names import no command module at all: the names and one-line summaries
are here. `lanekit status` imports lanekit.cli.launchd_cmds and what `status` needs, nothing
else.

To add a command: write it in a command module under lanekit/cli/ and add it in that module's
`register(app)` as usual (`app.command("NAME")(function)`, or `app.add_typer(group, name=...)`
for a group), then add a row here: `"NAME": ("module_name", "Its one-line summary.")`. The
summary is the first sentence of the command's docstring; tests/cli/test_registry.py fails when
a row is missing, extra, or its summary differs. A command module imports only typer,
lanekit.cli.options and the vocabularies its options need at module level; the core it calls
is imported inside the command function, so completing its options stays cheap (the same test
pins that).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import typer
from typer import _click  # typer >= 0.29 vendors click

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("config_cmds", "Write a commented example lanes.toml."),
    "validate": (
        "config_cmds",
        "Check lanes.toml, its schedules and its rendered plists; list every error (exit 1).",
    ),
    "render": ("config_cmds", "Print the launchd plist of each lane (or write them with --out)."),
    "schedule": (
        "schedule_cmd",
        "Show the StartCalendarInterval entries, a plain-English description and the next fires.",
    ),
    "enqueue": ("queue_cmds", "Add a job (a JSON object) to a lane's queue and print its id."),
    "run": ("queue_cmds", "Run a lane once, now: claim and run its jobs as launchd would."),
    "recover": (
        "queue_cmds",
        "Give back claims whose runner died: to queue/, or failed/ when out of attempts.",
    ),
    "jobs": ("queue_cmds", "List a lane's jobs, newest first, a page at a time."),
    "job": ("queue_cmds", "Show one job: its record, where its file is, and why it failed."),
    "retry": (
        "job_cmds",
        "Put failed jobs back in their queue with all their attempts again; the reason they "
        "failed stays in the record.",
    ),
    "requeue": (
        "job_cmds",
        "Run delayed retries now: from delayed/ (waiting out their backoff) into queue/.",
    ),
    "cancel": (
        "job_cmds",
        "Move queued or delayed jobs to failed/ with the reason `cancelled`.",
    ),
    "pause": (
        "job_cmds",
        "Pause lanes: disable them in launchd, and every run claims nothing until `lanekit "
        "resume`.",
    ),
    "resume": (
        "job_cmds",
        "Resume paused lanes: enable them in launchd, load the installed plist if launchd does "
        "not have it, and let runs claim jobs again.",
    ),
    "purge": (
        "job_cmds",
        "Remove finished and failed jobs older than their queue's keep_done / keep_failed, "
        "with their records.",
    ),
    "plan": ("launchd_cmds", "Show what `lanekit apply` would do to each lane, and why."),
    "apply": ("launchd_cmds", "Install and (re)load lanes so launchd matches lanes.toml."),
    "remove": ("launchd_cmds", "Boot out a lane and delete its plist and snapshot."),
    "kick": ("launchd_cmds", "Start a lane now and return at once; prints the pid of its run."),
    "status": (
        "launchd_cmds",
        "Per lane: state, pid, last exit, runs, schedule, next fire and queue counts.",
    ),
    "watch": (
        "watch_cmd",
        "Run one watchdog pass: alert once on each silent failure, through [watch]'s channels.",
    ),
    "doctor": (
        "doctor_cmds",
        "Explain why lanes (or any launchd job) stay silent: each finding names its fix.",
    ),
    "try": ("doctor_cmds", "Run a job once in the foreground exactly as launchd would start it."),
    "logs": (
        "doctor_cmds",
        "Show a lane's event log (default), or launchd's stdout/stderr files of its job.",
    ),
    "selftest": (
        "selftest_cmd",
        "Check this Mac's launchd with a temporary lane: load, run, throttle, stop, clean up.",
    ),
    "emulator": (
        "emulator_cmds",
        "Drive the emulated launchd domain: off macOS nothing fires on a clock by itself.",
    ),
    "demo": (
        "demo_cmd",
        "Five lanes fire at once on a 57-job backlog: count duplicates and losses (both 0).",
    ),
    "timeline": (
        "timeline_cmd",
        "Show each lane's day: scheduled fires, runs by outcome, missed runs, reloads, and"
        " bursts of lanes draining one queue at once.",
    ),
}
"""Command name -> (module under lanekit.cli, summary shown by `lanekit --help`), in the order
`lanekit --help` lists them."""


def module_commands(module_name: str, only: str | None = None) -> dict[str, _click.Command]:
    """Import lanekit.cli.MODULE and build the click commands its `register(app)` adds (with
    `only`, that one command alone: building a command reads its signature, which costs)."""
    from lanekit.cli.coercion import plain

    module = importlib.import_module(f"lanekit.cli.{module_name}")
    holder = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
    module.register(holder)
    if only is not None:
        holder.registered_commands = [c for c in holder.registered_commands if c.name == only]
        holder.registered_groups = [g for g in holder.registered_groups if g.name == only]
    group = typer.main.get_group(holder)
    for command in group.commands.values():
        plain(command)  # str and Path options without pydantic (lanekit.cli.coercion)
    return dict(group.commands)


class LazyCommands(MutableMapping[str, _click.Command]):
    """The root group's commands: every name in COMMANDS is listed, and a command's module is
    imported the first time the command itself is asked for (running it, its --help, or
    completing its options)."""

    def __init__(self, table: dict[str, tuple[str, str]]) -> None:
        self._table = table
        self._loaded: dict[str, _click.Command] = {}

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._loaded:
            if name not in self._table:
                raise KeyError(name)
            self._loaded.update(module_commands(self._table[name][0], only=name))
            if name not in self._loaded:
                raise KeyError(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
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
            return self._table[name][1]
        return self._loaded[name].get_short_help_str(limit=1000)
