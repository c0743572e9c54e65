"""The launchd seam: typed facts, the `Launchd` protocol, and the backend factory.

Two implementations: `launchctl.LaunchctlDomain` (the real tool, macOS) and
`emulator.EmulatedDomain` (a real-process emulation, the default elsewhere). The facts and the
protocol are defined in `launchd.model` (so the backends never import this package back) and
re-exported here, where callers import them from.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from lanekit.service.launchd.model import LaunchctlError, Launchd, ListEntry, ServiceInfo
from lanekit.state.paths import Paths, backend_name

__all__ = [
    "LaunchctlError",
    "Launchd",
    "ListEntry",
    "ServiceInfo",
    "command_time",
    "open_launchd",
]


def open_launchd(paths: Paths, env: Mapping[str, str] | None = None) -> Launchd:
    """The backend for this machine: real launchctl on macOS, the emulator elsewhere."""
    env = os.environ if env is None else env
    if backend_name(env, sys.platform) == "launchctl":
        from lanekit.service.launchd.launchctl import LaunchctlDomain

        return LaunchctlDomain.from_env(env)
    from lanekit.service.emulated.emulator import EmulatedDomain

    return EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)


@contextmanager
def command_time(paths: Paths) -> Iterator[None]:
    """Within: this process stamps and judges by the clock of the commands the user runs
    (lanekit.service.clock_for), where it would otherwise take the real time: on the emulated
    domain, a run, a purge or a verb started by hand
    (lanekit.service.emulated.offset.by_hand_clock). The clock in use before is put back
    afterwards."""
    from lanekit.service.emulated.offset import by_hand_clock
    from lanekit.state.clock import use_clock

    clock = by_hand_clock(paths.emulator)
    if clock is None:
        yield
        return
    before = use_clock(clock)
    try:
        yield
    finally:
        use_clock(before)
