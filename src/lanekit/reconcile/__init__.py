"""Reconcile lanes.toml with launchd: `plan` (pure) and `apply`, `remove`, `kick` (effects).

One module per step: `plan` (pure), `observe` (the facts it is fed), `apply`, `stopper` (safe
bootouts, shared by apply and remove), `remove`, `kick`. This package re-exports their public
names; the modules import each other, never the package.

The model
---------
Each lane has two installed artefacts: its plist (what launchd runs, in the LaunchAgents dir)
and its run snapshot (what `lanekit run` reads at the start of every run, paths.snapshot_for).
`plan` compares the desired bytes of both with what is on disk and with what launchd has loaded,
and picks exactly one action per lane:

  create        not installed, not loaded: write plist + snapshot, bootstrap
  update        plist differs in meaning (or the plist file is missing while loaded), or
                launchd has an older definition loaded than the rendered plist (its own copy,
                compared on what `launchctl print` shows: lanekit.service.launchd.drift): write
                what changed;
                bootout + bootstrap when loaded ("update+reload"), bootstrap when not
  rewrite       the plist file differs in bytes only (reformatted) and launchd's loaded copy
                is current: write the file, no bootout
  load          installed plist is current but launchd does not have it: bootstrap
  snapshot      plist current and loaded, only the snapshot differs: write the snapshot. No
                reload: the runner reads the snapshot when a run starts, and the atomic rename
                means a run in progress keeps the copy it already read - so this is safe even
                while the lane is running.
  unchanged     nothing to do
  remove        installed by lanekit (plist marker LANEKIT_LANE) but no longer in lanes.toml:
                OFFERED only; `lanekit remove LANE` carries it out
  skip-running  would need a bootout but the lane is running: nothing is written, so the next
                `apply` still sees the change (and `apply` twice is a no-op only once everything
                has been applied). `--wait S` or `--force` carry out the deferred steps.

Safety of a reload: `apply` takes the lane lock (the same flock the runner holds for a whole
run) before it boots a lane out, re-checks list() for a pid while holding it, and keeps it until
the label has left launchd, so a run that launchd starts in that window finds the lane busy and
claims nothing. The lock is dropped before the bootstrap (a RunAtLoad run must not find the lane
busy). The plist and snapshot are written after the bootout succeeded, so a failed bootout
leaves the old, still-loaded files in place and the next `apply` tries again.

Other decisions:
- an unload is followed by polling until the label is gone, bounded by ExitTimeOut + 5 s
  (still stopping is waited out, not loaded counts as gone). A load the manager refuses as
  BUSY (the old instance still draining) is retried once after another drain; any other
  refusal (lanekit.errors.ServiceError) fails that lane only, with its words.
- A label disabled in launchd by something other than `lanekit pause` is enabled before its
  bootstrap, as `brew services start` does: lanes.toml lists the lane, and apply is the user's
  explicit request to run it. A paused lane stays paused (lanekit.reconcile.pause has the whole
  rule).
- `--wait S` is one budget for the whole apply; lanes that need no waiting are done first.
"""

from __future__ import annotations

from lanekit.reconcile.apply import ApplyResult, Outcome, Result, apply
from lanekit.reconcile.kick import KickResult, kick
from lanekit.reconcile.observe import lock_held, observe
from lanekit.reconcile.plan import Action, ActionKind, plan
from lanekit.reconcile.remove import RemoveResult, remove
from lanekit.reconcile.stopper import Progress, Timing, Waiting
from lanekit.service.installs import Desired, Installed, desired_lane
from lanekit.state.schemas import APPLY_SCHEMA

__all__ = [
    "APPLY_SCHEMA",
    "Action",
    "ActionKind",
    "ApplyResult",
    "Desired",
    "Installed",
    "KickResult",
    "Outcome",
    "Progress",
    "RemoveResult",
    "Result",
    "Timing",
    "Waiting",
    "apply",
    "desired_lane",
    "kick",
    "lock_held",
    "observe",
    "plan",
    "remove",
]
