"""The soak run: emulated hours on the one clock, faults planted and fixed on time."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from lanekit.reconcile import remove
from soakkit.accounting import SoakResult, account, waiting
from soakkit.faults import KINDS, Fault, plan_faults
from soakkit.world import HOUR, JOB_SECONDS, WatchSettings, World, make_world


def _hours(start: datetime, end: datetime) -> Iterator[datetime]:
    at = start + HOUR
    while at <= end:
        yield at
        at += HOUR


def _fix_due(world: World, fixes: list[tuple[datetime, Fault]], fix_after: timedelta) -> None:
    """Undo each fault `fix_after` after it became visible (as a person would, by hand)."""
    for at, fault in list(fixes):
        if at + fix_after <= world.now():
            fix = KINDS[fault.name].fix
            assert fix is not None
            fix(world, fault)
            fault.fixed_at = world.now()
            fixes.remove((at, fault))


def run_soak(
    *,
    days: int,
    root: Path,
    watch: WatchSettings | None,
    fix_after: timedelta = timedelta(hours=3),
    start: datetime | None = None,
    per_hour: int = 2,
) -> SoakResult:
    """Soak for `days` emulated days from `start` (default: tomorrow 00:00) under `root`."""
    began = time.monotonic()
    world = make_world(root, watch)
    if start is None:
        start = (world.now() + timedelta(days=1)).replace(hour=0, minute=0, second=0)
    start = start.replace(microsecond=0)
    world.advance(start, asleep=True)  # from the real now to the first day: a quiet night
    world.wait_idle()
    end = start + timedelta(days=days)
    faults = plan_faults(start, days)
    runs = 0
    pending = list(faults)
    fixes: list[tuple[datetime, Fault]] = []
    for hour in _hours(start, end):
        # Fixes first: planting the next fault moves the clock on, past fires a fix is due for.
        _fix_due(world, fixes, fix_after)
        for fault in [f for f in pending if f.at < hour]:
            runs += world.advance(fault.at)
            fault.planted_at = world.now()
            KINDS[fault.name].plant(world, fault)
            pending.remove(fault)
        for fault in faults:
            kind = KINDS[fault.name]
            if fault.visible_at is None and fault.planted_at is not None and kind.seen:
                kind.seen(world, fault)
            due = fault.visible_at is not None and fault.fixed_at is None and kind.fix
            if due and fault not in [f for _, f in fixes]:
                fixes.append((max(fault.visible_at or hour, fault.planted_at or hour), fault))
        if world.now() > hour:
            continue  # an outage slept through this hour: nothing was enqueued in it
        runs += world.advance(hour)
        for n in range(per_hour):
            world.enqueue("inbox" if n % 2 == 0 else "outbox", {"seconds": JOB_SECONDS})
    # Drain: hour by hour until nothing waits (at most a day, in which every lane fires).
    for hour in _hours(end, end + timedelta(days=1)):
        _fix_due(world, fixes, fix_after)
        if not waiting(world) and not fixes:
            break
        runs += world.advance(hour)
    world.wait_idle()
    result = account(
        world, faults, start=start, days=days, runs=runs, wall=time.monotonic() - began
    )
    for name in world.config.lanes:
        remove(world.config, world.paths, world.domain, name, force=True)
    return result


def watch_available() -> bool:
    """Whether this lanekit has the watchdog (`[watch]`, lanekit.watch)."""
    return importlib.util.find_spec("lanekit.watch") is not None
