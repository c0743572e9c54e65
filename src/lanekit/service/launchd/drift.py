"""How one installed lane differs from what `apply` would install: the one comparison `plan`,
`apply` and doctor's `plist.drift` share, so they cannot disagree.

Three things can be out of date, each judged on its own:
- the plist file: by bytes, then by meaning (parsed, key by key): a reformatted file is
  rewritten, never reloaded;
- the definition launchd has loaded (launchd/definition.py): launchd keeps its own copy, so a
  file written without a reload leaves the old job running;
- the run snapshot, which the runner reads at the start of each run (no reload needed).
Pure: the caller reads the files and asks launchd.
"""

from __future__ import annotations

import json
import plistlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lanekit.service.launchd import ServiceInfo
from lanekit.service.launchd.definition import Difference, differences
from lanekit.service.launchd.model import PlistError, load_plist

OLDER_DEFINITION = "launchd has an older definition loaded"
"""The reason given when the loaded job differs from the rendered plist (issue wording)."""


@dataclass(frozen=True, slots=True)
class Drift:
    """What differs for one lane; every field empty/False means up to date."""

    plist_bytes: bool = False
    """The installed plist file's bytes differ from the rendered ones (or it is missing)."""
    plist_change: str = ""
    """In words: the top-level keys whose values differ, `formatting only`, or why the file
    cannot be compared (`installed file is not a valid plist`); empty when the bytes match."""
    plist_meaning: bool = False
    """The installed file means something else than the rendered one (a key differs, or it
    does not parse, or it is missing)."""
    loaded: tuple[Difference, ...] = ()
    """Facts on which launchd's loaded job differs from the rendered plist (empty when equal,
    or when launchd was not asked)."""
    snapshot: bool = False
    """The run snapshot's bytes differ (or it is missing)."""
    snapshot_change: str = ""
    """`missing`, or `changed (keys)`; empty when the bytes match."""

    @property
    def loaded_change(self) -> str:
        """`launchd has an older definition loaded (Nice 10 -> 11)`, or empty."""
        if not self.loaded:
            return ""
        return f"{OLDER_DEFINITION} ({', '.join(str(d) for d in self.loaded)})"

    @property
    def rewrite_only(self) -> bool:
        """The file differs in bytes only and launchd's copy is current: rewrite, no reload."""
        return self.plist_bytes and not self.plist_meaning and not self.loaded


def lane_drift(
    *,
    want_plist: bytes,
    want_snapshot: bytes,
    have_plist: bytes | None,
    have_snapshot: bytes | None,
    loaded: ServiceInfo | None,
    wanted: Mapping[str, Any] | None = None,
    companions: str = "",
) -> Drift:
    """Compare what `apply` would write with what is installed and what launchd has loaded
    (`wanted`: `want_plist` parsed, when the caller has it). An artifact that is no plist (a
    systemd unit) is compared by its bytes, which are its meaning; `companions` says which
    files beside it differ (`companion_change`)."""
    if wanted is None and want_plist.startswith(b"<?xml"):
        wanted = plistlib.loads(want_plist)
    plist_change = ""
    meaning = False
    if have_plist is None:
        plist_change, meaning = "missing", True
    elif have_plist != want_plist and wanted is None:
        plist_change, meaning = "changed", True
    elif have_plist != want_plist and wanted is not None:
        plist_change, meaning = _plist_change(have_plist, wanted)
    if companions:
        plist_change = ", ".join(c for c in (plist_change, companions) if c)
        meaning = True
    loaded_diff = differences(wanted, loaded) if loaded is not None and wanted else ()
    snapshot_change = ""
    if have_snapshot is None:
        snapshot_change = "missing"
    elif have_snapshot != want_snapshot:
        snapshot_change = f"changed ({_snapshot_change(have_snapshot, want_snapshot)})"
    return Drift(
        plist_bytes=have_plist != want_plist or bool(companions),
        plist_change=plist_change,
        plist_meaning=meaning,
        loaded=loaded_diff,
        snapshot=have_snapshot != want_snapshot,
        snapshot_change=snapshot_change,
    )


def companion_change(want: Mapping[str, bytes], have: Mapping[str, bytes | None]) -> str:
    """Which files beside the main artifact differ (`x.timer changed`, `x.timer missing`,
    `x.timer no longer wanted`), empty when they all match."""
    words = []
    for name in sorted(want.keys() | have.keys()):
        old, new = have.get(name), want.get(name)
        if old == new:
            continue
        if new is None:
            words.append(f"{name} no longer wanted")
        else:
            words.append(f"{name} {'missing' if old is None else 'changed'}")
    return ", ".join(words)


def _plist_change(old: bytes, wanted: Mapping[str, Any]) -> tuple[str, bool]:
    """(which top-level keys differ, whether the meaning differs)."""
    try:
        before = load_plist(old)
    except PlistError:
        return "installed file is not a valid plist", True
    if not isinstance(before, dict):
        return "installed file is not a plist dictionary", True
    keys = changed_keys(before, wanted)
    return (", ".join(keys), True) if keys else ("formatting only", False)


def _snapshot_change(old: bytes, new: bytes) -> str:
    try:
        before = json.loads(old)
    except (ValueError, RecursionError):  # a corrupt snapshot is replaced, never a crash
        return "unreadable"
    after = json.loads(new)
    if not isinstance(before, dict):
        return "unreadable"
    keys = changed_keys(before, after)
    return ", ".join(keys) if keys else "formatting only"


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Top-level keys whose values differ, sorted."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
