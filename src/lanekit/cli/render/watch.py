"""Output of `lanekit watch`: what the pass sent (or would send), and what a channel refused."""

from __future__ import annotations

import sys

from lanekit.cli.render import json_out, line, note, warning
from lanekit.state.confirmations import MACOS_FIX, NOT_AT_SCREEN
from lanekit.system.quoting import printable
from lanekit.watch.testnotice import TestResult
from lanekit.watch.watchdog import PassResult


def result(outcome: PassResult, *, as_json: bool) -> None:
    """One line per notice, one warning per refused delivery, then a summary line."""
    for text in outcome.notes:
        warning(text)
    if as_json:
        json_out(outcome.to_json())
        return
    if outcome.skipped is not None:
        line(f"watch {outcome.label}: skipped ({outcome.skipped})")
        return
    every = (*outcome.retried, *outcome.notices)
    sent = [n for n in every if outcome.dry_run or outcome.delivered(n)]
    for notice in every:
        if outcome.dry_run:
            verb = "would send"
        else:
            verb = "sent" if outcome.delivered(notice) else "NOT sent"
        line(f"{verb} {notice.kind:<8} {notice.check}  {notice.subject}: {notice.text}")
    for delivery in outcome.failed_deliveries:
        warning(f"{delivery.error} (kept for the next pass)")
    if outcome.heartbeat is not None and not outcome.heartbeat.ok:
        beat = outcome.heartbeat
        warning(f"heartbeat {beat.shown}: {beat.error} (the pass goes on; the next one pings)")
    channels = ", ".join(outcome.channels) or "no channel"
    done = "would send" if outcome.dry_run else "sent"
    count = len(sent)
    summary = f"{len(outcome.open)} open, {count} notice{'s' if count != 1 else ''} {done}"
    unsent = len(every) - len(sent)
    if unsent:
        why = "every channel refused: kept for the next pass" if outcome.channels else "no channel"
        summary += f", {unsent} not sent ({why})"
    line(f"{summary} ({channels})")


def test_result(outcome: TestResult, *, as_json: bool) -> None:
    """One line per channel: whether it took the test notice, and the user's earlier answer."""
    if as_json:
        json_out(outcome.to_json())
        return
    if not outcome.channels:
        warning(f"watch {outcome.label}: no channel is on, so no alert can reach you")
        return
    for test in outcome.channels:
        if not test.sent:
            warning(f"{test.channel}: the test notice was refused: {test.error}")
            continue
        earlier = {None: "never confirmed", True: "confirmed before", False: "not seen last time"}
        line(f"{test.channel}: test notice sent ({earlier[test.confirmed]})")
        if test.channel == "macos":
            note(f"macos: {NOT_AT_SCREEN}")


def can_ask() -> bool:
    """A person is at a terminal to answer (stdin and stdout are terminals)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask_arrived(channel: str) -> bool:
    """Ask whether `channel`'s test notice arrived; yes only on an explicit y/yes."""
    sys.stdout.write(printable(f"Did the test notice arrive through {channel}? [y/N] "))
    sys.stdout.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def answered(channel: str, arrived: bool) -> None:
    """What the recorded answer means."""
    if arrived:
        line(f"{channel}: confirmed; doctor will not warn about it")
        return
    fix = MACOS_FIX if channel == "macos" else "check the channel's program or endpoint"
    warning(f"{channel}: the notice did not arrive; {fix}")


def not_asked() -> None:
    """Said when nobody could be asked (not a terminal): nothing is recorded."""
    note(
        "not asked whether the notice arrived (not a terminal): run `lanekit watch --test` in "
        "a terminal and answer; until then doctor counts the channel as unconfirmed"
    )
