"""Output of `lanekit schedule`: the plist entries, the plain-English description, next fires."""

from __future__ import annotations

import json
from typing import Any

from lanekit.cli.render import json_out, line, warning
from lanekit.schedule import Explanation
from lanekit.state.schemas import SCHEDULE_SCHEMA


def to_json(result: Explanation) -> dict[str, Any]:
    """The versioned JSON document; `interval` appears only for every= (StartInterval)."""
    data: dict[str, Any] = {
        "schema": SCHEDULE_SCHEMA,
        "entries": [entry.to_plist() for entry in result.schedule.calendar],
        "description": result.description,
        "next": [fire.isoformat() for fire in result.next],
        "warnings": list(result.warnings),
    }
    if result.schedule.interval is not None:
        data["interval"] = result.schedule.interval
    if result.collisions is not None:
        data["collisions"] = [
            {
                "lane": found.lanes[1],
                "queue": found.queue,
                "example": None if found.example is None else found.example.isoformat(),
                "message": found.description,
            }
            for found in result.collisions
        ]
    return data


def explanation(result: Explanation, *, as_json: bool) -> None:
    """Entries as plist dicts, the description, then the next fires (local wall time);
    warnings on stderr."""
    for text in result.warnings:
        warning(text)
    if as_json:
        json_out(to_json(result))
        return
    calendar = result.schedule.calendar
    if calendar:
        count = len(calendar)
        line(f"StartCalendarInterval ({count} entr{'y' if count == 1 else 'ies'}):")
        for entry in calendar:
            line(f"  {json.dumps(entry.to_plist())}")
    if result.schedule.interval is not None:
        line(f"StartInterval: {result.schedule.interval}")
    line(f"runs: {result.description}")
    if result.collisions is not None:
        if not result.collisions:
            line("collisions: none with the lanes of lanes.toml")
        for found in result.collisions:
            line(f"collision: {found.description}")
    if not result.next:
        line(f"next fires after {result.after.isoformat()}: none")
        return
    note = ""
    if result.schedule.interval is not None:
        # launchd arms the interval timer when it loads the job; we cannot know when that was.
        note = " (interval counted from then, as if loaded at that time)"
    line(f"next fires after {result.after.isoformat()}{note}:")
    for fire in result.next:
        line(f"  {fire.isoformat()}  {fire:%a}")
