"""logs.*, workdir.* and queue directory checks. Tests run as root in CI, and root ignores
permission bits, so each problem is one that is real for root too (a parent that is a file, a
directory where a file should be, another filesystem), or is judged for an injected uid."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_world import World, job_plist

from lanekit.doctor import Severity
from lanekit.doctor.checks.files import LARGE_LOG_BYTES


def test_log_directory_missing(tmp_path: Path) -> None:
    """StandardErrorPath in a directory that does not exist: launchd exits 78; fix `mkdir -p`."""
    world = World.make(tmp_path)
    err = tmp_path / "nowhere" / "logs" / "job.err.log"
    [finding] = world.run("logs.dir-missing", world.foreign(job_plist(StandardErrorPath=str(err))))
    assert finding.severity is Severity.ERROR
    assert "78" in finding.message
    assert finding.fix == f"mkdir -p {err.parent}"


def test_log_directory_blocked_by_a_file(tmp_path: Path) -> None:
    """A log path whose parent is a regular file cannot be created, even by root."""
    world = World.make(tmp_path)
    (tmp_path / "logs").write_text("I am a file")
    out = tmp_path / "logs" / "job.out.log"
    [finding] = world.run("logs.dir-missing", world.foreign(job_plist(StandardOutPath=str(out))))
    assert f"because {tmp_path / 'logs'} is a file" in finding.message
    assert finding.fix.startswith(f"move {tmp_path / 'logs'} out of the way")


def test_lane_with_its_log_dir_removed(tmp_path: Path) -> None:
    """An installed lane whose queue logs/ directory was deleted is told to recreate it."""
    world = World.make(tmp_path)
    world.install()
    lane = world.lane()
    shutil.rmtree(lane.stdout_path.parent)
    [finding] = world.run("logs.dir-missing", world.target())  # one per directory
    assert finding.fix == f"mkdir -p {lane.stdout_path.parent}"


def test_log_path_that_is_a_directory_is_unwritable(tmp_path: Path) -> None:
    """A directory where the log file should be: nobody, root included, can open it to write."""
    world = World.make(tmp_path)
    err = tmp_path / "job.err.log"
    err.mkdir()
    [finding] = world.run("logs.unwritable", world.foreign(job_plist(StandardErrorPath=str(err))))
    assert "is a directory" in finding.message
    assert finding.fix.startswith("point StandardErrorPath at a file")


def test_read_only_log_directory_for_the_lanes_user(tmp_path: Path) -> None:
    """A 0555 log directory owned by someone else is unwritable for uid 501 (injected uid)."""
    world = World.make(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o555)
    logs.chmod(0o555)
    target = world.foreign(job_plist(StandardOutPath=str(logs / "out.log")))
    [finding] = world.run("logs.unwritable", target, uid=501)
    assert "is not writable" in finding.message
    assert "0555" in finding.message
    assert finding.fix == f"chown 501 {logs} && chmod u+rwx {logs}"


def test_dangling_log_symlink(tmp_path: Path) -> None:
    """A log path that is a symlink into a directory that is gone cannot be opened."""
    world = World.make(tmp_path)
    err = tmp_path / "err.log"
    err.symlink_to(tmp_path / "gone" / "err.log")
    [finding] = world.run("logs.unwritable", world.foreign(job_plist(StandardErrorPath=str(err))))
    assert "is a symlink to" in finding.message
    assert finding.fix.startswith(f"rm {err}")


def test_existing_log_file_without_write_permission(tmp_path: Path) -> None:
    """A log file the user may not write (0444, owned by the test) for uid 501."""
    world = World.make(tmp_path)
    out = tmp_path / "out.log"
    out.write_text("")
    out.chmod(0o444)
    [finding] = world.run(
        "logs.unwritable", world.foreign(job_plist(StandardOutPath=str(out))), uid=501
    )
    assert finding.fix == f"chown 501 {out} && chmod u+w {out}"


def test_working_directory_missing(tmp_path: Path) -> None:
    """WorkingDirectory that does not exist: the job cannot start there."""
    world = World.make(tmp_path)
    missing = tmp_path / "work"
    [finding] = world.run(
        "workdir.missing", world.foreign(job_plist(WorkingDirectory=str(missing)))
    )
    assert finding.severity is Severity.ERROR
    assert finding.fix == f"mkdir -p {missing}"


def test_lane_queue_dir_missing(tmp_path: Path) -> None:
    """A lane whose queue directory is gone: `lanekit apply` recreates it."""
    world = World.make(tmp_path)
    world.install()
    shutil.rmtree(world.lane().queue.dir)
    [finding] = world.run("workdir.missing", world.target())
    assert finding.fix.startswith("lanekit apply funnel")


def test_default_root_working_directory_is_info(tmp_path: Path) -> None:
    """No WorkingDirectory and no relative paths: worth knowing (info), not an error."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist())
    [finding] = world.run("workdir.default-root", target)
    assert finding.severity is Severity.INFO
    assert finding.fix == (
        f"add <key>WorkingDirectory</key><string>DIR</string> to {target.plist_path}"
    )


def test_default_root_with_relative_paths_warns(tmp_path: Path) -> None:
    """Relative log paths without WorkingDirectory resolve against `/`: a warning naming them."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StandardOutPath="logs/out.log"))
    [finding] = world.run("workdir.default-root", target)
    assert finding.severity is Severity.WARNING
    assert "logs/out.log" in finding.message


def test_lanes_always_have_a_working_directory(tmp_path: Path) -> None:
    """lanekit sets WorkingDirectory to the queue dir."""
    world = World.make(tmp_path)
    world.install()
    assert world.run("workdir.default-root", world.target()) == []


def test_log_path_with_a_tilde(tmp_path: Path) -> None:
    """The seed's `~/dev/.../logs/x.log`: launchd reads `~` literally; the fix writes the path."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StandardErrorPath="~/logs/err.log"))
    [finding] = world.run("logs.dir-missing", target)
    assert "reads literally" in finding.message
    real = world.paths.home / "logs"
    assert finding.fix == (
        f"write the absolute path {real / 'err.log'} as StandardErrorPath, and `mkdir -p {real}`"
    )


def test_large_log_without_rotation(tmp_path: Path) -> None:
    """A stdout file past 50 MiB (sparse, so the test is cheap) is reported with a rotation fix."""
    world = World.make(tmp_path)
    out = tmp_path / "out.log"
    with out.open("wb") as handle:
        handle.truncate(LARGE_LOG_BYTES + 1)
    [finding] = world.run("logs.large", world.foreign(job_plist(StandardOutPath=str(out))))
    assert finding.severity is Severity.WARNING
    assert finding.fix.startswith(f"mv {out} {out}.1")


def test_small_log_is_fine(tmp_path: Path) -> None:
    """Below the threshold nothing is said."""
    world = World.make(tmp_path)
    out = tmp_path / "out.log"
    out.write_text("hello\n")
    assert world.run("logs.large", world.foreign(job_plist(StandardOutPath=str(out)))) == []


@pytest.fixture
def other_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A directory on another filesystem than tmp_path (/dev/shm is tmpfs on Linux)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second filesystem to put a queue directory on")
    place = shm / f"lanekit-test-{uuid.uuid4().hex}"
    place.mkdir()
    yield place
    shutil.rmtree(place, ignore_errors=True)


def test_queue_directory_on_another_filesystem(tmp_path: Path, other_filesystem: Path) -> None:
    """claimed/ symlinked onto another filesystem: a claim is no longer one atomic rename."""
    world = World.make(tmp_path)
    world.install()
    claimed = world.lane().queue.dir / "claimed"
    shutil.rmtree(claimed)
    claimed.symlink_to(other_filesystem)
    [finding] = world.run("queue.cross-device", world.queue_target())
    assert finding.severity is Severity.ERROR
    assert str(claimed) in finding.message
    assert finding.fix.startswith(f"make {claimed} a plain directory inside")


def test_queue_directory_that_is_a_file(tmp_path: Path) -> None:
    """failed/ replaced by a regular file: the runner cannot use the queue, root or not."""
    world = World.make(tmp_path)
    world.install()
    failed = world.lane().queue.dir / "failed"
    shutil.rmtree(failed)
    failed.write_text("oops")
    [finding] = world.run("queue.permissions", world.queue_target())
    assert f"{failed} is a file" in finding.message
    assert finding.fix == f"move {failed} away, then run `lanekit apply funnel`"


def test_world_writable_queue_directory_is_refused(tmp_path: Path) -> None:
    """queue/ at 0777: anyone could plant or take jobs, so the runner refuses it."""
    world = World.make(tmp_path)
    world.install()
    queue_dir = world.lane().queue.dir / "queue"
    queue_dir.chmod(0o777)
    [finding] = world.run("queue.permissions", world.queue_target())
    assert f"{queue_dir} is writable by others (mode 0777)" in finding.message
    assert finding.fix == f"chmod go-w {queue_dir}"


def test_queue_owned_by_another_user_than_the_lanes(tmp_path: Path) -> None:
    """Judged for uid 501, a queue owned by the test's user belongs to someone else."""
    world = World.make(tmp_path)
    world.install()
    found = world.run("queue.permissions", world.queue_target(), uid=501)
    queue_dir = world.lane().queue.dir
    assert found[0].message.startswith(f"{queue_dir} is owned by uid {os.geteuid()}")
    assert found[0].fix == f"chown 501 {queue_dir}"


def test_symlinked_queue_directory_is_refused(tmp_path: Path) -> None:
    """done/ as a symlink (even on the same filesystem) is refused by the runner."""
    world = World.make(tmp_path)
    world.install()
    done = world.lane().queue.dir / "done"
    shutil.rmtree(done)
    (tmp_path / "elsewhere").mkdir()
    done.symlink_to(tmp_path / "elsewhere")
    [finding] = world.run("queue.permissions", world.queue_target())
    assert finding.fix == f"rm {done} && mkdir -m 700 {done}"


def test_queue_checks_skip_foreign_plists(tmp_path: Path) -> None:
    """Queue checks need lanekit knowledge and skip a hand-written plist cleanly."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist())
    assert world.run("queue.permissions", target) == []
    assert world.run("queue.cross-device", target) == []
