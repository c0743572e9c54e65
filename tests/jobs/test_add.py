"""A single `lanekit enqueue` of an installed lane: the queue its snapshot names, the one
enqueue's checks and durability, and a start-up that loads none of the heavy modules."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import CONFIG_ENV, CONFIG_NAME
from lanekit.config.watch import WATCH_LANE
from lanekit.jobs import add, installed
from lanekit.queue.directory.backend import Queue
from lanekit.queue.records import JobState

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "{prefix}"

[queues.inbox]
dir = "{queue}"

[lanes.work]
queue = "inbox"
command = ["/bin/true", "{{job}}"]
schedule = "@daily"
"""

HEAVY = (
    "typer",
    "click",
    "rich",
    "json",
    "dataclasses",
    "enum",
    "pathlib",
    "re",
    "tomllib",
    "ctypes",
    "collections",
)
"""What a single enqueue of an installed lane must not import (each costs a large share of
`python -c pass`: benchmark figure (l))."""


def install(project: Path, prefix: str = "test.add") -> Path:
    """A project whose lane `work` is applied (emulated domain); its lanes.toml."""
    project.mkdir(parents=True)
    config = project / "lanes.toml"
    config.write_text(CONFIG.format(prefix=prefix, queue=project / "inbox"), encoding="utf-8")
    result = CliRunner().invoke(app, ["apply", "-c", str(config)])
    assert result.exit_code == 0, result.output
    return config


def lanekit(*args: str, cwd: Path, stdin: str = "", probe: bool = False) -> tuple[int, str, str]:
    """`lanekit ARGS` as the console script runs it, in a fresh interpreter; with `probe`, the
    modules it loaded are printed on stderr (a Python list: printing JSON would load json) when
    it ends."""
    code = "from lanekit.__main__ import main; main()"
    if probe:
        code = (
            "import atexit, sys\n"
            "atexit.register(lambda: sys.stderr.write(repr(sorted(sys.modules))))\n"
            f"sys.argv[1:] = {list(args)!r}\n" + code
        )
    argv = [sys.executable, "-c", code, *([] if probe else args)]
    done = subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, text=True, env=os.environ, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_the_constants_are_lanekit_configs() -> None:
    """The names this lean module keeps are lanekit.config's (it must not import config)."""
    assert (installed.CONFIG_VARIABLE, installed.CONFIG_NAME, installed.WATCH_LANE) == (
        CONFIG_ENV,
        CONFIG_NAME,
        WATCH_LANE,
    )


def test_a_single_enqueue_of_an_installed_lane_loads_no_heavy_module(tmp_path: Path) -> None:
    """The console script's fast path enqueues durably into the installed lane's queue, with
    its `queued` record, and imports none of typer, json, dataclasses, enum, pathlib, re."""
    config = install(tmp_path / "p")
    code, out, err = lanekit(
        "enqueue", "work", "-", cwd=config.parent, stdin='{"n": 1}', probe=True
    )
    assert code == 0, err
    job_id = out.strip()
    loaded = set(ast.literal_eval(err))
    assert "lanekit.jobs.add" in loaded
    assert sorted(loaded & set(HEAVY)) == []
    queue = Queue(config.parent / "inbox")
    assert (queue.queue / f"{job_id}.json").read_text() == '{"n": 1}'
    record = queue.store.read(job_id)
    assert record is not None and (record.state, record.attempts) == (JobState.QUEUED, 0)


SINGLE_ENQUEUE_MODULES = {
    "lanekit",
    "lanekit.__main__",
    "lanekit.jobs",
    "lanekit.jobs.add",
    "lanekit.jobs.installed",
    "lanekit.queue",
    "lanekit.queue.directory",
    "lanekit.queue.directory.enqueue",
    "lanekit.queue.directory.layout",
    "lanekit.queue.directory.recordfile",
    "lanekit.queue.directory.safety",
    "lanekit.queue.ids",
    "lanekit.queue.payload",
    "lanekit.queue.recordline",
    "lanekit.service",
    "lanekit.service.emulated",
    "lanekit.service.emulated.offset",
    "lanekit.state",
    "lanekit.state.backend",
    "lanekit.state.clock",
    "lanekit.state.schemas",
    "lanekit.state.snapshot_schema",
    "lanekit.system",
    "lanekit.system.fdio",
    "lanekit.system.fsops",
    "lanekit.system.owned",
    "lanekit.system.strictjson",
    "lanekit.system.volumes",
    # Beyond lanekit's, all builtin or tiny: `from __future__ import annotations` imports
    # __future__; _json is the C scanner the snapshot and the payload are read with (no json);
    # errno and itertools are fsops'; gc freezes the objects before the exit (__main__).
    "__future__",
    "_json",
    "errno",
    "gc",
    "itertools",
}
"""Every module a single enqueue of an installed lane imports beyond `python -c pass`'s, once
its queue's probe verdict is kept (apply leaves it): each costs start-up, figure (l). No ctypes
(a new job is published by link(2), the probe is not rerun), no collections."""


def test_a_single_enqueue_imports_exactly_these_modules(tmp_path: Path) -> None:
    """The fast path's imports, pinned (a module added to the path must be added here, on
    purpose): what it loads beyond an empty interpreter's, with the same probe of sys.modules.
    Linux: on macOS the queue's volume check asks statfs(2) through ctypes."""
    if not sys.platform.startswith("linux"):
        pytest.skip("on macOS the volume check loads ctypes (statfs(2)): pinned on Linux")
    config = install(tmp_path / "p")
    code, _, err = lanekit("enqueue", "work", "-", cwd=config.parent, stdin="{}", probe=True)
    assert code == 0, err
    loaded = set(ast.literal_eval(err))
    baseline_code = "import atexit, sys\natexit.register(lambda: print(repr(sorted(sys.modules))))"
    baseline = subprocess.run(
        [sys.executable, "-c", baseline_code], capture_output=True, text=True, check=True
    )
    assert sorted(loaded - set(ast.literal_eval(baseline.stdout))) == sorted(SINGLE_ENQUEUE_MODULES)
    assert "ctypes" not in loaded and "collections" not in loaded


def test_the_fast_path_refuses_what_the_queue_check_refuses(tmp_path: Path) -> None:
    """A queue directory others may write to is refused by the fast path as by the command
    (exit 69, one error line naming it), although the probe's verdict is kept: nothing is
    queued."""
    config = install(tmp_path / "p")
    failed = config.parent / "inbox" / "failed"
    failed.chmod(0o722)
    code, out, err = lanekit("enqueue", "work", cwd=config.parent, stdin="{}")
    assert (code, out) == (69, "")
    assert err.splitlines()[0] == (
        f"error: {failed}: writable by group and others (mode 0722); someone else could add, "
        "take or replace jobs"
    )
    failed.chmod(0o700)
    assert Queue(config.parent / "inbox").counts().queued == 0


def test_the_fast_path_refuses_what_the_command_refuses(tmp_path: Path) -> None:
    """A payload that is no JSON object, and an id already queued: one error line and a hint,
    exit 2, nothing queued (the same checks as the typer command's)."""
    config = install(tmp_path / "p")
    code, out, err = lanekit("enqueue", "work", cwd=config.parent, stdin="[1]")
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == "error: job payload is a JSON array, not an object"
    assert lanekit("enqueue", "work", "--id", "j1", cwd=config.parent, stdin="{}")[:2] == (
        0,
        "j1\n",
    )
    code, _, err = lanekit("enqueue", "work", "--id=j1", cwd=config.parent, stdin="{}")
    assert code == 2 and "already queued" in err
    assert Queue(config.parent / "inbox").counts().queued == 1


def test_the_project_here_decides_between_two_installed_lanes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two projects install a lane `work`: from one project's directory the job goes to its
    queue; from elsewhere the snapshot cannot say which (the command reads lanes.toml)."""
    first = install(tmp_path / "a", "test.a")
    second = install(tmp_path / "b", "test.b")
    monkeypatch.chdir(second.parent)
    target = add.installed_target("work")
    assert target is not None and target.location == str(second.parent / "inbox")
    monkeypatch.chdir(tmp_path)
    assert add.installed_target("work") is None
    monkeypatch.chdir(first.parent)
    target = add.installed_target("work")
    assert target is not None and target.location == str(first.parent / "inbox")


def test_a_lane_not_installed_is_left_to_lanes_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No snapshot of the lane: the fast path declines (None), nothing is read or written."""
    monkeypatch.chdir(tmp_path)
    assert add.installed_target("work") is None
    assert add.quick_enqueue(["work", "--queue", "x"]) is None
    assert add.split_args(["work", "job.json", "--id", "a"]) == ("work", "job.json", "a")
    assert add.split_args(["work", "a", "b"]) is None
    assert add.split_args(["work", "-c", "lanes.toml"]) is None
