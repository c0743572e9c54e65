"""Checks on a queue: claims stranded by a dead runner, jobs still running without their runner,
a backlog older than the schedules explain, jobs out of attempts, records that contradict where
their job is, a job that succeeded twice, and one re-submitted after it succeeded; and, on the
lane, jobs that keep timing out.

The queue checks run once per queue (Scope.QUEUE): the target's subject is the queue,
`target.lane` the first lane that drains it (fix commands name it) and `target.drained_by` all
of them. `queue.timeouts` reads one lane's log, so it runs on the lane.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.config import LaneSpec
from lanekit.doctor import DoctorContext, Problem, Scope, Severity, Target, check
from lanekit.doctor.registry import Tally
from lanekit.errors import LanekitError
from lanekit.queue import POSTGRES, holding
from lanekit.queue.observed import ClaimState, ClaimView
from lanekit.queue.records import JobState
from lanekit.run.lanelog import EventName, Reason
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    from lanekit.queue.observed import JobLocation
    from lanekit.queue.records import Record

BACKLOG_PERIODS = 2
"""A queued job that this many scheduled runs after it was queued did not take means the lane
is not keeping up."""
BACKLOG_GRACE = 60.0
"""Seconds after a fire before its run counts as one that should have taken the oldest job."""


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


def _drainers(target: Target) -> tuple[LaneSpec, ...]:
    """The lanes that drain the target's queue (the target's lane alone, outside a queue)."""
    if target.drained_by:
        return target.drained_by
    return (target.lane,) if target.lane is not None else ()


def _stale_after(target: Target) -> float:
    """The longest stale_after of the queue's lanes: a claim is judged by the most patient."""
    return max(lane.stale_after for lane in _drainers(target))


# -- claims -----------------------------------------------------------------------------------


def _claims(lane: LaneSpec, ctx: DoctorContext) -> list[ClaimView]:
    """The claims of the lane's queue, each classified (empty when the queue cannot be read)."""
    queue = ctx.queue(lane)
    if queue.missing() is not None:
        return []
    try:
        return queue.claims(now=ctx.now().timestamp())
    except LanekitError:
        return []


@check(
    "queue.stale-claim",
    summary="a claimed job whose runner is dead (or older than stale_after): nobody will finish it",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def stale_claim(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """kill -9, a crash or a power cut leaves a job in claimed/; every run recovers it, but
    a lane that no longer runs never will. A claim whose job still runs is not stale (see
    queue.orphaned-job). A postgres queue's claims are leases: queue.lease-expired says when
    one lapsed, on whichever host."""
    lane = target.lane
    if lane is None or str(lane.queue.dir).startswith(POSTGRES):
        return
    views = _claims(lane, ctx)
    dead = [v.info for v in views if v.state is ClaimState.STRANDED]
    stale_after = _stale_after(target)
    unknown_old = [
        v.info for v in views if v.state is ClaimState.UNKNOWN and v.info.age > stale_after
    ]
    # `[watch] stale_claim_after` may call a live claim stale sooner than the lanes' own limit.
    hung_after = min(stale_after, ctx.stale_claim_after or stale_after)
    hung = [v.info for v in views if v.state is ClaimState.LIVE and v.info.age > hung_after]
    stranded = dead + unknown_old
    if stranded:
        oldest = max(c.age for c in stranded)
        pids = sorted({str(c.pid) for c in dead if c.pid is not None})
        whose = f" (runner pid {', '.join(pids)} is gone)" if pids else ""
        yield Problem(
            Severity.ERROR,
            f"{len(stranded)} claimed job{'s' if len(stranded) != 1 else ''} in "
            f"{holding(lane.queue.dir, JobState.RUNNING)} "
            f"belong{'s' if len(stranded) == 1 else ''} to no live "
            f"runner{whose}, oldest {_age(oldest)}: nobody will finish "
            f"{'them' if len(stranded) != 1 else 'it'} until recovered.",
            cmdline("lanekit", "recover", lane.name),
        )
    for claim in hung:
        yield Problem(
            Severity.WARNING,
            f"job {claim.job_id} has been running for {_age(claim.age)} (longer than "
            f"{'stale_after' if hung_after == stale_after else 'stale_claim_after'}) in live "
            f"runner pid {claim.pid}: it may be hung.",
            f"if it is stuck: {cmdline('kill', str(claim.pid))}, then "
            f"`{cmdline('lanekit', 'recover', lane.name)}`",
        )


@check(
    "queue.orphaned-job",
    summary="a claimed job still runs but its runner is dead (kill -9, or launchd's SIGKILL "
    "after ExitTimeOut): its claim waits for it",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def orphaned_job(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A job that outlives its runner keeps its claim (correctly: it may still finish the
    work): through its watcher's lock, which records how it ends, or, with the watcher killed
    too, through its copies (lanekit.queue.outcome.job_copies), whose end nobody records: once every
    copy has exited, recovery gives the job back to run again, the attempt not counted."""
    lane = target.lane
    if lane is None:
        return
    orphans = [v.info for v in _claims(lane, ctx) if v.state is ClaimState.ORPHANED]
    for claim in orphans:
        path, recover = claim.path, cmdline("lanekit", "recover", lane.name)
        yield Problem(
            Severity.WARNING,
            f"job {claim.job_id} still runs, claimed {_age(claim.age)} ago, but its runner "
            f"(pid {claim.pid}) is gone: the claim waits until it ends. Its watcher, if alive, "
            "records how, and the next run settles it by that; if the watcher was killed too, "
            "how it ends is lost and the job runs again once every copy has exited.",
            f"wait for it to finish, then `{recover}` (the lane's next run does it too); or "
            f"find it (`{cmdline('pgrep', '-f', path)}` or `{cmdline('lsof', path)}`), stop it, "
            f"then `{recover}`",
        )


@check(
    "queue.backlog",
    summary="the oldest queued job has waited through two scheduled runs (the lane is not "
    "keeping up)",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def backlog(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Jobs that waited through two runs that should have taken them mean the lane does not
    run, or drains fewer jobs per run than arrive. Only fires after the oldest job was queued
    count: a daytime lane's job queued in the evening waits for the morning, and is no
    backlog all night."""
    lane = target.lane
    if lane is None or ctx.queue(lane).missing() is not None:
        return
    try:
        counts = ctx.queue(lane).counts(now=ctx.now().timestamp())
    except LanekitError:
        return
    age = counts.oldest_queued_age
    if age is None:
        return
    now = ctx.now()
    queued_at = now - timedelta(seconds=age)
    passed = sum(_fires_between(other, queued_at, now) for other in _drainers(target))
    if passed < BACKLOG_PERIODS:
        return
    yield Problem(
        Severity.WARNING,
        f"{counts.queued} job{'s' if counts.queued != 1 else ''} queued, the oldest for "
        f"{_age(age)}, through at least {BACKLOG_PERIODS} scheduled runs that did not take "
        "it: the lane is not keeping up.",
        f"{cmdline('lanekit', 'kick', lane.name)}  (run it now); if this recurs, raise "
        "max_jobs of "
        f"[lanes.{lane.name}] in lanes.toml",
    )


def _fires_between(lane: LaneSpec, start: datetime, now: datetime) -> int:
    """How many of `lane`'s fires (up to BACKLOG_PERIODS + 1: all the check needs) came after
    `start` and at least BACKLOG_GRACE before `now` (a run claims its oldest job first, within
    seconds of its fire)."""
    from lanekit.schedule import next_fires

    end = now - timedelta(seconds=BACKLOG_GRACE)
    if lane.schedule.interval is not None:
        seconds = (end - start).total_seconds()
        return max(0, min(BACKLOG_PERIODS + 1, int(seconds // lane.schedule.interval)))
    if not lane.schedule.calendar:
        return 0
    fires = next_fires(lane.schedule.calendar, start, BACKLOG_PERIODS + 1)
    return sum(1 for fire in fires if fire <= end)


def _failed_count(target: Target, ctx: DoctorContext) -> int | None:
    """queue.failed-jobs' tally: the jobs in failed/ that ran out of attempts, not those a
    person cancelled (None: the queue cannot be counted)."""
    split = _failed_split(target, ctx)
    return None if split is None else split[0]


def _failed_split(target: Target, ctx: DoctorContext) -> tuple[int, int] | None:
    """(jobs in failed/ out of attempts, jobs in failed/ cancelled); None when the queue cannot
    be read. Each failed job's reason is read only when failed/ holds any (the common case
    costs the one count)."""
    from lanekit.queue.model import is_cancelled

    lane = target.lane
    if lane is None or ctx.queue(lane).missing() is not None:
        return None
    queue = ctx.queue(lane)
    try:
        if not queue.counts(now=ctx.now().timestamp()).failed:
            return 0, 0
        cancelled = 0
        ids = queue.failed_ids()
        for job_id in ids:
            view = queue.job(job_id)
            if view is not None and is_cancelled(view.error):
                cancelled += 1
    except LanekitError:
        return None
    return len(ids) - cancelled, cancelled


def _more_failed(target: Target, new: int, total: int) -> Problem:
    """queue.failed-jobs again, for the jobs that failed since the watchdog's last pass."""
    shown = cmdline("lanekit", "jobs", *target.lanes[:1], "--state", "failed")
    return Problem(
        Severity.WARNING,
        f"{new} more job{'s' if new != 1 else ''} failed in queue {target.subject} since the "
        f"last pass ({total} in failed/ now).",
        f"{shown}  (each job's .error says why), then {_retry_hint(target.lanes[0])}"
        if target.lanes
        else f"{shown}  (each job's .error says why)",
    )


@check(
    "queue.failed-jobs",
    summary="jobs are in failed/ (out of attempts) and wait for a person",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
    tally=Tally(_failed_count, _more_failed),
)
def failed_jobs(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """failed/ is where jobs go to be looked at; nothing retries them by itself. A job a person
    cancelled is there on purpose: it is neither "out of attempts" nor an alert."""
    lane = target.lane
    split = _failed_split(target, ctx)
    if lane is None or split is None or not split[0]:
        return
    if lane.plain:
        yield from _last_run_failed(lane, ctx)
        return
    failed, cancelled = split
    also = f" ({cancelled} more there were cancelled on purpose)" if cancelled else ""
    listing = cmdline("lanekit", "jobs", lane.name, "--state", "failed")
    yield Problem(
        Severity.WARNING,
        f"{failed} job{'s' if failed != 1 else ''} in "
        f"{holding(lane.queue.dir, JobState.FAILED)} ran out of attempts and will not run again by "
        f"{'itself' if failed == 1 else 'themselves'}{also}.",
        f"{listing}  (each job's .error says why), then {_retry_hint(lane.name)}",
    )


def _last_run_failed(lane: LaneSpec, ctx: DoctorContext) -> Iterator[Problem]:
    """A plain lane's failed/ is its history of failed runs, and the next fire runs the
    command again: only its latest run failing needs a person."""
    try:
        latest = ctx.queue(lane).page(1, 1).items
    except LanekitError:
        return
    if not latest or latest[0].state is not JobState.FAILED:
        return
    record = latest[0]
    why = (record.error or "failed").partition("\n")[0]
    yield Problem(
        Severity.WARNING,
        f"the last run of plain lane {lane.name} failed ({why}); the next fire runs it again.",
        f"{cmdline('lanekit', 'job', lane.name, record.job_id)}  (its stderr tail), then "
        f"{cmdline('lanekit', 'kick', lane.name)} to run it now",
    )


def _retry_hint(lane: str) -> str:
    """How failed jobs run again, once their cause is fixed (`lanekit retry`)."""
    every = cmdline("lanekit", "retry", "--failed", lane)
    return f"`lanekit retry ID` for each fixed one (`{every}`: every failed job, cancelled too)"


def _stale_running(
    lane: LaneSpec, claimed: str, record: Record, location: JobLocation | None
) -> Problem:
    """The finding for a record a settle could not update, whose job is not in claimed/
    (`claimed`): `running` (the claim's own line, or an earlier version's record), or `queued`
    (a claim of the version whose marks carried the attempt wrote none)."""
    says = f"job {record.job_id}: its record says {record.state}"
    inspect = cmdline("lanekit", "job", lane.name, record.job_id)
    if location is None:
        return Problem(
            Severity.WARNING,
            f"{says}, but no file of it is in {claimed} "
            "or anywhere else in the queue: the job is not running and its record is stale.",
            f"{inspect}  (the record is stale: the job ended and its file was removed)",
        )
    folder = Path(location.where).parent
    if location.state is JobState.SUCCEEDED:
        return Problem(
            Severity.WARNING,
            f"{says}, but no file of it is in {claimed}; "
            f"the file is in {folder}: the job succeeded and its record could not "
            "be updated, so the guard does not know the id already ran.",
            f"{inspect}  (the record is stale: the job finished, it is not running)",
        )
    if location.state is JobState.FAILED:
        return Problem(
            Severity.WARNING,
            f"{says}, but no file of it is in {claimed}; "
            f"the file is in {folder}: the job failed and its record could not "
            "be updated.",
            f"{inspect}  (the record is stale: the job failed, it is not running)",
        )
    return Problem(
        Severity.WARNING,
        f"{says}, but no file of it is in {claimed}; the "
        f"file waits in {folder} to run again and its record could not be updated.",
        f"{inspect}  (the record is stale: the job is queued, not running)",
    )


@check(
    "queue.record-mismatch",
    summary="a job record contradicts where its file is (running with nothing in claimed/, or "
    "succeeded while queued)",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
)
def record_mismatch(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """`lanekit jobs` and the re-execution guard trust the records; a record that disagrees
    with the files misleads both. A settle that cannot write its record (disk full) still moves
    the file, leaving `running` behind; a succeeded id dropped into queue/ by a producer that
    bypassed `enqueue` will be skipped, not run."""
    lane = target.lane
    if lane is None or ctx.queue(lane).missing() is not None:
        return
    queue = ctx.queue(lane)
    try:
        mismatches = queue.contradictions()
    except LanekitError:
        return
    ran = {other.name: other for other in _drainers(target)}
    first = lane
    for record, location in mismatches:
        # The fix names the lane that ran the job, when its record says which.
        lane = ran.get(record.lane or "", first)
        if record.state in {JobState.RUNNING, JobState.QUEUED}:
            yield _stale_running(lane, holding(first.queue.dir, JobState.RUNNING), record, location)
        elif location is not None:
            yield Problem(
                Severity.WARNING,
                f"job {record.job_id}: its record says succeeded, but its file waits in "
                f"{Path(location.where).parent}: the next run will not run it (the guard moves "
                "it to done/ unrun).",
                f"{cmdline('lanekit', 'job', lane.name, record.job_id)}  (to inspect it); to do "
                "the work "
                "again, enqueue it under a new id",
            )


def _done_events(lane: LaneSpec, ctx: DoctorContext) -> Counter[str]:
    return _events(lane, ctx, EventName.DONE)


def _skipped_events(lane: LaneSpec, ctx: DoctorContext) -> Counter[str]:
    """Ids the guard skipped (re-submitted after they succeeded), from the lane log."""
    return _events(lane, ctx, EventName.SKIPPED, reason=Reason.ALREADY_SUCCEEDED)


def _events(lane: LaneSpec, ctx: DoctorContext, name: str, **match: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for event in ctx.lane_events(lane):
        if event.get("event") != name or not event.get("job"):
            continue
        if all(event.get(key) == value for key, value in match.items()):
            counts[event["job"]] += 1
    return counts


def _done_files(lane: LaneSpec, ctx: DoctorContext) -> Counter[str]:
    """Per id, the finished copies its queue keeps (done/ is bucketed by day, so one id can sit
    in two buckets)."""
    queue = ctx.queue(lane)
    return Counter() if queue.missing() is not None else queue.success_copies()


@dataclass(frozen=True, slots=True)
class SuccessCounts:
    """How often one id succeeded, and how often it was re-submitted and skipped."""

    done_events: int
    """`done` events in the logs of the lanes on the queue."""
    done_files: int
    """Files of the id in done/ (a skipped copy is kept there too)."""
    skipped: int
    """`skipped reason=already-succeeded` events: copies the guard moved to done/ unrun."""

    @property
    def successes(self) -> int:
        """Runs that succeeded: the done/ files that are not skipped copies, or the `done`
        events, whichever says more."""
        return max(self.done_events, self.done_files - self.skipped)


def _success_counts(
    target: Target, ctx: DoctorContext
) -> tuple[dict[str, SuccessCounts], dict[str, list[str]]]:
    """Per id: its success counts over the queue; and which lanes logged a `done` for it."""
    drainers = _drainers(target)
    events: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    by_lane: dict[str, list[str]] = {}
    for other in drainers:
        done = _done_events(other, ctx)
        events.update(done)
        skipped.update(_skipped_events(other, ctx))
        for job in done:
            by_lane.setdefault(job, []).append(other.name)
    files = _done_files(drainers[0], ctx) if drainers else Counter()
    counts = {
        job: SuccessCounts(events[job], files[job], skipped[job])
        for job in set(events) | set(files) | set(skipped)
    }
    return counts, by_lane


@check(
    "queue.duplicate-success",
    summary="a job id succeeded twice (two `done` events, or two files in done/ that are not a "
    "skipped re-submission)",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def duplicate_success(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The seed's four runs of one JSON: the failure lanekit exists to prevent. Any trace of
    it means something bypassed the claim (a second producer, a copied queue, a hand move).
    A copy the guard skipped is kept in done/ too: it is not a second success."""
    lane = target.lane
    if lane is None:
        return
    counts_by_job, lanes_by_job = _success_counts(target, ctx)
    for job, counts in sorted(counts_by_job.items()):
        by_log = counts.done_events > 1
        by_files = counts.done_files - counts.skipped > 1
        if not (by_log or by_files):
            continue
        how = []
        if by_log:
            who = ", ".join(dict.fromkeys(lanes_by_job.get(job, [])))
            how.append(f"{counts.done_events} `done` events in the logs of lane {who}")
        if by_files:
            how.append(
                f"{counts.done_files} files in {holding(lane.queue.dir, JobState.SUCCEEDED)}"
            )
        first = lanes_by_job.get(job, [lane.name])[0]
        yield Problem(
            Severity.ERROR,
            f"job {job} succeeded more than once ({' and '.join(how)}): its work was done twice.",
            f"{cmdline('lanekit', 'job', first, job)}  (its record), and find what "
            "re-queued it: a second "
            "producer, or a file moved back by hand",
        )


TIMEOUT_WINDOW = 10
"""The lane's last this many job outcomes in its log are what `queue.timeouts` looks at."""
TIMEOUT_LIMIT = 3
"""Timeouts among them that make a lane one that keeps timing out (one is an incident)."""
_OUTCOMES = frozenset({EventName.DONE, EventName.FAILED, EventName.REQUEUED})


@check(
    "queue.timeouts",
    summary="the lane's jobs keep running into its timeout (they hang, or the limit is too low)",
    needs_lane=True,
    needs_plist=False,
)
def timeouts(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A job that times out spends an attempt and holds the lane for the whole timeout: a
    lane where that keeps happening drains little and fails jobs for the limit, not for what
    they did. Counted from the lane log's last job outcomes (`reason=timeout`)."""
    lane = target.lane
    if lane is None or lane.timeout is None:
        return
    recent = [
        event
        for event in ctx.lane_events(lane)
        if event.get("event") in _OUTCOMES and event.get("job")
    ][-TIMEOUT_WINDOW:]
    timed_out = [event for event in recent if event.get("reason") == Reason.TIMEOUT]
    if len(timed_out) < TIMEOUT_LIMIT:
        return
    from lanekit.schedule import format_duration

    limit = format_duration(lane.timeout)
    yield Problem(
        Severity.WARNING,
        f"{len(timed_out)} of the lane's last {len(recent)} jobs timed out (timeout {limit}), "
        f"the latest job {timed_out[-1]['job']}: they hang, or need longer than the limit.",
        f"lanekit job {lane.name} {cmdline(timed_out[-1]['job'])}  (its stderr tail), then "
        f"fix the job or raise timeout of [lanes.{lane.name}] in lanes.toml and run "
        "`lanekit apply`",
    )


@check(
    "queue.resubmitted",
    summary="a job id was enqueued again after it succeeded, and skipped (not run twice)",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
)
def resubmitted(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The re-execution guard at work: the id's record says succeeded, so the copy went to
    done/ unrun (`skipped reason=already-succeeded`). Worth knowing (a producer sends ids
    twice), not a failure."""
    lane = target.lane
    if lane is None:
        return
    counts_by_job, _ = _success_counts(target, ctx)
    for job, counts in sorted(counts_by_job.items()):
        if not counts.skipped or counts.successes > 1:
            continue
        times = "once" if counts.skipped == 1 else f"{counts.skipped} times"
        yield Problem(
            Severity.INFO,
            f"job {job} was re-submitted after it succeeded ({times}) and skipped, not run "
            "again: the re-execution guard at work.",
            f"{cmdline('lanekit', 'job', lane.name, job)}  (its record); to do the work again, "
            "enqueue it "
            "under a new id",
        )
