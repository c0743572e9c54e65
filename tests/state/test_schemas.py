"""Every JSON document's version has one owner, lanekit.state.schemas, and docs/json.md states
the same numbers."""

from __future__ import annotations

import ast
from pathlib import Path

from lanekit.state import schemas
from test_json_contracts import contracts

SRC = Path(__file__).resolve().parents[2] / "src" / "lanekit"
OWNER = SRC / "state" / "schemas.py"
EXEMPT: dict[str, str] = {}
"""Files that may still name a version of their own, and why (each must exist: an exemption
outlives its file only until this test says so)."""
VERSION_KEYS = {"schema", "schema_version", "v", "version"}

COMMANDS = {
    "schedule": schemas.SCHEDULE_SCHEMA,
    "validate": schemas.VALIDATE_SCHEMA,
    "apply": schemas.APPLY_SCHEMA,
    "status": schemas.STATUS_SCHEMA,
    "doctor": schemas.DOCTOR_SCHEMA,
    "doctor --list-checks": schemas.CHECKS_SCHEMA,
    "jobs": schemas.JOBS_SCHEMA,
    "job": schemas.JOBS_SCHEMA,
    "timeline": schemas.TIMELINE_SCHEMA,
    "selftest": schemas.SELFTEST_SCHEMA,
    "retry": schemas.VERBS_SCHEMA,
    "requeue": schemas.VERBS_SCHEMA,
    "cancel": schemas.VERBS_SCHEMA,
    "pause": schemas.VERBS_SCHEMA,
    "resume": schemas.VERBS_SCHEMA,
    "purge": schemas.VERBS_SCHEMA,
    "watch": schemas.WATCH_SCHEMA,
    "watch --test": schemas.WATCH_SCHEMA,
}


def _is_int(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _definitions(source: str) -> list[str]:
    """Where `source` defines a version itself: a module-level `X_SCHEMA = 1` / `X_VERSION = 1`,
    or a literal number under a version key of a dict (`{"schema": 1}`)."""
    found = []
    tree = ast.parse(source)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else ""
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if ("SCHEMA" in name or name.endswith("VERSION")) and _is_int(value):
                found.append(f"line {node.lineno}: {name}")
    for each in ast.walk(tree):
        if isinstance(each, ast.Dict):
            for key, value in zip(each.keys, each.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in VERSION_KEYS and _is_int(value):
                    found.append(f"line {each.lineno}: {{{key.value!r}: literal}}")
    return found


def test_only_the_owner_defines_a_schema_version() -> None:
    """No module but lanekit.state.schemas defines a document version of its own."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        if path == OWNER or relative in EXEMPT:
            continue
        found = _definitions(path.read_text(encoding="utf-8"))
        if found:
            offenders[relative] = found
    assert offenders == {}
    assert all((SRC / relative).exists() for relative in EXEMPT), "drop the stale exemption"


def test_the_scan_catches_each_form() -> None:
    """A named constant and a literal under a version key are both caught; a reader comparing
    against the owner's constant is not."""
    assert _definitions("FOO_SCHEMA = 1")
    assert _definitions("STATUS_VERSION: int = 3")
    assert _definitions("doc = {'schema': 2, 'x': 1}")
    assert _definitions("doc = {'v': 1}")
    assert _definitions("from x import Y_SCHEMA\ndoc = {'schema': Y_SCHEMA}\nN = 1") == []


def test_docs_state_the_owners_numbers() -> None:
    """Each `--json` section of docs/json.md gives, in its `schema` row, the owner's number."""
    documented = {command: contract.schema for command, contract in contracts().items()}
    assert documented == COMMANDS
