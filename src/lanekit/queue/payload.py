"""What a job is, whatever backend keeps it: one JSON object of at most the queue's
max_job_bytes, checked before it is enqueued (and by `lanekit enqueue` before it asks).

Builtin imports only until a payload is refused or a mapping is encoded: a single `lanekit
enqueue` checks its payload here (its start-up is a benchmark figure: lanekit.jobs.add)."""

from __future__ import annotations

from lanekit.system.strictjson import NestedTooDeepError, strict_loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from lanekit.errors import UsageError


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def payload_problem(data: bytes) -> str | None:
    """Why `data` is not a job payload (a JSON object), or None when it is one."""
    try:
        value = strict_loads(data, values=False)
    except NestedTooDeepError:
        return "valid JSON nested too deeply for lanekit to check (arrays or objects in each other)"
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    if not isinstance(value, dict):
        return f"a JSON {_json_kind(value)}, not an object"
    return None


def too_large(size: int | None, limit: int, queue: str | None = None) -> UsageError:
    """The refusal of a job over its queue's max_job_bytes (`size` None: only known to be
    larger, the rest was not read; `queue`: its name in lanes.toml, when known)."""
    from lanekit.errors import UsageError

    whose = "the queue's" if queue is None else f"queue {queue}'s"
    what = f"is {size} bytes, over" if size is not None else "is larger than"
    table = "[queues.NAME]" if queue is None else f"[queues.{queue}]"
    return UsageError(
        f"job payload {what} {whose} max_job_bytes ({limit} bytes)",
        f"put bulk data in a file and enqueue a job that names its path, or raise "
        f"max_job_bytes in {table} of lanes.toml",
    )


def payload_bytes(payload: Mapping[str, Any] | bytes | str, limit: int | None = None) -> bytes:
    """The bytes of a job file for `payload`; UsageError when it is no JSON object, or is
    larger than `limit` bytes (checked before a large one is parsed)."""
    if isinstance(payload, bytes | str):
        data = payload.encode("utf-8") if isinstance(payload, str) else payload
        if limit is not None and len(data) > limit:
            raise too_large(len(data), limit)
        problem = payload_problem(data)
        if problem is not None:
            from lanekit.errors import UsageError

            raise UsageError(
                f"job payload is {problem}", 'a job is one JSON object, e.g. {"file": "a.txt"}'
            )
        return data
    import json

    from lanekit.errors import UsageError

    try:
        data = json.dumps(dict(payload), allow_nan=False).encode("utf-8") + b"\n"
    except RecursionError:
        raise UsageError(
            "job payload is nested too deeply to be written as JSON",
            "flatten the payload: a job is one JSON object of modest depth",
        ) from None
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"job payload cannot be written as JSON ({exc})",
            "use only str, int, float, bool, None, lists and dicts with str keys",
        ) from None
    if limit is not None and len(data) > limit:
        raise too_large(len(data), limit)
    return data
