"""The wheel carries its templates and works from a clean venv (issue 6: packaging)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel once for this module."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("lanekit-*.whl")
    return built


@pytest.mark.slow
def test_wheel_contains_templates(wheel: Path) -> None:
    """templates/ is force-included inside the package, where templates_dir() looks first."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "lanekit/templates/lane.plist.j2" in names
    assert "lanekit/templates/lanes.toml.j2" in names
    assert "lanekit/__main__.py" in names


@pytest.mark.slow
def test_wheel_works_from_a_clean_venv(wheel: Path, tmp_path: Path) -> None:
    """`lanekit --version` and `lanekit render` on the README example work from an install."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
    )
    exe = env_dir / "bin" / "lanekit"
    # Run from outside the checkout so nothing can fall back to the repo's templates/.
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": ""}
    version = subprocess.run(
        [str(exe), "--version"], check=False, capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().startswith("lanekit ")
    render = subprocess.run(
        [str(exe), "render", "-c", str(ROOT / "examples" / "lanes.toml")],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert render.returncode == 0, render.stderr
    assert "<key>ProgramArguments</key>" in render.stdout
    assert str(py) in render.stdout or str(env_dir) in render.stdout
