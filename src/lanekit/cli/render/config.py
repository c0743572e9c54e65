"""Output of `lanekit init`, `lanekit validate` and `lanekit render`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lanekit.cli.render import error, json_out, line, note, warning
from lanekit.config import display_path
from lanekit.reconcile.validate import ConfigCheck
from lanekit.schedule import describe_schedule
from lanekit.service.launchd.plist import RenderedLane
from lanekit.state.schemas import VALIDATE_SCHEMA
from lanekit.system.quoting import cmdline


def initialized(path: Path, cwd: Path) -> None:
    """Where lanes.toml was written, and what to do next."""
    shown = display_path(path, cwd)
    line(f"wrote {shown}")
    flag = () if shown == "lanes.toml" else ("-c", shown)
    validate, render = cmdline("lanekit", "validate", *flag), cmdline("lanekit", "render", *flag)
    line(f"next: edit it, then `{validate}` and `{render}`")


def validation(check: ConfigCheck, *, as_json: bool) -> None:
    """Every error (`error:` + `hint:` on stderr), every warning, then a summary on stdout."""
    if as_json:
        json_out(_validation_json(check))
        return
    for problem in check.errors:
        error(problem.message, problem.hint)
    for text in check.warnings:
        warning(f"{check.display}: {text}")
    if check.config is None:
        count = len(check.errors)
        note(f"{check.display}: {count} error{'s' if count != 1 else ''}")
        return
    lanes = check.config.lanes
    queues = check.config.queues
    line(f"{check.display}: OK ({_plural(len(lanes), 'lane')}, {_plural(len(queues), 'queue')})")
    width = max((len(name) for name in lanes), default=0)
    label_width = max((len(lane.label) for lane in lanes.values()), default=0)
    for name, lane in lanes.items():
        line(
            f"  {name:<{width}}  {lane.label:<{label_width}}  "
            f"{'plain' if lane.plain else f'queue={lane.queue.name}'}  "
            f"{describe_schedule(lane.schedule)}"
        )


def rendered(items: Sequence[RenderedLane], cwd: Path) -> None:
    """Plists on stdout (a `# <Label>.plist` line before each when there are several), or
    one `wrote`/`unchanged` line per file written with --out.
    """
    for item in items:
        if item.path is not None:
            state = "wrote" if item.changed else "unchanged"
            line(f"{state} {display_path(item.path, cwd)}")
            continue
        if len(items) > 1:
            line(f"# {item.file_name}")
        sys.stdout.write(item.data.decode("utf-8"))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _validation_json(check: ConfigCheck) -> dict[str, Any]:
    lanes = [] if check.config is None else list(check.config.lanes.values())
    return {
        "schema": VALIDATE_SCHEMA,
        "config": check.display,
        "ok": check.ok,
        "errors": [{"message": e.message, "hint": e.hint or None} for e in check.errors],
        "warnings": list(check.warnings),
        "lanes": [
            {
                "lane": lane.name,
                "label": lane.label,
                "queue": lane.queue.name,
                "schedule": describe_schedule(lane.schedule),
            }
            for lane in lanes
        ],
    }
