"""Every command shown in the README runs, in order, against the emulated launchd domain."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def _lanekit_lines() -> list[str]:
    """The `lanekit ...` command lines of the quickstart, comments stripped."""
    lines = []
    for block in _blocks("sh"):
        for raw in block.splitlines():
            cmd = raw.split("  #", 1)[0].strip()
            if "lanekit " in cmd and not cmd.startswith(("pipx", "scripts/")):
                lines.append(cmd)
    return lines


def test_readme_opens_with_demo_and_test_commands() -> None:
    """The first code block is the newcomer's two commands, and both scripts exist."""
    first = _blocks("sh")[0]
    assert [line.split()[0] for line in first.strip().splitlines()] == [
        "scripts/demo",
        "scripts/test",
    ]
    for script in ("scripts/demo", "scripts/test", "scripts/setup", ".ci/run"):
        assert os.access(ROOT / script, os.X_OK), script
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_readme_quickstart_runs(tmp_path: Path) -> None:
    """init, validate, schedule, plan, apply, enqueue, kick, status, jobs, doctor, logs: each
    exits 0 in a fresh home, in the README's order."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "LANEKIT_STATE_DIR": str(tmp_path / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(tmp_path / "state" / "emulator" / "LaunchAgents"),
        "LANEKIT_LAUNCHD": "emulated",
        "NO_COLOR": "1",
    }
    env.pop("LANEKIT_CONFIG", None)
    lines = _lanekit_lines()
    assert len(lines) >= 10
    for line in lines:
        stdin = None
        command = line
        if "|" in line:
            producer, command = (part.strip() for part in line.split("|", 1))
            stdin = shlex.split(producer)[1]
        argv = shlex.split(command)
        assert argv[0] == "lanekit"
        result = subprocess.run(
            [sys.executable, "-m", "lanekit", *argv[1:]],
            check=False,
            input=stdin,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        assert "Traceback" not in result.stderr
    # Leave no emulated job running behind the test.
    subprocess.run(
        [sys.executable, "-m", "lanekit", "remove", "process", "--force"],
        check=False,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )


def test_readme_links_exist() -> None:
    """Every relative link in the README points at a file in the repo."""
    for target in re.findall(r"\]\(([^)#]+)\)", README.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_readme_bash_producer_enqueues_a_job_the_runner_accepts(tmp_path: Path) -> None:
    """The README's enqueue-without-lanekit snippet, run by bash, yields a job that lanekit
    claims like its own (record created at claim), and that sorts among lanekit's ids."""
    from lanekit.queue.directory.backend import Queue

    (block,) = [b for b in _blocks("sh") if 'ln "$q/tmp/' in b]
    queue = Queue(tmp_path / "q")
    queue.ensure()
    own = queue.enqueue({"n": 0})
    script = block.replace("q=~/dev/note-autolike", f"q={shlex.quote(str(tmp_path / 'q'))}")
    subprocess.run(["bash", "-euc", script], check=True, capture_output=True, timeout=30)
    (job,) = [p for p in (tmp_path / "q" / "queue").glob("*.json") if p.stem != own]
    assert list((tmp_path / "q" / "tmp").iterdir()) == []
    assert len(job.stem.split("-")[0]) == len(own.split("-")[0]) == 20
    own_ns, job_ns = int(own.split("-")[0]), int(job.stem.split("-")[0])
    assert job_ns % 10**9 == 0, "bash knows whole seconds only"
    assert job_ns // 10**9 >= own_ns // 10**9, "the bash job was enqueued after lanekit's"
    # Text order is numeric order (both are 20 zero-padded digits), so the bash job sorts among
    # lanekit's ids by its second: first within lanekit's own second (x.000000000), after it later.
    assert (job.stem < own) == (job_ns < own_ns)
    claimer = queue.claimer(lane="readme")
    claimed = {c.job_id: c for c in iter(claimer.claim, None)}
    assert set(claimed) == {job.stem, own}
    assert claimed[job.stem].record is not None
    for claim in claimed.values():
        queue.complete(claim)
    assert queue.store.read(job.stem) is not None
