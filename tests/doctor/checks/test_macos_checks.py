"""tcc.*, volume.*, program.quarantined, launchd.no-gui-session and lane.stuck-run.

Paths are real files under tmp_path; volume and xattr facts are planted at their one seam
(`lanekit.system.volumes.volume_facts` / `quarantine_of`), who is at the screen at
`lanekit.service.launchd.domain.Caller.current`, and the launchd side is the scripted fake
launchctl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World

from fakes import FakeLaunchd
from lanekit.doctor import Severity
from lanekit.service.launchd.domain import Caller
from lanekit.service.launchd.launchctl import LaunchctlDomain
from lanekit.system import volumes
from places import FAKE_LAUNCHCTL, MACOS_TOOLS

FAKE = FAKE_LAUNCHCTL


def _healthy_quiet(world: World, check_id: str) -> None:
    world.install()
    assert world.run(check_id, world.target()) == []


# ----------------------------------------------------------------------------- privacy


def test_queue_in_documents_is_a_tcc_warning(tmp_path: Path) -> None:
    """A queue under ~/Documents is named with the folder and the Full Disk Access fix; the
    default healthy lane (~/notes) is quiet."""
    _healthy_quiet(World.make(tmp_path / "ok"), "tcc.protected-path")
    world = World.make(tmp_path, HEALTHY.replace('dir = "~/notes"', 'dir = "~/Documents/q"'))
    world.install()
    [finding] = world.run("tcc.protected-path", world.target())
    assert finding.severity is Severity.WARNING
    assert "~/Documents" in finding.message
    assert "Operation not permitted" in finding.message
    assert "Full Disk Access" in finding.fix


def test_job_input_in_downloads_is_a_tcc_warning(tmp_path: Path) -> None:
    """An absolute input the job command reads, under ~/Downloads, is reported."""
    text = HEALTHY.replace(
        'command = ["true", "{job}"]', 'command = ["true", "~/Downloads/in.txt", "{job}"]'
    )
    world = World.make(tmp_path, text)
    world.install()
    [finding] = world.run("tcc.protected-path", world.target())
    assert "a path the job command reads" in finding.message
    assert "~/Downloads" in finding.message


# ----------------------------------------------------------------------------- volumes


@pytest.fixture
def plant_volume(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, volumes.VolumeFacts]]:
    """Map path prefixes to planted VolumeFacts; other paths have no facts."""
    planted: dict[str, volumes.VolumeFacts] = {}

    def facts(path: str, *, platform: str | None = None) -> volumes.VolumeFacts | None:
        for prefix, volume in planted.items():
            if path.startswith(prefix):
                return volume
        return None

    monkeypatch.setattr(volumes, "volume_facts", facts)
    yield planted


def test_queue_on_exfat_has_no_rename_excl(
    tmp_path: Path, plant_volume: dict[str, volumes.VolumeFacts], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename is probed in the queue's own tmp/, not judged by the filesystem's name: an
    "exfat" volume whose rename works (FSKit exFAT, macOS 15+) is quiet; where the no-replace
    rename fails (ENOTSUP, as on the kernel's exFAT, which has no hard links either) every
    claim would fail: an error naming the volume, the probe's answer and the queue key. The
    probe leaves nothing in tmp/."""
    import errno

    from lanekit.system import fsops

    world = World.make(tmp_path)
    world.install()
    queue = world.lane().queue.dir
    plant_volume[str(queue)] = volumes.VolumeFacts("apfs", volumes.MNT_LOCAL)
    assert world.run("volume.no-rename-excl", world.target()) == []
    plant_volume[str(queue)] = volumes.VolumeFacts(
        "exfat", volumes.MNT_LOCAL | volumes.MNT_REMOVABLE
    )
    assert world.run("volume.no-rename-excl", world.target()) == []  # the rename works here

    def unsupported(src: str, dst: str) -> None:
        raise OSError(errno.ENOTSUP, os.strerror(errno.ENOTSUP), src, None, dst)

    monkeypatch.setattr(fsops, "rename_noreplace", unsupported)
    [finding] = world.run("volume.no-rename-excl", world.target())
    assert finding.severity is Severity.ERROR
    assert "exfat" in finding.message
    assert "ENOTSUP" in finding.message
    assert "[queues.notes]" in finding.fix
    assert list((queue / "tmp").iterdir()) == []


def test_a_rename_that_replaces_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filesystem whose "no-replace" rename replaces the existing file (what a claim must
    never do) is reported, whatever its type."""
    from lanekit.system import fsops

    world = World.make(tmp_path)
    world.install()
    monkeypatch.setattr(fsops, "rename_noreplace", os.replace)
    [finding] = world.run("volume.no-rename-excl", world.target())
    assert "replaced an existing file" in finding.message


def test_removable_and_noowners_volumes_are_external(
    tmp_path: Path, plant_volume: dict[str, volumes.VolumeFacts]
) -> None:
    """Logs on a removable volume are an error (launchd exit 78), the queue a warning, and a
    noowners volume says its ownership checks are void, with the quoted diskutil fix."""
    world = World.make(tmp_path)
    world.install()
    home = str(world.paths.home)
    plant_volume[home] = volumes.VolumeFacts(
        "apfs", volumes.MNT_LOCAL | volumes.MNT_REMOVABLE | volumes.MNT_IGNORE_OWNERSHIP
    )
    findings = world.run("volume.external", world.target())
    errors = [f for f in findings if f.severity is Severity.ERROR and "log" in f.message]
    assert errors and all("exits 78" in f.message for f in errors)
    assert any("noowners" in f.message for f in findings)
    assert any(f.fix.startswith("sudo diskutil enableOwnership ") for f in findings)
    plant_volume[home] = volumes.VolumeFacts("apfs", volumes.MNT_LOCAL | volumes.MNT_ROOTFS)
    assert world.run("volume.external", world.target()) == []


def test_plist_on_an_external_volume_is_an_error(
    tmp_path: Path, plant_volume: dict[str, volumes.VolumeFacts]
) -> None:
    """A relocated home puts ~/Library/LaunchAgents on an external disk, and launchd refuses
    the plist with a bare error 5 (openclaw#60398): the plist's own path is checked, even when
    the queue and the logs are on the startup disk."""
    world = World.make(tmp_path)
    world.install()
    target = world.target()
    assert target.plist_path is not None
    plant_volume[str(target.plist_path.parent)] = volumes.VolumeFacts(
        "apfs", volumes.MNT_LOCAL | volumes.MNT_REMOVABLE
    )
    [finding] = world.run("volume.external", target)
    assert finding.severity is Severity.ERROR
    assert str(target.plist_path) in finding.message
    assert "5: Input/output error" in finding.message
    assert "startup disk" in finding.fix


def test_volume_facts_on_linux_reads_mountinfo(tmp_path: Path) -> None:
    """Off macOS the seam reports the filesystem type and no macOS flags."""
    facts = volumes.volume_facts(str(tmp_path), platform="linux")
    assert facts is not None and facts.fstype and facts.flags is None
    assert not facts.has(volumes.MNT_REMOVABLE)


@pytest.mark.parametrize(
    ("inside", "folder"),
    [
        ("documents/q", "~/Documents"),  # APFS is case-insensitive: ~/documents is ~/Documents
        ("DESKTOP/x", "~/Desktop"),
        ("Library/Containers/com.other.app/Data/q", "another app's container"),
        ("Library/Group Containers/group.com.other/q", "another app's container"),
        ("Library/Mail/V10", "Mail's data"),
        ("Library/Messages/chat.db", "Messages' data"),
        ("library/safari/History.db", "Safari's data"),
        ("Pictures/Photos Library.photoslibrary/originals", "a Photos library"),
        ("notes", None),
        ("Library/Application Support/lanekit", None),
    ],
)
def test_tcc_folders_on_darwin(inside: str, folder: str | None) -> None:
    """The guarded places, matched case-insensitively as on macOS's default APFS."""
    from lanekit.doctor.checks.macos import tcc_folder

    found = tcc_folder(f"/Users/me/{inside}", Path("/Users/me"), "/Users/me", fold_case=True)
    assert (found is None) if folder is None else (found is not None and folder in found)
    assert tcc_folder("/volumes/usb/q", Path("/Users/me"), "/Users/me", fold_case=True)


def test_tcc_case_matters_only_where_the_filesystem_folds_it() -> None:
    """On a case-sensitive filesystem ~/documents is another folder, not the guarded one."""
    from lanekit.doctor.checks.macos import tcc_folder

    home = Path("/Users/me")
    assert tcc_folder("/Users/me/documents/q", home, "/Users/me", fold_case=False) is None
    assert tcc_folder("/Users/me/Documents/q", home, "/Users/me", fold_case=False) == "~/Documents"


def test_queue_on_a_network_volume_is_a_tcc_warning(
    tmp_path: Path, plant_volume: dict[str, volumes.VolumeFacts]
) -> None:
    """A queue on a volume statfs calls non-local (SMB, NFS): network volumes have their own
    privacy permission; a local volume is quiet."""
    world = World.make(tmp_path)
    world.install()
    queue = str(world.lane().queue.dir)
    plant_volume[queue] = volumes.VolumeFacts("smbfs", 0, "/Volumes/share")
    [finding] = world.run("tcc.protected-path", world.target())
    assert "a network volume" in finding.message
    plant_volume[queue] = volumes.VolumeFacts("apfs", volumes.MNT_LOCAL)
    assert world.run("tcc.protected-path", world.target()) == []


# -------------------------------------------------------------------------- quarantine


def test_quarantined_plist_and_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """com.apple.quarantine on the installed plist is an error, on a script the job runs a
    warning; the fix is the quoted `xattr -d`; unquarantined files are quiet."""
    script = tmp_path / "my tools" / "job.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    text = HEALTHY.replace('command = ["true", "{job}"]', f'command = ["/bin/sh", "{script}"]')
    world = World.make(tmp_path, text)
    world.install()
    assert world.run("program.quarantined", world.target()) == []
    marked = {str(world.paths.plist_for(world.lane().label)), str(script)}
    monkeypatch.setattr(
        volumes,
        "quarantine_of",
        lambda path, platform=None: "0081;5f000000;Safari;" if path in marked else None,
    )
    findings = world.run("program.quarantined", world.target())
    assert [f.severity for f in findings] == [Severity.ERROR, Severity.WARNING]
    assert findings[1].fix == f"xattr -d com.apple.quarantine '{script}'"


def test_a_quarantined_mount_quarantines_its_files(
    tmp_path: Path, plant_volume: dict[str, volumes.VolumeFacts]
) -> None:
    """Files on a volume mounted with MNT_QUARANTINE (a downloaded disk image) count as
    downloaded though they carry no xattr: the plist is an error naming the volume."""
    world = World.make(tmp_path)
    world.install()
    plist = world.paths.plist_for(world.lane().label)
    plant_volume[str(plist.parent)] = volumes.VolumeFacts(
        "hfs", volumes.MNT_LOCAL | volumes.MNT_QUARANTINE, "/Volumes/Tools"
    )
    [finding] = world.run("program.quarantined", world.target())
    assert finding.severity is Severity.ERROR
    assert "quarantined volume (/Volumes/Tools" in finding.message
    assert "xattr -d com.apple.quarantine" in finding.fix
    plant_volume[str(plist.parent)] = volumes.VolumeFacts("hfs", volumes.MNT_LOCAL)
    assert world.run("program.quarantined", world.target()) == []


def test_a_long_xattr_is_read_again_at_its_size() -> None:
    """getxattr answering ERANGE (the value is longer than the first buffer) is asked its
    size, then read at that size: a long quarantine value is not taken for none."""
    import errno

    value = b"0083;" + b"x" * 3000
    calls: list[int] = []

    def getxattr(path: str, name: str, size: int) -> tuple[bytes | int | None, int]:
        calls.append(size)
        if size == 0:
            return len(value), 0
        return (value, 0) if size >= len(value) else (None, errno.ERANGE)

    assert volumes.read_xattr(getxattr, "/x", volumes.QUARANTINE) == value
    assert calls == [volumes.XATTR_FIRST_READ, 0, len(value)]

    def absent(path: str, name: str, size: int) -> tuple[bytes | int | None, int]:
        return None, 93  # ENOATTR on macOS

    assert volumes.read_xattr(absent, "/x", volumes.QUARANTINE) is None


def test_quarantine_is_never_read_off_macos(tmp_path: Path) -> None:
    """The seam answers None off macOS (no com.apple.quarantine there)."""
    assert volumes.quarantine_of(str(tmp_path), platform="linux") is None


# ---------------------------------------------------------------------- GUI session


def _fake_domain(tmp_path: Path, domain: str, script: dict[str, object]) -> LaunchctlDomain:
    wrapper = tmp_path / "launchctl"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(0o755)
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    return LaunchctlDomain(domain, launchctl=wrapper)


@pytest.mark.parametrize(
    ("console", "sessions", "domain", "gui", "fires"),
    [
        (502, '"Aqua"', "gui/501", False, True),  # gui-only lane, someone else at the screen
        (0, '["Aqua", "Background"]', "gui/501", False, True),  # login window, gui chosen
        (0, '["Aqua", "Background"]', "user/501", False, False),  # the background domain
        (501, '"Aqua"', "gui/501", True, False),  # we are at the screen
        # fast user switching: someone else at the screen, our GUI login behind it
        (502, '"Aqua"', "gui/501", True, False),
        (502, '"Aqua"', "user/501", True, True),  # gui-only lane cannot load in user/
    ],
)
def test_no_gui_session(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    console: int,
    sessions: str,
    domain: str,
    gui: bool,
    fires: bool,
) -> None:
    """On the launchctl backend (scripted fake), a lane that can load only in a GUI session,
    or a gui domain launchd says does not exist (112, as in test_parsers), while nobody of ours
    is at the screen, is a warning with the fix; a gui domain that exists behind another
    user's screen (fast user switching) runs its lanes."""
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    monkeypatch.setattr(Caller, "current", classmethod(lambda cls: Caller(501, 501, console)))
    world = World.make(tmp_path, HEALTHY + f"session_type = {sessions}\n")
    world.install()
    script: dict[str, object] = {"print": {"stdout": "services = {\n}\n"}}
    if not gui:
        script["print gui/501"] = {
            "stderr": "Bad request.\nCould not find domain for user gui: 501\n",
            "exit": 112,
        }
    launchd = _fake_domain(tmp_path, domain, script)
    findings = world.run("launchd.no-gui-session", world.target(), launchd=launchd)
    assert bool(findings) is fires
    if fires:
        assert "logged in at the Mac's screen" in findings[0].message
        assert "LANEKIT_LAUNCHD_DOMAIN=user" in findings[0].fix


def test_no_gui_session_is_quiet_on_the_emulator(tmp_path: Path) -> None:
    """The emulated domain has no sessions: the check says nothing there."""
    world = World.make(tmp_path, HEALTHY + 'session_type = "Aqua"\n')
    world.install()
    assert world.run("launchd.no-gui-session", world.target(), launchd=FakeLaunchd()) == []


# --------------------------------------------------------------------------- stuck run


def test_a_run_holding_the_lane_for_hours_is_stuck(tmp_path: Path) -> None:
    """A live runner process (a real one) that started long before `now` is reported with the
    `lanekit restart` fix (not a raw `launchctl kickstart -k`); the same run seen a minute after
    it started is quiet."""
    world = World.make(tmp_path)
    world.install()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake = FakeLaunchd()
        fake.add_job(world.lane().label, pid=sleeper.pid)
        soon = datetime.now() + timedelta(minutes=1)
        assert world.run("lane.stuck-run", world.target(), launchd=fake, now=soon) == []
        later = datetime.now() + timedelta(hours=3)
        [finding] = world.run("lane.stuck-run", world.target(), launchd=fake, now=later)
        assert f"pid {sleeper.pid}" in finding.message
        assert f"lanekit restart {world.lane().name}" in finding.fix
        assert "kickstart" not in finding.fix
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize(
    ("schedule", "said"),
    [
        ('every = "15m"', "all 12 fires since it started were skipped as busy"),
        ("", "no fire was due since it started, but the next one will be skipped as busy"),
    ],
)
def test_a_stuck_run_counts_the_fires_it_made_launchd_skip(
    tmp_path: Path, schedule: str, said: str
) -> None:
    """The finding says how many fires were skipped since the run started (a StartInterval of
    15 minutes, 3 hours: 12), and says none was when none was due (a lane started by hand)."""
    text = HEALTHY.replace('schedule = ["40 10 * * *"]', schedule)
    world = World.make(tmp_path, text)
    world.install()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake = FakeLaunchd()
        fake.add_job(world.lane().label, pid=sleeper.pid)
        later = datetime.now() + timedelta(hours=3, seconds=30)
        [finding] = world.run("lane.stuck-run", world.target(), launchd=fake, now=later)
        assert said in finding.message
        assert "every fire since was skipped" not in finding.message
    finally:
        sleeper.kill()
        sleeper.wait()


# ---------------------------------------------------------------- background items


BTM = MACOS_TOOLS


@pytest.mark.parametrize(
    ("sample", "label", "fires"),
    [
        ("dumpbtm-01", "com.idefeng.disk-cleanup", True),
        ("dumpbtm-02", "ai.openclaw.gateway", False),
        ("dumpbtm-02", "com.unlisted.lane", False),
    ],
)
def test_background_item_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample: str, label: str, fires: bool
) -> None:
    """With real `sfltool dumpbtm` captures: a lane whose record is disallowed (switched off
    under Allow in the Background) is an error naming where to switch it on; an allowed or
    unlisted lane is quiet."""
    from lanekit.service.launchd import probes

    text = (BTM / f"{sample}.txt").read_text().partition("# ---\n")[2]
    monkeypatch.setattr(probes, "dumpbtm", lambda: text)
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    world = World.make(tmp_path, HEALTHY + f'label = "{label}"\n')
    world.install()
    launchd = _fake_domain(tmp_path, "gui/501", {"print": {"stdout": "services = {\n}\n"}})
    findings = world.run("launchd.background-item-off", world.target(), launchd=launchd)
    assert bool(findings) is fires
    if fires:
        assert "Allow in the Background" in findings[0].message
        assert "Login Items & Extensions" in findings[0].fix


def test_background_item_disabled_names_the_lane_and_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lane's record with the `disabled` word (enabled bit clear, the word of dumpbtm-03)
    is switched off too; the finding names the lane and its label, and says the entry is
    listed under the interpreter's name."""
    from lanekit.service.launchd import probes

    label = "uk.co.example.notes"
    record = (BTM / "dumpbtm-03.txt").read_text().partition("# ---\n")[2].split(" #2:")[0]
    record = record.replace("Type: developer (0x20)", "Type: legacy agent (0x10008)")
    record = record.replace("Name: (null)", "Name: python3.13", 1)
    record = record.replace("Identifier: Unknown Developer", f"Identifier: 8.{label}")
    monkeypatch.setattr(probes, "dumpbtm", lambda: record)
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    world = World.make(tmp_path, HEALTHY + f'label = "{label}"\n')
    world.install()
    launchd = _fake_domain(tmp_path, "gui/501", {"print": {"stdout": "services = {\n}\n"}})
    [finding] = world.run("launchd.background-item-off", world.target(), launchd=launchd)
    assert finding.severity is Severity.ERROR
    assert f"lane {world.lane().name} ({label})" in finding.message
    assert '"python3.13"' in finding.message and "interpreter" in finding.message
    assert "disabled" in finding.message


def _services(*labels: str) -> dict[str, object]:
    rows = "".join(f"\t\t     887      - \t{label}\n" for label in labels)
    return {"stdout": f"gui/501 = {{\n\tservices = {{\n{rows}\t}}\n}}\n"}


@pytest.mark.parametrize(
    ("user_rows", "fires"),
    [
        (("LABEL",), True),  # loaded in gui/501 and user/501
        (("other.job",), False),
        (None, False),  # user/501 does not exist here (125)
    ],
)
def test_label_loaded_in_both_domains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_rows: tuple[str, ...] | None, fires: bool
) -> None:
    """One label in both gui/<uid> and user/<uid> is two jobs: a warning naming both domains
    and the bootout of the one lanekit does not use."""
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    world = World.make(tmp_path)
    world.install()
    label = world.target().label
    assert label is not None
    user: dict[str, object] = (
        {"stderr": "Bootstrap failed: 125: Domain does not support specified action", "exit": 125}
        if user_rows is None
        else _services(*(label if r == "LABEL" else r for r in user_rows))
    )
    script: dict[str, object] = {"print gui/501": _services(label), "print user/501": user}
    launchd = _fake_domain(tmp_path, "gui/501", script)
    findings = world.run("launchd.loaded-twice", world.target(), launchd=launchd)
    assert bool(findings) is fires
    if fires:
        assert "gui/501 and user/501" in findings[0].message
        assert findings[0].fix.startswith(f"launchctl bootout user/501/{label}")


def test_background_items_unreadable_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When sfltool cannot be read (not macOS 13+, or it wants root), nothing is guessed."""
    from lanekit.service.launchd import probes

    monkeypatch.setattr(probes, "SFLTOOL", str(tmp_path / "no-sfltool"))
    assert probes.dumpbtm() is None
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    world = World.make(tmp_path)
    world.install()
    launchd = _fake_domain(tmp_path, "gui/501", {})
    assert world.run("launchd.background-item-off", world.target(), launchd=launchd) == []


# ------------------------------------------------------------------ login after reboot


def _boot_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filevault: str | None, auto_login: str | None
) -> None:
    """fdesetup and defaults as on a Mac: `filevault` names the fdesetup capture printed (None:
    the tool is missing), `auto_login` the user defaults prints (None: unset, exit 1)."""
    from lanekit.service.launchd import probes

    samples = MACOS_TOOLS
    fdesetup = tmp_path / "fdesetup"
    if filevault is not None:
        text = (samples / f"{filevault}.txt").read_text().partition("# ---\n")[2]
        (tmp_path / "fdesetup.out").write_text(text)
        fdesetup.write_text(f"#!/bin/sh\ncat {tmp_path / 'fdesetup.out'}\n")
        fdesetup.chmod(0o755)
    defaults = tmp_path / "defaults"
    defaults.write_text(
        f"#!/bin/sh\necho {auto_login}\n"
        if auto_login
        else "#!/bin/sh\necho 'The domain/default pair of (/Library/Preferences/"
        "com.apple.loginwindow, autoLoginUser) does not exist' >&2\nexit 1\n"
    )
    defaults.chmod(0o755)
    monkeypatch.setattr(probes, "MACOS", True)
    monkeypatch.setattr(probes, "FDESETUP", str(fdesetup))
    monkeypatch.setattr(probes, "DEFAULTS", str(defaults))


@pytest.mark.parametrize(
    ("domain", "filevault", "auto_login", "fires"),
    [
        ("user/501", "fdesetup-status-02", None, "automatic login is off"),
        ("user/501", "fdesetup-status-02", "me", None),
        ("user/501", "fdesetup-status-01", "me", "FileVault is on"),
        ("user/501", "fdesetup-status-04", None, "FileVault is on"),
        ("user/501", "fdesetup-status-03", "me", "FileVault turns on at the next restart"),
        ("user/501", None, "me", None),  # fdesetup unreadable: automatic login decides
        ("gui/501", "fdesetup-status-01", None, None),
    ],
)
def test_no_login_after_reboot(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    domain: str,
    filevault: str | None,
    auto_login: str | None,
    fires: str | None,
) -> None:
    """Lanes in user/<uid>: with FileVault on (or on from the next restart) a warning that
    the boot stops at the unlock screen, whatever automatic login says; with FileVault off and
    automatic login off, that they run only after a login; quiet with automatic login for this
    user, or in gui/<uid>. Once per doctor run; fdesetup and defaults print real captures."""
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    _boot_tools(tmp_path, monkeypatch, filevault, me if auto_login == "me" else auto_login)
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    world = World.make(tmp_path)
    world.install()
    launchd = _fake_domain(tmp_path, domain, {})
    ctx = world.context(launchd=launchd)
    findings = ctx.findings("launchd.no-login-after-reboot", world.target())
    assert len(findings) == (0 if fires is None else 1)
    assert ctx.findings("launchd.no-login-after-reboot", world.target()) in ([], findings)
    if fires is not None:
        assert fires in findings[0].message
    if fires == "automatic login is off":
        assert me in findings[0].fix
    elif fires is not None:
        assert "unlock screen" in findings[0].message
        assert "fdesetup authrestart" in findings[0].fix
