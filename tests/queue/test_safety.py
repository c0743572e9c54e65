"""The queue's checks with the probe's verdict kept in its CHECK_STAMP
(lanekit.queue.directory.safety): every process still makes every refusal; the probe runs
again whenever what its verdict depends on changes, and a stamp that is not the queue's own is
never believed."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from lanekit.errors import QueueError
from lanekit.queue import enqueue_into, own_files
from lanekit.queue.directory import safety
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.layout import CHECK_STAMP, PUBLISHED_INTO, SUBDIRS
from lanekit.state import schemas
from lanekit.system import volumes


class ProbedError(Exception):
    """Raised by a stand-in for the probe: the check would have probed."""


@pytest.fixture
def queue(tmp_path: Path) -> Queue:
    """A queue set up by ensure() (which probes and keeps the verdict)."""
    q = Queue(tmp_path / "q")
    q.ensure()
    return q


def new_process(queue: Queue) -> None:
    """What a fresh process knows: no queue checked yet (the stamp on disk stays)."""
    safety._checked_roots.discard(str(queue.dir))


def replace_dir(queue: Queue, name: str) -> None:
    """Another directory in `name`'s place (the old one kept, so its inode is not reused)."""
    (queue.dir / name).rename(queue.dir / f"old-{name}")
    (queue.dir / name).mkdir(mode=0o700)


def probe_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def probe(root: str) -> None:
        raise ProbedError(root)

    monkeypatch.setattr(safety, "probe_renames", probe)


def test_a_passed_probe_is_kept_and_believed(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure() leaves the stamp (the queue's own file: 0600, ours); a new process whose
    directories match it checks everything else and does not probe. Control: without the
    stamp the same process probes."""
    stamp = queue.dir / CHECK_STAMP
    assert own_files(queue.dir) == [stamp]
    st = stamp.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (os.geteuid(), 0o600)
    text = stamp.read_text()
    assert text.startswith(f"lanekit queue check {schemas.QUEUE_CHECK_SCHEMA} {sys.platform}\n")
    assert all(f"\n{name} " in text for name in SUBDIRS)
    assert all(list((queue.dir / sub).iterdir()) == [] for sub in SUBDIRS)
    probe_forbidden(monkeypatch)
    new_process(queue)
    queue.check()  # no ProbedError: the verdict was believed
    new_process(queue)
    stamp.unlink()
    with pytest.raises(ProbedError):
        queue.check()


def test_every_other_refusal_is_still_made_with_a_stamp(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp stands in for the probe only: a group-writable, missing or symlinked
    directory is refused by a process that believes the stamp, as without one."""
    probe_forbidden(monkeypatch)
    failed = queue.dir / "failed"
    failed.chmod(0o770)
    new_process(queue)
    with pytest.raises(QueueError, match="writable by its group"):
        queue.check()
    failed.chmod(0o700)
    failed.rename(queue.dir / "elsewhere")
    new_process(queue)
    with pytest.raises(QueueError, match="queue directory is missing"):
        queue.check()
    failed.symlink_to(queue.dir / "elsewhere")
    new_process(queue)
    with pytest.raises(QueueError, match="is a symlink"):
        queue.check()


@pytest.mark.parametrize(
    "change", ["replaced", "mounted", "version", "foreign-mode", "symlink", "garbage"]
)
def test_the_probe_runs_again_when_its_verdict_may_not_hold(
    queue: Queue, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A directory replaced (another inode), a mount inside the queue, a new probe version, or
    a stamp that is not the queue's own (others may write it, a symlink, not a stamp at all):
    the process probes."""
    stamp = queue.dir / CHECK_STAMP
    if change == "replaced":
        replace_dir(queue, "claimed")
    elif change == "mounted":
        # A bind mount of claimed/ onto itself keeps its (st_dev, st_ino) and breaks renames
        # into it (EXDEV): only the mount table shows it (Linux; elsewhere, no bind mounts).
        if not sys.platform.startswith("linux"):
            pytest.skip("the mount table is Linux's /proc/self/mountinfo")
        table = volumes.read_mountinfo()
        assert table is not None
        claimed = os.path.realpath(queue.dir / "claimed").replace(" ", "\\040")
        extra = f"9999 1 0:99 / {claimed} rw,relatime - ext4 /dev/vdz rw\n"
        monkeypatch.setattr(volumes, "read_mountinfo", lambda: table + extra)
    elif change == "version":
        monkeypatch.setattr(safety, "QUEUE_CHECK_SCHEMA", schemas.QUEUE_CHECK_SCHEMA + 1)
    elif change == "foreign-mode":
        stamp.chmod(0o620)
    elif change == "symlink":
        real = queue.dir / "logs" / "stamp"
        stamp.rename(real)
        stamp.symlink_to(real)
    else:
        stamp.write_text("lanekit queue check\n")
    probe_forbidden(monkeypatch)
    new_process(queue)
    with pytest.raises(ProbedError):
        queue.check()


def test_ensure_always_probes(queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure() (what `apply` runs) probes even with a matching stamp."""
    probe_forbidden(monkeypatch)
    with pytest.raises(ProbedError):
        queue.ensure()


def test_a_changed_queue_is_refused_before_a_job_is_written(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp matched a queue whose claimed/ was since replaced by one on a volume without
    hard links: the single enqueue's function probes again and refuses; nothing is queued.
    Control: with the stamp still matching, the same volume is not asked (the job goes in)."""
    real_link = os.link

    def no_links(src: str, dst: str, **kwargs: object) -> None:
        if ".probe-" in str(src):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), src, None, dst)
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", no_links)
    new_process(queue)
    assert enqueue_into(queue.dir, b"{}", "control") == "control"
    replace_dir(queue, "claimed")
    new_process(queue)
    with pytest.raises(QueueError, match="no hard links"):
        enqueue_into(queue.dir, b"{}", "refused")
    assert sorted(p.name for p in queue.queue.iterdir()) == ["control.json"]
    assert not list(queue.dir.rglob(".probe-*"))


@pytest.mark.parametrize("target", PUBLISHED_INTO)
def test_a_queue_that_cannot_link_from_tmp_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """A new job or record is given its name by a link from tmp/ (fsops.publish_new): a
    queue where that link fails is refused at its check, naming the directory, instead of
    failing every enqueue; the probe leaves nothing behind."""
    real_link = os.link
    queue = Queue(tmp_path / "q")

    def no_link_here(src: str, dst: str, **kwargs: object) -> None:
        if ".probe-" in str(src) and os.path.dirname(dst) == str(queue.dir / target):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src, None, dst)
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", no_link_here)
    with pytest.raises(QueueError) as caught:
        queue.ensure()
    assert caught.value.message.startswith(f"{queue.dir / target}: a hard link from ")
    assert "no job could be enqueued" in caught.value.message
    assert not (queue.dir / CHECK_STAMP).exists(), "a refused probe keeps no verdict"
    assert not list(queue.dir.rglob(".probe-*"))
    monkeypatch.undo()
    queue.ensure()
    assert (queue.dir / CHECK_STAMP).exists()
