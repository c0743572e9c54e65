"""The watchdog's own health: `watch.channel-unconfirmed` when its only channel is Notification
Center and nobody ever said a test notice arrived, and the dead man's switch `watch.not-running`
when no pass completed for 3 × every.

The watchdog cannot report its own silence, so doctor does (lanekit.doctor.deadman measures it):
the finding says why, in the words lane.missed-run uses for any silent lane (not loaded,
disabled, exit 78, failing and throttled, ran but wrote nothing, asleep).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from lanekit.config import is_watchdog
from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.doctor.checks.lane import (
    MissedRunCause,
    classify_missed_run,
    explain_silence,
    silence_facts,
)
from lanekit.doctor.deadman import watchdog_silence
from lanekit.state.confirmations import MACOS_FIX, confirmed


@check(
    "watch.channel-unconfirmed",
    summary="the watchdog's only channel is macos and no test notice was ever seen to arrive",
    needs_lane=True,
    needs_plist=False,
)
def channel_unconfirmed(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """osascript exits 0 while macOS drops the notice of an app without notification
    permission, so a `macos`-only watchdog may be silent from day one: only the user's
    answer to `lanekit watch --test` says it is not."""
    lane = target.lane
    if lane is None or not is_watchdog(lane) or lane.watch is None:
        return
    if lane.watch.channels != ("macos",) or confirmed(ctx.paths.state, "macos"):
        return
    yield Problem(
        Severity.WARNING,
        "the watchdog's only channel is macos (Notification Center), and no test notice was "
        "ever confirmed to arrive: macOS drops osascript's notices until Script Editor may "
        "notify, and osascript still reports success, so every alert may be lost.",
        MACOS_FIX,
    )


@check(
    "watch.not-running",
    summary="the watchdog ([watch]) has not completed a pass for 3 × every: nothing is watched",
    needs_lane=True,
    needs_plist=False,
    uses_launchd=True,
)
def not_running(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The dead man's switch: every other alert depends on the watchdog running."""
    lane = target.lane
    if lane is None or not is_watchdog(lane) or not target.installed:
        return
    if target.plist_path is None:
        return
    try:
        installed_at = target.plist_path.stat().st_mtime
    except OSError:
        return
    now = ctx.now()
    silence = watchdog_silence(lane, now, installed_at)
    if silence is None:
        return
    # From the first pass that should have come: the last one's own output is no evidence.
    every = lane.schedule.interval or 0
    since = datetime.fromtimestamp((silence.last_pass or installed_at) + every)
    facts = silence_facts(target, ctx, since)
    cause = classify_missed_run(facts)
    text, fix = explain_silence(cause, facts, target, ctx)
    severity = Severity.WARNING if cause is MissedRunCause.UNKNOWN else Severity.ERROR
    yield Problem(
        severity,
        f"{silence.sentence()}, so no alert is sent: {cause.value}: {text}.",
        fix,
    )
