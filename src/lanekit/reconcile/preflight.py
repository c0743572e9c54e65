"""What `apply` checks before it installs a lane, and `validate` reports: one function both call,
so the two cannot disagree.

Refusals are what apply will not do (install a lane whose queue sits in a Dropbox or iCloud
folder, or on a network filesystem; create a queue or log directory inside a directory
someone other than you or root could change, directly or through a symlink: `untrusted_dirs`,
which apply checks for every lane before it creates anything); warnings are what launchd will
do differently from what lanes.toml seems to say (an `every` below ThrottleInterval, a cron
line whose day fields cron ANDs and launchd ORs). Rendering the plist is checked by both
through lanekit.service.launchd.plist.

A lane that cannot start fails early too: `cannot_start` runs doctor's own
`path.command-missing` on the plist `apply` would install, so a job command missing from the
lane's PATH is an error in validate and a refusal in apply (`apply --force` installs anyway).
At run time such a job still goes back untouched, and doctor's `lane.cannot-start` reports the
lane after its first such run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lanekit.errors import LanekitError
from lanekit.schedule import DEFAULT_THROTTLE

if TYPE_CHECKING:
    from lanekit.config import LaneSpec
    from lanekit.doctor import Problem
    from lanekit.state.paths import Paths

CANNOT_START_CHECK = "path.command-missing"
"""The doctor check whose findings `cannot_start` returns."""


@dataclass(frozen=True, slots=True)
class Preflight:
    """One lane's preflight: what stops apply, and what launchd will do otherwise than written."""

    lane: str
    refusals: tuple[LanekitError, ...]
    """Each stops apply from installing the lane (validate reports them as errors, exit 1);
    the message names the path, not the lane."""
    warnings: tuple[str, ...]
    """Each starts with `lane NAME: ` and names the fix."""


def preflight(lane: LaneSpec) -> Preflight:
    """The lane's refusals and warnings, without touching the disk beyond reading it."""
    from lanekit.queue import location_problem

    refusals: list[LanekitError] = list(untrusted_dirs(lane))
    refusal = location_problem(lane.queue.dir)
    if refusal is not None:
        refusals.append(refusal)
    warnings = [f"lane {lane.name}: schedule {text}" for text in lane.schedule.warnings]
    throttled = throttle_warning(lane)
    if throttled is not None:
        warnings.append(throttled)
    return Preflight(lane=lane.name, refusals=tuple(refusals), warnings=tuple(warnings))


def untrusted_dirs(lane: LaneSpec) -> list[LanekitError]:
    """The refusal (UnsafeStateError, exit 69) of the lane's queue directory, or of a log
    file's directory, when a part of its path that exists already could be changed by
    someone other than you or root (lanekit.system.owned.untrusted_part: owned by another user, or
    writable by others and not a sticky directory of yours or root's). The walk judges what
    exists, so it refuses before `apply` creates anything; its fix names a place of your own,
    never a chown of another user's directory."""
    from lanekit.system.owned import home_directory, trust_error, untrusted_part
    from lanekit.system.quoting import shell_quote

    home = home_directory()
    places = [(lane.queue.dir, "queue directory", f"[queues.{lane.queue.name}] dir")]
    places += [
        (path.parent, "log directory", f"[lanes.{lane.name}] {key}")
        for key, path in (
            ("stdout_log", lane.stdout_path),
            ("stderr_log", lane.stderr_path),
            ("log", lane.log_path),
        )
    ]
    refusals: list[LanekitError] = []
    seen: set[str] = set()
    for path, what, key in places:
        found = untrusted_part(path, home=home)
        if found is None or found.part in seen:
            continue
        seen.add(found.part)
        mine = shell_quote(f"{home}/lanekit/{lane.queue.name}")
        refusals.append(
            trust_error(
                path,
                what,
                found,
                elsewhere=f"point {key} at a directory of your own, e.g. {mine}",
                risk="take, replace or add jobs and logs",
            )
        )
    return refusals


def throttle_warning(lane: LaneSpec) -> str | None:
    """`every` shorter than ThrottleInterval: launchd never starts a job again within
    ThrottleInterval of its last start (launchd.plist(5)), so `every = "5s"` runs every 10 s."""
    interval = lane.schedule.interval
    throttle = DEFAULT_THROTTLE if lane.throttle_interval is None else lane.throttle_interval
    if interval is None or not 0 < interval < throttle:
        return None
    source = "launchd's default" if lane.throttle_interval is None else "its throttle_interval"
    return (
        f"lane {lane.name}: every = {interval}s is below {source} ThrottleInterval of "
        f"{throttle} s, so launchd starts it at most every {throttle} s; set every to "
        f'"{throttle}s" or more, or throttle_interval = "{interval}s", in [lanes.{lane.name}]'
    )


def cannot_start(lane: LaneSpec, plist: bytes, paths: Paths) -> list[Problem]:
    """What doctor's `path.command-missing` says about `lane` installed as `plist` (the
    rendered bytes): empty when every command it runs is found on its PATH."""
    import plistlib

    from lanekit.doctor import DoctorContext, Target, registry

    if plist.startswith(b"<?xml"):
        job = plistlib.loads(plist)
    else:
        # Another manager's artifact (a systemd unit): the command and the PATH it is looked
        # up on are the lane's own, so the check reads them from the lane's plist model.
        import sys

        from lanekit.service.launchd.plist import lane_plist

        job = lane_plist(lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label))
    target = Target(
        subject=lane.name,
        plist_path=paths.plist_for(lane.label),
        plist=job,
        installed=False,
        lane=lane,
    )
    return list(registry()[CANNOT_START_CHECK].func(target, DoctorContext(paths)))
