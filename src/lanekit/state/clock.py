"""What time it is, for everything lanekit records or judges by the time: one owner.

On the real launchd (the launchctl backend) it is the real time, always. On the emulated domain
it is the emulated domain's time: the real time plus the offset `lanekit emulator tick`
(lanekit.service.emulated.clock) has moved the domain on by. A tick to 10:40 tomorrow makes the
runners' log lines and job records, status, doctor, the timeline and the watchdog all say 10:40
tomorrow, and from there time flows at its real rate (a run that takes 2 s takes 2 emulated
seconds), so nothing ever waits for emulated hours to pass.

How a process learns the offset:
- one the emulated domain started (a lane's runner, the watchdog lane) finds it in its
  environment, LANEKIT_CLOCK_OFFSET, which the domain sets at spawn along with
  LANEKIT_LAUNCHD=emulated (`job_clock`, `epoch`);
- a command the user runs reads the domain's state file (`lanekit.service.clock_for`: the
  service package owns the domain, so this module never imports it back).
The offset only grows (the emulated clock never moves back), so the larger of the two is the
fresher. Neither is read on the launchctl backend: there a stray LANEKIT_CLOCK_OFFSET, or a
state file the emulator left behind, changes nothing. lanes.toml cannot set the variable
(lanekit.config.RESERVED_ENV).

Builtin imports only (os, sys, time): the lane's entrypoint logs through it on every scheduled
run, and its start-up is a benchmark figure (lanekit.run.entry). That is also why Clock is a plain
class with slots rather than a frozen dataclass (importing dataclasses costs that start-up).
"""

from __future__ import annotations

import os
import sys
import time

from lanekit.state.backend import backend_name

TYPE_CHECKING = False  # importing typing would cost the runner's start-up a few ms
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

OFFSET_VARIABLE = "LANEKIT_CLOCK_OFFSET"
"""Seconds the emulated domain's clock is ahead of the real one, handed to the jobs it starts."""


class Clock:
    """A clock `offset` seconds ahead of the real one (0: the real clock). Immutable."""

    __slots__ = ("_offset",)

    def __init__(self, offset: float = 0.0) -> None:
        self._offset = offset

    @property
    def offset(self) -> float:
        """Seconds ahead of the real clock."""
        return self._offset

    def time(self) -> float:
        """Now, in epoch seconds."""
        return time.time() + self._offset

    def now(self) -> datetime:
        """Now, as naive local wall time (what schedules, doctor and status compare with)."""
        from datetime import datetime

        return datetime.fromtimestamp(self.time())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clock) and other.offset == self._offset

    def __hash__(self) -> int:
        return hash(self._offset)

    def __repr__(self) -> str:
        return f"Clock(offset={self._offset!r})"


REAL = Clock()
"""The real clock: the only one the launchctl backend ever uses."""


def parse_offset(text: str | None) -> float:
    """LANEKIT_CLOCK_OFFSET's value as seconds; 0 for anything but a finite number >= 0."""
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        return 0.0
    # NaN fails every comparison, so this also refuses it.
    return value if 0 <= value < float("inf") else 0.0


def format_offset(offset: float) -> str:
    """The variable's value for `offset` (microseconds are all any timestamp keeps)."""
    return f"{offset:.6f}"


def job_offset(env: Mapping[str, str] | None = None, platform: str | None = None) -> float:
    """The offset handed to this process by the emulated domain that started it; 0 on the
    launchctl backend, whatever the environment says."""
    env = os.environ if env is None else env
    if backend_name(env, sys.platform if platform is None else platform) != "emulated":
        return 0.0
    return parse_offset(env.get(OFFSET_VARIABLE))


def job_clock(env: Mapping[str, str] | None = None, platform: str | None = None) -> Clock:
    """The clock of a process launchd started (a lane's runner): see `job_offset`."""
    offset = job_offset(env, platform)
    return REAL if offset == 0 else Clock(offset)


_process_offset: list[float] = []
"""This process's job offset, read from the environment once (it cannot change)."""


def use_clock(clock: Clock | None) -> Clock | None:
    """Make `clock` this process's job clock: epoch() reads its time from now on (None: the
    offset in the environment again, read at the next epoch()). Returns the clock in use
    before (None: the environment's, or not read yet), so a command can put it back. For a
    process the user starts by hand on the emulated domain (lanekit.service.emulated.offset
    .by_hand_clock), which no domain handed an offset."""
    before = Clock(_process_offset[0]) if _process_offset else None
    _process_offset.clear()
    if clock is not None:
        _process_offset.append(clock.offset)
    return before


def epoch() -> float:
    """Now in epoch seconds by this process's job clock: the default time source of the lane
    log, the queue's records and claims, and the runner."""
    if not _process_offset:
        _process_offset.append(job_offset())
    return time.time() + _process_offset[0]
