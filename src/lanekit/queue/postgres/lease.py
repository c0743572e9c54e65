"""The holder's side of a lease: a clock that keeps counting while the machine sleeps, and the
deadline by which the holder stops its job on its own (the self-fence).

The server decides when a lease lapses (`lease_expires`, on its clock); the holder never
compares its wall clock with the server's. It measures from the moment it SENT the last renew
that succeeded: the server set `now() + lease` at or after that moment, so `sent + lease` on
the holder's clock comes first, and a margin covers the two clocks' rates differing. That
clock must count sleep: a Mac whose lid closes mid-job must find its lease gone on wake.
Linux's CLOCK_BOOTTIME counts suspend; on macOS CLOCK_MONOTONIC_RAW is mach_continuous_time
(it counts sleep), while time.monotonic() is mach_absolute_time and CLOCK_UPTIME_RAW, which
stop (LLVM D74341 moved libc++'s steady_clock off CLOCK_UPTIME_RAW for that reason).
"""

from __future__ import annotations

import sys
import time


def _clock_id(platform: str) -> int | None:
    if platform.startswith("linux"):
        return getattr(time, "CLOCK_BOOTTIME", None)
    if platform == "darwin":
        return getattr(time, "CLOCK_MONOTONIC_RAW", None)
    return None


_CLOCK = _clock_id(sys.platform)


def awake_clock() -> float:
    """Seconds on a clock that counts sleep (CLOCK_BOOTTIME / CLOCK_MONOTONIC_RAW)."""
    if _CLOCK is None:
        return time.monotonic()
    return time.clock_gettime(_CLOCK)


def margin(lease: float) -> float:
    """What the self-fence keeps in hand: a tenth of the lease, at least a second."""
    return max(1.0, lease / 10)


def fence_deadline(sent: float, lease: float) -> float:
    """When the holder must have stopped its job, on awake_clock(): `sent` is when the claim
    or the last successful renew was sent."""
    return sent + lease - margin(lease)
