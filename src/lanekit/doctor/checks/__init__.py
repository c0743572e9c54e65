"""doctor's checks, one module per group. Importing this package registers them, in run order:
the plist file, what it runs, the files it needs, its schedule, what launchd says, the queue,
and the lane log. Cheap file checks run first; checks that ask launchd or scan the queue last.
"""

from __future__ import annotations

import importlib

MODULES = (
    "plist",
    "program",
    "files",
    "macos",
    "schedule",
    "launchd",
    "systemd",
    "server",
    "queue",
    "lane",
    "watch",
)
"""Check modules in run order (each registers its checks on import, in file order)."""

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
