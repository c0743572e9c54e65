"""The launchd seam: typed facts, the `Launchd` protocol, and the backend factory.

Two implementations: `launchctl.LaunchctlDomain` (the real tool, macOS) and
`emulator.EmulatedDomain` (a real-process emulation, the default elsewhere). The facts and the
protocol are defined in `launchd.model` (so the backends never import this package back) and
re-exported here, where callers import them from.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from lanekit.service.launchd.model import LaunchctlError, Launchd, ListEntry, ServiceInfo
from lanekit.state.clock import REAL, Clock, job_offset
from lanekit.state.paths import Paths, backend_name

__all__ = ["LaunchctlError", "Launchd", "ListEntry", "ServiceInfo", "clock_for", "open_launchd"]


def open_launchd(paths: Paths, env: Mapping[str, str] | None = None) -> Launchd:
    """The backend for this machine: real launchctl on macOS, the emulator elsewhere."""
    env = os.environ if env is None else env
    if backend_name(env, sys.platform) == "launchctl":
        from lanekit.service.launchd.launchctl import LaunchctlDomain

        return LaunchctlDomain.from_env(env)
    from lanekit.service.emulated.emulator import EmulatedDomain

    return EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)


def clock_for(
    paths: Paths, env: Mapping[str, str] | None = None, platform: str | None = None
) -> Clock:
    """The clock of a lanekit command (lanekit.state.clock): real on the launchctl backend; on the
    emulated one the domain's clock (its state file, or the offset this process was started
    with if larger). Here, beside open_launchd, because only the backend knows its time."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if backend_name(env, platform) != "emulated":
        return REAL
    from lanekit.state.backend import manager_choice

    if manager_choice(env, platform)[0] == "systemd":
        return REAL  # systemd runs the lanes here: an emulated domain's clock is not theirs
    from lanekit.service.emulated.state import read_offset

    offset = max(read_offset(paths.emulator), job_offset(env, platform))
    return REAL if offset == 0 else Clock(offset)
