"""What a lane snapshot's JSON must hold: each key and the JSON type of its value, the
defaults of the fields lanes.toml may leave out, and the pause marker beside a snapshot.

One table for both readers: lanekit.state.snapshot (the full run, `apply`, doctor) and
lanekit.state.snapshot_fast (the empty-run fast path's, which must not import json or
dataclasses). A snapshot that is not an object, lacks a key, has an unknown one or a value of
the wrong type is refused before any value is used: `"max_jobs": "ten"` must not reach the
runner. Builtin modules only, so what config, the emulated domain and `lanekit status` need
of the snapshot (defaults, the marker's name) costs them no json or dataclass creation
(lanekit.state.snapshot's RunSpec: benchmark (i)).
"""

from __future__ import annotations

from lanekit.state.schemas import SNAPSHOT_SCHEMA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

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
        and value.keys() == {"notify", "command", "webhook_sha256"}
        and isinstance(value["notify"], list)
        and all(isinstance(name, str) for name in value["notify"])
        and (value["command"] is None or _command(value["command"]))
        and (value["webhook_sha256"] is None or _sha256(value["webhook_sha256"]))
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
    "watch": (_watch_channels, "null or an object of notify, command and webhook_sha256"),
}
"""Every key RunSpec.to_json writes (a test pins them to RunSpec's fields), with its type."""

SNAPSHOT_KEYS = frozenset(FIELDS)
OPTIONAL_KEYS = frozenset({"timeout", "kill_grace", "environment", "max_job_bytes", "watch"})
"""Keys added after snapshots were first installed: a snapshot an older lanekit wrote lacks
them and means their defaults (no timeout, a 5 s kill grace, no recorded environment, 1 MiB
jobs), so it keeps running unchanged. `watch` is written for the watchdog lane only (its
applied channels); a watchdog snapshot without it sends nothing until `lanekit apply`."""


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
