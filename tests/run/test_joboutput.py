"""A job's output file (lanekit.run.joboutput): one header line per attempt, the attempt's
bytes up to the limit, then one line saying how much was left out; never through a symlink."""

from __future__ import annotations

import os
from pathlib import Path

from lanekit.run.joboutput import OutputFile


def test_each_attempt_is_headed_and_bounded(tmp_path: Path) -> None:
    """Two attempts append under their headers; past the limit the rest is counted, not kept;
    the directory is made private and the file is 0600."""
    path = tmp_path / "logs" / "output" / "j1.log"
    first = OutputFile.open(str(path), "attempt 1, lane a, started T1", limit=10)
    assert first is not None
    first.write(b"0123456")
    first.write(b"789abcdef")
    first.close()
    second = OutputFile.open(str(path), "attempt 2, lane a, started T2", limit=10)
    assert second is not None
    second.write(b"ok\n")
    second.close()
    assert path.read_bytes() == (
        b"--- attempt 1, lane a, started T1 ---\n0123456789"
        b"\n[lanekit: 6 more bytes of this attempt's output were not kept here (at most 10 per "
        b"attempt); the lane's stdout/stderr logs have them]\n"
        b"--- attempt 2, lane a, started T2 ---\nok\n"
    )
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)


def test_a_symlink_at_the_name_is_never_written_through(tmp_path: Path) -> None:
    """A link planted where the output goes is refused (the job runs without an output file)
    and its target is untouched."""
    target = tmp_path / "victim"
    target.write_text("mine\n")
    (tmp_path / "output").mkdir(mode=0o700)
    os.symlink(target, tmp_path / "output" / "j1.log")
    assert OutputFile.open(str(tmp_path / "output" / "j1.log"), "attempt 1") is None
    assert target.read_text() == "mine\n"


def test_a_fifo_at_the_name_is_neither_waited_on_nor_written(tmp_path: Path) -> None:
    """A FIFO planted where a job's output goes: the open does not block (no reader) and
    nothing is written; the job runs without its own output file."""
    path = tmp_path / "output" / "job.log"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path)
    assert OutputFile.open(str(path), "attempt 1") is None
