"""Checks on the lane as a whole: a scheduled run that left no trace (and why), and a lane
set to run in the background while a burst waits for it."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.doctor.checks.launchd import LOOP_STATES
from lanekit.errors import LanekitError
from lanekit.run.lanelog import EventName, Reason
from lanekit.service.manager import LAUNCHD_LIKE
from lanekit.state.paths import is_paused
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    from lanekit.service.launchd.power import SleepSpan

MISSED_RUN_GRACE = timedelta(minutes=10)
"""How long after a fire a run may take to show up in the lane log (launchd fires ~5 s late,
a wake from sleep later still)."""

BURST_BACKLOG = 20
"""Queued jobs from which a Nice/low-priority lane is draining a burst, not a trickle."""


class MissedRunCause(StrEnum):
    """Why a scheduled run left no trace in the lane log."""

    NOT_LOADED = "not loaded"
    DISABLED = "disabled"
    EXIT_78 = "exit 78"
    THROTTLED = "throttled"
    RAN_SILENT = "ran but logged nothing"
    ASLEEP = "asleep"
    UNKNOWN = "asleep or powered off (unknown)"


@dataclass(frozen=True, slots=True)
class MissedRunFacts:
    """What `classify_missed_run` needs; None means launchd could not be asked."""

    loaded: bool | None
    disabled: bool = False
    last_exit: int | None = None
    state: str | None = None
    output_since_fire: bool = False
    """StandardOutPath/StandardErrorPath changed after the fire: something ran."""
    asleep: bool = False
    """`pmset -g log` shows the Mac asleep at the fire (read only when nothing else explains
    the silence: it runs a tool)."""


def classify_missed_run(facts: MissedRunFacts) -> MissedRunCause:
    """The most specific explanation the facts support; the order is the precedence."""
    if facts.disabled:
        return MissedRunCause.DISABLED
    if facts.loaded is False:
        return MissedRunCause.NOT_LOADED
    if facts.last_exit == os.EX_CONFIG:
        return MissedRunCause.EXIT_78
    if facts.output_since_fire:
        return MissedRunCause.RAN_SILENT
    if facts.loaded and (facts.last_exit not in (None, 0) or (facts.state or "") in LOOP_STATES):
        return MissedRunCause.THROTTLED
    if facts.asleep:
        return MissedRunCause.ASLEEP
    return MissedRunCause.UNKNOWN


_SLEEPS: weakref.WeakKeyDictionary[DoctorContext, list[SleepSpan]] = weakref.WeakKeyDictionary()
"""One `pmset -g log` per doctor run, shared by every lane."""


def sleep_at(ctx: DoctorContext, fire: datetime) -> SleepSpan | None:
    """The sleep (from `pmset -g log`, macOS only: lanekit.service.launchd.probes) that the fire, a
    naive local time, fell in; None when it did not or the log cannot be read."""
    from lanekit.service.launchd import power, probes

    if ctx not in _SLEEPS:
        text = probes.pmset_log()
        _SLEEPS[ctx] = [] if text is None else power.sleep_spans(power.parse_pmset_log(text))
    return power.asleep_at(_SLEEPS[ctx], fire.astimezone())


def _local(when: datetime) -> str:
    return f"{when.astimezone().replace(tzinfo=None):%Y-%m-%d %H:%M}"


def expected_fire(
    target: Target, now: datetime, grace: timedelta = MISSED_RUN_GRACE
) -> datetime | None:
    """The latest time the lane should already have run by (naive local), grace included."""
    from lanekit.schedule import previous_fire

    lane = target.lane
    if lane is None:
        return None
    cutoff = now - grace
    if lane.schedule.calendar:
        return previous_fire(lane.schedule.calendar, cutoff)
    if lane.schedule.interval is not None:
        return cutoff - timedelta(seconds=lane.schedule.interval)
    return None


def _changed_since(target: Target, when: datetime) -> bool:
    lane = target.lane
    if lane is None:
        return False
    for path in (lane.stdout_path, lane.stderr_path):
        try:
            if datetime.fromtimestamp(path.stat().st_mtime) >= when:
                return True
        except OSError:
            continue
    return False


@check(
    "lane.missed-run",
    summary="a scheduled run left no trace in the lane log; says why (not loaded, exit 78, ...)",
    needs_lane=True,
    needs_plist=False,
    uses_launchd=True,
    alert=True,
)
def missed_run(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Every run writes `start` to the lane log; a fire with nothing after it is a silence
    to explain, from what launchd says and which files changed."""
    from lanekit.run.lanelog import read_between
    from lanekit.timeline.events import RUN_KINDS, classify

    lane = target.lane
    if lane is None or not target.installed or target.plist_path is None:
        return
    if is_paused(ctx.paths, lane.label):
        return  # a paused lane is silent on purpose (launchd.disabled says it is paused)
    fire = expected_fire(target, ctx.now(), ctx.missed_after or MISSED_RUN_GRACE)
    if fire is None:
        return
    try:
        installed_at = datetime.fromtimestamp(target.plist_path.stat().st_mtime)
    except OSError:
        return
    if installed_at > fire:
        return  # launchd never replays a fire that passed before the job was loaded
    if any(
        classify(event.get("event", ""), event) in RUN_KINDS
        # Only the part of a long log after the fire is read (a binary search on ts).
        for event in read_between(lane.log_path, fire.timestamp())
    ):
        return  # a run wrote something (apply's reload lines are not runs)
    facts = silence_facts(target, ctx, fire)
    cause = classify_missed_run(facts)
    asleep = sleep_at(ctx, fire) if cause is MissedRunCause.UNKNOWN else None
    if asleep is not None:
        facts = replace(facts, asleep=True)
        cause = classify_missed_run(facts)
    when = f"{fire:%Y-%m-%d %H:%M}"
    head = f"lane {lane.name} should have run at {when} but its log shows nothing since"
    quiet = {MissedRunCause.UNKNOWN, MissedRunCause.ASLEEP}
    severity = Severity.WARNING if cause in quiet else Severity.ERROR
    text, fix = explain_silence(cause, facts, target, ctx, asleep=asleep)
    yield Problem(severity, f"{head}: {cause.value}: {text}.", fix)


def silence_facts(target: Target, ctx: DoctorContext, since: datetime) -> MissedRunFacts:
    """What launchd and the lane's output files say about a lane silent since `since` (the
    facts classify_missed_run judges; lane.missed-run and watch.not-running share them)."""
    lane = target.lane
    assert lane is not None  # both callers examine lanes only
    label = lane.label
    facts = MissedRunFacts(loaded=None, output_since_fire=_changed_since(target, since))
    if ctx.launchd_available:
        seen = ctx.seen(label)
        facts = MissedRunFacts(
            loaded=seen.loaded,
            disabled=seen.disabled,
            last_exit=seen.last_exit,
            state=seen.definition.state if seen.definition is not None else None,
            output_since_fire=facts.output_since_fire,
        )
    return facts


def explain_silence(
    cause: MissedRunCause,
    facts: MissedRunFacts,
    target: Target,
    ctx: DoctorContext,
    *,
    asleep: SleepSpan | None = None,
) -> tuple[str, str]:
    """(why, in words; the fix command) for a silent lane whose silence has `cause`; `asleep`
    is the sleep (pmset -g log) a missed fire fell in, when one did."""
    lane = target.lane
    assert lane is not None
    label = lane.label
    if cause is MissedRunCause.NOT_LOADED:
        text, fix = "it is not loaded in launchd", cmdline("lanekit", "apply", lane.name)
    elif cause is MissedRunCause.DISABLED:
        text = "it is disabled in launchd"
        enable = cmdline("launchctl", "enable", f"{ctx.domain}/{label}")
        fix = f"{enable} && {cmdline('lanekit', 'apply', lane.name)}"
    elif cause is MissedRunCause.EXIT_78:
        text = "launchd could not start it (exit 78, the program never ran)"
        explained = ctx.findings("launchd.exit-78", target)
        fix = explained[0].fix if explained else cmdline("lanekit", "try", lane.name)
    elif cause is MissedRunCause.RAN_SILENT:
        text = "launchd started it (its output files changed) but the runner never logged a line"
        logs = cmdline("lanekit", "logs", lane.name, "--err")
        fix = f"{logs}  (then `{cmdline('lanekit', 'try', lane.name)}`)"
    elif cause is MissedRunCause.THROTTLED:
        text = (
            f"its runs keep failing (last exit {facts.last_exit}) and launchd throttles a "
            "failing job, so the fire was skipped"
        )
        fix = cmdline("lanekit", "logs", lane.name, "--err")
    elif asleep is not None:
        slept = (
            f"the Mac was asleep from {_local(asleep.start)} to {_local(asleep.end)} "
            f"({asleep.reason}, pmset -g log)"
        )
        if lane.schedule.interval is not None and not lane.schedule.calendar:
            text = f"{slept}: an interval lane's fires during sleep are missed, not run on wake"
        else:
            text = (
                f"{slept}: launchd runs a calendar fire missed in sleep once on wake "
                "(launchd.plist(5))"
            )
        fix = f"{cmdline('lanekit', 'kick', lane.name)}  (runs it now)"
    elif lane.schedule.interval is not None and not lane.schedule.calendar:
        # launchd.plist(5): a StartInterval fire during sleep is missed, not run on wake.
        text = (
            "launchd has it loaded and nothing says it failed, so the Mac was probably asleep "
            "or off: an interval lane's fires during sleep are missed (the next one runs "
            f"{lane.schedule.interval} s after the previous)"
        )
        fix = f"{cmdline('lanekit', 'kick', lane.name)}  (runs it now)"
    else:
        text = (
            "launchd has it loaded and nothing says it failed, so the Mac was probably asleep "
            "(launchd runs a calendar fire once on wake) or off (the fire is skipped)"
        )
        fix = f"{cmdline('lanekit', 'kick', lane.name)}  (runs it now)"
    return text, fix


@check(
    "lane.cannot-start",
    summary="the lane's last run could not start its job command: the job went back, untouched",
    needs_lane=True,
    needs_plist=False,
    alert=True,
)
def cannot_start(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A command that cannot start is the lane's environment, not the job's fault, so the job
    goes back without spending an attempt (lanekit.reconcile.preflight): without this finding the
    lane
    would spin run after run with every job at attempt 0 and nothing in failed/."""
    lane = target.lane
    if lane is None:
        return
    last: dict[str, str] | None = None
    for event in ctx.lane_events(lane, rotated=False):
        if event.get("event") == EventName.DONE:
            last = None
        elif (
            # REQUEUED: a queue lane's job went back; FAILED: a plain lane's run (its one job).
            event.get("event") in (EventName.REQUEUED, EventName.FAILED)
            and event.get("reason") == Reason.CANNOT_START
        ):
            last = event
    if last is None:
        return
    when = last.get("ts", "?")
    yield Problem(
        Severity.ERROR,
        f"lane {lane.name} could not start its job command at {when} "
        f"({last.get('error', 'unknown error')}): the job went back to the queue untouched, "
        "and every run will do the same until the command is fixed.",
        f"fix `command` or `path` in [lanes.{lane.name}] of lanes.toml, then "
        f"`{cmdline('lanekit', 'apply', lane.name)}` "
        f"(`{cmdline('lanekit', 'try', lane.name)}` shows the failure)",
    )


RESPAWN_WINDOW = 600
"""Seconds of lane log `lane.respawn-loop` looks back over."""
RESPAWN_STARTS = 5
"""Starts in that window, with no job ending, that make a respawn loop: launchd's default
ThrottleInterval (10 s) allows 60; a lane started on enqueue that works ends a job per start."""


@check(
    "lane.respawn-loop",
    summary="launchd keeps starting a lane on enqueue whose runs take no job (QueueDirectories)",
    needs_lane=True,
    needs_plist=False,
    alert=True,
    # systemd's path unit stops itself after its start limit: systemd.enqueue-watch-failed.
    managers=LAUNCHD_LIKE,
)
def respawn_loop(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd starts a QueueDirectories job again and again while the directory holds
    anything: a lane started on enqueue whose runs leave the jobs in queue/ (its command cannot
    start, a run refused by the queue) is started every ThrottleInterval, for ever."""
    from lanekit.config.model import StartOn
    from lanekit.run.lanelog import format_ts

    lane = target.lane
    if lane is None or StartOn.ENQUEUE not in lane.start:
        return
    since = format_ts(ctx.now().timestamp() - RESPAWN_WINDOW)
    recent = [
        event for event in ctx.lane_events(lane, rotated=False) if event.get("ts", "") >= since
    ]
    starts = sum(1 for event in recent if event.get("event") == EventName.START)
    ended = any(
        event.get("event") in (EventName.DONE, EventName.FAILED) and event.get("job")
        for event in recent
    )
    if starts < RESPAWN_STARTS or ended:
        return
    minutes = RESPAWN_WINDOW // 60
    from lanekit.queue import holding
    from lanekit.queue.records import JobState

    waiting = holding(lane.queue.dir, JobState.QUEUED)
    yield Problem(
        Severity.WARNING,
        f"launchd started lane {lane.name} {starts} times in the last {minutes} minutes and no "
        f"job ended: it starts the lane while jobs wait in {waiting} (start = "
        '[..., "enqueue"]), and every run leaves them there: a respawn loop.',
        f"the other findings for lane {lane.name} say why its runs take nothing (often "
        f"lane.cannot-start); `{cmdline('lanekit', 'pause', lane.name)}` unloads it until that "
        f"is fixed, then `{cmdline('lanekit', 'resume', lane.name)}`",
    )


@check(
    "priority.background-burst",
    summary="a Nice / low-priority / Background lane has a large backlog to drain",
    needs_lane=True,
)
def background_burst(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Seed 001: Nice 10 and LowPriorityIO say "yield to everything", which is right for a
    trickle and wrong for 57 jobs waiting after an outage."""
    lane, job = target.lane, target.plist
    if lane is None or job is None:
        return
    nice = job.get("Nice")
    settings = []
    if isinstance(nice, int) and not isinstance(nice, bool) and nice > 0:
        settings.append(f"Nice {nice}")
    if job.get("LowPriorityIO") is True:
        settings.append("LowPriorityIO")
    if job.get("ProcessType") == "Background":
        settings.append("ProcessType Background")
    if not settings:
        return
    queue = ctx.queue(lane)  # the queue, not a directory: any backend may hold the burst
    try:
        queued = 0 if queue.missing() else queue.counts(now=ctx.now().timestamp()).queued
    except LanekitError:
        return
    if queued < BURST_BACKLOG:
        return
    yield Problem(
        Severity.WARNING,
        f"{' and '.join(settings)} {'makes' if len(settings) == 1 else 'make'} the lane yield "
        f"to everything else while {queued} jobs "
        "wait: a burst drains slowly (and Background jobs may be deferred for hours).",
        f"remove nice / low_priority_io / process_type from [lanes.{lane.name}] in lanes.toml "
        "and run `lanekit apply`, or accept the slow drain",
    )
