"""Shell completion (typer): `--install-completion` installs it, and it completes commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _lanekit(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lanekit", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def test_install_completion_writes_a_bash_script(tmp_path: Path) -> None:
    """The script lands under the (test) home and is sourced from .bashrc. The shell is named,
    not detected: typer detects it from the parent processes, and a suite started without a
    shell among its ancestors (nohup, setsid, a service) has none to find."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "SHELL": "/bin/bash",
        "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1",
    }
    result = _lanekit(["--install-completion", "bash"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    script = tmp_path / ".bash_completions" / "lanekit.sh"
    assert "_lanekit_completion" in script.read_text(encoding="utf-8")
    assert str(script) in (tmp_path / ".bashrc").read_text(encoding="utf-8")


def test_completion_offers_commands(tmp_path: Path) -> None:
    """What bash asks for `lanekit sta<TAB>` is answered with `status`."""
    env = {
        **os.environ,
        "_LANEKIT_COMPLETE": "complete_bash",
        "COMP_WORDS": "lanekit sta",
        "COMP_CWORD": "1",
    }
    result = _lanekit([], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["status"]
