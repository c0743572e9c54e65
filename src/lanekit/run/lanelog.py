"""The lane log: one logfmt line per runner event, appended by any number of runners at once.

`ts=2026-09-17T10:40:00.123Z lane=funnel event=claimed job=... attempt=1`

Each line is built in memory and appended with ONE write(2) on an O_APPEND descriptor, so lines
from concurrent runners never interleave. Rotation renames `log -> log.1 -> ... -> log.N` under a
flock on the file being rotated, so two runners rotating at once cannot rename a fresh log over
an older one. The writing side imports only builtin modules (no pathlib, contextlib or typing):
every scheduled run, even one that finds nothing to do, writes here, and its start-up is a
benchmark figure. Doctor and `lanekit logs` reuse the reader.
"""

# ruff: noqa: PTH105, PTH108, PTH120, SIM105
# (os on str paths, try/except instead of contextlib.suppress: importing pathlib or contextlib
# would cost every scheduled run milliseconds, see the docstring)
from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time

from lanekit.state.clock import epoch
from lanekit.system.owned import kind_of, make_private_dirs
from lanekit.system.quoting import printable

TYPE_CHECKING = False  # importing typing would cost the runner's start-up a few ms
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from datetime import datetime
    from pathlib import Path
    from typing import TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]


class EventName:
    """The lane log's event names (`event=`): every writer passes one, every reader matches
    one. Plain str constants, not a StrEnum: importing enum would cost every empty scheduled
    run ~3 ms (benchmark (c)). The bytes written are these."""

    START = "start"
    FINISH = "finish"  # a run's (or a watch pass's) last event: reason, exit and its counts
    ERROR = "error"
    SKIPPED = "skipped"  # a run that did nothing, a job the guard moved unrun, a reload left
    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"
    REQUEUED = "requeued"
    RECOVERED = "recovered"
    PURGED = "purged"
    APPLIED = "applied"
    THROTTLED = "throttled"
    CHANNEL_FAILED = "channel-failed"
    FENCED = "fenced"  # a settle whose lease another run had taken over: nothing changed


class Reason:
    """The `reason=` the run and apply give in their own words (a job the queue failed unrun
    or took back carries the queue's DropReason / RecoverReason instead)."""

    EMPTY = "empty"
    MAX_JOBS = "max-jobs"
    MAX_SECONDS = "max-seconds"
    SIGNAL = "signal"
    LANE_BUSY = "lane-busy"
    PAUSED = "paused"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    WATCHER_DIED = "watcher-died"
    CANNOT_START = "cannot-start"
    NOT_PERMITTED = "not-permitted"
    RUNNER_ERROR = "runner-error"
    RUNNING = "running"  # apply left a running lane's reload for later
    ALREADY_SUCCEEDED = "already-succeeded"  # the guard's skip (DropReason's, as logged)
    INTERRUPTED = "interrupted"  # a plain lane's run cut short, not repeated (retry_on_crash)
    LEASE_LOST = "lease-lost"  # the watcher's self-fence stopped the job (a server queue's)


MAX_VALUE_CHARS = 1000
"""Longer values (a job's error text) are cut so one event stays one short line."""

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NEEDS_QUOTES = frozenset(' "=\\')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def format_ts(epoch: float) -> str:
    """UTC ISO 8601 with milliseconds; fixed width, so timestamps compare as strings."""
    whole = int(epoch)
    millis = int((epoch - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def format_value(value: object) -> str:
    """A logfmt value: bare when safe, else double-quoted with backslash escapes."""
    text = str(value)
    if len(text) > MAX_VALUE_CHARS:
        text = text[: MAX_VALUE_CHARS - 3] + "..."
    if text and not any(ch in _NEEDS_QUOTES or ch < " " or ch == "\x7f" for ch in text):
        return text
    out: list[str] = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _check_key(key: str) -> str:
    if not key or not set(key) <= _KEY_CHARS:
        raise ValueError(f"logfmt key {key!r} must be letters, digits, '_', '.' or '-'")
    return key


def format_line(ts: str, lane: str, event: str, fields: dict[str, object]) -> str:
    """One complete log line (newline included). Fields whose value is None are left out."""
    parts = [f"ts={ts}", f"lane={format_value(lane)}", f"event={format_value(_check_key(event))}"]
    for key, value in fields.items():
        if value is not None:
            parts.append(f"{_check_key(key)}={format_value(value)}")
    return " ".join(parts) + "\n"


class LaneLog:
    """Appends events for one lane to its log file (created, and its directory if the parent of
    that exists, on first use)."""

    def __init__(
        self,
        path: StrPath,
        lane: str,
        *,
        clock: Callable[[], float] = epoch,
        on_error: Callable[[OSError], None] | None = None,
    ) -> None:
        """`clock` stamps each line (default: this process's clock, lanekit.state.clock, which is
        the
        emulated domain's time in a job it started). `on_error` receives a failed write
        instead of it being raised (the runner keeps going when only its log is broken, and
        says so once on stderr)."""
        self.path = os.fspath(path)
        self.lane = lane
        self._clock = clock
        self._on_error = on_error

    def event(self, name: str, **fields: object) -> str:
        """Append `ts= lane= event=<name> k=v ...` and return the line written."""
        line = format_line(format_ts(self._clock()), self.lane, name, fields)
        try:
            self._append(line.encode("utf-8", "backslashreplace"))
        except OSError as exc:
            if self._on_error is None:
                raise
            self._on_error(exc)
        return line

    def _append(self, data: bytes) -> None:
        try:
            fd = _open_log(self.path)
        except FileNotFoundError:
            # Only the last level: a log under a queue on an unmounted volume must fail, not
            # quietly build the queue's path on the boot disk.
            make_private_dirs(os.path.dirname(self.path) or ".", parents=False)
            fd = _open_log(self.path)
        try:
            written = os.write(fd, data)
            if written != len(data):
                # A short write on a regular file means the disk is full; report it rather
                # than append the rest separately and risk interleaving with another runner.
                raise OSError(f"short write to {self.path} ({written} of {len(data)} bytes)")
        finally:
            os.close(fd)


def log_warner(log_path: StrPath) -> Callable[[OSError], None]:
    """An on_error for LaneLog: the first failure becomes one warning on stderr (the run goes
    on when only its log is broken), later ones are dropped."""
    warned: list[OSError] = []

    def warn(exc: OSError) -> None:
        if not warned:
            text = f"warning: cannot write lane log {os.fspath(log_path)}: {exc}"
            sys.stderr.write(printable(text) + "\n")
        warned.append(exc)

    return warn


def log_finish(
    log: LaneLog,
    *,
    reason: str,
    code: int,
    duration: float,
    claimed: int = 0,
    done: int = 0,
    failed: int = 0,
    requeued: int = 0,
    skipped: int = 0,
    recovered: int = 0,
) -> None:
    """The run's last event: why it ended, its exit status and what it did (doctor's
    missed-run check and `lanekit status` read it)."""
    log.event(
        EventName.FINISH,
        reason=reason,
        exit=code,
        claimed=claimed,
        done=done,
        failed=failed,
        requeued=requeued,
        skipped=skipped,
        recovered=recovered,
        duration=f"{duration:.3f}",
    )


_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
LOG_MODE = 0o600


def _open_log(path: str) -> int:
    """The lane log opened for appending: never through a symlink, never blocking (a FIFO
    without a reader fails with ENXIO, with one it opens), and only a regular file is kept."""
    try:
        fd = os.open(path, _LOG_FLAGS, LOG_MODE)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP):
            raise
        raise _not_regular(path) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(path: str) -> OSError:
    try:
        kind = kind_of(os.lstat(path).st_mode)
    except OSError:
        kind = "not a regular file"
    # One argument: str(exc) is the sentence, for the "cannot write lane log PATH: ..." line.
    return OSError(f"it is {kind}; lanekit appends only to a regular file (move it aside)")


def rotate_if_needed(path: StrPath, max_bytes: int, keep: int) -> bool:
    """Rotate `path` to `path.1` (shifting older ones up to `path.<keep>`) when it is larger
    than `max_bytes`. Returns True if this call rotated. `max_bytes <= 0` never rotates;
    `keep <= 0` drops the log instead of keeping rotated copies.

    Safe when several runners call it at once: each takes a flock on the log it opened and
    re-checks under the lock that this file is still the one at `path` and still too big.
    """
    path = os.fspath(path)
    if max_bytes <= 0:
        return False
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size <= max_bytes:
            return False  # not a regular file: the append refuses it, rotation leaves it be
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        own = os.fstat(fd)
        try:
            current = os.lstat(path)
        except FileNotFoundError:
            return False
        if (current.st_dev, current.st_ino) != (own.st_dev, own.st_ino):
            return False  # someone else rotated it while we waited for the lock
        if current.st_size <= max_bytes:
            return False
        if keep <= 0:
            os.unlink(path)
            return True
        for n in range(keep - 1, 0, -1):
            try:
                os.replace(f"{path}.{n}", f"{path}.{n + 1}")
            except FileNotFoundError:
                pass
        os.replace(path, f"{path}.1")
        return True
    finally:
        os.close(fd)


def parse_line(text: str) -> dict[str, str]:
    """Parse one logfmt line into {key: value}. A blank line gives {}; a malformed line
    (a key without `=`, an unterminated quote) raises ValueError."""
    fields: dict[str, str] = {}
    line = text.rstrip("\r\n")
    i, n = 0, len(line)
    while i < n:
        if line[i] == " ":
            i += 1
            continue
        eq = line.find("=", i)
        space = line.find(" ", i)
        if eq < 0 or (0 <= space < eq):
            raise ValueError(f"logfmt: expected key=value at column {i + 1}")
        key = line[i:eq]
        i = eq + 1
        if i < n and line[i] == '"':
            value, i = _parse_quoted(line, i + 1)
        else:
            end = line.find(" ", i)
            end = n if end < 0 else end
            value, i = line[i:end], end
        fields[key] = value
    return fields


def _parse_quoted(line: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < n:
            nxt = line[i + 1]
            if nxt == "u" and i + 6 <= n:
                out.append(chr(int(line[i + 2 : i + 6], 16)))
                i += 6
                continue
            if nxt not in _UNESCAPES:
                raise ValueError(f"logfmt: unknown escape \\{nxt} at column {i + 1}")
            out.append(_UNESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    raise ValueError("logfmt: unterminated quoted value")


def rotated_name(path: Path, n: int) -> Path:
    """The n-th rotated copy of a log: `lane.log.1` is the newest (rotate_if_needed spells
    the same names as strings)."""
    return path.with_name(f"{path.name}.{n}")


def log_files(path: Path, *, rotated: bool = False) -> list[Path]:
    """The log's files oldest first: `path.N ... path.1, path` with rotated copies, else
    just `path`. Only files that exist are listed."""
    from pathlib import Path

    path = Path(path)
    files = []
    if rotated:
        n = 1
        while rotated_name(path, n).exists():
            files.append(rotated_name(path, n))
            n += 1
        files.reverse()
    if path.exists():
        files.append(path)
    return files


def open_to_read(name: StrPath, *, follow: bool = False) -> int | None:
    """A log file opened for reading; None when it is gone (rotated away meanwhile) or is not
    a regular file: a FIFO planted there would block every reader (doctor, status, timeline,
    logs), and a symlink is not the lane's log (the writer refuses both, and warns).
    `follow`: a symlink is followed (StandardOutPath is launchd's to open, and it follows)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP):
            return None
        raise
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def read_events(
    path: Path,
    since: datetime | str | None = None,
    *,
    rotated: bool = False,
) -> Iterator[dict[str, str]]:
    """Events from the lane log in order (rotated files first, oldest first, when `rotated`).

    `since` keeps events with `ts >= since` (a datetime, naive = local time, or a ts string).
    Lines that do not parse (a torn line after a disk-full) are skipped, never fatal.
    """
    floor = _ts_floor(since)
    for name in log_files(path, rotated=rotated):
        fd = open_to_read(name)
        if fd is None:
            continue
        with open(fd, encoding="utf-8", errors="replace") as handle:  # noqa: PTH123 - an fd
            for line in handle:
                try:
                    fields = parse_line(line)
                except ValueError:
                    continue
                if not fields:
                    continue
                if floor is not None and fields.get("ts", "") < floor:
                    continue
                yield fields


def _ts_floor(since: datetime | str | None) -> str | None:
    if since is None or isinstance(since, str):
        return since
    return format_ts(since.timestamp())  # naive datetimes are local time, as documented


SPAN_SLACK_SECONDS = 300
"""How far out of order a line may be and still be found by `read_between`. Each runner takes
its timestamp just before its one write, so concurrent runners append a few milliseconds out of
order; a runner stopped between the two (SIGSTOP, a laptop asleep) can be minutes late."""

_TS_WIDTH = len("ts=2026-09-17T10:40:00.123Z")


def _line_ts(line: bytes) -> str | None:
    """The `ts=` of a log line without parsing the rest (format_line always writes it first)."""
    return _text_ts(line[:_TS_WIDTH].decode("ascii", "replace"))


def _text_ts(line: str) -> str | None:
    """_line_ts of a decoded line."""
    if line.startswith("ts=") and len(line) >= _TS_WIDTH:
        return line[3:_TS_WIDTH]
    return None


def _next_line_at(fd: int, pos: int, size: int) -> tuple[int, bytes]:
    """(offset, text) of the first complete line starting at or after `pos` (b"" at the end)."""
    if pos > 0:
        while pos < size:
            chunk = os.pread(fd, 4096, pos - 1)
            newline = chunk.find(b"\n")
            if newline >= 0:
                pos += newline
                break
            pos += len(chunk) - 1
    if pos >= size:
        return size, b""
    line = b""
    at = pos
    while at < size:
        chunk = os.pread(fd, 4096, at)
        newline = chunk.find(b"\n")
        if newline >= 0:
            return pos, line + chunk[:newline]
        line += chunk
        at += len(chunk)
    return pos, line


def _ts_from(fd: int, pos: int, size: int) -> tuple[int, str | None]:
    """The first line at or after `pos` that has a timestamp: (its offset, its ts)."""
    while pos < size:
        offset, line = _next_line_at(fd, pos, size)
        if offset >= size:
            break
        ts = _line_ts(line)
        if ts is not None:
            return offset, ts
        pos = offset + len(line) + 1
    return size, None


def seek_ts(fd: int, floor: str) -> int:
    """Byte offset of the first line whose ts is >= `floor`, by binary search: the log is
    appended in time order (to within SPAN_SLACK_SECONDS, which callers subtract first), so
    a day of a busy lane costs a few dozen reads, not the whole file."""
    size = os.fstat(fd).st_size
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi) // 2
        offset, ts = _ts_from(fd, mid, size)
        if ts is None or ts >= floor:
            hi = mid
        else:
            lo = offset + 1
    return _next_line_at(fd, lo, size)[0]


def read_between(path: Path, start: float, end: float | None = None) -> Iterator[dict[str, str]]:
    """Events with start <= ts < end (epoch seconds; no end: to the log's end) from the log
    and its rotated copies, oldest first, reading only the part of each file that can hold
    them (see seek_ts). Malformed lines are skipped, as in read_events."""
    floor = format_ts(start)
    # "~" sorts after every timestamp (they start with a digit): no ceiling.
    ceiling = "~" if end is None else format_ts(end)
    search_from = format_ts(start - SPAN_SLACK_SECONDS)
    give_up_at = "~" if end is None else format_ts(end + SPAN_SLACK_SECONDS)
    for name in log_files(path, rotated=True):
        fd = open_to_read(name)
        if fd is None:
            continue
        try:
            size = os.fstat(fd).st_size
            first = _ts_from(fd, 0, size)[1]
            if first is None or first >= give_up_at:
                continue  # every line of this file (and of newer ones) is after the span
            pos = seek_ts(fd, search_from)
            yield from _scan(fd, pos, size, floor=floor, ceiling=ceiling, give_up_at=give_up_at)
        finally:
            os.close(fd)


def _scan(
    fd: int, pos: int, size: int, *, floor: str, ceiling: str, give_up_at: str
) -> Iterator[dict[str, str]]:
    pending = b""
    while pos < size:
        chunk = os.pread(fd, 65536, pos)
        if not chunk:
            break
        pos += len(chunk)
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        # Decoded a chunk at a time, as read_events' text file is: the cut follows a newline,
        # which no UTF-8 sequence contains, so each line decodes as it would alone.
        for line in data[:cut].decode("utf-8", "replace").split("\n"):
            # The give-up test reads the parsed ts, not the line's first bytes a second time
            # (a tenth of the scan). A line that does not parse is skipped either way; the
            # next one with a late ts ends the scan.
            fields = _parsed(line)
            ts = fields.get("ts", "")
            if ts >= give_up_at:
                return
            if floor <= ts < ceiling:
                yield fields
    fields = _parsed(pending.decode("utf-8", "replace"))
    if fields and floor <= fields.get("ts", "") < ceiling:
        yield fields


def _parsed(text: str) -> dict[str, str]:
    try:
        return parse_line(text)
    except ValueError:
        return {}
