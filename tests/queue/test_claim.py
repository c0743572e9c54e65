"""Claiming (lanekit.queue.directory.claim): files in queue/ that must never run or be touched, a
hard link to a file elsewhere and a file over the queue's max_job_bytes, go to failed/ with their
reason; the brief extra names of a producer's `ln && rm` and lanekit's own mark do not."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lanekit.queue.directory.backend import Queue
from lanekit.queue.model import Dropped, DropReason
from lanekit.queue.records import JobState
from lanekit.system import fsops

OLD = 1_000_000_000
"""An mtime no claim would give a file (2001): a file dated so was not touched."""


def make_queue(root: Path, max_job_bytes: int = 1 << 20) -> Queue:
    """A fresh queue, no fsyncs."""
    queue = Queue(root / "q", durable=False, backoff_base=0, max_job_bytes=max_job_bytes)
    queue.ensure()
    return queue


def claim_all(queue: Queue) -> tuple[list[str], list[Dropped]]:
    """Claim until the queue is empty: the ids handed out, and what was dropped."""
    dropped: list[Dropped] = []
    claimer = queue.claimer(lane="work", on_drop=dropped.append)
    claimed = []
    while (claim := claimer.claim()) is not None:
        claimed.append(claim.job_id)
        queue.complete(claim)
    return claimed, dropped


def test_a_hard_link_to_a_file_elsewhere_goes_to_failed_untouched(tmp_path: Path) -> None:
    """A hard link dropped into queue/ is refused to failed/ with its reason, and the file it
    shares its inode with keeps its contents and mtime (issue 30 item 10): a claim would
    date the inode (the claim's os.utime), and the job could change it."""
    queue = make_queue(tmp_path)
    outside = tmp_path / "secret.json"
    outside.write_text('{"not": "yours"}')
    os.utime(outside, (OLD, OLD))
    os.link(outside, queue.queue / "aa-link.json")
    queue.enqueue({"ok": True}, job_id="zz-good")
    claimed, dropped = claim_all(queue)
    assert claimed == ["zz-good"]
    assert [(d.job_id, d.reason) for d in dropped] == [("aa-link", DropReason.LINKED)]
    assert "2 hard links" in dropped[0].detail
    assert "2 hard links" in (queue.failed / "aa-link.error").read_text()
    assert outside.read_text() == '{"not": "yours"}'
    assert outside.stat().st_mtime == OLD
    assert queue.store.read("aa-link").state is JobState.FAILED  # type: ignore[union-attr]
    # Retried by hand, it is not dated either (and a claim refuses it again).
    queue.retry("aa-link")
    assert outside.stat().st_mtime == OLD
    assert claim_all(queue)[1][0].reason is DropReason.LINKED
    assert outside.stat().st_mtime == OLD


def test_a_producer_between_ln_and_rm_is_passed_over_not_failed(tmp_path: Path) -> None:
    """The README's producer links tmp/<x> to queue/<id>.json, then removes tmp/<x>: a claim
    in between sees two names, the other one in tmp/. That job is put back, untouched, and
    claimed once the producer's `rm` is done."""
    queue = make_queue(tmp_path)
    staged = queue.tmp / "from-bash"
    staged.write_text('{"note": "from bash"}')
    os.utime(staged, (OLD, OLD))
    os.link(staged, queue.queue / "aa-bash.json")
    assert claim_all(queue) == ([], [])
    assert (queue.queue / "aa-bash.json").stat().st_mtime == OLD
    staged.unlink()
    assert claim_all(queue) == (["aa-bash"], [])


def test_a_running_mark_left_on_the_job_file_is_lanekits_own(tmp_path: Path) -> None:
    """The running mark an earlier claim of this very file left (claimed/.<id>.running, a
    hard link of it) is lanekit's own name: the job is claimed and runs."""
    queue = make_queue(tmp_path)
    queue.enqueue({"n": 1}, job_id="aa-marked")
    os.link(queue.queue / "aa-marked.json", queue.claimed / ".aa-marked.running")
    assert claim_all(queue) == (["aa-marked"], [])


def test_a_file_over_max_job_bytes_goes_to_failed_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file dropped in queue/ larger than the queue's max_job_bytes goes to failed/ by its
    fstat size, never read (issue 30 item 12); one at the limit runs."""
    from lanekit.system.fdio import read_all as real_read_all

    queue = make_queue(tmp_path, max_job_bytes=64)
    big = b'{"pad": "' + b"x" * 100 + b'"}'
    (queue.queue / "aa-big.json").write_bytes(big)
    fits = b'{"pad": "' + b"x" * (64 - 11) + b'"}'
    assert len(fits) == 64
    (queue.queue / "bb-fits.json").write_bytes(fits)
    reads: list[int] = []

    def read_all(fd: int, size: int) -> bytes:
        reads.append(size)
        return real_read_all(fd, size)

    monkeypatch.setattr("lanekit.queue.directory.claim.read_all", read_all)
    claimed, dropped = claim_all(queue)
    assert claimed == ["bb-fits"]
    assert [(d.job_id, d.reason) for d in dropped] == [("aa-big", DropReason.TOO_LARGE)]
    assert reads == [64]
    reason = (queue.failed / "aa-big.error").read_text()
    assert f"job file is {len(big)} bytes, over the queue's max_job_bytes (64)" in reason
    assert queue.store.read("aa-big").state is JobState.FAILED  # type: ignore[union-attr]


def test_an_enqueue_killed_between_link_and_unlink_delays_its_job_never_loses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An enqueue publishes its job by link + unlink (fsops.publish_new). Killed between the
    two, it leaves the job in queue/ with a second name in tmp/: claims pass it over, untouched,
    until the sweep of tmp/ removes the temp name an hour later; then it is claimed and runs."""
    queue = make_queue(tmp_path)

    class KilledError(BaseException):
        pass

    def killed_after_link(src: str, dst: str) -> None:
        os.link(src, dst)
        raise KilledError

    with monkeypatch.context() as patch:
        patch.setattr(fsops, "publish_new", killed_after_link)
        patch.setattr(os, "unlink", lambda *args, **kwargs: None)  # SIGKILL cleans nothing up
        with pytest.raises(KilledError):
            queue.enqueue({"n": 1}, job_id="aa-killed")
    (left,) = [p for p in queue.tmp.iterdir() if p.name.startswith(".job.")]
    assert (queue.queue / "aa-killed.json").stat().st_nlink == 2
    assert claim_all(queue) == ([], [])
    assert (queue.queue / "aa-killed.json").exists()
    queue.recover(stale_after=3600, max_attempts=3)
    assert left.exists(), "a temp file younger than an hour is kept"
    os.utime(left, (time.time() - 7200, time.time() - 7200))
    queue.recover(stale_after=3600, max_attempts=3)
    assert not left.exists()
    assert claim_all(queue) == (["aa-killed"], [])
