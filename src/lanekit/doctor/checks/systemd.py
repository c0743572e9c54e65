"""Checks for lanes systemd's user manager runs: a manager that does not answer, linger off
(timers stop at logout), units that drifted from lanes.toml, a run systemd could not set up
(203/EXEC, 200/CHDIR, 209/STDOUT), a timer that will never elapse, an unanchored interval."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from typing import TYPE_CHECKING

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.service.manager import SYSTEMD_ONLY
from lanekit.system.quoting import cmdline

if TYPE_CHECKING:
    from lanekit.service.systemd.manager import SystemdManager

EXEC_CAUSES = {
    200: "its working directory (the queue directory) is missing",
    203: "the program (the Python interpreter lanekit was applied with) cannot be executed",
    209: "its log file cannot be opened (the logs directory is missing or not writable)",
}


def _manager(ctx: DoctorContext) -> SystemdManager | None:
    """The systemd manager the lanes run under (imported only once doctor asks)."""
    from lanekit.service.systemd.manager import SystemdManager

    return ctx.manager if isinstance(ctx.manager, SystemdManager) else None


@check(
    "systemd.no-user-manager",
    summary="systemd's user manager does not answer, so no lane timer fires",
    needs_plist=False,
    needs_lane=True,
    uses_launchd=True,
    managers=SYSTEMD_ONLY,
    alert=True,
)
def no_user_manager(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """`systemctl --user` cannot reach a manager (no session: sudo, ssh, cron)."""
    manager = _manager(ctx)
    if manager is None or ctx.launchd_available:
        return
    from lanekit.service.systemd.systemctl import BUS_HINT

    yield Problem(
        Severity.ERROR,
        "systemd's user manager does not answer `systemctl --user`, so no timer of this lane"
        " fires and apply cannot load it.",
        BUS_HINT,
    )


@check(
    "systemd.linger-off",
    summary="linger is off: the user's timers stop at logout and do not run after a reboot"
    " until a login",
    needs_plist=False,
    needs_lane=True,
    managers=SYSTEMD_ONLY,
)
def linger_off(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """logind starts a user's manager at boot only for users with linger on."""
    manager = _manager(ctx)
    if manager is None or target.lane is None or target.lane.schedule.is_empty:
        return
    user = getpass.getuser()
    if manager.linger(user) is False:
        yield Problem(
            Severity.WARNING,
            f"linger is off for {user}: this lane's timer stops when {user}'s last session"
            " ends and does not run after a reboot until they log in.",
            cmdline("loginctl", "enable-linger", user),
        )


@check(
    "systemd.unit-drift",
    summary="the lane's unit files differ from what `lanekit apply` writes, or systemd runs an"
    " older copy of them",
    needs_plist=False,
    needs_lane=True,
    uses_launchd=True,
    managers=SYSTEMD_ONLY,
)
def unit_drift(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Installed units against the rendering of lanes.toml, and systemd's NeedDaemonReload."""
    manager = _manager(ctx)
    lane = target.lane
    if manager is None or lane is None:
        return
    import sys

    from lanekit.errors import LanekitError

    try:
        made = manager.render(
            lane, interpreter=sys.executable, snapshot=ctx.paths.snapshot_for(lane.label)
        )
    except LanekitError:
        return  # a lane that cannot render is validate's finding, not drift
    changed = []
    for path in manager.artifact_paths(lane.label):
        want = made.files.get(path.name)
        try:
            have: bytes | None = path.read_bytes()
        except OSError:
            have = None
        if want is None and have is None:
            continue
        if have is None:
            changed.append(f"{path.name} missing")
        elif want is None:
            changed.append(f"{path.name} no longer wanted")
        elif _without_interpreter(have) != _without_interpreter(want):
            changed.append(f"{path.name} changed")
    seen = ctx.seen(lane.label) if ctx.launchd_available else None
    older = list(seen.stale) if seen is not None and seen.loaded else []
    if changed or older:
        yield Problem(
            Severity.WARNING,
            f"lane {lane.name}'s units are not what lanes.toml says"
            f" ({', '.join(changed + older)}): systemd runs what it last read.",
            cmdline("lanekit", "apply", lane.name),
        )


def _without_interpreter(data: bytes) -> bytes:
    """A service's bytes with its ExecStart's interpreter left out: doctor may run from
    another Python than apply did, which is no drift of the lane."""
    lines = data.split(b"\n")
    return b"\n".join(
        b"ExecStart=" + line.split(b" ", 1)[-1] if line.startswith(b"ExecStart=") else line
        for line in lines
    )


@check(
    "systemd.exec-failed",
    summary="systemd could not set the last run up (203/EXEC, 200/CHDIR, 209/STDOUT...):"
    " the program never ran",
    needs_plist=False,
    needs_lane=True,
    needs_launchd=True,
    managers=SYSTEMD_ONLY,
    alert=True,
)
def exec_failed(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """systemd's own exit statuses for a run it could not start (launchd's 78)."""
    lane = target.lane
    if lane is None:
        return
    seen = ctx.seen(lane.label)
    if not seen.not_started or seen.exit_code is None:
        return
    code = seen.exit_code
    why = EXEC_CAUSES.get(code, "systemd could not set the run up")
    fix = cmdline("lanekit", "apply", lane.name)
    if code == 200:
        fix = f"{fix} (it recreates the queue directory)"
    elif code == 203:
        fix = f"{fix} (it renders the service with the interpreter that runs lanekit now)"
    words = ctx.manager.describe_exit(code) if ctx.manager is not None else f"exit {code}"
    yield Problem(
        Severity.ERROR, f"the last run of lane {lane.name} never ran: {words}; {why}.", fix
    )


@check(
    "systemd.never-elapses",
    summary="the lane's timer is armed but systemd says it will never elapse",
    needs_plist=False,
    needs_lane=True,
    needs_launchd=True,
    managers=SYSTEMD_ONLY,
)
def never_elapses(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A scheduled lane whose armed timer has no next elapse (a calendar that cannot occur,
    an interval whose anchor is gone)."""
    lane = target.lane
    if lane is None or lane.schedule.is_empty:
        return
    seen = ctx.seen(lane.label)
    if seen.loaded and seen.pid is None and seen.next_fire is None:
        yield Problem(
            Severity.ERROR,
            f"lane {lane.name}'s timer is armed but systemd says it will never elapse, so the"
            " lane never runs on its schedule.",
            f"{cmdline('systemctl', '--user', 'list-timers', '--all')} shows it; "
            f"{cmdline('lanekit', 'apply', '--force', lane.name)} rewrites and re-arms it",
        )


@check(
    "systemd.unanchored-interval",
    summary="an installed timer has OnUnitActiveSec= alone: it never fires after a reboot",
    needs_plist=False,
    needs_lane=True,
    managers=SYSTEMD_ONLY,
)
def unanchored_interval(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """OnUnitActiveSec counts from the service's last activation, which a fresh boot does not
    have: without OnActiveSec=/OnBootSec=/OnStartupSec=/OnCalendar= the timer never elapses
    (Homebrew's service.rb writes exactly this)."""
    manager = _manager(ctx)
    lane = target.lane
    if manager is None or lane is None:
        return
    from lanekit.service.systemd.units import parse_unit

    path = manager.artifact_paths(lane.label)[1]
    try:
        timer = parse_unit(path.read_bytes())
    except (OSError, ValueError):
        return
    anchors = ("OnActiveSec", "OnBootSec", "OnStartupSec", "OnCalendar")
    if timer.values("Timer", "OnUnitActiveSec") and not any(
        timer.values("Timer", key) for key in anchors
    ):
        yield Problem(
            Severity.ERROR,
            f"{path} has OnUnitActiveSec= alone: it counts from a last start that a fresh boot"
            " does not have, so after a reboot the lane never runs.",
            f"{cmdline('lanekit', 'apply', lane.name)} (lanekit writes OnActiveSec= beside it)",
        )


NEXT_FIRE_TOLERANCE = 2.0
"""Seconds systemd's next elapse may differ from lanekit's next fire (AccuracySec=1s)."""


@check(
    "systemd.next-fire-disagrees",
    summary="the lane's timer will next fire at another time than lanekit's schedule maths say",
    needs_plist=False,
    needs_lane=True,
    needs_launchd=True,
    managers=SYSTEMD_ONLY,
)
def next_fire_disagrees(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """`status` shows the timer's own NEXT (what will happen); this cross-checks it against
    lanekit's schedule maths (what lanes.toml means, and what launchd would do) for a calendar
    lane: a timer edited by hand, another time zone in the user manager, an OnCalendar= systemd
    reads otherwise. Interval lanes count from when they were armed, so they are not compared."""
    lane = target.lane
    if lane is None or not lane.schedule.calendar or lane.schedule.interval is not None:
        return
    seen = ctx.seen(lane.label)
    if not seen.loaded or seen.next_fire is None:
        return
    from datetime import timedelta

    from lanekit.schedule import describe_schedule, schedule_next_fires

    timer = seen.next_fire.astimezone().replace(tzinfo=None)
    now = ctx.now().astimezone().replace(tzinfo=None)
    # From just before now: a fire due this second may be systemd's next or already past.
    ours = schedule_next_fires(lane.schedule, now - timedelta(seconds=NEXT_FIRE_TOLERANCE), 2)
    if any(abs((timer - fire).total_seconds()) <= NEXT_FIRE_TOLERANCE for fire in ours):
        return
    expected = ours[0].strftime("%Y-%m-%d %H:%M:%S") if ours else "never"
    yield Problem(
        Severity.WARNING,
        f"lane {lane.name}'s timer will next fire at {timer:%Y-%m-%d %H:%M:%S}, but its schedule"
        f" ({describe_schedule(lane.schedule)})"
        f" says {expected} (local time): systemd runs a timer that is not what lanes.toml"
        " means (edited by hand, or the user manager runs in another time zone).",
        f"{cmdline('lanekit', 'apply', '--force', lane.name)} rewrites and re-arms the timer;"
        f" {cmdline('systemctl', '--user', 'show-environment')} shows the manager's TZ",
    )


@check(
    "systemd.enqueue-watch-failed",
    summary="systemd stopped starting a lane on enqueue: its path unit hit a start limit",
    needs_plist=False,
    needs_lane=True,
    needs_launchd=True,
    managers=SYSTEMD_ONLY,
)
def enqueue_watch_failed(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A lane started on enqueue whose runs left their jobs in queue/ was started again and
    again (systemd.path(5)) until a limit stopped it: its path unit failed and no longer
    watches the queue; only its schedule still starts the lane."""
    lane = target.lane
    if lane is None:
        return
    seen = ctx.seen(lane.label)
    if not seen.watch_failed:
        return
    from lanekit.service.systemd.names import path_name

    yield Problem(
        Severity.WARNING,
        f"systemd no longer starts lane {lane.name} when a job arrives: its path unit failed"
        f" ({seen.watch_failed}) after starting it too often while its runs left the jobs in"
        " queue/ (a paused lane whose path unit was armed, a command that cannot start).",
        f"the other findings for lane {lane.name} say why its runs took nothing; once that is"
        f" fixed, `{cmdline('systemctl', '--user', 'start', path_name(lane.label))}` arms it"
        f" again (or `{cmdline('lanekit', 'pause', lane.name)}` then"
        f" `{cmdline('lanekit', 'resume', lane.name)}`)",
    )
