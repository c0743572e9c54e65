"""Output of `lanekit plan`, `apply`, `remove`, `kick`, `stop`, `restart` and `status`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

from lanekit.cli.render import error, json_out, line, note, table_row, warning
from lanekit.reconcile import (
    ActionKind,
    ApplyResult,
    KickResult,
    Outcome,
    RemoveResult,
    Result,
    Waiting,
)
from lanekit.reconcile.starts import StartOutcome
from lanekit.service.launchd import LaunchctlError
from lanekit.system.quoting import printable

if TYPE_CHECKING:  # the cores of adopt, stop and uninstall load only with their commands
    from lanekit.reconcile.adopt import AdoptResult
    from lanekit.reconcile.stoprun import StopResult
    from lanekit.reconcile.uninstall import UninstallResult

_RESULT_STYLE = {
    Result.DONE: "green",
    Result.SKIPPED: "yellow",
    Result.FAILED: "bold red",
    Result.UNCHANGED: "dim",
    Result.OFFERED: "magenta",
    Result.PLANNED: "cyan",
}


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
        table_row(
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


def stopped(result: StopResult) -> None:
    """One line on stderr: what became of the lane's run."""
    if result.pid is None:
        note(f"lane {result.lane} is not running: nothing to stop")
    elif not result.ended:
        warning(
            f"lane {result.lane}: its run (pid {result.pid}) has not ended after"
            f" {result.waited:g} s; it is still stopping"
        )
    elif result.killed:
        note(
            f"lane {result.lane}: stopped its run (pid {result.pid}) with SIGKILL after its"
            " exit timeout; the next run gives its job back to the queue"
        )
    else:
        note(
            f"lane {result.lane}: stopped its run (pid {result.pid}); its job is back in the"
            " queue, and the lane stays loaded"
        )


def uninstalled(result: UninstallResult) -> None:
    """One line per step: what, where, what became of it, and why."""
    if not result.items:
        note("nothing to uninstall: no lanekit lane is installed for this scope")
        return
    from lanekit.reconcile.uninstall import ItemKind

    width = max(len(kind) for kind in ItemKind)  # one column whatever this run found
    for item in result.items:
        detail = f" ({item.detail})" if item.detail else ""
        line(f"{item.kind:<{width}}  {item.done}  {printable(item.name)}{printable(detail)}")
    if result.dry_run:
        note("dry run: nothing was changed")


def adopted(result: AdoptResult) -> None:
    """Each lane written (its notes and kept keys), then what `apply` will do."""
    verb = "would add" if result.dry_run else "added"
    for item in result.adopted:
        line(
            f"{verb} [lanes.{item.lane}] to {printable(str(result.config))} from "
            f"{printable(str(item.plist))} ({printable(item.translation.label)})"
        )
        for text in item.translation.notes:
            note(f"  {printable(text)}")
        if item.kept:
            note(f"  kept through the template: {printable(', '.join(item.kept))}")
    if result.template is not None:
        note(f"template with the kept keys: {printable(str(result.template / 'lane.plist.j2'))}")
    line("`lanekit apply` will then:")
    for step in result.apply_steps:
        line(f"  {printable(step)}")
