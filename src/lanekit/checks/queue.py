"""Checks on the lane's queue: claims stranded by a dead runner, a backlog older than the
schedule explains, jobs out of attempts, and a job that succeeded twice."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

from lanekit.config import LaneSpec
from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.errors import LanekitError

BACKLOG_PERIODS = 2
"""A queued job older than this many schedule periods means the lane is not keeping up."""


def _age(seconds: float) -> str:
    """`3h 05m`, `12m`, `40s`: ages in findings."""
    total = int(seconds)
    if total >= 86400:
        return f"{total // 86400}d {total % 86400 // 3600}h"
    if total >= 3600:
        return f"{total // 3600}h {total % 3600 // 60:02d}m"
    if total >= 60:
        return f"{total // 60}m"
    return f"{total}s"


def schedule_period(lane: LaneSpec, ctx: DoctorContext) -> float | None:
    """The longest wait between two fires of the lane's schedule, in seconds (None: on demand)."""
    from lanekit.schedule import next_fires

    if lane.schedule.interval is not None:
        return float(lane.schedule.interval)
    if not lane.schedule.calendar:
        return None
    fires = next_fires(lane.schedule.calendar, ctx.now(), 16)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(fires)]
    return max(gaps) if gaps else None


@check(
    "queue.stale-claim",
    summary="a claimed job whose runner is dead (or older than stale_after): nobody will finish it",
    needs_lane=True,
    needs_plist=False,
)
def stale_claim(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """kill -9, a crash or a power cut leaves a job in claimed/; every run recovers it, but
    a lane that no longer runs never will."""
    lane = target.lane
    if lane is None or not lane.queue.dir.is_dir():
        return
    try:
        claims = ctx.queue(lane).list_claims(now=ctx.now().timestamp())
    except LanekitError:
        return
    dead = [c for c in claims if c.owner_alive is False]
    unknown_old = [c for c in claims if c.owner_alive is None and c.age > lane.stale_after]
    hung = [c for c in claims if c.owner_alive is True and c.age > lane.stale_after]
    stranded = dead + unknown_old
    if stranded:
        oldest = max(c.age for c in stranded)
        pids = sorted({str(c.pid) for c in dead if c.pid is not None})
        whose = f" (runner pid {', '.join(pids)} is gone)" if pids else ""
        yield Problem(
            Severity.ERROR,
            f"{len(stranded)} claimed job{'s' if len(stranded) != 1 else ''} in "
            f"{lane.queue.dir / 'claimed'} belong{'s' if len(stranded) == 1 else ''} to no live "
            f"runner{whose}, oldest {_age(oldest)}: nobody will finish "
            f"{'them' if len(stranded) != 1 else 'it'} until recovered.",
            f"lanekit recover {lane.name}",
        )
    for claim in hung:
        yield Problem(
            Severity.WARNING,
            f"job {claim.job_id} has been running for {_age(claim.age)} (longer than "
            f"stale_after) in live runner pid {claim.pid}: it may be hung.",
            f"if it is stuck: kill {claim.pid}, then `lanekit recover {lane.name}`",
        )


@check(
    "queue.backlog",
    summary="the oldest queued job is older than two schedule periods (the lane is not keeping up)",
    needs_lane=True,
    needs_plist=False,
)
def backlog(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Jobs that wait longer than two runs should have taken mean the lane does not run, or
    drains fewer jobs per run than arrive."""
    lane = target.lane
    if lane is None or not lane.queue.dir.is_dir():
        return
    period = schedule_period(lane, ctx)
    if period is None:
        return
    try:
        counts = ctx.queue(lane).counts(now=ctx.now().timestamp())
    except LanekitError:
        return
    age = counts.oldest_queued_age
    if age is None or age <= BACKLOG_PERIODS * period:
        return
    yield Problem(
        Severity.WARNING,
        f"{counts.queued} job{'s' if counts.queued != 1 else ''} queued, the oldest for "
        f"{_age(age)}, more than {BACKLOG_PERIODS} schedule periods "
        f"({_age(BACKLOG_PERIODS * period)}): the lane is not keeping up.",
        f"lanekit kick {lane.name}  (run it now); if this recurs, raise max_jobs of "
        f"[lanes.{lane.name}] in lanes.toml",
    )


@check(
    "queue.failed-jobs",
    summary="jobs are in failed/ (out of attempts) and wait for a person",
    needs_lane=True,
    needs_plist=False,
)
def failed_jobs(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """failed/ is where jobs go to be looked at; nothing retries them by itself."""
    lane = target.lane
    if lane is None or not lane.queue.dir.is_dir():
        return
    try:
        counts = ctx.queue(lane).counts(now=ctx.now().timestamp())
    except LanekitError:
        return
    if not counts.failed:
        return
    yield Problem(
        Severity.WARNING,
        f"{counts.failed} job{'s' if counts.failed != 1 else ''} in "
        f"{lane.queue.dir / 'failed'} ran out of attempts and will not run again by "
        f"{'itself' if counts.failed == 1 else 'themselves'}.",
        f"lanekit jobs {lane.name} --state failed  (each job's .error says why), then enqueue "
        "the fixed ones again",
    )


def _done_events(lane: LaneSpec) -> Counter[str]:
    from lanekit.lanelog import read_events

    counts: Counter[str] = Counter()
    for event in read_events(lane.log_path, rotated=True):
        if event.get("event") == "done" and event.get("job"):
            counts[event["job"]] += 1
    return counts


def _done_files(lane: LaneSpec) -> Counter[str]:
    """Job ids in done/ (bucketed by day, so one id can sit in two buckets)."""
    done = lane.queue.dir / "done"
    counts: Counter[str] = Counter()
    if not done.is_dir():
        return counts
    from lanekit.queue import split_owned_name

    for path in done.rglob("*.json"):
        owned = split_owned_name(path.name)
        counts[owned[0] if owned is not None else path.name[: -len(".json")]] += 1
    return counts


@check(
    "queue.duplicate-success",
    summary="a job id succeeded twice (two `done` events, or two files in done/)",
    needs_lane=True,
    needs_plist=False,
)
def duplicate_success(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The seed's four runs of one JSON: the failure lanekit exists to prevent. Any trace of
    it means something bypassed the claim (a second producer, a copied queue, a hand move)."""
    lane = target.lane
    if lane is None:
        return
    siblings = [other for other in ctx.lanes() if other.queue.name == lane.queue.name] or [lane]
    events: Counter[str] = Counter()
    for other in siblings:
        events.update(_done_events(other))
    mine = _done_events(lane)
    by_log = sorted(job for job, n in events.items() if n > 1 and job in mine)
    # done/ belongs to the queue: report it on the queue's first lane only, not once per lane.
    first = min(other.name for other in siblings)
    by_files = (
        sorted(job for job, n in _done_files(lane).items() if n > 1) if lane.name == first else []
    )
    for job in sorted(set(by_log) | set(by_files)):
        how = []
        if job in by_log:
            how.append(f"{events[job]} `done` events in the lane logs")
        if job in by_files:
            how.append(f"{_done_files(lane)[job]} files in {lane.queue.dir / 'done'}")
        yield Problem(
            Severity.ERROR,
            f"job {job} succeeded more than once ({' and '.join(how)}): its work was done twice.",
            f"lanekit job {lane.name} {job}  (its record), and find what re-queued it: a second "
            "producer, or a file moved back by hand",
        )
