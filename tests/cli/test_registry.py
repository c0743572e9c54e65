"""Commands load lazily: the registry names every command, and `--version`, `--help` and
shell completion import no command's dependencies (the import lists, not timings)."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.models import ParameterInfo
from typer.testing import CliRunner

import lanekit.cli
from lanekit.cli import app
from lanekit.cli.registry import COMMANDS, module_commands

PY = sys.executable
ALWAYS = {"lanekit", "lanekit.__main__", "lanekit.cli", "lanekit.cli.registry"}
"""The lanekit modules every CLI call imports."""
ROOT_ONLY = ALWAYS | {
    "lanekit.cli.render",
    "lanekit.cli.coercion",
    "lanekit.errors",
    "lanekit.system",
    "lanekit.system.quoting",
}
"""All that `--version`, `--help` and completing a command name may import of lanekit (every
line render prints goes through lanekit.system.quoting.printable, which imports only os; the root's
flags are coerced by lanekit.cli.coercion, which imports only typer)."""
VOCABULARIES = {
    "lanekit.cli.options",
    "lanekit.errors",
    "lanekit.queue",
    "lanekit.queue.recordline",
    "lanekit.queue.records",
    "lanekit.state",
    "lanekit.state.schemas",
    "lanekit.system.fsops",
}
"""What a command module may import at module level besides typer: the shared options, the
error types and the vocabularies its options offer (JobState for `jobs --state`). The records
module moved into the queue package (whose __init__ imports nothing) and takes its schema
version from lanekit.state.schemas (constants only), so those packages come with it; a
record's line is formatted by lanekit.queue.recordline (builtin imports only), which it imports."""
HEAVY = ("rich", "jinja2", "psutil", "tomllib")
"""What commands need and a root call must not pay for (pydantic comes with typer itself:
typer 0.29 coerces parameter values through it, except the flags, str and Path ones that
lanekit.cli.coercion takes over)."""


def _is_command(value: object, module: str) -> bool:
    """A typer group, or a function of `module` with a typer parameter (typer.Option or
    typer.Argument in its annotations): what typer would make a command of."""
    if isinstance(value, typer.Typer):
        return True
    if not inspect.isfunction(value) or value.__module__ != module:
        return False
    try:
        hints = typing.get_type_hints(value, include_extras=True)
    except NameError:  # annotations for mypy only: typer could not build a command of it
        return False
    return any(
        isinstance(extra, ParameterInfo)
        for hint in hints.values()
        if typing.get_origin(hint) is Annotated
        for extra in typing.get_args(hint)[1:]
    )


def _defined_commands() -> set[tuple[str, str]]:
    """(module, attribute) of every command a module under lanekit/cli/ defines, a group's
    own commands counted in the group."""
    found = set()
    for info in pkgutil.iter_modules(lanekit.cli.__path__):
        if info.ispkg:
            continue
        module = importlib.import_module(f"lanekit.cli.{info.name}")
        in_groups = {
            command.callback
            for value in vars(module).values()
            if isinstance(value, typer.Typer)
            for command in value.registered_commands
        }
        found |= {
            (info.name, attribute)
            for attribute, value in vars(module).items()
            if _is_command(value, module.__name__) and value not in in_groups
        }
    return found


def test_the_registry_is_the_one_list_of_commands() -> None:
    """Every command a module under lanekit/cli/ defines has its row (one missing would vanish
    from `lanekit --help` and completion), and every row builds the command it names."""
    assert {(module, attribute) for module, attribute, _ in COMMANDS.values()} == (
        _defined_commands()
    )
    for module in {module for module, _, _ in COMMANDS.values()}:
        built = set(module_commands(module))
        assert built == {name for name, (m, _, _) in COMMANDS.items() if m == module}, module


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_registry_summary_is_the_commands_own(name: str) -> None:
    """`lanekit --help` shows the registry's summary: it must be the first sentence of the
    command's docstring, as typer would have shown it."""
    module, _, summary = COMMANDS[name]
    command = module_commands(module)[name]
    assert summary == command.get_short_help_str(limit=1000)


def _run_lanekit(
    args: list[str], tmp_path: Path, prelude: str, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """A real `lanekit ARGS` process that first runs `prelude` (a spy, an atexit dump)."""
    return subprocess.run(
        [PY, "-c", f"{prelude}from lanekit.__main__ import main\nmain(sys.argv[1:])\n", *args],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        check=False,
        timeout=60,
    )


def _imported(args: list[str], tmp_path: Path, **env: str) -> set[str]:
    """The modules a `lanekit ARGS` process had imported when it exited."""
    out = tmp_path / "modules.txt"
    prelude = (
        "import atexit, sys\n"
        "def dump():\n"
        f"    open({str(out)!r}, 'w').write(' '.join(sorted(sys.modules)))\n"
        "atexit.register(dump)\n"
    )
    _run_lanekit(args, tmp_path, prelude, **env)
    return set(out.read_text(encoding="utf-8").split())


def _lanekit_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "lanekit" or m.startswith("lanekit.")}


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []])
def test_root_calls_import_no_command_module(args: list[str], tmp_path: Path) -> None:
    """`lanekit --version`, `lanekit --help` and bare `lanekit` import no command module, no
    core module and neither rich nor jinja2."""
    modules = _imported(args, tmp_path)
    assert _lanekit_modules(modules) <= ROOT_ONLY
    assert _heavy(modules) == []


def test_completing_command_names_imports_no_command_module(tmp_path: Path) -> None:
    """`lanekit <TAB>` is answered from the registry alone."""
    modules = _imported(
        [], tmp_path, _LANEKIT_COMPLETE="complete_bash", COMP_WORDS="lanekit ", COMP_CWORD="1"
    )
    assert _lanekit_modules(modules) <= ROOT_ONLY
    assert _heavy(modules) == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_completing_options_imports_only_the_command_module(name: str, tmp_path: Path) -> None:
    """`lanekit CMD --<TAB>` imports that command's module and its options' vocabularies, never
    the core it calls (config, queue, reconcile, doctor...), rich or jinja2."""
    module = f"lanekit.cli.{COMMANDS[name][0]}"
    modules = _imported(
        [],
        tmp_path,
        _LANEKIT_COMPLETE="complete_bash",
        COMP_WORDS=f"lanekit {name} --",
        COMP_CWORD="2",
    )
    assert module in modules
    assert _lanekit_modules(modules) <= ROOT_ONLY | VOCABULARIES | {module}
    assert _heavy(modules) == []


def test_completion_answers_with_the_commands_options(tmp_path: Path) -> None:
    """Completion still reaches into a lazily loaded command: `lanekit status --j` is
    `--json`."""
    env = {
        **os.environ,
        "_LANEKIT_COMPLETE": "complete_bash",
        "COMP_WORDS": "lanekit status --j",
        "COMP_CWORD": "2",
    }
    result = subprocess.run(
        [PY, "-m", "lanekit"], env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.stdout.split() == ["--json"]


def test_a_mistyped_command_is_still_suggested() -> None:
    """The lazy registry keeps click's "Did you mean" for a typo (exit 2)."""
    result = CliRunner().invoke(app, ["stauts"])
    assert result.exit_code == 2
    assert "'status'" in result.output


def _applied_lane(tmp_path: Path) -> Path:
    """A lanes.toml with one scheduled lane `l0`, applied in the emulated domain."""
    config = tmp_path / "lanes.toml"
    config.write_text(
        f'[defaults]\nlabel_prefix = "test.fast"\n\n[queues.q]\ndir = "{tmp_path / "q"}"\n\n'
        '[lanes.l0]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\nschedule = "0 3 * * *"\n'
    )
    applied = subprocess.run(
        [PY, "-m", "lanekit", "apply", "-c", str(config)],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert applied.returncode == 0, applied.stderr
    return config


def test_status_takes_no_collision_finder_nor_explainer_from_lanekit_schedule(
    tmp_path: Path,
) -> None:
    """`lanekit status` reads schedules through lanekit.schedule without loading what only
    checking a whole lanes.toml (collisions) or `lanekit schedule` (explain) uses: those
    names are bound in the package on first use (docs/benchmarks.md figure (i))."""
    config = _applied_lane(tmp_path)
    out = tmp_path / "names.txt"
    prelude = (
        "import atexit, sys\n"
        "def dump():\n"
        f"    open({str(out)!r}, 'w').write(' '.join(vars(sys.modules['lanekit.schedule'])))\n"
        "atexit.register(dump)\n"
    )
    run = _run_lanekit(["status", "l0", "-c", str(config)], tmp_path, prelude)
    assert run.returncode == 0, run.stderr
    names = set(out.read_text(encoding="utf-8").split())
    assert "describe_schedule" in names  # what status does use
    lazy = {"Collision", "ScheduledLane", "find_collisions", "Explanation", "explain"}
    assert sorted(lazy & names) == []


def test_status_compiles_no_pattern_of_what_it_does_not_parse(tmp_path: Path) -> None:
    """`lanekit status` reads no job record, writes no label prefix, has no `[watch]` digest
    and names no key in an error: the patterns of those parsers are compiled on first use, not
    when their modules are imported (docs/benchmarks.md figure (i))."""
    config = _applied_lane(tmp_path)
    out = tmp_path / "compiled.txt"
    prelude = (
        "import atexit, json, re, sys\n"
        "seen = []\n"
        "compile = re._compile\n"
        "def spy(pattern, flags):\n"
        "    seen.append((sys._getframe(2).f_globals.get('__name__', ''), str(pattern)))\n"
        "    return compile(pattern, flags)\n"
        "re._compile = spy\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(seen)))\n"
    )
    run = _run_lanekit(["status", "l0", "-c", str(config)], tmp_path, prelude)
    assert run.returncode == 0, run.stderr
    compiled = [tuple(pair) for pair in json.loads(out.read_text(encoding="utf-8"))]
    assert any(module == "lanekit.config.values" for module, _ in compiled)  # the spy works
    unused = {"lanekit.queue.records", "lanekit.config.provenance", "lanekit.config.watch"}
    assert sorted(p for module, p in compiled if module in unused) == []
    assert "[A-Za-z0-9_-]+" not in {p for module, p in compiled if module == "lanekit.config.text"}
    assert not any("0+[smhd]" in p for _, p in compiled)


def test_status_imports_neither_pydantic_nor_rich_nor_reconcile(tmp_path: Path) -> None:
    """`lanekit status` on installed lanes, output to a pipe: its options are coerced without
    pydantic, its table is written without rich, plan/apply's reconcile is not imported, and
    neither are the launchctl adapter's parsers, which the emulated domain and describing an
    exit do not need, nor the queue's claim, settle, recovery and enqueue paths, its job
    records and claim observers, which counting a queue does not need, nor plistlib and the
    spawning code, which reading the emulated domain does not need, nor the snapshot,
    `lanekit schedule`'s core, the collision finder and the watchdog's dead man's switch,
    which reading lanes.toml and a plain lane's row do not need (docs/benchmarks.md figure
    (i))."""
    config = _applied_lane(tmp_path)
    modules = _imported(["status", "l0", "-c", str(config)], tmp_path)
    assert "lanekit.cli.render.status" in modules
    assert sorted(m for m in modules if m.split(".")[0] in {"pydantic", "rich", "jinja2"}) == []
    assert "lanekit.reconcile" not in modules
    assert sorted(m for m in modules if m.startswith("lanekit.service.launchd.launchctl")) == []
    assert sorted(m for m in modules if m.startswith("lanekit.service.launchd.parse")) == []
    # Counting a queue loads its counting, not the paths that move jobs, nor the observers
    # that classify claims and read records.
    assert {"lanekit.queue.directory.census", "lanekit.queue.counts"} <= modules
    observers = {
        "lanekit.queue.directory.observe",
        "lanekit.queue.observed",
        "lanekit.queue.directory.liveness",
    }
    records = {
        "lanekit.queue.records",
        "lanekit.queue.directory.recordstore",
        "lanekit.system.strictjson",
    }
    assert sorted((observers | records) & modules) == []
    moving = {"claim", "settle", "recover", "enqueue", "mark", "verbs", "purge", "pages"}
    assert (
        sorted(m for m in modules if m.split(".")[-1] in moving or m == "lanekit.run.watcher") == []
    )
    # The emulated domain's `print` reads the definition kept at bootstrap: no plist parser.
    assert {"plistlib", "lanekit.service.launchd.environ"} & modules == set()
    # Reading lanes.toml builds no snapshot (RunSpec), explains no schedule (`lanekit
    # schedule`'s Explanation) and looks for no collision of two lanes, and a row that is not
    # the watchdog's asks no dead man's switch.
    unused = {
        "lanekit.state.snapshot",
        "lanekit.schedule.explain",
        "lanekit.schedule.collisions",
        "lanekit.doctor.deadman",
    }
    assert sorted(unused & modules) == []
