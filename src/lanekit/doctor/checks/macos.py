"""Checks for what real Macs do silently to a launchd job: privacy-guarded folders (TCC),
external, removable, no-owners and FAT volumes, quarantined files, a GUI-only lane where nobody
is at the screen, and a run stuck far past its schedule.

Volume and attribute facts come from one seam, `lanekit.system.volumes` (`volume_facts`,
`quarantine_of`); who is at the screen from `lanekit.service.launchd.domain.Caller`.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check
from lanekit.doctor.checks import jobfacts
from lanekit.queue import directory_of
from lanekit.service.manager import LAUNCHD_ONLY
from lanekit.system import volumes
from lanekit.system.quoting import shell_quote

if TYPE_CHECKING:
    from lanekit.schedule import Schedule
    from lanekit.service.launchd.btm import BtmItem

TCC_FOLDERS = {
    "Desktop": "~/Desktop",
    "Documents": "~/Documents",
    "Downloads": "~/Downloads",
    "Library/Mobile Documents": "iCloud Drive",
    "Library/CloudStorage": "~/Library/CloudStorage",
}
"""Folders (under the home) that macOS privacy protection guards; a launchd job does not inherit
the terminal's grant (launchd-semantics.md "Privacy (TCC)")."""
VOLUMES = "/Volumes/"
STUCK_AFTER = 3600.0
"""A run holding its lane longer than this (or twice its own budget) is stuck."""
FULL_DISK_ACCESS = "System Settings > Privacy & Security > Full Disk Access"


def _paths(target: Target) -> list[tuple[str, Path]]:
    """(what, path) of every place the job reads or writes that doctor can name."""
    found: list[tuple[str, Path]] = []
    lane = target.lane
    if lane is not None:
        if directory_of(lane.queue.dir) is not None:  # a queue kept elsewhere has no volume
            found.append(("the queue", lane.queue.dir))
        found.append(("the lane log", lane.log_path))
    defined = target.definition
    if defined is not None:
        found.extend(jobfacts.defined_logs(defined))
        workdir = defined.cwd
        if workdir and (lane is None or Path(workdir) != lane.queue.dir):
            found.append(("WorkingDirectory", Path(workdir)))
    if lane is not None:
        found.extend(
            ("a path the job command reads", Path(arg))
            for arg in lane.command[1:]
            if arg.startswith("/") and "{job}" not in arg
        )
    return found


def _real(path: Path) -> str:
    return os.path.realpath(path)


_REAL: weakref.WeakKeyDictionary[DoctorContext, dict[Path, str]] = weakref.WeakKeyDictionary()
"""Each doctor run's real paths: every lane names the same home, queue and log folders."""


def _real_in(ctx: DoctorContext, path: Path) -> str:
    known = _REAL.setdefault(ctx, {})
    if path not in known:
        known[path] = _real(path)
    return known[path]


def tcc_folder(path: str, home: Path, real_home: str | None = None) -> str | None:
    """The privacy-guarded folder holding `path` (a real path), or None (`real_home`: the
    home's real path, when the caller has it)."""
    real_home = (_real(home) if real_home is None else real_home).rstrip("/") + "/"
    if path.startswith(VOLUMES):
        return "a removable or external volume (/Volumes)"
    if not path.startswith(real_home):
        return None
    inside = path[len(real_home) :]
    for folder, name in TCC_FOLDERS.items():
        if inside == folder or inside.startswith(folder + "/"):
            return name
    return None


@check(
    "tcc.protected-path",
    summary="the queue, logs or job inputs are in a privacy-guarded folder (~/Documents, ...)",
)
def tcc_protected_path(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A launchd job does not inherit the terminal's privacy grants: it gets "Operation not
    permitted", or waits on a consent prompt nobody sees."""
    reported: set[str] = set()
    for what, path in _paths(target):
        folder = tcc_folder(_real_in(ctx, path), ctx.paths.home, _real_in(ctx, ctx.paths.home))
        if folder is None or folder in reported:
            continue
        reported.add(folder)
        yield Problem(
            Severity.WARNING,
            f"{what} {path} is in {folder}, which macOS privacy protection (TCC) guards: a "
            "launchd job does not have your terminal's access, so it fails with \"Operation "
            'not permitted" or waits on a prompt nobody sees.',
            f"move it out of {folder} (then `lanekit apply`), or give the lane's program Full "
            f"Disk Access ({FULL_DISK_ACCESS})",
        )


_VOLUMES: weakref.WeakKeyDictionary[
    DoctorContext, dict[Path, tuple[str, volumes.VolumeFacts] | None]
] = weakref.WeakKeyDictionary()
"""Each doctor run's volume facts by directory: lanes share their queue's and logs' volumes,
and asking each time (a read of the mount table on Linux) grew with the lane count."""


def _volume(path: Path, ctx: DoctorContext) -> tuple[str, volumes.VolumeFacts] | None:
    existing = jobfacts.nearest_existing(path)
    known = _VOLUMES.setdefault(ctx, {})
    if existing not in known:
        facts = volumes.volume_facts(str(existing))
        known[existing] = None if facts is None else (_real(existing), facts)
    return known[existing]


@check(
    "volume.external",
    summary="the queue or logs are on an external, removable or no-owners volume",
)
def volume_external(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd agents cannot open StandardOutPath under /Volumes (exit 78); a removable volume
    may be absent at login; `noowners` voids the ownership checks lanekit relies on."""
    for what, path in _paths(target):
        found = _volume(path, ctx)
        if found is None:
            continue
        real, facts = found
        external = real.startswith(VOLUMES) or facts.has(volumes.MNT_REMOVABLE)
        if external and what in jobfacts.LOG_KEYS:
            yield Problem(
                Severity.ERROR,
                f"{what} {path} is on an external volume: launchd cannot open a LaunchAgent's "
                "log there, so the job exits 78 without running.",
                "put the logs on the startup disk (stdout_log / stderr_log in lanes.toml), "
                "then `lanekit apply`",
            )
        elif external:
            yield Problem(
                Severity.WARNING,
                f"{what} {path} is on an external or removable volume: when it is not mounted "
                "the lane cannot run, and macOS privacy protection guards removable volumes.",
                "keep queues and logs on the startup disk, then `lanekit apply`",
            )
        if facts.has(volumes.MNT_IGNORE_OWNERSHIP):
            volume = facts.mount_point or real
            yield Problem(
                Severity.WARNING,
                f"{what} {path} is on a volume mounted with owners ignored (noowners): every "
                "file looks owned by you, so lanekit cannot tell whose state it is reading.",
                f"sudo diskutil enableOwnership {shell_quote(volume)}",
            )


@check(
    "volume.no-rename-excl",
    summary="the queue is on exFAT/FAT, which lacks the no-replace rename every claim needs",
)
def volume_no_rename_excl(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """exFAT and FAT have neither RENAME_EXCL (ENOTSUP) nor hard links: every claim fails."""
    lane = target.lane
    if lane is None or directory_of(lane.queue.dir) is None:
        return
    found = _volume(lane.queue.dir, ctx)
    if found is None or found[1].fstype.lower() not in volumes.NO_RENAME_EXCL_FSTYPES:
        return
    yield Problem(
        Severity.ERROR,
        f"the queue {lane.queue.dir} is on a {found[1].fstype} volume, which has no "
        "no-replace rename and no hard links: every claim fails.",
        f"move the queue to an APFS or Mac OS Extended volume (dir in [queues.{lane.queue.name}]"
        "), then `lanekit apply`",
    )


def _executables(target: Target) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if target.plist_path is not None and target.installed:
        found.append(("the plist", target.plist_path))
    job = target.definition
    name = jobfacts.program(job) if job is not None else None
    if job is not None and name and "/" in name:
        found.append(("the program", jobfacts.absolute(name, job)))
    lane = target.lane
    if lane is not None and lane.command and lane.command[0].startswith("/"):
        found.append(("the job command", Path(lane.command[0])))
    if lane is not None:
        found.extend(
            ("a script the job runs", Path(arg))
            for arg in lane.command[1:]
            if arg.startswith("/") and "{job}" not in arg
        )
    return found


@check(
    "program.quarantined",
    summary="the plist, the program or a script the job runs carries com.apple.quarantine",
)
def program_quarantined(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A downloaded file keeps com.apple.quarantine: newer launchd refuses such plists, and a
    quarantined program started in the background waits on a Gatekeeper prompt, then dies."""
    for what, path in _executables(target):
        if volumes.quarantine_of(str(path)) is None:
            continue
        effect = (
            "launchd may refuse to load it"
            if what == "the plist"
            else "started in the background it waits on a Gatekeeper prompt nobody sees, then "
            "is killed"
        )
        yield Problem(
            Severity.ERROR if what == "the plist" else Severity.WARNING,
            f"{what} {path} is quarantined (downloaded, com.apple.quarantine): {effect}.",
            f"xattr -d {volumes.QUARANTINE} {shell_quote(str(path))}",
        )


def _sessions(target: Target) -> list[str]:
    job = target.plist or {}
    value = job.get("LimitLoadToSessionType", "Aqua")
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else ["Aqua"]


@check(
    "launchd.no-gui-session",
    summary="a lane that loads only in a GUI session, where nobody is logged in at the screen",
    needs_launchd=True,
    managers=LAUNCHD_ONLY,
)
def no_gui_session(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """gui/<uid> exists only while the user is logged in at the screen: over SSH, on a headless
    Mac or after a reboot, a gui-only lane does not run until someone logs in."""
    from lanekit.service.launchd.domain import Caller
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    launchd = ctx.launchd
    if not isinstance(launchd, LaunchctlDomain):
        return  # the emulated domain has no sessions
    caller = Caller.current()
    if caller.console_uid == caller.uid:
        return
    gui_only = "Background" not in _sessions(target)
    if not gui_only and not launchd.domain.startswith("gui/"):
        return
    subject = target.lane.name if target.lane is not None else str(target.plist_path)
    why = (
        "its LimitLoadToSessionType lists only GUI sessions"
        if gui_only
        else f"it is meant for {launchd.domain}"
    )
    fix = (
        "add Background to session_type in lanes.toml (the default lists it), then "
        "`LANEKIT_LAUNCHD_DOMAIN=user lanekit apply`"
        if gui_only and target.lane is not None
        else "log in at the Mac's screen (or turn on automatic login), or load the lanes into "
        "the background domain: `LANEKIT_LAUNCHD_DOMAIN=user lanekit apply`"
    )
    yield Problem(
        Severity.WARNING,
        f"nobody of yours is logged in at the Mac's screen, and {subject} can load only in a "
        f"GUI login session ({why}): it does not run until you log in there.",
        fix,
    )


@check(
    "launchd.background-item-off",
    summary="the lane is switched off in Login Items & Extensions (Allow in the Background)",
    needs_launchd=True,
    managers=LAUNCHD_ONLY,
)
def background_item_off(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """macOS 13+ lists every LaunchAgent under "Allow in the Background"; switched off there,
    launchd does not run it, and nothing else says so. Read from `sfltool dumpbtm`, whose
    per-user records need no root; when it cannot be read, nothing is said."""
    from lanekit.service.launchd import btm
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    label = target.label
    if not isinstance(ctx.launchd, LaunchctlDomain) or label is None:
        return
    items = _btm_items(ctx)
    if not items:
        return
    plist = str(target.plist_path) if target.plist_path is not None else None
    item = btm.find_item(items, label=label, plist=plist)
    if item is None or item.allowed is not False:
        return
    yield Problem(
        Severity.ERROR,
        f"{label} is switched off under Allow in the Background (Login Items & Extensions, "
        f"Disposition {', '.join(item.disposition)}), so launchd does not run it.",
        "turn it on in System Settings > General > Login Items & Extensions > Allow in the "
        f"Background (listed as {item.name or label}), then `lanekit doctor` again",
    )


_BTM: weakref.WeakKeyDictionary[DoctorContext, list[BtmItem]] = weakref.WeakKeyDictionary()
"""One `sfltool dumpbtm` per doctor run, shared by every lane."""


def _btm_items(ctx: DoctorContext) -> list[BtmItem]:
    from lanekit.service.launchd import btm, probes

    if ctx not in _BTM:
        text = probes.dumpbtm()
        _BTM[ctx] = [] if text is None else btm.parse_dumpbtm(text)
    return _BTM[ctx]


_LOGIN_REPORTED: weakref.WeakSet[DoctorContext] = weakref.WeakSet()


@check(
    "launchd.no-login-after-reboot",
    summary="lanes in user/<uid> stop at a reboot until someone logs in (FileVault, no "
    "automatic login)",
    needs_launchd=True,
    managers=LAUNCHD_ONLY,
)
def no_login_after_reboot(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd loads a user's agents only once that user logs in; on a headless Mac or one used
    over SSH (lanes in user/<uid>) nobody may log in after a reboot. FileVault makes it certain:
    the boot stops at its unlock screen and automatic login is impossible (`fdesetup status`,
    no root). Both facts come through lanekit.service.launchd.probes; unreadable ones say
    nothing."""
    import pwd

    from lanekit.service.launchd import boot, probes
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    launchd = ctx.launchd
    if not isinstance(launchd, LaunchctlDomain) or not launchd.domain.startswith("user/"):
        return
    if ctx in _LOGIN_REPORTED:
        return  # a fact about the Mac, not the lane: said once per doctor run
    _LOGIN_REPORTED.add(ctx)
    try:
        me = pwd.getpwuid(ctx.uid).pw_name
    except KeyError:
        return
    filevault = boot.parse_fdesetup_status(probes.fdesetup_status())
    if filevault.blocks_auto_login:
        when = "is on" if filevault is boot.FileVault.ON else "turns on at the next restart"
        yield Problem(
            Severity.WARNING,
            f"lanes are in {launchd.domain} and FileVault {when}: after a reboot the Mac waits "
            "at the FileVault unlock screen and cannot log anyone in automatically, so launchd "
            "loads no lane until you log in (at the screen or over SSH) and scheduled runs are "
            "missed until then.",
            "log in after each reboot (before a planned restart, `sudo fdesetup authrestart` "
            "unlocks the next boot once); automatic login needs FileVault off (System "
            "Settings > Privacy & Security > FileVault)",
        )
        return
    if boot.parse_auto_login_user(probes.auto_login_user()) == me:
        return
    yield Problem(
        Severity.WARNING,
        f"lanes are in {launchd.domain} and automatic login is off: after a reboot launchd "
        "loads them only once you log in (at the screen or over SSH), so scheduled runs are "
        "missed until then.",
        f"turn on automatic login for {me} (System Settings > Users & Groups; FileVault must "
        "be off for it), or log in after each reboot",
    )


MAX_COUNTED = 1000
"""The most skipped fires stuck-run counts (past that the number says nothing more)."""


def _fires_between(schedule: Schedule, start: float, end: float) -> int:
    """How many times launchd would have started the lane in (start, end] (epoch seconds):
    its calendar's fires, or whole StartIntervals; 0 for a lane started only by hand. Counted
    up to MAX_COUNTED."""
    if schedule.interval:
        return min(MAX_COUNTED, int((end - start) // schedule.interval))
    if not schedule.calendar:
        return 0
    from datetime import datetime

    from lanekit.schedule import next_fires

    last = datetime.fromtimestamp(end)
    fires = next_fires(schedule.calendar, datetime.fromtimestamp(start), MAX_COUNTED)
    return sum(1 for fire in fires if fire <= last)


def _started_at(pid: int) -> float | None:
    """When `pid` started (epoch seconds), None when it is gone."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


@check(
    "lane.stuck-run",
    summary="a live run has held the lane far past its schedule (a hung job or hidden prompt)",
    needs_launchd=True,
)
def stuck_run(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A run waiting on an invisible consent prompt (privacy, keychain) or a hung job keeps the
    lane lock, so every later fire is skipped as busy."""
    lane = target.lane
    label = target.label
    if lane is None or label is None:
        return
    entry = ctx.seen(label)
    if entry.pid is None:
        return
    started = _started_at(entry.pid)
    if started is None:
        return
    now = ctx.now().timestamp()
    limit = max(STUCK_AFTER, 2.0 * (lane.max_seconds or 0), 2.0 * (lane.schedule.interval or 0))
    age = now - started
    if age < limit:
        return
    hours = age / 3600
    skipped = _fires_between(lane.schedule, started, now)
    since = (
        "no fire was due since it started, but the next one will be skipped as busy"
        if skipped == 0
        else f"{'the one fire' if skipped == 1 else f'all {skipped} fires'} since it started "
        f"{'was' if skipped == 1 else 'were'} skipped as busy"
    )
    yield Problem(
        Severity.WARNING,
        f"the run pid {entry.pid} has held lane {lane.name} for {hours:.1f} h, far past its "
        f"schedule: {since}; it may wait on a prompt nobody sees (privacy, keychain) or on a "
        "hung job.",
        f"`lanekit logs {shell_quote(lane.name)}` shows what it last did; "
        f"`launchctl kickstart -k {ctx.domain}/{label}` restarts it (its job goes back to the "
        "queue)",
    )
