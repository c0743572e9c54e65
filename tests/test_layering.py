"""Imports flow one way: cli -> core -> models. The core never imports typer or rich, and
only lanekit.cli.render writes to the terminal (the runner reports its one error itself)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "lanekit"
UI_LIBRARIES = {"typer", "rich", "click"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_never_imports_the_cli_or_ui_libraries() -> None:
    """Modules outside lanekit/cli import neither typer/rich nor lanekit.cli."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        # __main__ is the top of the stack: it dispatches to the runner or to the CLI.
        if "cli" in relative.parts or relative == Path("__main__.py"):
            continue
        for name in _imports(path):
            top = name.split(".")[0]
            if top in UI_LIBRARIES or name.startswith("lanekit.cli"):
                offenders.append(f"{relative} imports {name}")
    assert offenders == []


def test_only_render_prints_in_the_cli() -> None:
    """Command modules hand results to lanekit.cli.render; they never print themselves."""
    offenders = []
    for path in sorted((SRC / "cli").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for needle in ("print(", "sys.stdout.write", "sys.stderr.write", "typer.echo"):
            if needle in text:
                offenders.append(f"cli/{path.name}: {needle}")
    assert offenders == []
