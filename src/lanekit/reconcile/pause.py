"""`lanekit pause` / `lanekit resume`: lanekit's deliberate disable of a lane.

The one rule for disabled lanes (README "Pausing a lane"; reconcile, kick, status and doctor
follow it):

- `pause` writes the lane's pause marker (lanekit.state.snapshot_schema.pause_marker, next to its
  snapshot) and disables the label in launchd. launchd then refuses to load it, and a copy
  that is still loaded may keep firing (and `launchctl kickstart` still starts it), but every
  run finds the marker and claims nothing (`skipped reason=paused`, exit 0): a paused lane
  runs no job, whatever launchd does. `lanekit kick` refuses a paused lane.
- `apply` keeps a paused lane paused: it never enables it and never bootstraps it; changes to
  its plist and snapshot are still written (a reload boots it out and leaves it unloaded).
- `resume` removes the marker, enables the label and loads the installed plist when launchd
  does not have it loaded.
- A label disabled in launchd by something else (`launchctl disable`) is not paused: `apply`
  enables it before loading it and says so (as `brew services start` does); `doctor` reports
  it (`launchd.disabled`), and `kick` starts it if it is still loaded, as launchd would.

The marker is lanekit's own state (the state dir, mode 0700), written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lanekit.config import LaneSpec
from lanekit.config.model import StartOn
from lanekit.queue.recordline import iso_utc
from lanekit.service import clock_for, manager_of
from lanekit.service.launchd import Launchd
from lanekit.service.manager import VOCABULARY, ServiceManager
from lanekit.state.paths import Paths
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from lanekit.system.atomic import write_atomic
from lanekit.system.quoting import cmdline

# The marker check lives in state/ (status and doctor ask it without loading reconcile).
__all__ = ["PauseResult", "pause", "resume"]


@dataclass(frozen=True, slots=True)
class PauseResult:
    """One lane that `pause` or `resume` handled (or, with dry_run, would handle)."""

    lane: str
    label: str
    paused: bool
    """The lane's state afterwards: True once paused, False once resumed."""
    steps: tuple[str, ...]
    """What was (or would be) done, in words; empty when it already was in that state."""
    loaded: bool
    """Whether launchd has the lane loaded afterwards."""
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        """False when the lane already was paused (or resumed)."""
        return bool(self.steps)


STOP_MARGIN = 5.0
"""Seconds past the lane's exit timeout that pause waits for an unloaded lane to be gone."""


def pause(
    lanes: Sequence[LaneSpec],
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    dry_run: bool = False,
    now: float | None = None,
) -> list[PauseResult]:
    """Pause `lanes`: marker first (from then on no run claims a job), then launchd's
    disabled override. Idempotent; a lane that is running finishes the job it has."""
    stamp = iso_utc(clock_for(paths).time() if now is None else now)
    manager = manager_of(launchd, paths.launch_agents)
    words = VOCABULARY[manager.kind]
    seen = manager.observe(lane.label for lane in lanes)
    results = []
    for lane in lanes:
        steps = []
        marker = paths.pause_marker_for(lane.label)
        if not marker.exists():
            steps.append("write pause marker")
            if not dry_run:
                marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                text = f"paused at {stamp} by `{cmdline('lanekit', 'pause', lane.name)}`\n"
                write_atomic(marker, text.encode("utf-8"))
        if not seen[lane.label].disabled:
            steps.append(f"disable in {words.manager}")
            if not dry_run:
                manager.disable(lane.label)
        loaded = seen[lane.label].loaded
        if loaded and StartOn.ENQUEUE in lane.start:
            # launchd starts a QueueDirectories job again and again while its jobs wait, and
            # a paused run takes none of them: unloaded, it cannot spin (`resume` loads it).
            steps.append(
                f"unload (started on enqueue: {words.manager} would start it again and again"
                " while jobs wait)"
            )
            if not dry_run:
                timeout = DEFAULT_EXIT_TIMEOUT if lane.exit_timeout is None else lane.exit_timeout
                manager.unload(lane.label, grace=timeout + STOP_MARGIN)
            loaded = False
        results.append(PauseResult(lane.name, lane.label, True, tuple(steps), loaded, dry_run))
    return results


def resume(
    lanes: Sequence[LaneSpec],
    paths: Paths,
    launchd: Launchd | ServiceManager,
    *,
    dry_run: bool = False,
) -> list[PauseResult]:
    """Resume `lanes`: enable the label, load the installed plist if launchd does not
    have it, then remove the marker (runs claim again from then on). Idempotent."""
    manager = manager_of(launchd, paths.launch_agents)
    words = VOCABULARY[manager.kind]
    seen = manager.observe(lane.label for lane in lanes)
    results = []
    for lane in lanes:
        steps = []
        if seen[lane.label].disabled:
            steps.append(f"enable in {words.manager}")
            if not dry_run:
                manager.enable(lane.label)
        plist = manager.artifact_path(lane.label)
        was_loaded = is_loaded = seen[lane.label].loaded
        if not is_loaded and plist.exists():
            steps.append(words.load)
            if not dry_run:
                manager.load(plist)
            is_loaded = True
        marker = paths.pause_marker_for(lane.label)
        if marker.exists():
            steps.append("remove pause marker")
            if not dry_run:
                marker.unlink(missing_ok=True)
        results.append(
            PauseResult(
                lane.name,
                lane.label,
                False,
                tuple(steps),
                was_loaded if dry_run else is_loaded,
                dry_run,
            )
        )
    return results
