"""A job's output file: what the job writes to stdout and stderr, as it comes, kept per job where
its queue says (JobQueue.output_path), so that `lanekit job LANE ID --output` shows one job's
output, attempt by attempt, with no other job's lines in between.

Written by the job's watcher (lanekit.run.watcher), which reads both of the job's pipes: each
attempt starts with one header line (`--- attempt N, lane L, started <ISO 8601 UTC> ---`),
then the bytes as they came, both streams interleaved as a terminal shows them. Bounded: at most
OUTPUT_LIMIT bytes of an attempt are kept, then one line says how many more were left out (the
job is not slowed or stopped: the rest still reaches the lane's stdout/stderr logs, which
rotate). The file goes when the job is purged (its queue's keep_done / keep_failed).

Opened O_APPEND | O_CREAT | O_NOFOLLOW with mode 0600 in a directory lanekit makes 0700: a
symlink planted at the name is refused, and the output never reaches another user. A file that
cannot be opened or written costs the job nothing: its output is then only in the lane's logs.
"""

from __future__ import annotations

import contextlib
import os
import stat

OUTPUT_LIMIT = 256 * 1024
"""Bytes of one attempt's output kept in its job's file: several screens of a log, and 256 KiB
at most for each attempt (a job has at most max_attempts attempts, plus any a crash repeats)."""


class OutputFile:
    """One attempt's share of a job's output file (not thread-safe; the watcher is one
    thread)."""

    __slots__ = ("_fd", "_kept", "_left_out", "_limit")

    def __init__(self, fd: int, limit: int = OUTPUT_LIMIT) -> None:
        self._fd = fd
        self._limit = limit
        self._kept = 0
        self._left_out = 0

    @classmethod
    def open(cls, path: str, header: str, limit: int = OUTPUT_LIMIT) -> OutputFile | None:
        """The output file at `path` (its directory made 0700 if missing), its attempt's
        `header` line written; None when it cannot be opened (see the module docstring)."""
        from lanekit.system.owned import make_private_dirs

        try:
            make_private_dirs(os.path.dirname(path))  # noqa: PTH120 - a str path
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            # O_NONBLOCK: a FIFO planted at the name would block the open (no reader); only a
            # regular file of our own is written to.
            fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                os.close(fd)
                return None
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            return None
        output = cls(fd, limit)
        output._put(f"--- {header} ---\n".encode("utf-8", "backslashreplace"))
        return output

    def write(self, data: bytes) -> None:
        """Keep `data` while the attempt's limit allows; count what is left out."""
        room = self._limit - self._kept
        if room <= 0:
            self._left_out += len(data)
            return
        self._put(data[:room])
        self._kept += min(room, len(data))
        self._left_out += max(0, len(data) - room)

    def close(self) -> None:
        """Say how much was left out (if anything), end the attempt on a line of its own, and
        close the file."""
        if self._left_out:
            self._put(
                f"\n[lanekit: {self._left_out} more bytes of this attempt's output were not "
                f"kept here (at most {self._limit} per attempt); the lane's stdout/stderr logs "
                "have them]\n".encode()
            )
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _put(self, data: bytes) -> None:
        from lanekit.system.fdio import write_all

        try:
            write_all(self._fd, data)
        except OSError:
            self._limit = self._kept  # a full disk: keep nothing more, count it as left out
