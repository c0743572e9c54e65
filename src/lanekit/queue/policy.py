"""The retry policy every backend applies: how long a failed job waits before it runs
again, and what its reason says once it is out of attempts. No imports: `lanekit status`
counts a directory queue whose state module uses these."""

from __future__ import annotations

DEFAULT_BACKOFF_BASE = 30.0
"""Seconds a retry waits after its first failed attempt (doubling per attempt)."""
DEFAULT_BACKOFF_MAX = 3600.0
"""The longest a retry waits."""


def backoff(base: float, cap: float, attempt: int) -> float:
    """Seconds a job waits after failing attempt number `attempt`: `base * 2**(attempt-1)`,
    at most `cap`; 0 when `base` is 0 (retries straight back)."""
    if base <= 0:
        return 0.0
    return float(min(base * 2 ** max(attempt - 1, 0), cap))


DEFER_SECONDS = 60.0
"""How long a DEFERRED job waits in delayed/ at least (VerdictKind.DEFERRED): long enough that
a lane launchd starts while jobs wait in queue/ (QueueDirectories) is not started again and
again for a job it cannot run; a run on its schedule, or the next enqueue, moves it back."""


def deferred_wait(base: float, cap: float, attempt: int) -> float:
    """Seconds a DEFERRED job waits: its backoff, and at least DEFER_SECONDS."""
    return max(backoff(base, cap, attempt), DEFER_SECONDS)


def gave_up(error: str, attempts: int) -> str:
    """The reason of a job out of attempts: its last failure, said so on the first line (the
    lines after it are the job's stderr tail)."""
    head, newline, tail = error.partition("\n")
    return f"{head}; gave up after {attempts} attempts{newline}{tail}"
