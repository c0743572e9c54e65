"""THE SERVICE-MANAGER SEAM: what reconcile, status, doctor, watch and try ask of whatever runs
the lanes (lanekit.service.manager: the Protocol and its facts). `launchd/` drives launchd
through launchctl; `emulated/` is the emulated domain. `open_manager` picks one.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs start-up: a single `lanekit enqueue` reads the emulated
if TYPE_CHECKING:  # domain's clock below this package (lanekit.service.emulated.offset)
    from collections.abc import Mapping
    from pathlib import Path

    from lanekit.service.launchd.model import Launchd
    from lanekit.service.manager import ServiceManager
    from lanekit.state.paths import Paths


def open_manager(paths: Paths, env: Mapping[str, str] | None = None) -> ServiceManager:
    """The manager of this machine: launchd on macOS, the emulated domain elsewhere
    (LANEKIT_LAUNCHD overrides: lanekit.state.backend)."""
    from lanekit.service.launchd import open_launchd

    return manager_of(open_launchd(paths, env), paths.launch_agents)


def manager_of(
    backend: Launchd | ServiceManager, install_dir: Path | None = None
) -> ServiceManager:
    """`backend` as a manager: a manager as it is; launchd's verbs (launchctl, the emulated
    domain, a test's fake) wrapped in the manager that speaks them, installing into
    `install_dir` (by default this environment's LaunchAgents: lanekit.state.paths). Callers
    that were handed launchd's inner seam (the watchdog, tests) pass through here."""
    from lanekit.service.launchd.manager import LaunchdManager

    if isinstance(backend, LaunchdManager) or not hasattr(backend, "print_disabled"):
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
