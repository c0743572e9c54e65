"""THE SERVICE-MANAGER SEAM: what reconcile, status, doctor, watch and try ask of whatever runs
the lanes (lanekit.service.manager: the Protocol and its facts). `launchd/` drives launchd
through launchctl; `emulated/` is the emulated domain; `systemd/` the systemd user manager.
`open_manager` picks one (lanekit.state.backend.manager_choice says which and why).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs start-up: a single `lanekit enqueue` reads the emulated
if TYPE_CHECKING:  # domain's clock below this package (lanekit.service.emulated.offset)
    from collections.abc import Mapping
    from pathlib import Path

    from lanekit.service.launchd.model import Launchd
    from lanekit.service.manager import ServiceManager
    from lanekit.state.clock import Clock
    from lanekit.state.paths import Paths


def open_manager(
    paths: Paths, env: Mapping[str, str] | None = None, configured: str | None = None
) -> ServiceManager:
    """The manager of this machine: launchd on macOS, systemd on Linux when a user manager
    answers, else the emulated domain; `configured` is `[defaults] service_manager`
    (LANEKIT_LAUNCHD overrides both: lanekit.state.backend.manager_choice)."""
    import os

    from lanekit.state.backend import manager_choice

    env = os.environ if env is None else env
    name, reason = manager_choice(env, sys.platform, configured)
    if name == "systemd":
        from lanekit.service.systemd.manager import SystemdManager, unit_dir
        from lanekit.service.systemd.systemctl import Systemctl

        return SystemdManager(Systemctl(env), unit_dir(env, paths.home), paths.state, reason)
    from lanekit.service.launchd import open_launchd

    launchd_env = env
    if configured is not None and name != "systemd":
        # [defaults] chose between launchd and the emulated domain: say it to open_launchd
        # in the variable it reads.
        launchd_env = {**env, "LANEKIT_LAUNCHD": "launchctl" if name == "launchd" else name}
    return manager_of(open_launchd(paths, launchd_env), paths.launch_agents)


def manager_of(
    backend: Launchd | ServiceManager, install_dir: Path | None = None
) -> ServiceManager:
    """`backend` as a manager: a manager as it is; launchd's verbs (launchctl, the emulated
    domain, a test's fake) wrapped in the manager that speaks them, installing into
    `install_dir` (by default this environment's LaunchAgents: lanekit.state.paths). Callers
    that were handed launchd's inner seam (the watchdog, tests) pass through here."""
    if not hasattr(backend, "print_disabled"):
        return backend  # a manager already (without importing launchd's for the check)
    from lanekit.service.launchd.manager import LaunchdManager

    if isinstance(backend, LaunchdManager):
        return backend
    if install_dir is None:
        from lanekit.state.paths import Paths

        install_dir = Paths.from_env().launch_agents
    # An EmulatedDomain exists only once its module is imported: no import to ask.
    emulated = sys.modules.get("lanekit.service.emulated.emulator")
    if emulated is not None and isinstance(backend, emulated.EmulatedDomain):
        from lanekit.service.emulated.manager import EmulatedManager

        return EmulatedManager(backend, install_dir)
    from typing import cast

    return LaunchdManager(cast("Launchd", backend), install_dir)


def clock_for(
    paths: Paths, env: Mapping[str, str] | None = None, platform: str | None = None
) -> Clock:
    """The clock of a lanekit command (lanekit.state.clock): real on launchd and systemd; on the
    emulated domain its clock (its state file, or the offset this process was started with if
    larger). Here, beside open_manager, because only the manager knows its time; lean (status
    asks it without importing launchd's code)."""
    import os

    from lanekit.state.backend import backend_name
    from lanekit.state.clock import REAL

    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if backend_name(env, platform) == "emulated":
        from lanekit.state.backend import manager_choice

        if manager_choice(env, platform)[0] == "systemd":
            return REAL  # systemd runs the lanes here: an emulated domain's clock is not theirs
    from lanekit.service.emulated.offset import command_clock

    return command_clock(paths.emulator, env, platform)
