"""One watchdog pass (`lanekit watch`, what launchd runs every `every`).

1. Load lanes.toml (it must have `[watch]`; one someone other than you or root could have
   written is refused, exit 69: lanekit.config.refuse_untrusted), take the channels `lanekit
   apply` installed from the watchdog's snapshot (applied_channels: never what lanes.toml says
   since) and the watchdog lane's lane lock (waiting for a pass that holds it:
   lanekit.watch.memory); log `start` to the watchdog's lane log.
2. Look: doctor's alert checks (`@check(..., alert=True)`: which checks alert, and what each
   reads, is the check's own knowledge) on every lane and queue of lanes.toml, with
   `[watch]`'s missed_after and stale_claim_after, every pass from scratch (no cache: a pass
   over 100 lanes costs well under 1% of a CPU at the default `every`, docs/benchmarks.md
   (j)); their findings become alerts (lanekit.watch.alerts). An open alert whose check
   keeps a tally that grew since the last pass (more jobs in failed/) is sent again, in the
   check's words for what is new.
3. Diff against the memory: new -> sent once, open -> again after `repeat`, gone -> one
   resolved notice. The daily digest is due once a day at `digest`.
4. Deliver: notices a channel refused on an earlier pass first, then this pass's, each to every
   channel; a channel that fails is logged (`channel-failed`) and keeps the notice for the next
   pass, and never stops the other channels.
5. Remember (atomically).
6. Ping `[watch] heartbeat`, if any (lanekit.watch.heartbeat): `<url>/fail` with a summary when
   an open alert is an error or a channel refused a notice, else the URL; a ping that fails or
   hangs (HEARTBEAT_TIMEOUT) is logged and changes nothing else. Then log `finish`.

`--dry-run` does 1-3 without the lock and without sending, logging or remembering anything.
`now` is the pass's clock (naive local time, like doctor's): the pass, its memory, its log
lines and doctor's checks all read it, so a harness can drive the watchdog on emulated time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.config import Config, LaneSpec, find_config, lane_environment, load_config
from lanekit.config.watch import WATCH_LANE, WatchSpec, memory_path, webhook_digest
from lanekit.doctor import (
    DoctorContext,
    Finding,
    Severity,
    Target,
    lane_target,
    queue_targets,
    registry,
    run_checks,
)
from lanekit.doctor.registry import alert_checks
from lanekit.errors import ExitCode, LanekitError, UsageError
from lanekit.run.jobenv import lane_process_env
from lanekit.run.lanelog import EventName, Reason
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.schemas import WATCH_SCHEMA
from lanekit.system.quoting import cmdline
from lanekit.watch import memory as memory_store
from lanekit.watch.alerts import Alert, Notice, Remembered, alerts_from, diff
from lanekit.watch.channels import OSASCRIPT, Channel, ChannelError, channels_for
from lanekit.watch.heartbeat import HEARTBEAT_TIMEOUT, Ping
from lanekit.watch.heartbeat import ping as send_ping

if TYPE_CHECKING:
    from lanekit.run.lanelog import LaneLog


PASS_WAIT = 60.0
"""Seconds a pass waits for another pass that holds the lock before it gives up."""


@dataclass(frozen=True, slots=True)
class WatchRequest:
    """What `lanekit watch` was asked to do."""

    config_path: Path | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notice handed to one channel."""

    channel: str
    notice: Notice
    error: str | None = None
    """Why the channel did not take it (it is retried on the next pass); None: delivered."""
    retry: bool = False
    """The notice was kept from an earlier pass (this is its retry)."""


@dataclass(frozen=True, slots=True)
class PassResult:
    """What one pass saw and did."""

    label: str
    dry_run: bool
    open: tuple[Alert, ...]
    notices: tuple[Notice, ...]
    """Issued by this pass (new, repeat, resolved, digest), in order."""
    retried: tuple[Notice, ...] = ()
    """Kept from earlier passes for channels that had refused them."""
    deliveries: tuple[Delivery, ...] = ()
    channels: tuple[str, ...] = ()
    skipped: str | None = None
    """Why the pass did nothing (another pass held the lock past PASS_WAIT)."""
    notes: tuple[str, ...] = ()
    heartbeat: Ping | None = None
    """The heartbeat ping after the pass (None without `[watch] heartbeat`, or in a dry run)."""

    def delivered(self, notice: Notice) -> bool:
        """Some channel took `notice` in this pass (False when every channel refused it, or
        there is no channel)."""
        return any(d.notice is notice and d.error is None for d in self.deliveries)

    @property
    def failed_deliveries(self) -> tuple[Delivery, ...]:
        """Deliveries a channel refused."""
        return tuple(d for d in self.deliveries if d.error is not None)

    @property
    def exit_code(self) -> ExitCode:
        """1 when a channel refused a notice (it is kept for the next pass), else 0."""
        return ExitCode.FAILURE if self.failed_deliveries else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        """The versioned `lanekit watch --json` document."""
        return {
            "schema": WATCH_SCHEMA,
            "label": self.label,
            "dry_run": self.dry_run,
            "skipped": self.skipped,
            "channels": list(self.channels),
            "open": [_alert_json(alert) for alert in self.open],
            "notices": [notice.to_json() for notice in self.notices],
            "retried": [notice.to_json() for notice in self.retried],
            "deliveries": [
                {
                    "channel": d.channel,
                    "kind": str(d.notice.kind),
                    "id": d.notice.check,
                    "subject": d.notice.subject,
                    "ok": d.error is None,
                    "error": d.error,
                    "retry": d.retry,
                }
                for d in self.deliveries
            ],
            "notes": list(self.notes),
            "heartbeat": None if self.heartbeat is None else self.heartbeat.to_json(),
        }


def _alert_json(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.check,
        "severity": str(alert.severity),
        "subject": alert.subject,
        "subject_kind": str(alert.kind),
        "lanes": list(alert.lanes),
        "message": alert.message,
        "fix": alert.fix,
    }


def watch_config(request: WatchRequest, paths: Paths, env: Mapping[str, str]) -> Config:
    """lanes.toml with its `[watch]`; a UsageError when it has none."""
    config = load_config(find_config(request.config_path, env, paths.cwd), paths)
    if config.watch is None:
        raise UsageError(
            f"{config.path}: no [watch] table, so there is no watchdog to run",
            'add [watch] (e.g. every = "5m", command = ["/path/to/notifier"]) and run '
            "`lanekit apply`",
        )
    return config


def applied_channels(
    config: Config, lane: LaneSpec, watch: WatchSpec, paths: Paths, dry_run: bool
) -> tuple[WatchSpec, Mapping[str, str] | None]:
    """`watch` with the channels `lanekit apply` installed for the watchdog `lane` (notify,
    command, webhook, from its snapshot), and the environment it installed (None when the
    snapshot predates recording it). A pass runs these, never what lanes.toml says now: a
    channel changes when apply says so, as every lane's command does, and launchd's
    scheduled pass exists only once apply installed it.

    A watchdog never applied (no snapshot: a pass by hand) has nothing applied to run, so it
    takes lanes.toml's channels (lanes.toml itself passed lanekit.config's ownership check).
    A dry run sends nothing, so with an unreadable snapshot it shows lanes.toml's channels.
    Otherwise an unreadable snapshot, one applied from another lanes.toml, or one from a
    lanekit that did not record the channels is a UsageError asking for `lanekit apply`; a
    snapshot someone else could have written is refused (UnsafeStateError, exit 69).
    """
    from lanekit.state.snapshot import RunSpec

    path = paths.snapshot_for(lane.label)
    hint = f"run `{cmdline('lanekit', 'apply', '-c', config.path)}` to install [watch]"
    if not os.path.lexists(path):
        return watch, None
    try:
        spec = RunSpec.load(path)
    except UsageError as exc:
        if dry_run:
            return watch, None
        raise UsageError(
            f"{exc.message}; the watchdog {lane.label} sends through the channels apply "
            "installed, and this snapshot names none it can read",
            hint,
        ) from None
    project = config.path.resolve()
    if spec.project is not None and spec.project != project:
        raise UsageError(
            f"the watchdog {lane.label} was applied from {spec.project}, not from {project}",
            hint,
        )
    if spec.watch is None:
        if dry_run:
            return watch, spec.environment
        raise UsageError(
            f"{path}: the watchdog's snapshot records no channels (an older lanekit applied "
            "it), so this pass has nothing it may send through",
            hint,
        )
    channels = spec.watch
    webhook = None
    if channels.webhook_sha256 is not None:
        # The snapshot keeps only the URL's digest (a secret): lanes.toml's URL is posted to
        # while it is still the one apply installed.
        if watch.webhook is None or webhook_digest(watch.webhook) != channels.webhook_sha256:
            raise UsageError(
                f"{config.path}: [watch] webhook is not the one `lanekit apply` installed "
                f"for {lane.label}, and a pass posts only where apply said",
                hint,
            )
        webhook = watch.webhook
    heartbeat = None
    if channels.heartbeat_sha256 is not None:
        # Likewise the heartbeat (a secret too): pinged while it is the URL apply installed.
        if watch.heartbeat is None or webhook_digest(watch.heartbeat) != channels.heartbeat_sha256:
            raise UsageError(
                f"{config.path}: [watch] heartbeat is not the one `lanekit apply` installed "
                f"for {lane.label}, and a pass pings only what apply said",
                hint,
            )
        heartbeat = watch.heartbeat
    applied = replace(
        watch,
        notify=channels.notify,
        command=channels.command,
        webhook=webhook,
        heartbeat=heartbeat,
    )
    return applied, spec.environment


def installed_channels(
    config: Config,
    paths: Paths,
    env: Mapping[str, str],
    osascript: str = OSASCRIPT,
    *,
    dry_run: bool = False,
) -> tuple[list[Channel], str | None]:
    """The channels a pass of `config`'s watchdog sends through, and the heartbeat URL it
    pings: what `lanekit apply` installed (the watchdog lane's snapshot), never what
    lanes.toml says now (editing it changes nothing until apply); the channels run with the
    watchdog lane's environment."""
    watch = config.watch
    assert watch is not None  # watch_config refuses a config without it
    lane = config.lanes[WATCH_LANE]
    applied, environment = applied_channels(config, lane, watch, paths, dry_run)
    # The channels' programs get the watchdog lane's environment as launchd gives it, also
    # in a pass run by hand: a notifier found only on the terminal's PATH must fail here as
    # it does under launchd.
    lane_env = lane_process_env(env, lane.label, environment or lane_environment(lane))
    return channels_for(applied, osascript=osascript, env=lane_env), applied.heartbeat


def pass_clock(paths: Paths, env: Mapping[str, str]) -> Callable[[], datetime]:
    """The time a pass reads: the launchd backend's clock (lanekit.state.clock: the wall clock, or
    on the emulated domain its emulated time), as the runners, `status` and doctor read it."""
    from lanekit.service import clock_for

    return clock_for(paths, env).now


def run_pass(
    request: WatchRequest,
    paths: Paths,
    *,
    env: Mapping[str, str] | None = None,
    launchd: Launchd | ServiceManager | None = None,
    now: Callable[[], datetime] | None = None,
    osascript: str = OSASCRIPT,
    channels: Sequence[Channel] | None = None,
    wait: float = PASS_WAIT,
    config: Config | None = None,
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
) -> PassResult:
    """One pass (see the module docstring). `channels` replaces the ones `[watch]` turns on
    (the heartbeat is then lanes.toml's) and `config` the lanes.toml loaded from `request`
    (for harnesses: lanes.toml cannot name an in-memory queue); `osascript` is the macos
    channel's program; `now` defaults to pass_clock; `heartbeat_timeout` bounds the ping."""
    from lanekit.service import open_manager

    env = os.environ if env is None else env
    now = pass_clock(paths, env) if now is None else now
    config = watch_config(request, paths, env) if config is None else config
    watch = config.watch
    assert watch is not None  # watch_config refuses a config without it (so must a harness)
    lane = config.lanes[WATCH_LANE]
    if channels is None:
        chosen, heartbeat = installed_channels(
            config, paths, env, osascript, dry_run=request.dry_run
        )
    else:
        chosen, heartbeat = list(channels), watch.heartbeat
    names = tuple(channel.name for channel in chosen)
    if launchd is None:
        launchd = open_manager(paths, env, config.service_manager)
    dog = _Watchdog(config, watch, lane, paths, launchd, now, heartbeat, heartbeat_timeout)
    if request.dry_run:
        memory = memory_store.load(dog.memory_file)
        looked = dog.look(memory, write_page=False)
        return PassResult(
            lane.label,
            True,
            looked.open,
            looked.notices,
            retried=tuple(p.notice for p in memory.outbox),
            channels=names,
            notes=looked.notes,
        )
    from lanekit.run.lanelock import lane_lock_path
    from lanekit.run.lanelog import LaneLog

    lock = memory_store.PassLock(lane_lock_path(lane.queue.dir, lane.name), wait=wait)
    log = LaneLog(lane.log_path, WATCH_LANE, clock=lambda: now().timestamp())
    if not lock.acquire():
        log.event(EventName.SKIPPED, reason=Reason.LANE_BUSY)
        return PassResult(
            lane.label, False, (), (), channels=names, skipped="another pass holds the lock"
        )
    try:
        log.event(EventName.START, pid=os.getpid())
        return dog.run(chosen, log)
    finally:
        lock.release()


@dataclass(frozen=True, slots=True)
class _Looked:
    open: tuple[Alert, ...]
    notices: tuple[Notice, ...]
    remembered: Mapping[str, Remembered]
    failed: Mapping[str, int]
    digest_day: str | None
    at: datetime
    notes: tuple[str, ...] = ()


@dataclass(slots=True)
class _Watchdog:
    """One pass over one lanes.toml."""

    config: Config
    watch: WatchSpec
    lane: LaneSpec
    paths: Paths
    launchd: Launchd | ServiceManager
    now: Callable[[], datetime]
    heartbeat: str | None = None
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT

    @property
    def memory_file(self) -> Path:
        return memory_path(self.lane.queue.dir)

    def run(self, channels: Sequence[Channel], log: LaneLog) -> PassResult:
        """Steps 2-5 (the lock is held)."""
        memory = memory_store.load(self.memory_file)
        looked = self.look(memory, write_page=True)
        deliveries: list[Delivery] = []
        outbox: list[memory_store.Pending] = []
        for pending in memory.outbox:
            wanted = [c for c in channels if c.name in pending.channels]
            refused = _deliver(pending.notice, wanted, deliveries, log, retry=True)
            if refused:
                outbox.append(memory_store.Pending(pending.notice, refused))
        for notice in looked.notices:
            refused = _deliver(notice, channels, deliveries, log, retry=False)
            if refused:
                outbox.append(memory_store.Pending(notice, refused))
        memory_store.save(
            self.memory_file,
            memory_store.Memory(
                alerts=looked.remembered,
                outbox=tuple(outbox),
                failed=looked.failed,
                completed_at=self.now().timestamp(),
                digest_day=looked.digest_day,
                history=memory_store.record_history(memory.history, looked.notices, looked.at),
            ),
        )
        failed = sum(1 for d in deliveries if d.error is not None)
        beat = self.ping(looked.open, deliveries, log)
        log.event(
            EventName.FINISH,
            exit=1 if failed else 0,
            open=len(looked.open),
            sent=len(looked.notices),
            undelivered=failed or None,
        )
        return PassResult(
            self.lane.label,
            False,
            looked.open,
            looked.notices,
            retried=tuple(p.notice for p in memory.outbox),
            deliveries=tuple(deliveries),
            channels=tuple(c.name for c in channels),
            notes=looked.notes,
            heartbeat=beat,
        )

    def ping(
        self, open_now: Sequence[Alert], deliveries: Sequence[Delivery], log: LaneLog
    ) -> Ping | None:
        """Step 6: the heartbeat (lanekit.watch.heartbeat): `/fail` with the summary when an
        open alert is an error or a channel refused a notice, else the plain URL. Its failure
        is logged (as the `heartbeat` channel, URL redacted) and changes nothing else."""
        if self.heartbeat is None:
            return None
        errors = [a for a in open_now if a.severity is Severity.ERROR]
        refused = [d for d in deliveries if d.error is not None]
        lines = [f"lanekit watchdog {self.lane.label}: {len(open_now)} open"]
        lines += [f"{a.severity} {a.check} {a.kind}:{a.subject}: {a.message}" for a in errors]
        lines += [f"channel {d.channel} refused a notice: {d.error}" for d in refused]
        beat = send_ping(
            self.heartbeat,
            failed=bool(errors or refused),
            summary="\n".join(lines) + "\n",
            timeout=self.heartbeat_timeout,
        )
        if beat.error is not None:
            log.event(
                EventName.CHANNEL_FAILED,
                channel="heartbeat",
                alert=str(beat.kind),
                subject=beat.shown,
                error=beat.error,
            )
        return beat

    def look(self, memory: memory_store.Memory, *, write_page: bool) -> _Looked:
        """Steps 2 and 3: what is open, and what to send about it; a due digest links the
        day's timeline page when `write_page` (not in a dry run, which writes nothing)."""
        from lanekit.watch.digest import digest_due, digest_notice, write_day_page

        findings, notes, ctx, targets = self.findings()
        at = self.now()
        alerts, failed = _renew_grown(alerts_from(findings), targets, ctx, memory.failed)
        result = diff(alerts, memory.alerts, now=at, repeat=self.watch.repeat)
        notices = list(result.notices)
        digest_day = memory.digest_day
        if self.watch.digest is not None and digest_due(self.watch.digest, at, digest_day):
            page = None
            if write_page:
                day = at.date() - timedelta(days=1)
                try:
                    page = write_day_page(self.config, self.launchd, self.paths, day, at)
                except (LanekitError, OSError) as exc:
                    # The digest still goes out, without its link: a page is a convenience.
                    reason = exc.message if isinstance(exc, LanekitError) else str(exc)
                    notes = (*notes, f"the digest's timeline page was not written: {reason}")
            notices.append(digest_notice(self.config, memory.history, at, self.watch, page))
            digest_day = f"{at:%Y-%m-%d}"
        return _Looked(
            open=tuple(alerts),
            notices=tuple(notices),
            remembered=result.remembered,
            failed=failed,
            digest_day=digest_day,
            at=at,
            notes=notes,
        )

    def findings(self) -> tuple[list[Finding], tuple[str, ...], DoctorContext, list[Target]]:
        """Doctor's alert checks (lanekit.doctor.registry.alert_checks) on every lane and queue
        of lanes.toml, and the targets they examined."""
        ctx = DoctorContext(
            self.paths,
            config=self.config,
            launchd=self.launchd,
            now=self.now,
            missed_after=timedelta(seconds=self.watch.missed_after),
            stale_claim_after=float(self.watch.stale_claim_after),
        )
        lanes = list(self.config.lanes.values())
        targets = [lane_target(lane, self.paths) for lane in lanes]
        drained = [lane for lane in lanes if lane.name != WATCH_LANE]
        targets += queue_targets(drained, self.config)
        report = run_checks(targets, ctx, alert_checks())
        return list(report.findings), report.notes, ctx, targets


def _deliver(
    notice: Notice,
    channels: Sequence[Channel],
    deliveries: list[Delivery],
    log: LaneLog,
    *,
    retry: bool,
) -> tuple[str, ...]:
    """Hand `notice` to each channel; the names of those that refused it."""
    refused: list[str] = []
    for channel in channels:
        try:
            channel.send(notice)
        except ChannelError as exc:
            refused.append(channel.name)
            deliveries.append(Delivery(channel.name, notice, exc.message, retry))
            log.event(
                EventName.CHANNEL_FAILED,
                channel=channel.name,
                alert=notice.check,
                subject=notice.subject,
                error=exc.message,
            )
            continue
        deliveries.append(Delivery(channel.name, notice, None, retry))
    return tuple(refused)


def _renew_grown(
    alerts: Sequence[Alert],
    targets: Sequence[Target],
    ctx: DoctorContext,
    before: Mapping[str, int],
) -> tuple[list[Alert], dict[str, int]]:
    """An open alert whose check keeps a tally (queue.failed-jobs: the jobs in failed/) that
    grew since the last pass is sent again, once for the pass, in the check's words for what
    is new; the tallies, by alert key, for the memory."""
    checks = registry()
    by_subject = {(target.kind, target.subject): target for target in targets}
    counts: dict[str, int] = {}
    renewed: list[Alert] = []
    for alert in alerts:
        tally = checks[alert.check].tally
        target = by_subject.get((alert.kind, alert.subject))
        total = tally.count(target, ctx) if tally is not None and target is not None else None
        if tally is None or target is None or total is None:
            renewed.append(alert)
            continue
        counts[alert.key] = total
        grew = total - before.get(alert.key, 0)
        if grew <= 0 or alert.key not in before:
            renewed.append(alert)
            continue
        problem = tally.grew(target, grew, total)
        renewed.append(replace(alert, message=problem.message, fix=problem.fix, renewed=True))
    return renewed, counts
