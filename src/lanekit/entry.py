"""The process launchd starts for a lane, and its fast path: a run that finds nothing queued.

Most scheduled runs find the queue empty, and every run is a fresh interpreter, so start-up is
most of what an empty run costs (benchmark figure (c): `lanekit run` on an empty queue vs
`python -c pass`). This module imports only builtin modules (os, sys, fcntl, time) and
lanekit.lanelog. It reads the snapshot with a small strict JSON reader, because importing json
pulls in re and compiles its patterns, and it stays clear of dataclasses (which imports inspect,
ast and dis), pathlib, enum, signal and lanekit.errors: together they cost several times
`python -c pass`.

The fast path only handles the case it can vouch for: `LANE --snapshot PATH`, a snapshot that
reads cleanly with every field present, and nothing in queue/, delayed/ or claimed/. Then it
does what the full run would do for an empty queue: rotate the lane log (and launchd's
stdout/stderr files: launchd reopens them at each spawn, so a rename here only affects the
next run), take the lane lock
(held: `skipped reason=lane-busy`, exit 0), log `start` and `finish reason=empty` (doctor's
missed-run check reads them), exit 0. The first run of a UTC day goes to the full path too,
which purges the queue (retention, lanekit.queue.Queue.purge). Everything else, including
every error, goes to
lanekit.runner.main, which does the whole run and reports problems its usual way.

No stop-signal handlers are installed on this path: nothing is claimed, so a SIGTERM that ends
the process early leaves nothing to restore (the kernel drops the lane lock).
"""

# ruff: noqa: PTH110, PTH116, PTH120, PTH208
# (os and os.path on str paths: pathlib is one of the imports this module avoids)
from __future__ import annotations

import fcntl
import os
import sys
import time

from lanekit.clock import epoch
from lanekit.lanelog import LaneLog, rotate_if_needed
from lanekit.owned import unsafe_reason
from lanekit.quoting import printable
from lanekit.snapshot_fields import SNAPSHOT_KEYS, SNAPSHOT_SCHEMA, snapshot_problem

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeGuard

__all__ = ["SNAPSHOT_KEYS", "SNAPSHOT_SCHEMA", "empty_run", "main"]


def main(argv: Sequence[str]) -> int:
    """`lanekit run LANE [--snapshot PATH]`: the empty run here, any other in the runner."""
    code = empty_run(argv)
    if code is not None:
        return code
    from lanekit.runner import main as full_run

    return full_run(argv)


def empty_run(argv: Sequence[str], *, clock: Callable[[], float] = time.monotonic) -> int | None:
    """The whole run when nothing is queued, delayed or claimed: its exit code. None when
    the fast path cannot vouch for the run (unusual arguments, a snapshot it does not read
    cleanly, anything queued, a lane lock that cannot be opened): the full run takes over,
    from the start, having changed nothing but perhaps rotated the lane log."""
    parsed = split_args(argv)
    if parsed is None:
        return None
    lane, snapshot = parsed
    if snapshot is None:
        return None  # without --snapshot the installed snapshots are searched: full path
    spec = read_snapshot(snapshot)
    if spec is None or spec["lane"] != lane:
        return None
    queue_dir, log_path = spec["queue_dir"], spec["log_path"]
    max_bytes, keep = spec["log_max_bytes"], spec["log_keep"]
    keep_done = spec["keep_done"]
    if not (
        isinstance(queue_dir, str)
        and isinstance(log_path, str)
        and _is_int(max_bytes)
        and _is_int(keep)
        and _is_int(keep_done)
        and nothing_queued(queue_dir)
        and not purge_due(queue_dir, epoch(), keep_done)
    ):
        return None
    warn = log_warner(log_path)
    try:
        rotate_if_needed(log_path, max_bytes, keep)
        for key in ("stdout_path", "stderr_path"):
            launchd_log = spec[key]
            if isinstance(launchd_log, str):
                rotate_if_needed(launchd_log, max_bytes, keep)
    except OSError as exc:
        warn(exc)
    log = LaneLog(log_path, lane, on_error=warn)
    try:
        fd = try_lock(lock_file(queue_dir, lane))
    except OSError:
        return None  # the full run names the directory that is missing or unusable (69)
    if fd is None:
        log.event("skipped", reason="lane-busy")
        return 0
    try:
        started = clock()
        log.event("start", pid=os.getpid())
        log_finish(log, reason="empty", code=0, duration=clock() - started)
    finally:
        os.close(fd)
    return 0


# --- pieces the full runner shares ---------------------------------------------------------


def split_args(argv: Sequence[str]) -> tuple[str, str | None] | None:
    """`LANE [--snapshot PATH]` (either order, or `--snapshot=PATH`) -> (lane, snapshot);
    None for anything else (lanekit.runner.parse_args turns that into the usage error)."""
    lane: str | None = None
    snapshot: str | None = None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--snapshot":
            if i + 1 >= len(args) or snapshot is not None:
                return None
            snapshot = args[i + 1]
            i += 2
            continue
        if arg.startswith("--snapshot="):
            if snapshot is not None:
                return None
            snapshot = arg.partition("=")[2]
        elif arg.startswith("-") or lane is not None or not arg:
            return None
        else:
            lane = arg
        i += 1
    if lane is None:
        return None
    return lane, snapshot


def lock_file(queue_dir: str, lane: str) -> str:
    """The lane lock's path: in the queue's logs/ directory, next to the lane log."""
    return f"{queue_dir}/logs/{lane}.lock"


def utc_day(epoch: float) -> str:
    """`YYYY-MM-DD` of `epoch` in UTC (done/ buckets and the daily purge count UTC days)."""
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def purge_stamp(queue_dir: str, day: str) -> str:
    """The file whose creation (O_EXCL) claims the day's purge of a queue: whichever run
    creates `logs/.purged-<UTC day>` first purges, every other run that day sees it exists.
    One stat per empty run is all the daily purge costs the fast path."""
    return f"{queue_dir}/logs/.purged-{day}"


def purge_due(queue_dir: str, now: float, keep_done: float) -> bool:
    """True when no run has purged the queue today yet and there may be something to purge:
    a done/ day bucket older than `keep_done`, or anything in failed/. One stat once the day's
    purge ran; before it, a listing of done/ (one entry per day) and a peek into failed/."""
    if os.path.exists(purge_stamp(queue_dir, utc_day(now))):
        return False
    cutoff = utc_day(now - keep_done)
    try:
        if any(name[:1].isdigit() and name < cutoff for name in os.listdir(f"{queue_dir}/done")):
            return True
        with os.scandir(f"{queue_dir}/failed") as entries:
            return any(not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False  # a missing directory: the full run reports it when it matters


def try_lock(path: str) -> int | None:
    """Open `path` (created if missing) and take a non-blocking exclusive flock on it: the
    descriptor (close it to release), or None when another process holds the lock. Raises
    OSError when the file cannot be opened. The kernel drops the lock when the holder dies,
    however it dies, so a stale lock file never blocks a lane."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def nothing_queued(queue_dir: str | os.PathLike[str]) -> bool:
    """True when queue/, delayed/ and claimed/ hold no job: nothing to run, retry or recover,
    so nothing would move. Any doubt (a directory missing or unreadable) says False, and the
    full path, which checks the queue first, reports it."""
    base = os.fspath(queue_dir)
    for name in ("queue", "delayed", "claimed"):
        try:
            with os.scandir(f"{base}/{name}") as entries:
                if any(not entry.name.startswith(".") for entry in entries):
                    return False
        except OSError:
            return False
    return True


def log_warner(log_path: str | os.PathLike[str]) -> Callable[[OSError], None]:
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
    """The run's last event: why it ended, its exit status and what it did."""
    log.event(
        "finish",
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


# --- the snapshot, read without json ------------------------------------------------------


def read_snapshot(path: str) -> dict[str, object] | None:
    """The snapshot at `path` as a dict when it reads cleanly: a regular file and directory of
    ours that nobody else may write, UTF-8 JSON, and every field of the right type
    (snapshot_fields). None otherwise: the full path reads it again and explains, or refuses,
    what is wrong."""
    try:
        if unsafe_reason(os.stat(os.path.dirname(path) or "."), directory=True) is not None:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if unsafe_reason(os.fstat(fd)) is not None:
                return None
            with open(fd, "rb", closefd=False) as handle:
                data = handle.read()
        finally:
            os.close(fd)
        value = parse_json(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if snapshot_problem(value) is not None or not isinstance(value, dict):
        return None
    return value


_WHITESPACE = " \t\n\r"
_DIGITS = "0123456789"
_HEX = "0123456789abcdefABCDEF"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def parse_json(text: str) -> object:
    """Strict RFC 8259 JSON (no NaN or Infinity, no trailing data, no control characters in
    strings). Whatever it accepts, json.loads accepts and gives the same value (a property
    test holds it to that); it may refuse more, and then the caller asks json. ValueError
    when the text is not JSON."""
    value, end = _value(text, _skip(text, 0))
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data at offset {end}")
    return value


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WHITESPACE:
        i += 1
    return i


def _value(s: str, i: int) -> tuple[object, int]:
    c = s[i : i + 1]
    if c == '"':
        return _string(s, i + 1)
    if c == "{":
        return _object(s, i + 1)
    if c == "[":
        return _array(s, i + 1)
    if s.startswith("true", i):
        return True, i + 4
    if s.startswith("false", i):
        return False, i + 5
    if s.startswith("null", i):
        return None, i + 4
    if c == "-" or (c != "" and c in _DIGITS):
        return _number(s, i)
    raise ValueError(f"expecting a value at offset {i}")


def _digits(s: str, i: int) -> int:
    """The index after the run of ASCII digits at `i` (str.isdigit would take any script's)."""
    n = len(s)
    while i < n and s[i] in _DIGITS:
        i += 1
    return i


def _number(s: str, i: int) -> tuple[object, int]:
    start = i
    if s[i] == "-":
        i += 1
    c = s[i : i + 1]
    if c == "0":
        i += 1
    elif c != "" and c in "123456789":
        i = _digits(s, i + 1)
    else:
        raise ValueError(f"bad number at offset {start}")
    integer = True
    if s[i : i + 1] == ".":
        end = _digits(s, i + 1)
        if end == i + 1:
            raise ValueError(f"bad number at offset {start}")
        i, integer = end, False
    if s[i : i + 1] in ("e", "E"):
        i += 1
        if s[i : i + 1] in ("+", "-"):
            i += 1
        end = _digits(s, i)
        if end == i:
            raise ValueError(f"bad number at offset {start}")
        i, integer = end, False
    text = s[start:i]
    return (int(text) if integer else float(text)), i


def _hex4(s: str, i: int) -> int:
    digits = s[i : i + 4]
    if len(digits) != 4 or any(ch not in _HEX for ch in digits):
        raise ValueError(f"bad \\u escape at offset {i}")
    return int(digits, 16)


def _string(s: str, i: int) -> tuple[str, int]:
    parts: list[str] = []
    n = len(s)
    while True:
        j = i
        while j < n and s[j] != '"' and s[j] != "\\" and s[j] >= " ":
            j += 1
        parts.append(s[i:j])
        if j >= n:
            raise ValueError("unterminated string")
        if s[j] == '"':
            return "".join(parts), j + 1
        if s[j] != "\\":
            raise ValueError(f"control character in string at offset {j}")
        escape = s[j + 1 : j + 2]
        if escape == "u":
            code = _hex4(s, j + 2)
            j += 6
            # A surrogate pair written as two escapes is one character (as json reads it);
            # a lone surrogate stays what it is.
            if 0xD800 <= code <= 0xDBFF and s[j : j + 2] == "\\u":
                low = _hex4(s, j + 2)
                if 0xDC00 <= low <= 0xDFFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    j += 6
            parts.append(chr(code))
        elif escape in _ESCAPES:
            parts.append(_ESCAPES[escape])
            j += 2
        else:
            raise ValueError(f"bad escape at offset {j}")
        i = j


def _object(s: str, i: int) -> tuple[dict[str, object], int]:
    result: dict[str, object] = {}
    i = _skip(s, i)
    if s[i : i + 1] == "}":
        return result, i + 1
    while True:
        if s[i : i + 1] != '"':
            raise ValueError(f"expecting a key at offset {i}")
        key, i = _string(s, i + 1)
        i = _skip(s, i)
        if s[i : i + 1] != ":":
            raise ValueError(f"expecting ':' at offset {i}")
        value, i = _value(s, _skip(s, i + 1))
        result[key] = value
        i = _skip(s, i)
        c = s[i : i + 1]
        if c == "}":
            return result, i + 1
        if c != ",":
            raise ValueError(f"expecting ',' or '}}' at offset {i}")
        i = _skip(s, i + 1)


def _array(s: str, i: int) -> tuple[list[object], int]:
    result: list[object] = []
    i = _skip(s, i)
    if s[i : i + 1] == "]":
        return result, i + 1
    while True:
        item, i = _value(s, i)
        result.append(item)
        i = _skip(s, i)
        c = s[i : i + 1]
        if c == "]":
            return result, i + 1
        if c != ",":
            raise ValueError(f"expecting ',' or ']' at offset {i}")
        i = _skip(s, i + 1)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
