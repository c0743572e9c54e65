"""The pass cache: each (check, subject) result of the last full pass, with what it depended
on, so the next pass (lanekit.watch.entry) can reuse it without running a check.

A full pass (lanekit.watch.watchdog) takes a `Snapshot` of its inputs BEFORE it looks, then
runs doctor's checks, then `write_cache` records, for every unit (one alert check on one lane
or queue):

- `deps`: named sets of paths whose stat fingerprints (lanekit.watch.fingerprint) it read:
  `config` (lanes.toml, and which interpreter ran the pass), `files:LANE` (its plist,
  snapshot, stdout/stderr files and their directories, pause marker, log directory), `cmd:LANE`
  (each directory of the job's PATH and of the caller's, the command and interpreter files),
  `queue:QUEUE` (the queue's own directory), and one set per directory a queue check reads
  (lanekit.doctor.checks.queue.READS): `running:QUEUE` (claimed/), `queued:QUEUE` (queue/),
  `failed:QUEUE`, `succeeded:QUEUE` (done/ itself); the queue's other directories (temp
  files, records, delayed jobs: no alert check counts them; a delayed job comes back
  through queue/) are not watched. A healthy claims or backlog result marks its set
  `empty_ok`: the lean pass then accepts a change to it while it holds no job file; failed/
  and done/ are `listed` (LISTED): a change to their stat counts only if their entries moved;
- `buckets`: each done/ day bucket of each queue, fingerprinted with its names
  (fingerprint.names_print), and `drains`: the lanes whose new `done` events may account for
  files added to them (queue.duplicate-success's incremental form,
  lanekit.doctor.checks.queue.READS);
- `launchd`: the labels whose launchd facts it read (their entry in the emulated domain; on a
  Mac their launchctl rows, print-disabled entry and, where lanekit.watch.fingerprint
  .launchctl_print says so, their `print`);
- `logs`: the lanes whose logs it read, folded incrementally (lanekit.watch.logfold) from the
  offsets recorded here; queue.duplicate-success also keeps its queue's Seen filter;
- `found`: whether it had findings, and `until`: the epoch time until which it holds when
  nothing moves (lane.missed-run: lanekit.doctor.checks.lane.missed_run_expiry, moved on by new run
  evidence in the lean pass as missed_run_renewal says; a healthy queue.backlog: lanekit
  .checks.queue.backlog_expiry; claims while there are any, an open backlog and a running
  job: only this pass, as their verdicts move with time or with processes that leave no
  trace in a file).

Taking the snapshot first means an input that changes while the pass looks is seen as changed
by the next pass (which then looks again): a cached result is never newer than its inputs.

The cache also keeps what the lean pass needs to record a pass as the full one does: the
watchdog's lock, lane log and memory file, the number of open alerts, and the time a repeat
or the digest is due; on launchctl also the domain's candidates, the launchctl binary and
timeout, and what the domain choice was made from (lanekit.watch.launchdlook.choice_inputs),
and a full pass is due at most REVERIFY after this one (the loaded definition of a healthy
label is the one launchd fact no cheap call shows). A pass that had notes (launchd could not
be asked), an undelivered notice, or no `--config` writes no cache (the next pass is a full
one).
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.config.watch import WATCH_LANE
from lanekit.errors import LanekitError
from lanekit.queue import holding, open_queue, places
from lanekit.queue.records import JobState
from lanekit.system.atomic import write_atomic
from lanekit.watch import fingerprint
from lanekit.watch.entry import absolute, cache_header, cache_path
from lanekit.watch.logfold import (
    DUPLICATE_SUCCESS,
    LOG_CHECKS,
    MISSED_RUN,
    Rule,
    Seen,
    fold_files,
)

if TYPE_CHECKING:
    from lanekit.config import Config, LaneSpec
    from lanekit.config.watch import WatchSpec
    from lanekit.doctor import DoctorContext, Finding, Target
    from lanekit.service.launchd import Launchd
    from lanekit.state.paths import Paths
    from lanekit.watch.memory import Memory

REVERIFY = 3600.0
"""On launchctl, seconds after a full pass by which the next full one is due whatever else:
the bound on how long a loaded definition changed behind lanekit's back (bootout, then a
bootstrap from another file, the label's row as before) can go unseen (plist.drift)."""
DRIFT = "plist.drift"
VOLATILE_QUEUE_CHECKS = ("queue.stale-claim", "queue.orphaned-job", "queue.backlog")
"""Their verdict moves with time or with a runner's death while their directories are not
empty: the claims checks are reused only while the queue holds no claim, a healthy backlog
until lanekit.doctor.checks.queue.backlog_expiry (the oldest queued job two periods old)."""
BACKLOG = "queue.backlog"


@dataclass(frozen=True, slots=True)
class LogRead:
    """One lane log as the snapshot read it."""

    path: str
    inode: int | None
    offset: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a full pass looked at, fingerprinted before it looked."""

    sets: Mapping[str, tuple[str, ...]]
    prints: Mapping[str, list[fingerprint.Print]]
    listed: Mapping[str, list[list[int] | None]]
    """The LISTED sets' entries (fingerprint.listing_print), listed after their stat."""
    buckets: Mapping[str, Mapping[str, Any]]
    """queue -> done/ day bucket -> {"print": its stat, "names": fingerprint.names_print}."""
    drains: Mapping[str, list[str]]
    """queue -> the lanes that drain it (whose `done` events account for its new files)."""
    labels: Mapping[str, Any]
    domain: fingerprint.Print
    """The emulated domain's state file, fingerprinted before it was parsed."""
    offset: float
    launchctl: Mapping[str, Any] | None
    """On launchctl: how to ask it again (binary, timeout, candidates) and what the domain
    choice was made from; None on the emulated domain."""
    logs: Mapping[str, LogRead]
    seen: Mapping[str, Seen]
    busy_queues: frozenset[str]


def snapshot(
    config: Config, paths: Paths, env: Mapping[str, str], launchd: Launchd
) -> Snapshot | None:
    """Fingerprint every input of a pass over `config` whose checks ask `launchd`; None when
    launchctl did not answer as the lean pass needs it to (lanekit.watch.launchdlook
    .Unanswered)."""
    from lanekit.state.backend import backend_name

    sets = _path_sets(config, paths)
    # Each directory's stat before anything is listed in it (a bucket added meanwhile moves
    # done/'s print; a file added meanwhile moves its bucket's).
    prints = {key: fingerprint.stat_prints(group) for key, group in sets.items()}
    listed = {
        key: [fingerprint.listing_print(path) for path in group]
        for key, group in sets.items()
        if key.split(":", 1)[0] in LISTED
    }
    buckets = _buckets(config)
    domain: fingerprint.Print = None
    offset = 0.0
    launchctl: dict[str, Any] | None = None
    if backend_name(env, sys.platform) == "emulated":
        domain = fingerprint.stat_print(str(paths.emulator / "domain.json"))
        state = fingerprint.emulated_state(str(paths.emulator))
        offset = fingerprint.emulated_offset(state)
        labels = {
            lane.label: fingerprint.label_print(state, lane.label, os.getpid())
            for lane in config.lanes.values()
        }
    else:
        launchctl, labels = _launchctl_labels(config, env, launchd)
        if launchctl is None:
            return None
    logs: dict[str, LogRead] = {}
    seen: dict[str, Seen] = {}
    ids: dict[str, list[str]] = {}
    for lane in config.lanes.values():
        logs[lane.name], done = _read_log(lane)
        ids.setdefault(lane.queue.name, []).extend(done)
    from lanekit.doctor.checks.queue import success_ids

    for queue, drained in _drains(config).items():
        # The ids with a file in done/ too: a new `done` must be new to both (READS).
        ids[queue].extend(success_ids(open_queue(drained[0].queue.dir)))
    for queue, done in ids.items():
        bloom = Seen(2 * len(done))
        for job in done:
            bloom.add(job)
        seen[queue] = bloom
    busy = frozenset(
        lane.queue.name
        for lane in config.lanes.values()
        if lane.name != WATCH_LANE and _busy(lane, offset)
    )
    return Snapshot(
        sets=sets,
        prints=prints,
        listed=listed,
        buckets=buckets,
        drains={queue: [lane.name for lane in lanes] for queue, lanes in _drains(config).items()},
        labels=labels,
        domain=domain,
        offset=offset,
        launchctl=launchctl,
        logs=logs,
        seen=seen,
        busy_queues=busy,
    )


def _launchctl_labels(
    config: Config, env: Mapping[str, str], domain: Launchd
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(how to ask launchctl again, each label's fingerprint with its `print`: which ones the
    cache keeps is known only after the checks, write_cache trims the rest), asking what the
    pass's checks ask; (None, {}) when launchctl did not answer plainly, or the pass asks
    some other launchd."""
    from lanekit.service.launchd.launchctl import LaunchctlDomain
    from lanekit.watch.launchdlook import Look, Unanswered, choice_inputs

    if not isinstance(domain, LaunchctlDomain):
        return None, {}
    look = Look(domain.launchctl, domain.timeout, domain.candidates)
    try:
        labels = {
            lane.label: fingerprint.launchctl_print(look, lane.label, os.getpid(), service=True)
            for lane in config.lanes.values()
        }
    except Unanswered:
        return None, {}
    how = {
        "launchctl": domain.launchctl,
        "timeout": domain.timeout,
        "candidates": list(domain.candidates),
        "choice": choice_inputs(env),
    }
    return how, labels


def _trimmed(labels: Mapping[str, Any], units: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The launchctl fingerprints as the cache keeps them: a label's `print` only where
    lanekit.watch.fingerprint.launchctl_print says a check's result depends on it (a last
    exit status other than 0, an open plist.drift finding)."""
    drifted = {
        label
        for unit in units
        if unit["check"] == DRIFT and unit["found"]
        for label in unit["launchd"]
    }
    return {
        label: print_
        if label in drifted or fingerprint.needs_service(print_)
        else fingerprint.without_service(print_)
        for label, print_ in labels.items()
    }


def _busy(lane: LaneSpec, offset: float) -> bool:
    """Jobs claimed: the verdicts on claims move with time and with their runners' lives
    (queued jobs: backlog_expiry; delayed ones come back through queue/, which is watched)."""
    import time

    queue = open_queue(lane.queue.dir, durable=lane.queue.durable)
    if queue.missing() is not None:
        return False
    try:
        counts = queue.counts(now=time.time() + offset)
    except LanekitError:
        return True  # unreadable: never call it quiet
    return bool(counts.claimed)


def _read_log(lane: LaneSpec) -> tuple[LogRead, list[str]]:
    """The lane log up to its current size (rotated copies too, for the done ids)."""
    from lanekit.run.lanelog import log_files

    path = str(lane.log_path)
    try:
        info = lane.log_path.stat()
    except OSError:
        return LogRead(path, None, 0), []
    files = [str(name) for name in log_files(lane.log_path, rotated=True)]
    whole, end = fold_files(files, path, info.st_size)
    return LogRead(path, info.st_ino, end), whole.done


def _path_sets(config: Config, paths: Paths) -> dict[str, tuple[str, ...]]:
    sets: dict[str, tuple[str, ...]] = {"config": (str(config.path),)}
    for lane in config.lanes.values():
        label = lane.label
        # The watchdog writes its own stdout every pass (its summary line): its output files
        # only matter to lane.missed-run's explanation of a silence, never to a healthy result.
        own = () if lane.name == WATCH_LANE else (lane.stdout_path, lane.stderr_path)
        sets[f"files:{lane.name}"] = tuple(
            str(p)
            for p in (
                paths.plist_for(label),
                paths.snapshot_for(label),
                *own,
                lane.stdout_path.parent,
                lane.stderr_path.parent,
                paths.pause_marker_for(label),
                lane.log_path.parent,
            )
        )
        sets[f"cmd:{lane.name}"] = _command_paths(lane, paths)
    for name, drained in _drains(config).items():
        where = drained[0].queue.dir
        # The queue's own directory (lanekit.queue.places' first: missing() reads it), then the
        # directory of each state a queue check reads; its other places hold nothing an
        # alert check counts (temp files, records, delayed jobs, and the lanes' logs/, which
        # files:LANE watches).
        sets[f"queue:{name}"] = (str(places(where)[0]),)
        for state in QUEUE_STATES:
            sets[f"{state}:{name}"] = (holding(where, state),)
    return sets


QUEUE_STATES = (JobState.RUNNING, JobState.QUEUED, JobState.FAILED, JobState.SUCCEEDED)
LISTED = (JobState.FAILED, JobState.SUCCEEDED)
"""Queue directories whose stat moves with every run of a lane (the queue check's probe
rename, lanekit.queue.safety) while what their readers read does not: a moved stat is
checked against their entries (fingerprint.listing_print) before it counts as a change."""


def _drains(config: Config) -> dict[str, list[LaneSpec]]:
    """Each queue a queue check looks at, and the lanes that drain it (the watchdog's own
    queue holds only its memory, rewritten every pass: not a queue target)."""
    found: dict[str, list[LaneSpec]] = {}
    for lane in config.lanes.values():
        if lane.name != WATCH_LANE:
            found.setdefault(lane.queue.name, []).append(lane)
    return found


def _buckets(config: Config) -> dict[str, dict[str, Any]]:
    """Each queue's done/ day buckets: the stat first, then the names (see snapshot)."""
    found: dict[str, dict[str, Any]] = {}
    for name, drained in _drains(config).items():
        root = Path(holding(drained[0].queue.dir, JobState.SUCCEEDED))
        try:
            days = sorted(str(day) for day in root.iterdir())
        except OSError:
            days = []
        found[name] = {}
        for bucket in days:
            print_ = fingerprint.stat_print(bucket)
            names = fingerprint.job_files(bucket)
            if names is not None:
                found[name][bucket] = {"print": print_, "names": fingerprint.names_print(names)}
    return found


def _command_paths(lane: LaneSpec, paths: Paths) -> tuple[str, ...]:
    """Where the command checks look: each PATH directory (the job's and the caller's, which
    words a fix), and each command as found there or given."""
    from lanekit.doctor import lane_target
    from lanekit.doctor.checks import jobfacts

    job = lane_target(lane, paths).plist or {}
    cwd = Path(jobfacts.cwd(job) if job else "/")
    names = [lane.command[0]] if lane.command else []
    if job:
        program = jobfacts.program(job)
        inline = jobfacts.shell_command(jobfacts.arguments(job))
        names += [name for name in (program, inline) if name]
    # The caller's PATH is where jobfacts.caller_has (shutil.which) looks, to word a fix.
    caller = os.environ.get("PATH", os.defpath)
    dirs = [*jobfacts.job_path(job).split(":"), *caller.split(":")]
    found: list[str] = []
    for directory in dict.fromkeys(part for part in dirs if part):
        where = cwd / directory
        found.append(str(where))
        found += [str(where / name) for name in names if "/" not in name]
    found += [str(cwd / name) for name in names if "/" in name]
    return tuple(dict.fromkeys(found))


def _units(
    targets: Sequence[Target],
    findings: Iterable[Finding],
    checks: Sequence[str],
    ctx: DoctorContext,
    shot: Snapshot,
) -> list[dict[str, Any]]:
    from lanekit.doctor import SubjectKind, registry
    from lanekit.doctor.checks.lane import missed_run_expiry, missed_run_renewal
    from lanekit.doctor.checks.queue import READS, backlog_expiry

    found = {(f.id, str(f.kind), f.subject) for f in findings}
    now = ctx.now().timestamp()
    units: list[dict[str, Any]] = []
    for target in targets:
        lanes = target.drained_by if target.kind is SubjectKind.QUEUE else (target.lane,)
        named = [lane for lane in lanes if lane is not None]
        queue = target.subject if target.kind is SubjectKind.QUEUE else None
        deps = ["config", *(f"{kind}:{lane.name}" for lane in named for kind in ("files", "cmd"))]
        for check_id in checks:
            chk = registry()[check_id]
            if not chk.applies_to(target):
                continue
            reads = READS.get(check_id, QUEUE_STATES) if queue is not None else ()
            held = [f"{state}:{queue}" for state in reads]
            on_queue = [f"queue:{queue}", *held] if queue is not None else []
            has = (check_id, str(target.kind), target.subject) in found
            until: float | None = float("inf")
            renew = None
            if check_id == MISSED_RUN:
                until = None if has else missed_run_expiry(target, ctx)
                renew = None if until is None else missed_run_renewal(target, ctx)
            elif check_id == BACKLOG and queue is not None:
                until = None if has else backlog_expiry(target, ctx)
            elif check_id in VOLATILE_QUEUE_CHECKS and queue in shot.busy_queues:
                until = None
            labels = [lane.label for lane in named]
            if any(fingerprint.volatile(shot.labels.get(label)) for label in labels):
                until = None
            units.append(
                {
                    "check": check_id,
                    "kind": str(target.kind),
                    "subject": target.subject,
                    "found": has,
                    "until": now if until is None else min(until, 1e18),
                    "deps": [*deps, *on_queue],
                    "launchd": labels,
                    "logs": [lane.name for lane in named] if check_id in LOG_CHECKS else [],
                    "seen": queue if check_id == DUPLICATE_SUCCESS else None,
                    "renew": renew,
                }
            )
    return units


EMPTY_OK = (JobState.RUNNING, JobState.QUEUED)
"""The directories whose readers' healthy results stand while they hold no job file
(lanekit.doctor.checks.queue.READS)."""


def _empty_ok(shot: Snapshot, units: Sequence[Mapping[str, Any]]) -> set[str]:
    """The sets of EMPTY_OK directories every unit reading them is healthy on: a change to
    one of them is accepted by the lean pass while it holds no job file."""
    keys = {key for key in shot.sets if key.split(":", 1)[0] in EMPTY_OK}
    for unit in units:
        if unit["found"]:
            keys.difference_update(unit["deps"])
    return keys


def run_rules() -> list[Rule]:
    """lanekit.timeline.events' event rules, each with whether its kind is run evidence, for
    the lean pass to renew lane.missed-run results with (lanekit.watch.logfold.Rule)."""
    from lanekit.timeline.events import RULES, RUN_KINDS

    return [
        (rule.event, tuple(sorted(rule.when.items())), rule.kind in RUN_KINDS) for rule in RULES
    ]


def _due(watch: WatchSpec, memory: Memory, at: datetime) -> float:
    """The first time a repeat or the digest is due without anything else moving."""
    times = [float("inf")]
    if watch.repeat > 0:
        times += [item.last_sent.timestamp() + watch.repeat for item in memory.alerts.values()]
    if watch.digest is not None:
        day = at.date()
        if memory.digest_day == f"{at:%Y-%m-%d}":
            day += timedelta(days=1)
        times.append(datetime.combine(day, watch.digest).timestamp())
    return min(*times, 1e18)


def write_cache(
    config_arg: Path,
    shot: Snapshot,
    *,
    paths: Paths,
    targets: Sequence[Target],
    findings: Iterable[Finding],
    checks: Sequence[str],
    ctx: DoctorContext,
    watch: WatchSpec,
    lane: LaneSpec,
    memory: Memory,
    memory_file: Path,
    open_alerts: int,
    channels: Sequence[str],
) -> None:
    """Record the pass (see the module docstring), atomically, 0600 under the state dir."""
    from lanekit.run.lanelock import lane_lock_path

    at = ctx.now()
    units = _units(targets, findings, checks, ctx, shot)
    due = _due(watch, memory, at)
    labels: Mapping[str, Any] = shot.labels
    empty_ok = _empty_ok(shot, units)
    if shot.launchctl is not None:
        due = min(due, at.timestamp() + REVERIFY)
        labels = _trimmed(shot.labels, units)
    document = {
        "config": absolute(str(config_arg)),
        "backend": "emulated" if shot.launchctl is None else "launchctl",
        "domain": {
            "dir": str(paths.emulator),
            "path": str(paths.emulator / "domain.json"),
            "print": shot.domain,
        },
        "launchctl": shot.launchctl,
        "offset": shot.offset,
        "caller_path": os.environ.get("PATH"),
        "label": lane.label,
        "lane": lane.name,
        "lock": str(lane_lock_path(lane.queue.dir, lane.name)),
        "log": str(lane.log_path),
        "memory": str(memory_file),
        "memory_print": fingerprint.stat_print(str(memory_file)),
        "open": open_alerts,
        "channels": ", ".join(channels) or "no channel",
        "due": due,
        "sets": {key: list(group) for key, group in shot.sets.items()},
        "empty_ok": sorted(empty_ok),
        "listed": shot.listed,
        "buckets": {queue: dict(found) for queue, found in shot.buckets.items()},
        "drains": shot.drains,
        "prints": shot.prints,
        "labels": labels,
        "logs": {
            name: {"path": r.path, "inode": r.inode, "offset": r.offset}
            for name, r in shot.logs.items()
        },
        "seen": {queue: bloom.dump() for queue, bloom in shot.seen.items()},
        "units": units,
        "rules": run_rules(),
    }
    target = Path(cache_path(str(paths.state), absolute(str(config_arg))))
    write_atomic(target, marshal.dumps((cache_header(), document)), durable=False)


def forget(paths: Paths, config_arg: Path) -> None:
    """Remove the cache of `config_arg` (the next pass is a full one)."""
    Path(cache_path(str(paths.state), absolute(str(config_arg)))).unlink(missing_ok=True)
