"""`lanekit logs`: the last lines of a lane's logs, and following them across rotation.

Three logs per lane: the runner's event log (`<queue>/logs/<lane>.log`, rotated by the runner
to `.1`, `.2`, ...) and the files launchd writes the job's stdout and stderr to. `follow` is a
generator with an injectable `sleep` and a `stop` condition, so tests drive it step by step.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from lanekit.config import LaneSpec
from lanekit.errors import LanekitError, UsageError
from lanekit.run.lanelog import log_files, open_to_read
from lanekit.state.paths import Paths
from lanekit.system.quoting import cmdline

FOLLOW_POLL = 0.5
"""Seconds between looks at a followed file (tail -f uses 1 s)."""

_BLOCK = 8192


class LogStream(StrEnum):
    """Which of a lane's logs to show."""

    EVENTS = "events"
    """The runner's logfmt event log."""
    OUT = "out"
    """launchd's StandardOutPath."""
    ERR = "err"
    """launchd's StandardErrorPath."""


def log_path(lane: LaneSpec, stream: LogStream) -> Path:
    """The file of one of the lane's logs."""
    if stream is LogStream.OUT:
        return lane.stdout_path
    if stream is LogStream.ERR:
        return lane.stderr_path
    return lane.log_path


def tail(path: Path, n: int, *, rotated: bool = False) -> list[str]:
    """The last `n` lines of `path` (newlines stripped), oldest first; with `rotated`, lines
    from `path.1`, `path.2`, ... make up the count when the live file is short."""
    if n <= 0:
        return []
    files = log_files(path, rotated=rotated) if rotated else [path]
    lines: list[str] = []
    for name in reversed(files):
        fd = open_to_read(name, follow=True)
        if fd is None:
            continue
        try:
            got = _tail_handle(fd, n - len(lines), end=None)
        finally:
            os.close(fd)
        lines = got + lines
        if len(lines) >= n:
            break
    return lines[-n:]


def _tail_handle(fd: int, n: int, *, end: int | None) -> list[str]:
    """The last `n` complete-or-final lines before byte `end` (default: the file's size)."""
    size = os.fstat(fd).st_size if end is None else end
    pos = size
    data = b""
    while pos > 0 and data.count(b"\n") <= n:
        step = min(_BLOCK, pos)
        pos -= step
        data = os.pread(fd, step, pos) + data
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    if pos > 0 and lines:
        lines = lines[1:]  # the first one is cut: we started reading mid-line
    return lines[-n:] if n else []


@dataclass
class _Open:
    fd: int
    ino: int
    dev: int
    pos: int
    buffer: bytes = b""


def _open(path: Path) -> _Open | None:
    fd = open_to_read(path, follow=True)
    if fd is None:
        return None
    st = os.fstat(fd)
    return _Open(fd=fd, ino=st.st_ino, dev=st.st_dev, pos=0)


def _read_new(handle: _Open) -> list[str]:
    """Complete lines appended since the last read; a partial last line waits in the buffer."""
    chunks = []
    while True:
        chunk = os.pread(handle.fd, 65536, handle.pos)
        if not chunk:
            break
        handle.pos += len(chunk)
        chunks.append(chunk)
    if not chunks:
        return []
    data = handle.buffer + b"".join(chunks)
    *complete, handle.buffer = data.split(b"\n")
    return [line.decode("utf-8", "replace") for line in complete]


def _replaced(path: Path, handle: _Open) -> bool:
    """True when `path` is now another file (rotated) or was truncated under us."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return False  # rotated away and not yet recreated: keep reading the old one
    if (st.st_ino, st.st_dev) != (handle.ino, handle.dev):
        return True
    return st.st_size < handle.pos


def _skipped(path: Path, old: tuple[int, int]) -> Iterator[str]:
    """The lines of the files rotated in after the one just finished (`old`: its inode and
    device) and before the file now at `path`: several rotations between two looks leave the
    finished file at `path.N` (N > 1) and the ones written since at `path.N-1` .. `path.1`,
    read here whole, oldest first. Nothing when the finished file is `path.1` (one rotation)
    or is not among the rotated ones (truncated in place, or already dropped)."""
    rotated = []
    for n in range(1, 1000):
        candidate = path.with_name(f"{path.name}.{n}")
        try:
            st = candidate.stat()
        except OSError:
            return
        if (st.st_ino, st.st_dev) == old:
            break
        rotated.append(candidate)
    for candidate in reversed(rotated):
        handle = _open(candidate)
        if handle is None:
            continue
        try:
            yield from _read_new(handle)
            if handle.buffer:
                yield handle.buffer.decode("utf-8", "replace")
        finally:
            os.close(handle.fd)


def follow(
    path: Path,
    *,
    lines: int = 10,
    poll: float = FOLLOW_POLL,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """The last `lines` lines, then every line appended, like `tail -F`: when the file is
    rotated (another inode at `path`) or truncated, the rest of the old file is read and the
    new one followed from its start. Waits for a file that does not exist yet. Ends when
    `stop()` returns True (checked after each look)."""
    handle = _open(path)
    try:
        if handle is not None:
            size = os.fstat(handle.fd).st_size
            yield from _tail_handle(handle.fd, lines, end=size) if lines > 0 else []
            handle.pos = size
        while True:
            if handle is None:
                handle = _open(path)
            if handle is not None:
                yield from _read_new(handle)
                if _replaced(path, handle):
                    yield from _read_new(handle)
                    if handle.buffer:
                        yield handle.buffer.decode("utf-8", "replace")
                    os.close(handle.fd)
                    yield from _skipped(path, (handle.ino, handle.dev))
                    handle = _open(path)
                    continue
            if stop():
                return
            sleep(poll)
    finally:
        if handle is not None:
            os.close(handle.fd)


@dataclass(frozen=True, slots=True)
class LogsRequest:
    """What `lanekit logs` was asked for."""

    lane: str
    stream: LogStream = LogStream.EVENTS
    lines: int = 20
    follow: bool = False
    config_path: Path | None = None
    project: Path | None = None
    """`--project PATH`; without it and without a lanes.toml here, the installed projects
    (lanekit.config.projects)."""


def lane_logs(
    request: LogsRequest,
    paths: Paths,
    env: Mapping[str, str] | None = None,
    *,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """The core of `lanekit logs`: lines of the chosen log of a lane, followed when asked."""
    from lanekit.config.projects import find_configs, lanes_named

    if request.lines < 0:
        raise UsageError(f"-n {request.lines}: must be 0 or more", "e.g. -n 50")
    env = os.environ if env is None else env
    configs, _ = find_configs(request.config_path, paths, env, project=request.project)
    (lane,) = lanes_named(configs, [request.lane])
    path = log_path(lane, request.stream)
    if request.follow:
        return follow(path, lines=request.lines, stop=stop, sleep=sleep)
    rotated = request.stream is LogStream.EVENTS
    if not log_files(path, rotated=rotated):
        raise LanekitError(
            f"{path}: no log yet for lane {lane.name}",
            "it has not run (or written) since it was installed: "
            f"`{cmdline('lanekit', 'try', lane.name)}` "
            "runs it now, `lanekit doctor` says why it does not",
        )
    return iter(tail(path, request.lines, rotated=rotated))
