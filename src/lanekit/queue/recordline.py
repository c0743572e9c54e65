"""A job record's line and its times, formatted without importing json: what Record.to_bytes
writes, and what a single `lanekit enqueue` writes for a new job without importing the Record
class (its dataclass and state enum cost that command's start-up: lanekit.jobs.add).

Builtin imports only. Strings are escaped by json's own C encoder (`_json`), which is what
`json.dumps` runs on CPython; elsewhere json.encoder's own function is used.
"""

from __future__ import annotations

import time

from lanekit.state.schemas import RECORD_SCHEMA

try:
    from _json import encode_basestring_ascii as _json_str
except ImportError:  # pragma: no cover - an interpreter without json's C accelerator
    from json.encoder import encode_basestring_ascii as _json_str

_iso_second: tuple[int, str] = (-1, "")
"""The last whole second iso_utc formatted: records written in one second share the prefix."""


def iso_utc(epoch: float) -> str:
    """`2026-07-26T12:00:00.123Z` (UTC, milliseconds)."""
    global _iso_second  # noqa: PLW0603 - a one-entry cache
    seconds = int(epoch)
    millis = int((epoch - seconds) * 1000)
    cached = _iso_second
    if cached[0] != seconds:
        cached = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
        _iso_second = cached
    return f"{cached[1]}.{millis:03d}Z"


def record_line(  # noqa: PLR0917 - the record's fields, in its order
    job_id: str,
    state: str,
    attempts: int,
    queued_at: str,
    updated_at: str,
    lane: str | None = None,
    error: str | None = None,
    schema_version: int = RECORD_SCHEMA,
) -> bytes:
    """A record as written to disk: one line of JSON, byte for byte what `json.dumps` makes of
    Record.to_dict() (formatted here, on the claim path, without the encoder's generality)."""
    lane_text = "null" if lane is None else _json_str(lane)
    error_text = "null" if error is None else _json_str(error)
    return (
        f'{{"schema_version": {int(schema_version)}, '
        f'"job_id": {_json_str(job_id)}, "state": {_json_str(state)}, '
        f'"attempts": {int(attempts)}, "queued_at": {_json_str(queued_at)}, '
        f'"updated_at": {_json_str(updated_at)}, "lane": {lane_text}, "error": {error_text}}}\n'
    ).encode("ascii")
