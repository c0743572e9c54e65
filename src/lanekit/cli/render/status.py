"""Output of `lanekit status`: the table, one detail line per lane, and the versioned JSON.

Apart from the plan/apply renderers (lanekit.cli.render.launchd) so that `lanekit status`
imports neither reconcile nor rich off a terminal (docs/benchmarks.md, figure (i)).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.cli.render import json_out, line, table_row
from lanekit.service.exits import signal_label
from lanekit.state.schemas import STATUS_SCHEMA
from lanekit.status.lanes import LaneState, LaneStatus
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    from lanekit.queue.counts import HostLeases

_STATE_STYLE = {
    LaneState.RUNNING: "bold green",
    LaneState.SCHEDULED: "cyan",
    LaneState.IDLE: "",
    LaneState.ERROR: "bold red",
    LaneState.STOPPED: "yellow",
    LaneState.NOT_LOADED: "yellow",
    LaneState.DISABLED: "magenta",
}

STATUS_COLUMNS = (
    "LANE",
    "STATE",
    "PID",
    "LAST",
    "RUNS",
    "NEXT FIRE",
    "QUEUED",
    "DELAYED",
    "CLAIMED",
    "DONE",
    "FAILED",
    "OLDEST CLAIM",
)


EMULATED_NOTE = (
    "emulated launchd: nothing fires on a clock; scheduled lanes fire only on"
    " `lanekit emulator tick --for DURATION` (or `lanekit kick LANE`), and NEXT FIRE counts"
    " from the emulated time"
)


def status(
    rows: Sequence[LaneStatus],
    *,
    domain: str,
    reason: str,
    as_json: bool,
    emulated: bool = False,
    show_project: bool = False,
    manager: str = "launchd",
) -> None:
    """A compact table plus one detail line per lane and the domain, or the versioned JSON
    document. In the emulated domain it says that nothing fires unless `lanekit emulator tick`
    drives it."""
    if as_json:
        json_out(status_json(rows, domain=domain, reason=reason, emulated=emulated))
        return
    # Lanes of several projects (status from outside any project): the same lane name may be
    # two lanes, so each row says whose it is.
    projects = show_project and len({row.project for row in rows}) > 1
    columns = (*STATUS_COLUMNS, "PROJECT") if projects else STATUS_COLUMNS
    cells_of = [
        (*_status_cells(row), *((_project(row.project),) if projects else ())) for row in rows
    ]
    table = [columns, *cells_of]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    table_row([(h, "bold") for h in columns], widths)
    for row, cells in zip(rows, table[1:], strict=True):
        styles = ["bold", _STATE_STYLE[row.state]] + [""] * (len(cells) - 2)
        table_row(list(zip(cells, styles, strict=True)), widths)
    for row in rows:
        detail = f"{row.lane}: {row.schedule}; last exit: {row.last_exit_text}"
        if row.paused:
            resume = cmdline("lanekit", "resume", row.lane)
            detail += f"; paused: runs claim nothing until `{resume}`"
        if show_project and row.project is not None:
            detail += f"; project: {row.project}"
        if row.queue.error:
            detail += f"; queue: {row.queue.error}"
        if row.queue.leases is not None:
            detail += f"; leases: {_leases(row.queue.leases)}"
        if row.watchdog:
            detail += f"; {row.watchdog}"
        line(detail)
    where = "systemd user manager" if manager == "systemd" else "launchd domain"
    line(f"{where}: {domain} ({reason})")
    if emulated:
        line(EMULATED_NOTE)


def _status_cells(row: LaneStatus) -> tuple[str, ...]:
    q = row.queue
    return (
        row.lane,
        "paused" if row.paused else str(row.state),
        _dash(row.pid),
        _short_exit(row.last_exit),
        _dash(row.runs),
        _next_fire(row),
        _dash(q.queued),
        _dash(q.delayed),
        _dash(q.claimed),
        _dash(q.done),
        _dash(q.failed),
        _age(q.oldest_claim_age),
    )


def _leases(leases: Sequence[HostLeases]) -> str:
    """`mini 2 (1 expired), laptop 1`: a server queue's running jobs by the host holding
    their lease; an expired one is recovered by the next run on any host."""
    if not leases:
        return "none held"
    parts = []
    for held in leases:
        part = f"{held.host} {held.running}"
        if held.expired:
            part += f" ({held.expired} expired: the next run recovers it)"
        parts.append(part)
    return ", ".join(parts)


def _project(project: Path | None) -> str:
    """A project as its directory, `~` for the home directory's part."""
    if project is None:
        return "-"
    home = Path.home()
    folder = project.parent
    return f"~/{folder.relative_to(home)}" if folder.is_relative_to(home) else str(folder)


def _next_fire(row: LaneStatus) -> str:
    if row.next_fire is not None:
        return row.next_fire.strftime("%Y-%m-%d %H:%M")
    if row.interval is not None:
        return f"within {_age(row.interval)}"
    return "-"


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def _short_exit(last_exit: int | None) -> str:
    if last_exit is None:
        return "-"
    if last_exit < 0:
        return signal_label(-last_exit)
    return str(last_exit)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole < 120:
        return f"{whole}s"
    if whole < 7200:
        return f"{whole // 60}m"
    if whole < 2 * 86400:
        return f"{whole // 3600}h"
    return f"{whole // 86400}d"


def status_json(
    rows: Sequence[LaneStatus], *, domain: str, reason: str, emulated: bool = False
) -> dict[str, Any]:
    """The `status --json` document (schema 1; keys pinned by tests/cli/test_launchd_cmds.py)."""
    return {
        "schema": STATUS_SCHEMA,
        "domain": domain,
        "domain_reason": reason,
        "emulated": emulated,
        "lanes": [_lane_json(row) for row in rows],
    }


def _lane_json(row: LaneStatus) -> dict[str, Any]:
    q = row.queue
    return {
        "lane": row.lane,
        "label": row.label,
        "state": str(row.state),
        "paused": row.paused,
        "project": None if row.project is None else str(row.project),
        "watchdog": row.watchdog,
        "pid": row.pid,
        "last_exit": row.last_exit,
        "last_exit_text": row.last_exit_text,
        "runs": row.runs,
        "schedule": row.schedule,
        "next_fire": _iso(row.next_fire),
        "queue": {
            "queued": q.queued,
            "delayed": q.delayed,
            "claimed": q.claimed,
            "done": q.done,
            "failed": q.failed,
            "oldest_claim_age_seconds": q.oldest_claim_age,
            "error": q.error,
            "leases": None
            if q.leases is None
            else [
                {"host": held.host, "running": held.running, "expired": held.expired}
                for held in q.leases
            ],
        },
    }


def _iso(moment: datetime | None) -> str | None:
    # Schedules are naive local wall time; astimezone() attaches this machine's offset.
    return None if moment is None else moment.astimezone().isoformat(timespec="seconds")
