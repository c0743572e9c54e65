"""Shell completion of lane names and job ids, through Typer's completion entry point
(`_LANEKIT_COMPLETE=complete_bash`), in a fresh interpreter: the right names, and none of the
modules the completed command itself needs (lanes.toml, the queue machinery, reconcile,
doctor...), checked by the modules the process imported, not by timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue

PY = sys.executable
CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.complete"

[queues.inbox]
dir = "{inbox}"

[queues.spare]
dir = "{spare}"

[lanes.work]
queue = "inbox"
command = ["/bin/true", "{{job}}"]
schedule = "@daily"

[lanes.wait]
queue = "spare"
command = ["/bin/true", "{{job}}"]
schedule = "@daily"
"""
CORE = (
    "lanekit.config",
    "lanekit.reconcile",
    "lanekit.doctor",
    "lanekit.status",
    "lanekit.timeline",
    "lanekit.proof",
    "lanekit.watch",
    "lanekit.run",
    "lanekit.queue.directory.backend",
    "lanekit.queue.directory.state",
    "lanekit.queue.directory.recordstore",
    "lanekit.service.launchd",
    "lanekit.state.paths",
)
"""What the commands completed here need, and completion must not import."""
HEAVY = ("rich", "jinja2", "tomllib", "json")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two applied lanes, `work` (queue inbox: a queued, a delayed and a failed job) and
    `wait` (queue spare: one queued job); the project's directory."""
    inbox, spare = tmp_path / "inbox", tmp_path / "spare"
    config = tmp_path / "lanes.toml"
    config.write_text(CONFIG.format(inbox=inbox, spare=spare), encoding="utf-8")
    result = CliRunner().invoke(app, ["apply", "-c", str(config)])
    assert result.exit_code == 0, result.output
    work = Queue(inbox, backoff_base=3600)
    for job_id in ("queued-1", "delayed-1", "failed-1"):
        work.enqueue({}, job_id=job_id)
    claimer = work.claimer()
    claims = {}
    while (claim := claimer.claim()) is not None:
        claims[claim.job_id] = claim
    work.release(claims["queued-1"], max_attempts=3, error="again")
    work.promote_due(now=10**10)  # queued-1 is back in queue/
    work.release(claims["delayed-1"], max_attempts=3, error="later")  # waits an hour
    work.release(claims["failed-1"], max_attempts=1, error="boom")
    work.enqueue({}, job_id="queued-2")
    Queue(spare).enqueue({}, job_id="other-1")
    return tmp_path


def complete(words: str, cwd: Path) -> tuple[list[str], set[str]]:
    """The suggestions for the command line `words` (the last word being completed) and the
    modules the completing process imported."""
    out = cwd / "modules.txt"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(' '.join(sorted(sys.modules))))\n"
        "from lanekit.__main__ import main\n"
        "main()\n"
    )
    parts = words.split(" ")
    env = {
        **os.environ,
        "_LANEKIT_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(parts) - 1),
    }
    done = subprocess.run(
        [PY, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), set(out.read_text(encoding="utf-8").split())


def _core(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith(CORE) or m.split(".")[0] in HEAVY)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("lanekit kick ", ["wait", "work"]),
        ("lanekit logs wo", ["work"]),
        ("lanekit jobs w", ["wait", "work"]),
        ("lanekit pause work ", ["wait", "work"]),
        ("lanekit resume ", ["wait", "work"]),
        ("lanekit try ", ["wait", "work"]),
        ("lanekit status ", ["wait", "work"]),
        ("lanekit doctor ", ["wait", "work"]),
        ("lanekit enqueue ", ["wait", "work"]),
        ("lanekit remove ", ["wait", "work"]),
        ("lanekit retry --lane ", ["wait", "work"]),
        ("lanekit job work ", ["delayed-1", "failed-1", "queued-1", "queued-2"]),
        ("lanekit job wait ", ["other-1"]),
        ("lanekit job work q", ["queued-1", "queued-2"]),
        ("lanekit retry ", ["failed-1"]),
        ("lanekit requeue --lane work ", ["delayed-1"]),
        ("lanekit cancel --lane work ", ["delayed-1", "queued-1", "queued-2"]),
        ("lanekit cancel ", ["delayed-1", "other-1", "queued-1", "queued-2"]),
        ("lanekit timeline --job f", ["failed-1"]),
    ],
)
def test_completion_offers_lanes_and_ids_without_the_commands_core(
    project: Path, words: str, expected: list[str]
) -> None:
    """Each command that takes a lane completes the installed lanes, and each that takes a
    job id the ids of the jobs it acts on (any for `job`, failed for `retry`, delayed for
    `requeue`, queued or delayed for `cancel`), in the lanes typed so far; the completing
    process imports no module of the command's core, no lanes.toml reader and no json."""
    suggestions, modules = complete(words, project)
    assert suggestions == expected
    assert "lanekit.jobs.complete" in modules
    assert _core(modules) == []


def test_completion_away_from_a_project_offers_every_installed_lane(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Outside the project's directory the installed lanes of every project are offered."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    suggestions, _ = complete("lanekit kick ", elsewhere)
    assert suggestions == ["wait", "work"]
