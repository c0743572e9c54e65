"""A lane snapshot's format and its one reader: each key and the JSON type of its value, the
defaults of the fields lanes.toml may leave out, the pause marker beside a snapshot, and
`read_snapshot`, which every reader of a snapshot file goes through.

Two callers read snapshots: lanekit.state.snapshot (RunSpec: the full run, `apply`, doctor)
and the empty-run fast path (lanekit.run.entry), which must not import json, dataclasses,
pathlib or lanekit.errors: together they cost several times `python -c pass` on every
scheduled run (benchmark figure (c)). So this one reader is lean: builtin modules at import,
JSON decoded by json's own C scanner without importing json (`parse_json`), and the error
classes imported only when one is raised. A snapshot that is not an object, lacks a key, has
an unknown one or a value of the wrong type is refused before any value is used:
`"max_jobs": "ten"` must not reach the runner. What config, the emulated domain and
`lanekit status` need of the snapshot (defaults, the marker's name) costs them no json or
dataclass creation either (benchmark (i)).
"""

# ruff: noqa: PTH120
# (os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os

from lanekit.state.schemas import SNAPSHOT_SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from lanekit.errors import UsageError

DEFAULT_EXIT_TIMEOUT = 5  # modern launchd's default ExitTimeOut (launchd-semantics.md section 3)
DEFAULT_KEEP_DONE = 30 * 86400
"""A queue's `keep_done` default: finished jobs are purged after 30 days."""
DEFAULT_KEEP_FAILED = 90 * 86400
"""A queue's `keep_failed` default: failed jobs are purged after 90 days."""
DEFAULT_MAX_JOB_BYTES = 1024 * 1024
"""A queue's `max_job_bytes` default: 1 MiB. A job is a small JSON object that names its work
(a path, a URL, a few parameters: tens to hundreds of bytes), not the work itself, so 1 MiB is
thousands of times any job and the same bound as Kafka's default message size. It bounds what
one job costs: its file is read whole at claim and parsed (about 3x its size in memory: a
100 MB payload took 310 MB), and enqueue holds it whole too. Bulk data belongs in a file the
job names."""


def pause_marker(snapshot: Path) -> Path:
    """The file `lanekit pause` writes next to a lane's snapshot; while it exists every run of
    the lane claims nothing (`skipped reason=paused`), whatever launchd does."""
    return snapshot.with_suffix(".paused")


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return _int(value) or isinstance(value, float)


def _text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _optional_text(value: object) -> bool:
    return value is None or _text(value)


def _optional_number(value: object) -> bool:
    return value is None or _number(value)


def _command(value: object) -> bool:
    return isinstance(value, list) and value != [] and all(isinstance(v, str) for v in value)


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _optional_strings(value: object) -> bool:
    return value is None or (
        isinstance(value, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )


def _sha256(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _watch_channels(value: object) -> bool:
    """The watchdog's channels as apply recorded them (lanekit.state.snapshot.WatchChannels)."""
    if value is None:
        return True
    return (
        isinstance(value, dict)
        and value.keys() - {"heartbeat_sha256"} == {"notify", "command", "webhook_sha256"}
        and isinstance(value["notify"], list)
        and all(isinstance(name, str) for name in value["notify"])
        and (value["command"] is None or _command(value["command"]))
        and (value["webhook_sha256"] is None or _sha256(value["webhook_sha256"]))
        and (value.get("heartbeat_sha256") is None or _sha256(value.get("heartbeat_sha256")))
    )


FIELDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "schema": (_int, "an integer"),
    "lane": (_text, "a non-empty string"),
    "label": (_text, "a non-empty string"),
    "queue_dir": (_text, "a non-empty string"),
    "command": (_command, "a non-empty list of strings"),
    "max_jobs": (_int, "an integer"),
    "max_seconds": (_optional_number, "a number or null"),
    "max_attempts": (_int, "an integer"),
    "stale_after": (_number, "a number"),
    "exit_timeout": (_int, "an integer"),
    "log_path": (_text, "a non-empty string"),
    "durable": (_flag, "true or false"),
    "log_max_bytes": (_int, "an integer"),
    "log_keep": (_int, "an integer"),
    "timeout": (_optional_number, "a number or null"),
    "kill_grace": (_number, "a number"),
    "stdout_path": (_optional_text, "a non-empty string or null"),
    "stderr_path": (_optional_text, "a non-empty string or null"),
    "keep_done": (_int, "an integer"),
    "keep_failed": (_int, "an integer"),
    "max_job_bytes": (_int, "an integer"),
    "project": (_optional_text, "a non-empty string or null"),
    "environment": (_optional_strings, "an object of strings or null"),
    "watch": (
        _watch_channels,
        "null or an object of notify, command, webhook_sha256 (and heartbeat_sha256)",
    ),
    "plain": (_flag, "true or false"),
    "retry_on_crash": (_flag, "true or false"),
    "start_on_enqueue": (_flag, "true or false"),
}
"""Every key RunSpec.to_json writes (a test pins them to RunSpec's fields), with its type."""

SNAPSHOT_KEYS = frozenset(FIELDS)
OPTIONAL_KEYS = frozenset(
    {
        "timeout",
        "kill_grace",
        "environment",
        "max_job_bytes",
        "watch",
        "plain",
        "retry_on_crash",
        "start_on_enqueue",
    }
)
"""Keys added after snapshots were first installed: a snapshot an older lanekit wrote lacks
them and means their defaults (no timeout, a 5 s kill grace, no recorded environment, 1 MiB
jobs), so it keeps running unchanged. `watch` is written for the watchdog lane only (its
applied channels); a watchdog snapshot without it sends nothing until `lanekit apply`. `plain`
and `retry_on_crash` are written for plain lanes only (a lane without `queue`), so a queue
lane's snapshot is byte for byte what it was before plain lanes existed; `start_on_enqueue`
likewise only for a lane with start = [..., "enqueue"]."""


def snapshot_problem(value: object) -> str | None:
    """What is wrong with a parsed snapshot, in words, or None when every field is right."""
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        return f"holds {kind}, not a JSON object"
    missing = sorted(SNAPSHOT_KEYS - OPTIONAL_KEYS - value.keys())
    if missing:
        return f"missing {', '.join(missing)}"
    unknown = sorted(str(k) for k in value.keys() - SNAPSHOT_KEYS)
    if unknown:
        return f"unknown key {', '.join(unknown)}"
    for key, (valid, wanted) in FIELDS.items():
        if key in value and not valid(value[key]):
            return f"{key} must be {wanted}, not {_shown(value[key])}"
    if value["schema"] != SNAPSHOT_SCHEMA:
        return f"schema {value['schema']} is not {SNAPSHOT_SCHEMA}"
    return None


def _shown(value: object) -> str:
    text = "null" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_snapshot(path: str | os.PathLike[str]) -> dict[str, object]:
    """The snapshot file at `path`, checked: a regular file of ours, in a directory of ours,
    that nobody else may write, reached through directories only you or root may write, from
    your home down (UnsafeStateError otherwise: it could make the run execute another user's
    command); UTF-8 JSON with every field of the right type (UsageError naming the file and
    what is wrong otherwise, or when there is no such file)."""
    # Here, not at the top: the defaults above are what config, queue and `lanekit status`
    # import this module for, and completing `lanekit jobs --state` must not load more.
    from lanekit.system.owned import (
        check_private,
        check_trusted,
        read_regular,
        unsafe_error,
        unsafe_reason,
    )

    directory = os.path.dirname(os.fspath(path)) or "."
    check_private(directory, "lane snapshot directory", directory=True)
    check_trusted(  # the directories above it (the file: unsafe_reason, below)
        directory,
        "lane snapshot directory",
        elsewhere="keep lanekit's state directory ($LANEKIT_STATE_DIR) in a directory "
        "of your own, and run `lanekit apply`",
    )
    read = read_regular(path, "lane snapshot")
    if read is None:
        from lanekit.errors import UsageError

        raise UsageError(
            f"{os.fspath(path)}: lane snapshot not found", "run `lanekit apply` to install the lane"
        )
    data, info = read
    reason = unsafe_reason(info)
    if reason is not None:
        raise unsafe_error(path, reason, "lane snapshot", info)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _unreadable(path, f"not UTF-8: {exc}") from None
    return parse_snapshot(text, path)


def parse_snapshot(text: str, source: str | os.PathLike[str]) -> dict[str, object]:
    """A snapshot's text as a checked dict; a damaged one (not JSON, not an object, a missing,
    unknown or wrong-typed field) is a UsageError naming `source` and the field."""
    try:
        value = parse_json(text)
    except (ValueError, RecursionError) as exc:
        raise _unreadable(source, f"not valid JSON: {exc}") from None
    problem = snapshot_problem(value)
    if problem is not None or not isinstance(value, dict):
        raise _unreadable(source, problem or "not a JSON object")
    return value


def _unreadable(source: str | os.PathLike[str], why: str) -> UsageError:
    from lanekit.errors import UsageError

    return UsageError(
        f"{os.fspath(source)}: lane snapshot is unreadable ({why})",
        "run `lanekit apply` to write it again",
    )


_WHITESPACE = " \t\n\r"
"""JSON's whitespace (RFC 8259), which json.loads skips around the value."""


def parse_json(text: str) -> object:
    """`text` as json.loads reads it, strictly: NaN and Infinity, which json.loads takes, are
    refused (RFC 8259 has neither, and no snapshot field is ever non-finite). ValueError
    (json.JSONDecodeError, as json words it) or RecursionError when it is not JSON.

    Decoded by json's own C scanner (`_json.make_scanner`: what json.loads runs on CPython),
    handed a decoder's settings directly, so a good snapshot costs no `import json`, which
    imports re and compiles its patterns (about 0.8x `python -c pass`: benchmark (c)).
    Whatever the scanner refuses, and every interpreter without it, goes to json.loads itself,
    which words the error (or decodes, with its pure-Python scanner): one decoder either way.
    """
    scan = _scanner()
    if scan is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except (StopIteration, ValueError, RecursionError, SystemError):
            # Not JSON (StopIteration: no value at `start`); json.loads below says why. On
            # 3.11 the scanner words its errors with json.decoder's class and, json not being
            # imported, fails with SystemError instead.
            end = -1
        if end >= 0 and not text[end:].strip(_WHITESPACE):
            return value
    import json

    return json.loads(text, parse_constant=_not_json)


def _not_json(name: str) -> object:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


class _StrictDecoder:
    """The settings json's C scanner reads from a json.JSONDecoder: json.loads's defaults,
    but for parse_constant (NaN, Infinity and -Infinity refused)."""

    strict = True  # no raw control characters inside strings
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_not_json)


def _scanner() -> Callable[[str, int], tuple[object, int]] | None:
    """json's C scanner with _StrictDecoder's settings, or None on an interpreter without it
    (or whose scanner asks for a setting this does not know: json.loads then decodes)."""
    try:
        from _json import make_scanner

        return make_scanner(_StrictDecoder)  # type: ignore[arg-type]  # reads attributes only
    except (ImportError, AttributeError):
        return None
