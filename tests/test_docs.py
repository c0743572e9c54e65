"""Docs that cannot drift from the CLI: docs/cli.md is generated, every command has help."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import typer
from typer.testing import CliRunner

from lanekit.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_cli_reference", ROOT / "scripts" / "gen_cli_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_fresh() -> None:
    """docs/cli.md equals what scripts/gen_cli_reference.py generates now."""
    gen = _generator()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == gen.reference(), (
        "docs/cli.md is stale: run scripts/gen_cli_reference.py"
    )


def _commands() -> list[str]:
    names: list[str] = _generator().command_names()
    return names


@pytest.mark.parametrize("name", _commands())
def test_every_command_and_option_has_help(name: str) -> None:
    """A command without help text, or an option without help, fails here."""
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="lanekit")
    cmd = root.get_command(ctx, name)  # type: ignore[attr-defined]
    assert cmd is not None
    assert (cmd.help or "").strip(), f"lanekit {name} has no help text"
    for param in cmd.params:
        if getattr(param, "hidden", False) or param.param_type_name == "argument":
            continue
        assert (getattr(param, "help", None) or "").strip(), f"lanekit {name} {param.name}: no help"


def _flat(text: str) -> str:
    """Text with its line wrapping undone, so that a wrapped sentence still matches."""
    return " ".join(text.split())


def test_the_promise_is_worded_the_same_everywhere() -> None:
    """`lanekit --help`, `lanekit run --help`, README.md and docs/cli.md each state
    lanekit.PROMISE word for word (design.md section 8), and none of them claims "exactly once"
    for anything but recording success: adding a clause to PROMISE_CLAUSES fails here until
    README.md and docs/cli.md say it too."""
    from lanekit import PROMISE

    runner = CliRunner()
    places = {
        "lanekit --help": runner.invoke(app, ["--help"]).stdout,
        "lanekit run --help": runner.invoke(app, ["run", "--help"]).stdout,
        "README.md": (ROOT / "README.md").read_text(encoding="utf-8"),
        "docs/cli.md": (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"),
    }
    assert PROMISE.startswith("Execution is at-least-once under crashes; ")
    for where, text in places.items():
        flat = _flat(text)
        assert PROMISE in flat, f"{where} does not state the promise"
        rest = flat.replace(PROMISE, "")
        for overclaim in ("exactly once", "exactly-once"):
            assert overclaim not in rest.lower(), f"{where} claims {overclaim!r} beyond PROMISE"
