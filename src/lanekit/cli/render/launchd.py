"""Output of `lanekit plan`, `apply`, `remove`, `kick` and `status`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TextIO

from lanekit.cli.render import error, json_out, line, note, show, styled, warning
from lanekit.launchd import LaunchctlError
from lanekit.quoting import cmdline, printable
from lanekit.reconcile import (
    ActionKind,
    ApplyResult,
    KickResult,
    Outcome,
    RemoveResult,
    Result,
    Waiting,
)
from lanekit.starts import StartOutcome
from lanekit.status import LaneState, LaneStatus

STATUS_SCHEMA = 1

_STATE_STYLE = {
    LaneState.RUNNING: "bold green",
    LaneState.SCHEDULED: "cyan",
    LaneState.IDLE: "",
    LaneState.ERROR: "bold red",
    LaneState.NOT_LOADED: "yellow",
    LaneState.DISABLED: "magenta",
}
_RESULT_STYLE = {
    Result.DONE: "green",
    Result.SKIPPED: "yellow",
    Result.FAILED: "bold red",
    Result.UNCHANGED: "dim",
    Result.OFFERED: "magenta",
    Result.PLANNED: "cyan",
}


def _row(cells: Sequence[tuple[str, str]], widths: Sequence[int]) -> None:
    """One table row; styles show only on a terminal (the console drops them otherwise)."""
    parts: list[str | tuple[str, str]] = []
    last = len(cells) - 1
    for i, ((value, style), width) in enumerate(zip(cells, widths, strict=True)):
        parts.append((value if i == last else value.ljust(width), style))
        if i != last:
            parts.append("  ")
    show(styled(*parts))


# -- waiting (apply --wait, remove --wait/--force) --------------------------------------------


@contextlib.contextmanager
def waiting(stream: TextIO | None = None) -> Iterator[Callable[[Waiting], None]]:
    """One progress line on stderr, redrawn in place, naming what is awaited (lane, pid,
    elapsed); cleared when the wait is over. Silent when stderr is not a terminal."""
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        yield lambda _: None
        return
    drawn = False

    def draw(w: Waiting) -> None:
        nonlocal drawn
        who = f"pid {w.pid}" if w.pid is not None else "lane lock held"
        text = printable(f"waiting {w.what}: lane {w.lane} ({who}), {w.elapsed:.0f} s")
        out.write(f"\r\x1b[K{text}")
        out.flush()
        drawn = True

    try:
        yield draw
    finally:
        if drawn:
            out.write("\r\x1b[K")
            out.flush()


# -- plan / apply -------------------------------------------------------------------------


def plan(result: ApplyResult) -> None:
    """Each lane's planned action with its reason and steps, then a one-line summary."""
    _outcome_rows(result.outcomes)
    _summary(result)
    _notes(result)


def _notes(result: ApplyResult) -> None:
    for text in result.notes:
        warning(text)


def applied(result: ApplyResult, *, as_json: bool = False) -> None:
    """What apply did per lane, errors (with launchctl's meaning) on stderr, then a summary;
    or the `apply --json` document (errors still on stderr)."""
    if as_json:
        for outcome in result.outcomes:
            _failure(outcome)
        json_out(result.to_json())
        return
    if result.dry_run:
        plan(result)
        return
    # Unchanged lanes are only counted: apply lists what it did and what needs attention.
    _outcome_rows([o for o in result.outcomes if o.result is not Result.UNCHANGED])
    for outcome in result.outcomes:
        _failure(outcome)
    _summary(result)
    _notes(result)


def waiting_for_apply(pid: int | None) -> None:
    """The one line an apply prints when another apply holds the domain's lock."""
    who = f"pid {pid}" if pid is not None else "another process"
    note(f"apply: waiting for another `lanekit apply` ({who}) to finish")
    sys.stderr.flush()


def waiting_for_remove(pid: int | None) -> None:
    """The one line a remove prints when an apply (or another remove) holds the domain's lock."""
    who = f"pid {pid}" if pid is not None else "another process"
    note(f"remove: waiting for another `lanekit apply` or `remove` ({who}) to finish")
    sys.stderr.flush()


def _failure(outcome: Outcome) -> None:
    if outcome.result is Result.FAILED and outcome.error is not None:
        exc = outcome.error
        meaning = f" ({exc.meaning})" if isinstance(exc, LaunchctlError) and exc.meaning else ""
        error(f"{outcome.action.lane}: {exc.message}{meaning}", exc.hint)


def _outcome_rows(outcomes: Sequence[Outcome]) -> None:
    if not outcomes:
        return
    lane_width = max(len(o.action.lane) for o in outcomes)
    word_width = max(len(_word(o)) for o in outcomes)
    for outcome in outcomes:
        _row(
            [
                (outcome.action.lane, "bold"),
                (_word(outcome), _RESULT_STYLE[outcome.result]),
                (_explain(outcome), ""),
            ],
            [lane_width, word_width, 0],
        )


def _word(outcome: Outcome) -> str:
    if outcome.result is Result.DONE:
        return str(outcome.action.deferred or outcome.action.kind)
    if outcome.result is Result.PLANNED:
        return str(outcome.action.kind)
    return str(outcome.result)


def _explain(outcome: Outcome) -> str:
    action = outcome.action
    if outcome.result is Result.PLANNED:
        return f"{action.reason} -> {', '.join(action.steps)}"
    if outcome.result is Result.DONE:
        if action.kind is ActionKind.CREATE:
            return outcome.detail
        return f"{outcome.detail} ({action.pending or action.reason})"
    if outcome.result in {Result.SKIPPED, Result.FAILED}:
        return outcome.detail
    return action.reason


def _summary(result: ApplyResult) -> None:
    offered = result.count(Result.OFFERED)
    offers = f"; {_plural(offered, 'lane')} offered for removal" if offered else ""
    unchanged = result.count(Result.UNCHANGED)
    if result.nothing_to_do:
        line(f"nothing to do: {_plural(unchanged, 'lane')} unchanged{offers}")
        return
    if result.dry_run:
        to_change = result.count(Result.PLANNED)
        line(f"plan: {to_change} to change, {unchanged} unchanged{offers} (nothing was changed)")
        return
    parts = [f"{result.count(Result.DONE)} changed"]
    if result.count(Result.SKIPPED):
        parts.append(f"{result.count(Result.SKIPPED)} skipped (running)")
    if result.count(Result.FAILED):
        parts.append(f"{result.count(Result.FAILED)} failed")
    parts.append(f"{unchanged} unchanged")
    line("apply: " + ", ".join(parts) + offers)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- remove / kick --------------------------------------------------------------------------


def removed(result: RemoveResult) -> None:
    """What was removed; a warning when lanes.toml would install it again."""
    done = ["booted out"] if result.booted_out else ["was not loaded"]
    if result.stopped_pid is not None:
        done.append(f"stopped run pid {result.stopped_pid}")
    done.append(f"deleted {len(result.deleted)} file{'s' if len(result.deleted) != 1 else ''}")
    line(f"removed {result.lane} ({result.label}): {', '.join(done)}; queue untouched")
    if result.still_configured:
        warning(
            f"lane {result.lane} is still in lanes.toml: the next `lanekit apply` installs it"
            f" again (delete its [lanes.{result.lane}] table to keep it removed)"
        )


def kicked(result: KickResult, *, emulated: bool = False) -> None:
    """The pid alone on stdout (scripts can capture it), notes on stderr. The emulated domain
    has no daemon: a postponed start happens at the first lanekit call after it is due."""
    if result.outcome is StartOutcome.ALREADY_RUNNING:
        warning(f"lane {result.lane} is already running; not started again")
    if result.outcome is StartOutcome.POSTPONED:
        warning(
            f"lane {result.lane}: launchd postponed the start (ThrottleInterval"
            f" {result.throttle} s): it runs in about {result.starts_in} s"
            + (" (emulated launchd: at the first lanekit command after that)" if emulated else "")
        )
        return
    if result.pid is None:
        warning(f"lane {result.lane} started and already ended (launchd reported no pid)")
        return
    line(str(result.pid))


# -- status ------------------------------------------------------------------------------------

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
) -> None:
    """A compact table plus one detail line per lane and the domain, or the versioned JSON
    document. In the emulated domain it says that nothing fires unless `lanekit emulator tick`
    drives it."""
    if as_json:
        json_out(status_json(rows, domain=domain, reason=reason, emulated=emulated))
        return
    table = [STATUS_COLUMNS, *(_status_cells(row) for row in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(STATUS_COLUMNS))]
    _row([(h, "bold") for h in STATUS_COLUMNS], widths)
    for row, cells in zip(rows, table[1:], strict=True):
        styles = ["bold", _STATE_STYLE[row.state]] + [""] * (len(cells) - 2)
        _row(list(zip(cells, styles, strict=True)), widths)
    for row in rows:
        detail = f"{row.lane}: {row.schedule}; last exit: {row.last_exit_text}"
        if row.paused:
            resume = cmdline("lanekit", "resume", row.lane)
            detail += f"; paused: runs claim nothing until `{resume}`"
        if show_project and row.project is not None:
            detail += f"; project: {row.project}"
        if row.queue.error:
            detail += f"; queue: {row.queue.error}"
        if row.watchdog:
            detail += f"; {row.watchdog}"
        line(detail)
    line(f"launchd domain: {domain} ({reason})")
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
        import signal

        try:
            return signal.Signals(-last_exit).name
        except ValueError:
            return f"sig{-last_exit}"
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
        },
    }


def _iso(moment: datetime | None) -> str | None:
    # Schedules are naive local wall time; astimezone() attaches this machine's offset.
    return None if moment is None else moment.astimezone().isoformat(timespec="seconds")
