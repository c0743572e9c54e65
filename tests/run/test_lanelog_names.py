"""The lane log's event names and reasons have one owner, lanekit.run.lanelog: every writer
passes an EventName / Reason and every reader matches one, never a bare string."""

from __future__ import annotations

import ast
from pathlib import Path

from lanekit.queue.model import DropReason
from lanekit.run.lanelog import EventName, Reason
from lanekit.timeline.events import RULES

SRC = Path(__file__).resolve().parents[2] / "src" / "lanekit"
EXEMPT: dict[str, str] = {}
"""Files that may still spell a name themselves, and why (each must exist)."""


def _names(vocabulary: type) -> dict[str, str]:
    return {k: v for k, v in vars(vocabulary).items() if k.isupper() and isinstance(v, str)}


def _is_text(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _reads_key(node: ast.expr) -> str | None:
    """ "event" for `x.get("event")`, `x.get("event", "")` or `x["event"]` (same for reason)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "get" and node.args and _is_text(node.args[0]):
            key = node.args[0]
        else:
            return None
    elif isinstance(node, ast.Subscript) and _is_text(node.slice):
        key = node.slice
    else:
        return None
    assert isinstance(key, ast.Constant)
    return key.value if key.value in ("event", "reason") else None


def _spelled(source: str) -> list[str]:
    """Where `source` spells a lane-log name itself: a `.event("name", reason="...")` or
    `log_finish(reason="...")` call, or a comparison of an event's `event` / `reason` with a
    string literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if callee == "event" and node.args and _is_text(node.args[0]):
                found.append(f"line {node.lineno}: event name as a string")
            if callee in ("event", "log_finish"):
                found.extend(
                    f"line {node.lineno}: reason as a string"
                    for keyword in node.keywords
                    if keyword.arg == "reason" and _is_text(keyword.value)
                )
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_reads_key(side) for side in sides) and any(_is_text(s) for s in sides):
                found.append(f"line {node.lineno}: compared with a string")
    return found


def test_every_writer_and_reader_uses_the_vocabulary() -> None:
    """No module but lanelog spells an event name or reason as a bare string."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        if relative in EXEMPT:
            continue
        found = _spelled(path.read_text(encoding="utf-8"))
        if found:
            offenders[relative] = found
    assert offenders == {}
    assert all((SRC / relative).exists() for relative in EXEMPT), "drop the stale exemption"


def test_the_scan_catches_each_form() -> None:
    """A string event, a string reason, and a string compared with a read event are found;
    the vocabulary's own names are not."""
    assert _spelled('log.event("done", job=j)')
    assert _spelled("log.event(EventName.DONE, reason='signal')")
    assert _spelled("log_finish(log, reason='empty', code=0, duration=1.0)")
    assert _spelled("ok = e.get('event') == 'done'")
    assert _spelled("ok = 'timeout' != e['reason']")
    assert (
        _spelled("log.event(EventName.DONE, reason=Reason.SIGNAL)\nx = e.get('event') == N") == []
    )


def test_names_are_distinct_and_the_bytes_logged_stay() -> None:
    """Each vocabulary names each value once; the log's spelling of the guard's skip is the
    queue's DropReason, and the timeline reads only names the log has."""
    for vocabulary in (EventName, Reason):
        values = list(_names(vocabulary).values())
        assert len(values) == len(set(values)), vocabulary
    assert EventName.REQUEUED == "requeued"
    assert Reason.WATCHER_DIED == "watcher-died"
    assert Reason.ALREADY_SUCCEEDED == DropReason.ALREADY_SUCCEEDED
    assert {rule.event for rule in RULES} <= set(_names(EventName).values())
