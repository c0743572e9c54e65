"""Where a path lives: network and FAT volumes refused for a queue, sync engines' folders,
Linux's mountinfo read by the longest mount point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lanekit.system import volumes


@pytest.mark.parametrize(
    ("fstype", "local", "refused"),
    [
        ("ext4", None, False),
        ("apfs", True, False),
        ("tmpfs", None, False),
        ("nfs", None, True),
        ("nfs4", None, True),
        ("cifs", None, True),
        ("smbfs", True, True),
        ("afpfs", None, True),
        ("webdav", None, True),
        ("fuse.sshfs", None, True),
        ("macfuse", None, True),
        ("hfs", False, True),  # macOS says the volume is not local
    ],
)
def test_classify_mount(fstype: str, local: bool | None, refused: bool) -> None:
    """Network filesystems (Linux mountinfo names, macOS f_fstypename) and non-local macOS
    volumes are refused; local disks are not."""
    problem = volumes.classify_mount(fstype, local)
    if refused:
        assert problem is not None and fstype in problem
    else:
        assert problem is None


@pytest.mark.parametrize(
    ("path", "engine"),
    [
        ("/Users/me/Library/Mobile Documents/com~apple~CloudDocs/q", "iCloud Drive"),
        ("/Users/me/Library/CloudStorage/GoogleDrive-me@x.com/q", "cloud storage"),
        ("/Users/me/Dropbox/q", "Dropbox"),
        ("/Users/me/Dropbox (Acme)/jobs/q", "Dropbox"),
        ("/Users/me/OneDrive - Acme/q", "OneDrive"),
        ("/Users/me/dev/note-autolike", None),
        ("/Users/me/dev/dropbox-clone/q", None),
        ("/home/me/Library/q", None),
    ],
)
def test_sync_folder(path: str, engine: str | None) -> None:
    """Paths inside sync engines' folders are recognised by their folder names; look-alikes
    are not."""
    found = volumes.sync_folder(path)
    if engine is None:
        assert found is None
    else:
        assert found is not None and engine in found


MOUNTINFO = """\
22 1 0:21 / / rw,relatime - ext4 /dev/vda rw
25 22 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw
30 22 0:40 / /mnt/nas rw,relatime shared:5 - nfs4 nas:/export rw
31 30 0:41 / /mnt/nas/local\\040disk rw,relatime - ext4 /dev/vdb rw
"""


@pytest.mark.parametrize(
    ("path", "fstype"),
    [
        ("/home/me/q", "ext4"),
        ("/dev/shm/q", "tmpfs"),
        ("/mnt/nas", "nfs4"),
        ("/mnt/nas/jobs", "nfs4"),
        ("/mnt/nas/local disk/q", "ext4"),
        ("/mnt/nasty/q", "ext4"),
    ],
)
def test_linux_fstype_picks_the_longest_mount_point(path: str, fstype: str) -> None:
    """The filesystem of a path is its longest enclosing mount point (escaped spaces decoded,
    optional fields skipped); a sibling with a common prefix does not count."""
    assert volumes.linux_fstype(path, MOUNTINFO) == fstype


def test_the_work_dir_is_local(tmp_path: Path) -> None:
    """The test machine's work dir passes the mount check (real /proc/self/mountinfo)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/mountinfo")
    assert volumes.linux_fstype(os.path.realpath(tmp_path)) is not None
    assert volumes.mount_problem(os.path.realpath(tmp_path)) is None


def test_linux_mounts_key_names_the_holding_mount_and_every_mount_inside() -> None:
    """The key of a directory: the id and mount point of the mount holding it, then each mount
    point inside it (a bind mount onto a directory of the queue shows only here); a sibling
    with a common prefix is not inside."""
    assert volumes.linux_mounts_key("/home/me/q", MOUNTINFO) == "22:/"
    assert (
        volumes.linux_mounts_key("/mnt/nas", MOUNTINFO) == "30:/mnt/nas 31:/mnt/nas/local\\040disk"
    )
    assert (
        volumes.linux_mounts_key("/mnt/nas/local disk/q", MOUNTINFO) == "31:/mnt/nas/local\\040disk"
    )
    bound = MOUNTINFO + "40 22 0:21 /home/me/q/claimed /home/me/q/claimed rw - ext4 /dev/vda rw\n"
    assert volumes.linux_mounts_key("/home/me/q", bound) == "22:/ 40:/home/me/q/claimed"
    assert volumes.linux_mounts_key("/home/me/qq", bound) == "22:/"
    assert volumes.linux_mounts_key("/home/me/q", "") is None
