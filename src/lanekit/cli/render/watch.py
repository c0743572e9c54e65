"""Output of `lanekit watch`: what the pass sent (or would send), and what a channel refused."""

from __future__ import annotations

from lanekit.cli.render import json_out, line, warning
from lanekit.watch.watchdog import PassResult


def result(outcome: PassResult, *, as_json: bool) -> None:
    """One line per notice, one warning per refused delivery, then a summary line."""
    for note in outcome.notes:
        warning(note)
    if as_json:
        json_out(outcome.to_json())
        return
    if outcome.skipped is not None:
        line(f"watch {outcome.label}: skipped ({outcome.skipped})")
        return
    verb = "would send" if outcome.dry_run else "sent"
    for notice in (*outcome.retried, *outcome.notices):
        line(f"{verb} {notice.kind:<8} {notice.check}  {notice.subject}: {notice.text}")
    for delivery in outcome.failed_deliveries:
        warning(f"{delivery.error} (kept for the next pass)")
    channels = ", ".join(outcome.channels) or "no channel"
    count = len(outcome.notices) + len(outcome.retried)
    line(f"{len(outcome.open)} open, {count} notice{'s' if count != 1 else ''} {verb} ({channels})")
