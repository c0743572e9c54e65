"""Checks for what real Macs do silently to a launchd job: privacy-guarded folders (TCC),
external, removable, no-owners and FAT volumes, quarantined files, a GUI-only lane where nobody
is at the screen, and a run stuck far past its schedule.

Volume and attribute facts come from one seam, `lanekit.system.volumes` (`volume_facts`,
`quarantine_of`); who is at the screen from `lanekit.service.launchd.domain.Caller`; a label
loaded in both gui/ and user/ from the launchctl adapter's `loaded_domains`.
"""

from __future__ import annotations

import os
import sys
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
    "Library/Containers": "another app's container (~/Library/Containers)",
    "Library/Group Containers": "another app's container (~/Library/Group Containers)",
    "Library/Mail": "Mail's data (~/Library/Mail)",
    "Library/Messages": "Messages' data (~/Library/Messages)",
    "Library/Safari": "Safari's data (~/Library/Safari)",
}
"""Folders (under the home) that macOS privacy protection guards; a launchd job does not inherit
the terminal's grant (launchd-semantics.md "Privacy (TCC)"): Files and Folders (Desktop,
Documents, Downloads, iCloud Drive, cloud storage), App Data (other apps' containers, macOS 14+)
and Full Disk Access (Mail, Messages, Safari)."""
PHOTOS_LIBRARY = ".photoslibrary"
"""A Photos library (a package anywhere, `~/Pictures/Photos Library.photoslibrary` by default):
guarded by the Photos permission."""
VOLUMES = "/Volumes/"
STUCK_AFTER = 3600.0
"""A run holding its lane longer than this (or twice its own budget) is stuck."""
FULL_DISK_ACCESS = "System Settings > Privacy & Security > Full Disk Access"
MACOS = sys.platform == "darwin"
PLIST = "the plist"


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


def tcc_folder(
    path: str, home: Path, real_home: str | None = None, *, fold_case: bool = MACOS
) -> str | None:
    """The privacy-guarded folder holding `path` (a real path), or None (`real_home`: the
    home's real path, when the caller has it). `fold_case`: names compare case-insensitively,
    as on macOS's default APFS (`~/documents` is `~/Documents`)."""
    real_home = (_real(home) if real_home is None else real_home).rstrip("/") + "/"

    def same(text: str) -> str:
        return text.lower() if fold_case else text

    path, real_home = same(path), same(real_home)
    if path.startswith(same(VOLUMES)):
        return "a removable or external volume (/Volumes)"
    if any(part.endswith(PHOTOS_LIBRARY) for part in path.split("/")):
        return "a Photos library"
    if not path.startswith(real_home):
        return None
    inside = path[len(real_home) :]
    for folder, name in TCC_FOLDERS.items():
        if inside == same(folder) or inside.startswith(same(folder) + "/"):
            return name
    return None


def _network_volume(path: Path, ctx: DoctorContext) -> bool:
    """True when statfs says the volume holding `path` is not local (SMB, NFS, AFP...): macOS
    guards network volumes with their own privacy permission."""
    found = _volume(path, ctx)
    return found is not None and found[1].flags is not None and not found[1].has(volumes.MNT_LOCAL)


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
        if folder is None and _network_volume(path, ctx):
            folder = "a network volume"
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
    may be absent at login; `noowners` voids the ownership checks lanekit relies on. The plist
    itself is checked too: with a relocated home (~ on an external disk) ~/Library/LaunchAgents
    is there, and launchd refuses to bootstrap it with a bare error 5 (openclaw#60398)."""
    places = _paths(target)
    if target.plist_path is not None:
        places.insert(0, (PLIST, target.plist_path))
    for what, path in places:
        found = _volume(path, ctx)
        if found is None:
            continue
        real, facts = found
        external = real.startswith(VOLUMES) or facts.has(volumes.MNT_REMOVABLE)
        if external and what == PLIST:
            yield Problem(
                Severity.ERROR,
                f"{what} {path} is on an external volume (a home folder moved to another "
                "disk): launchd refuses to load a LaunchAgent from there, and `launchctl "
                'bootstrap` fails with a bare "5: Input/output error".',
                "keep the home folder (or at least ~/Library/LaunchAgents) on the startup disk "
                "(System Settings > Users & Groups > Advanced Options > Home directory), then "
                "`lanekit apply`",
            )
        elif external and what in jobfacts.LOG_KEYS:
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


_RENAMES: weakref.WeakKeyDictionary[DoctorContext, dict[str, str | None]] = (
    weakref.WeakKeyDictionary()
)
"""Each doctor run's probe of each queue: lanes of one queue share it."""


@check(
    "volume.no-rename-excl",
    summary="a no-replace rename does not work where the queue keeps its files (exFAT, FAT, "
    "some network or FSKit volumes): every claim needs one",
)
def volume_no_rename_excl(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Asked of the queue itself (the directory queue probes its own tmp/ with two files,
    removed again), not read from the filesystem's name: exFAT through FSKit (macOS 15+) and
    third-party drivers differ from what their type suggests. Where neither RENAME_EXCL nor a
    hard link works, every claim fails."""
    from lanekit.queue import open_queue

    lane = target.lane
    if lane is None or directory_of(lane.queue.dir) is None or not lane.queue.dir.is_dir():
        return
    known = _RENAMES.setdefault(ctx, {})
    where = str(lane.queue.dir)
    if where not in known:
        known[where] = open_queue(lane.queue.dir).rename_failure()
    failure = known[where]
    if failure is None:
        return
    found = _volume(lane.queue.dir, ctx)
    kind = f" (a {found[1].fstype} volume)" if found is not None else ""
    yield Problem(
        Severity.ERROR,
        f"the queue {lane.queue.dir}{kind} has no working no-replace rename: probed where it "
        f"keeps its files, {failure}. Every claim needs one, so every claim fails.",
        f"move the queue to an APFS or Mac OS Extended volume (dir in [queues.{lane.queue.name}]"
        "), then `lanekit apply`",
    )


def _executables(target: Target) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if target.plist_path is not None and target.installed:
        found.append((PLIST, target.plist_path))
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
        effect = (
            "launchd may refuse to load it"
            if what == PLIST
            else "started in the background it waits on a Gatekeeper prompt nobody sees, then "
            "is killed"
        )
        severity = Severity.ERROR if what == PLIST else Severity.WARNING
        if volumes.quarantine_of(str(path)) is not None:
            yield Problem(
                severity,
                f"{what} {path} is quarantined (downloaded, com.apple.quarantine): {effect}.",
                f"xattr -d {volumes.QUARANTINE} {shell_quote(str(path))}",
            )
            continue
        found = _volume(path, ctx)
        if found is not None and found[1].has(volumes.MNT_QUARANTINE):
            volume = found[1].mount_point or found[0]
            yield Problem(
                severity,
                f"{what} {path} is on a quarantined volume ({volume}: a downloaded disk image "
                f"mounted with its quarantine), so macOS treats it as downloaded: {effect}.",
                "copy it to the startup disk (and `lanekit apply`), or remove the quarantine "
                "from the disk image before mounting it: `xattr -d com.apple.quarantine "
                "<image>.dmg`",
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
    uses_launchd=True,  # it runs when launchd cannot list a missing gui/<uid>: that is its case
    managers=LAUNCHD_ONLY,
)
def no_gui_session(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """gui/<uid> exists only while the user has a GUI login: over SSH, on a headless Mac or
    after a reboot, a gui-only lane does not run until someone logs in. While another user has
    the screen (fast user switching) a logged-in user's gui/<uid> is still there, so a lane in
    it runs: launchd is asked (112/125 for gui/<uid> means no GUI login of ours)."""
    from lanekit.service.launchd.codes import NO_GUI
    from lanekit.service.launchd.domain import Caller
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    launchd = ctx.launchd
    if not isinstance(launchd, LaunchctlDomain):
        return  # the emulated domain has no sessions
    caller = Caller.current()
    if caller.console_uid == caller.uid:
        return
    gui_only = "Background" not in _sessions(target)
    in_gui = launchd.domain.startswith("gui/")
    if not gui_only and not in_gui:
        return
    if in_gui and launchd.domain_answer(launchd.domain) not in NO_GUI:
        return  # our GUI login is there, behind another user's screen: the lane runs
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
    if item is None or not item.switched_off:
        return
    subject = f"lane {target.lane.name} ({label})" if target.lane is not None else label
    state = ", ".join(item.disposition) or (f"0x{item.bits:x}" if item.bits is not None else "")
    shown = item.name or (Path(item.executable).name if item.executable else label)
    yield Problem(
        Severity.ERROR,
        f"{subject} is switched off under Allow in the Background (Login Items & Extensions, "
        f"Disposition {state}), so launchd does not run it. The entry there shows the name of "
        f'the program the plist starts, "{shown}" (for lanes, the Python interpreter: every '
        f"lane is listed under that same name), not {label}.",
        "turn it on in System Settings > General > Login Items & Extensions > Allow in the "
        f'Background (the "{shown}" entry; with several, `sfltool dumpbtm` shows which one has '
        f"URL {plist or label}), then `lanekit doctor` again",
    )


_LOADED: weakref.WeakKeyDictionary[DoctorContext, dict[str, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
"""One `launchctl print` of each candidate domain per doctor run, shared by every lane."""


@check(
    "launchd.loaded-twice",
    summary="one label is loaded in both gui/<uid> and user/<uid>: each fire runs twice",
    needs_launchd=True,
    managers=LAUNCHD_ONLY,
)
def loaded_twice(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A lane bootstrapped once from the screen (gui/) and once over SSH or from another
    session (user/) is two jobs: each fire starts both, and the second is skipped as busy (or,
    without a lane lock, runs the queue twice)."""
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    launchd = ctx.launchd
    label = target.label
    if not isinstance(launchd, LaunchctlDomain) or label is None:
        return
    if ctx not in _LOADED:
        _LOADED[ctx] = launchd.loaded_domains()
    domains = sorted(_LOADED[ctx].get(label, ()))
    if not any(d.startswith("gui/") for d in domains) or not any(
        d.startswith("user/") for d in domains
    ):
        return
    others = [d for d in domains if d != launchd.domain]
    yield Problem(
        Severity.WARNING,
        f"{label} is loaded in both {' and '.join(domains)}: launchd fires each copy, so every "
        "scheduled run starts twice and the second is skipped as busy.",
        "; ".join(f"launchctl bootout {d}/{label}" for d in others)
        + f" (lanekit uses {launchd.domain}: {launchd.domain_reason})",
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
        f"`lanekit restart {shell_quote(lane.name)}` restarts it (its job goes back to the "
        f"queue; `lanekit stop {shell_quote(lane.name)}` only stops it)",
    )
