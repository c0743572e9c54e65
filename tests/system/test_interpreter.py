"""Interpreter health: a venv whose base Python vanished, fragile locations, the rescue script.

The venvs here are real directory trees with real symlinks (bin/python -> the base
interpreter), made dangling by deleting the "base Python", as `brew upgrade` + `brew cleanup`
do to a keg.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import lanekit
from lanekit.system.interpreter import (
    BROKEN_EXIT,
    inspect,
    install_rescue,
    links,
    reinstall_fix,
)


def _venv(root: Path, base: Path) -> Path:
    """A venv-shaped tree whose bin/python -> python3.12 -> `base` (as venv makes it)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python3.12").symlink_to(base)
    (bin_dir / "python").symlink_to("python3.12")
    return bin_dir / "python"


def _keg(tmp_path: Path, version: str = "3.12.4") -> Path:
    """A fake Homebrew keg's python3.12: a real file (the end of the venv's symlink chain, as
    in a keg) that execs this interpreter."""
    keg = tmp_path / "opt/homebrew/Cellar/python@3.12" / version / "bin"
    keg.mkdir(parents=True)
    python = keg / "python3.12"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return python


def test_a_dangling_venv_interpreter_is_named_with_its_target(tmp_path: Path) -> None:
    """After the keg is removed, bin/python dangles: inspect says so and names the keg file."""
    keg_python = _keg(tmp_path)
    python = _venv(tmp_path / "pipx/venvs/lanekit", keg_python)
    assert inspect(str(python)).exists
    keg_python.unlink()
    health = inspect(str(python))
    assert (health.exists, health.dangling) == (False, True)
    assert health.resolved == str(keg_python)
    assert health.fix == "pipx reinstall lanekit && lanekit apply"


def test_links_follow_file_symlinks_as_written(tmp_path: Path) -> None:
    """links() gives each hop made absolute, without resolving directory symlinks."""
    keg_python = _keg(tmp_path)
    python = _venv(tmp_path / "venv", keg_python)
    assert links(str(python)) == [str(python.parent / "python3.12"), str(keg_python)]


@pytest.mark.parametrize(
    ("target", "fragile"),
    [
        ("/opt/homebrew/Cellar/python@3.12/3.12.4/bin/python3.12", "brew upgrade"),
        ("/Users/me/.local/share/uv/python/cpython-3.12.4-macos-aarch64-none/bin/python3.12", "uv"),
        ("/Users/me/.cache/uv/archive-v0/abc/bin/python", "temporary tool environment"),
        ("/Users/me/.local/pipx/.cache/0123/bin/python", "temporary tool environment"),
        ("/opt/homebrew/opt/python@3.12/bin/python3.12", None),
        ("/usr/bin/python3", None),
        ("/Library/Frameworks/Python.framework/Versions/3.12/bin/python3.12", None),
    ],
)
def test_fragile_locations(tmp_path: Path, target: str, fragile: str | None) -> None:
    """A venv linked to a patch-release keg, a uv patch build or a tool cache is fragile; the
    stable opt link, the system and python.org interpreters are not."""
    python = _venv(tmp_path / "venv", Path(target))
    health = inspect(str(python))
    if fragile is None:
        assert health.fragile is None
    else:
        assert health.fragile is not None
        assert fragile in health.fragile


@pytest.mark.parametrize(
    ("path", "fix"),
    [
        (
            "/Users/me/.local/pipx/venvs/lanekit/bin/python",
            "pipx reinstall lanekit && lanekit apply",
        ),
        (
            "/Users/me/.local/share/uv/tools/lanekit/bin/python",
            "uv tool install --reinstall lanekit && lanekit apply",
        ),
        (
            "/Users/me/Application Support/venv/bin/python",
            "python3 -m venv --clear '/Users/me/Application Support/venv' && "
            "'/Users/me/Application Support/venv/bin/pip' install lanekit && lanekit apply",
        ),
    ],
)
def test_reinstall_fix_matches_how_lanekit_was_installed(path: str, fix: str) -> None:
    """pipx and uv tool installs get their reinstall command; a plain venv is rebuilt, its
    path quoted; every fix ends with `lanekit apply`, never `chmod +x`."""
    assert reinstall_fix(path) == fix


def _run_rescue(script: Path) -> subprocess.CompletedProcess[str]:
    # The fake venv has no pyvenv.cfg, so its python finds lanekit through PYTHONPATH.
    source = Path(lanekit.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        ["/bin/sh", str(script)], capture_output=True, text=True, timeout=30, check=False, env=env
    )


def test_rescue_script_reports_a_vanished_interpreter(tmp_path: Path) -> None:
    """The rescue script (POSIX sh, no Python) exits 0 while the interpreter runs lanekit, and
    69 naming the dangling link's target and the reinstall fix once the keg is gone."""
    keg_python = _keg(tmp_path)
    python = _venv(tmp_path / "pipx/venvs/lanekit", keg_python)
    state = tmp_path / "state"
    script = install_rescue(state, inspect(str(python)))
    assert script == state / "rescue.sh"
    assert os.stat(script).st_mode & 0o777 == 0o600  # private; run as `sh rescue.sh`
    works = _run_rescue(script)
    assert works.returncode == 0, works.stderr
    assert "interpreter works" in works.stdout
    keg_python.unlink()
    broken = _run_rescue(script)
    assert broken.returncode == BROKEN_EXIT
    assert f"{python} is a symlink to {keg_python}, which no longer exists" in broken.stdout
    assert "pipx reinstall lanekit && lanekit apply" in broken.stdout


def test_rescue_script_quotes_every_value(tmp_path: Path) -> None:
    """A path with spaces, quotes and $ is carried literally, never expanded by the shell."""
    odd = tmp_path / "it's $HOME dir"
    python = _venv(odd, tmp_path / "missing-python")
    script = install_rescue(tmp_path / "state", inspect(str(python)))
    result = _run_rescue(script)
    assert result.returncode == BROKEN_EXIT
    assert f"{python} is a symlink to" in result.stdout


def _pythonpath_only(tmp_path: Path) -> Path:
    """An interpreter that finds lanekit only through PYTHONPATH (as a `pip install --user`
    finds it only through the user site): the base Python, without this venv."""
    base = Path(getattr(sys, "_base_executable", sys.executable))
    wrapper = tmp_path / "bin" / "python3"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(str(base))} "$@"\n')
    wrapper.chmod(0o755)
    isolated = subprocess.run([str(wrapper), "-I", "-c", "import lanekit"], check=False)
    assert isolated.returncode != 0, "the base Python must not have lanekit installed"
    return wrapper


def test_rescue_checks_with_isolated_mode_as_lanes_run(tmp_path: Path) -> None:
    """Issue 32 item 3: lanes run `python -I`, which ignores PYTHONPATH and the user site; a
    lanekit found only there is broken under launchd, so rescue.sh must not say "works"."""
    python = _pythonpath_only(tmp_path)
    script = install_rescue(tmp_path / "state", inspect(str(python)))
    plain = subprocess.run([str(python), "-c", "import lanekit"], env=_source_env(), check=False)
    assert plain.returncode == 0  # the terminal's view: it "works"
    result = _run_rescue(script)
    assert result.returncode == BROKEN_EXIT, result.stdout
    assert "cannot run lanekit" in result.stdout


def _source_env() -> dict[str, str]:
    source = Path(lanekit.__file__).resolve().parent.parent
    return {**os.environ, "PYTHONPATH": str(source)}


def test_import_problem_uses_isolated_mode(tmp_path: Path) -> None:
    """`apply`'s check: this venv's python imports lanekit with -I; a PYTHONPATH-only one
    does not, whatever the caller's PYTHONPATH."""
    from lanekit.system.interpreter import import_problem

    assert import_problem(sys.executable) is None
    problem = import_problem(str(_pythonpath_only(tmp_path)))
    assert problem is not None and "lanekit" in problem
    assert import_problem(str(tmp_path / "missing")) is not None


def test_a_checkout_install_is_rebuilt_from_the_checkout() -> None:
    """Issue 32 item 3: a venv with lanekit installed from a checkout is rebuilt from it, never
    with `pip install lanekit` (the index may hold another package of that name)."""
    fix = reinstall_fix("/Users/me/src/lanekit/.venv/bin/python", "/Users/me/src/lanekit")
    assert "install -e /Users/me/src/lanekit" in fix
    assert "install lanekit" not in fix
    assert fix.endswith("&& lanekit apply")


@pytest.mark.parametrize(
    ("resolved", "opt", "version"),
    [
        (
            "/opt/homebrew/Cellar/python@3.12/3.12.4/bin/python3.12",
            "/opt/homebrew/opt/python@3.12/bin/python3.12",
            "3.12",
        ),
        (
            "/usr/local/Cellar/python@3.13/3.13.1/Frameworks/Python.framework/Versions/3.13/"
            "bin/python3.13",
            "/usr/local/opt/python@3.13/bin/python3.13",
            "3.13",
        ),
        (
            "/Users/me/.local/share/uv/python/cpython-3.11.9-macos-aarch64-none/bin/python3.11",
            "/opt/homebrew/opt/python@3.11/bin/python3.11",
            "3.11",
        ),
    ],
)
def test_apply_advice_names_a_python_that_survives_upgrades(
    resolved: str, opt: str, version: str
) -> None:
    """Issue 32 item 3: never /usr/bin/python3 (Apple's 3.9; lanekit needs 3.11+): Homebrew's
    opt path of the same minor version, or uv's `--python 3.x`."""
    from lanekit.system.interpreter import Interpreter, apply_notes

    health = Interpreter("/Users/me/venv/bin/python", resolved, True, False, "fragile")
    [note] = apply_notes(health)
    assert "/usr/bin/python3" not in note
    assert f"pipx reinstall --python {opt} lanekit" in note
    assert f"uv tool install --python {version} lanekit" in note
