"""`apply` and `plan` with the watchdog: it is a lane (lanekit.config builds it from `[watch]`),
so reconcile installs, updates and reloads it like any other; this module adds the one thing a
lane does not do: when `[watch]` is removed from lanes.toml, the watchdog is removed too
(other lanes gone from lanes.toml are only offered for removal: they may hold a queue's work,
the watchdog holds none).

The removal is the offer reconcile already makes, carried out with reconcile.remove, for the
watchdog of this lanes.toml only: an installed lane named `watch` whose snapshot puts its queue
in the watchdog's directory under the state dir (a user's own lane `watch` never does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lanekit.config import Config
from lanekit.config.watch import WATCH_LANE, watch_dir
from lanekit.errors import LanekitError
from lanekit.reconcile import ActionKind, ApplyResult, Outcome, Result, apply, remove
from lanekit.service.launchd import Launchd
from lanekit.service.manager import ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec

RETIRED = "[watch] is gone from lanes.toml: the watchdog is removed"


def apply_with_watchdog(
    config: Config, paths: Paths, launchd: Launchd | ServiceManager, **options: Any
) -> ApplyResult:
    """reconcile.apply (same options), then the removal of a watchdog `[watch]` no longer
    asks for (planned only, with `dry_run`)."""
    result = apply(config, paths, launchd, **options)
    if config.watch is not None or options.get("lanes"):
        return result
    outcomes = [
        _retire(outcome, config, paths, launchd, dry_run=bool(options.get("dry_run")))
        if _is_retired_watchdog(outcome, paths)
        else outcome
        for outcome in result.outcomes
    ]
    return replace(result, outcomes=tuple(outcomes))


def _is_retired_watchdog(outcome: Outcome, paths: Paths) -> bool:
    action = outcome.action
    if action.kind is not ActionKind.REMOVE or action.lane != WATCH_LANE:
        return False
    try:
        spec = RunSpec.load(paths.snapshot_for(action.label))
    except LanekitError:
        return False
    return spec.queue_dir == watch_dir(paths.state, action.label)


def _retire(
    outcome: Outcome,
    config: Config,
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    dry_run: bool,
) -> Outcome:
    action = replace(outcome.action, reason=RETIRED, bootout=True)
    if dry_run:
        return Outcome(action, Result.PLANNED, RETIRED, outcome.pid)
    try:
        removed = remove(config, paths, launchd, action.label, wait=5.0)
    except LanekitError as exc:
        return Outcome(
            action,
            Result.SKIPPED,
            f"not removed yet ({exc.message}); the next `lanekit apply` removes it",
            outcome.pid,
        )
    return Outcome(action, Result.DONE, _done(removed.booted_out, removed.deleted))


def _done(booted_out: bool, deleted: Sequence[object]) -> str:
    steps = (["booted out"] if booted_out else []) + (
        ["plist and snapshot deleted"] if deleted else []
    )
    return "removed: " + (", ".join(steps) or "nothing was left")
