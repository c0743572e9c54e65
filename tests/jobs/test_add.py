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

HEAVY = ("typer", "click", "rich", "json", "dataclasses", "enum", "pathlib", "re", "tomllib")
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
