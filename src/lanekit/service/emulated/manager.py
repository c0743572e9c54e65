"""The emulated domain as a `ServiceManager`: launchd's manager (it speaks launchd's verbs and
installs plists), with an observation made in one read of the domain's state instead of a
`list`, a `print-disabled` and a `print` per lane (each one a locked read of domain.json)."""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path

from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.launchd.manager import Facts, LaunchdManager
from lanekit.service.manager import ManagerKind


class EmulatedManager(LaunchdManager):
    """The `ServiceManager` over an `EmulatedDomain`."""

    kind = ManagerKind.EMULATED

    def __init__(self, emulator: EmulatedDomain, install_dir: Path) -> None:
        super().__init__(emulator, install_dir)
        self.emulator = emulator
        """The domain itself, for what only it does (`tick`, `wait_idle`, its clock)."""

    def _facts(self, labels: Set[str]) -> Facts:
        return self.emulator.read_all(labels)
