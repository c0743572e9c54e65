#!/usr/bin/env python3
"""Soak run: simulated days of lanes on the emulated launchd domain, under its one clock
(lanekit.state.clock), with faults planted at known times and a watchdog that must report each one.

    scripts/soak.py --days 30

Five lanes drain two queues on their schedules; a producer enqueues jobs every emulated hour.
Emulated time moves through `lanekit.service.emulated.clock.advance`, which fires only what
launchd
would fire (every calendar minute and StartInterval boundary that has a lane, with real
processes), so a month costs minutes of wall time, not a month. Every job's command appends
`<id> <lane>` to a ledger, so executions are counted independently of lanekit's records.

Faults, each planted at a known emulated time and undone by hand `--fix-after` later:
  runner-killed     a runner SIGKILLed while its job runs (the claim is stranded)
  job-hangs         a job that hangs until the lane's `timeout` kills it, twice: failed/
  command-missing   the lane's command removed from its PATH
  log-dir-deleted   the directory of a lane's launchd logs deleted (launchd: exit 78)
  booted-out        a lane booted out by hand (`launchctl bootout`)
  plist-edited      an installed plist edited by hand (drift from lanes.toml)
  burst             57 jobs queued, then a 6-hour outage (the Mac asleep): on wake every lane
                    of the queue fires at once, and what they cannot take is a backlog

With `[watch]` configured (the default when lanekit has the watchdog), a `command` channel
appends every notice to alerts.jsonl with the emulated time it arrived. The report gives, per
fault: when it was planted, when it became visible, when the first alert about it arrived and
when it was resolved; overall: jobs lost, jobs that succeeded twice, alerts sent twice (a new
notice for a problem already open), faults never alerted and alerts later than `missed_after`
+ `every` after the fault became visible. Exit 1 when any of those is not 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from soakkit.accounting import Notice, SoakResult, duplicate_alerts, match_alerts
from soakkit.faults import FAULT_KINDS, Fault, plan_faults
from soakkit.run import run_soak, watch_available
from soakkit.world import WatchSettings

# The soak's API as tests/test_soak.py reaches it, through this script.
__all__ = [
    "FAULT_KINDS",
    "Fault",
    "Notice",
    "WatchSettings",
    "duplicate_alerts",
    "main",
    "match_alerts",
    "plan_faults",
    "run_soak",
]


def _render(result: SoakResult) -> str:
    lines = [
        f"soak: {result.days} emulated days ({result.start} to {result.end}) in "
        f"{result.wall_seconds:.0f} s of wall time; {result.runs} launchd starts",
        f"jobs: {result.jobs} enqueued, {result.done} done, {result.failed} failed, "
        f"{result.waiting} waiting; lost {result.lost}, succeeded twice "
        f"{result.succeeded_twice}; executions {result.executions} "
        f"({result.executions_beyond_one} beyond one)",
    ]
    if result.watched:
        lines.append(
            f"alerts: {result.notices} notices; sent twice {result.alerts_sent_twice}; faults "
            f"never alerted {result.faults_never_alerted}; alerted late "
            f"{result.faults_alerted_late}"
        )
    else:
        lines.append("alerts: no watchdog in this lanekit (lanekit.watch): not measured")
    lines.append(
        f"{'fault':<16} {'planted':<16} {'visible':<16} {'alerted':<16} {'delay':>7}  "
        f"{'resolved':<16} alert"
    )
    for fault in result.faults:
        delay = "-" if fault.alert_delay_minutes is None else f"{fault.alert_delay_minutes:.0f}m"
        lines.append(
            f"{fault.name:<16} {(fault.planted_at or '-')[5:16]:<16} "
            f"{(fault.visible_at or '-')[5:16]:<16} {(fault.alerted_at or '-')[5:16]:<16} "
            f"{delay:>7}  {(fault.resolved_at or '-')[5:16]:<16} {fault.alert or '-'}"
        )
        for note in fault.notes:
            lines.append(f"    note: {note}")
    if result.unmatched_alerts:
        lines.append("alerts no planted fault explains: " + ", ".join(result.unmatched_alerts))
    lines.append("ok" if result.ok else "NOT OK")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak and print (or --json) its report; exit 1 unless it is ok."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--dir", type=Path, help="work here (kept) instead of a temp dir")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-watch", action="store_true", help="run without [watch]")
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be at least 2 (faults need room)")
    watch = None if args.no_watch or not watch_available() else WatchSettings()
    if args.dir is not None:
        result = run_soak(days=args.days, root=args.dir.resolve(), watch=watch)
    else:
        with tempfile.TemporaryDirectory(prefix="lanekit-soak-") as tmp:
            result = run_soak(days=args.days, root=Path(tmp), watch=watch)
    print(json.dumps(asdict(result), indent=2) if args.json else _render(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
