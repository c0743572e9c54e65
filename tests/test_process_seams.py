"""Processes are started in the seams listed in ALLOWED only: service/launchd/launchctl.py
(the launchctl tool), service/launchd/environ.py (a job the way launchd starts it), run/runner.py
(the lane's job command), system/opener.py (opening a written page), service/launchd/probes.py
(macOS's read-only diagnostic tools, for doctor) and watch/notifier.py (the watchdog's notifiers).

Anything else that spawns is a seam leak: it escapes the fakes, the bare-environment rules and
the signal handling that those modules own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from places import SRC

ALLOWED = {
    "service/launchd/launchctl.py",
    "service/launchd/environ.py",
    "run/runner.py",
    "system/opener.py",
    "run/watcher.py",
    "run/watcher_link.py",
    "service/launchd/probes.py",
    "watch/notifier.py",
    "service/systemd/systemctl.py",
    "system/interpreter.py",
}
"""run/watcher.py and run/watcher_link.py: the run's watcher, which the runner forks once per
run (watcher_link.py) and which holds each claim's lock and starts its job (watcher.py): the
runner's seam, split out because it outlives the runner; see lanekit.run.watcher. opener.py opens
a written page (timeline --open); service/launchd/probes.py runs macOS's read-only diagnostic tools
(sfltool) for doctor; watch/notifier.py runs the watchdog's `command` channel and osascript
(argv, no shell, a timeout; lanekit.watch.channels is its only caller); system/interpreter.py
asks the interpreter every plist names whether it can `import lanekit` with -I (argv, no shell,
a timeout; once per `apply`, issue 32); service/systemd/systemctl.py is the systemd backend's one
adapter (`systemctl --user`, `systemd-analyze`, `loginctl`; issue 33)."""

SPAWNING_MODULES = {"subprocess", "multiprocessing", "pty", "concurrent.futures.process"}
OS_SPAWNERS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
OS_PREFIXES = ("exec", "spawn")
ASYNCIO_SPAWNERS = {"create_subprocess_exec", "create_subprocess_shell"}


def _spawning_module(name: str) -> bool:
    return name in SPAWNING_MODULES or name.split(".", maxsplit=1)[0] in {
        "subprocess",
        "multiprocessing",
        "pty",
    }


def _is_os_spawner(name: str) -> bool:
    return name in OS_SPAWNERS or name.startswith(OS_PREFIXES)


def spawn_sites(source: str) -> list[str]:
    """Every way `source` could start a process: imports of spawning modules, `os.fork()`,
    `os.exec*`, `os.spawn*`, `os.posix_spawn*`, `os.system`, `os.popen`, asyncio subprocesses,
    and `Popen` by any name. Returns descriptions with line numbers."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _spawning_module(alias.name):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = {alias.name for alias in node.names}
            if _spawning_module(module):
                found.append(f"line {node.lineno}: from {module} import ...")
            elif module == "os" and any(_is_os_spawner(n) for n in names):
                found.append(f"line {node.lineno}: from os import {sorted(names)}")
            elif module == "asyncio" and names & ASYNCIO_SPAWNERS:
                found.append(f"line {node.lineno}: from asyncio import {sorted(names)}")
            elif module == "concurrent.futures" and "ProcessPoolExecutor" in names:
                found.append(f"line {node.lineno}: ProcessPoolExecutor")
        elif isinstance(node, ast.Attribute):
            base = node.value.id if isinstance(node.value, ast.Name) else ""
            if base == "os" and _is_os_spawner(node.attr):
                found.append(f"line {node.lineno}: os.{node.attr}")
            elif node.attr in ASYNCIO_SPAWNERS or node.attr in {"Popen", "ProcessPoolExecutor"}:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in {"Popen", "ProcessPoolExecutor"}:
            found.append(f"line {node.lineno}: {node.id}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and _spawning_module(str(node.args[0].value))
        ):
            found.append(f"line {node.lineno}: __import__({node.args[0].value!r})")
    return found


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_only_the_seams_start_processes() -> None:
    """No module under src/lanekit outside the seams imports or calls a process spawner."""
    leaks = {
        str(path.relative_to(SRC)): sites
        for path in _sources()
        if str(path.relative_to(SRC)) not in ALLOWED
        and (sites := spawn_sites(path.read_text(encoding="utf-8")))
    }
    assert leaks == {}, f"processes started outside {sorted(ALLOWED)}: {leaks}"


def test_the_scan_covers_the_package() -> None:
    """The scan actually reads the package (a moved src/ would otherwise pass vacuously)."""
    names = {str(path.relative_to(SRC)) for path in _sources()}
    assert {"__main__.py", "errors.py", "run/runner.py"} <= names


@pytest.mark.parametrize(
    "snippet",
    [
        "import subprocess",
        "import subprocess as sp",
        "from subprocess import run",
        "import multiprocessing",
        "from multiprocessing import Process",
        "import pty",
        "import os\nos.fork()",
        "import os\nos.execvp('x', ['x'])",
        "import os\nos.execve('/bin/x', ['x'], {})",
        "import os\nos.spawnlp(0, 'x', 'x')",
        "import os\nos.posix_spawn('/bin/x', ['x'], {})",
        "import os\nos.posix_spawnp('x', ['x'], {})",
        "import os\nos.system('x')",
        "import os\nos.popen('x')",
        "from os import fork",
        "from os import execv",
        "import asyncio\nasyncio.create_subprocess_exec('x')",
        "from asyncio import create_subprocess_shell",
        "from concurrent.futures import ProcessPoolExecutor",
        "import concurrent.futures.process",
        "__import__('subprocess')",
        "sp = __import__('subprocess')\nsp.Popen(['x'])",
    ],
)
def test_scanner_catches_every_spawn_form(snippet: str) -> None:
    """Each way of starting a process is detected, so the seam test can fail."""
    assert spawn_sites(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        "import os\nos.getpid()",
        "import os\nos.kill(1, 0)",
        "import signal",
        "from concurrent.futures import ThreadPoolExecutor",
        "import os\nos.path.exists('x')",
        "from os import environ",
    ],
)
def test_scanner_ignores_non_spawning_code(snippet: str) -> None:
    """Ordinary os and signal use is not mistaken for starting a process."""
    assert spawn_sites(snippet) == []
