"""The pure plan: what `apply` would do to each lane, decided from facts alone (no I/O).

`plan` compares the desired bytes of a lane's plist and run snapshot with what is installed and
with what launchd has loaded (lanekit.service.launchd.drift), and picks exactly one action per lane
(the table
is in lanekit.reconcile's docstring). `apply` carries the actions out; doctor's `plist.drift`
asks `plan` the same question about one lane (`plan_lane`), so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from enum import StrEnum

from lanekit.service.installs import Desired, Installed
from lanekit.service.launchd import ServiceInfo
from lanekit.service.launchd.definition import Difference
from lanekit.service.launchd.drift import Drift, companion_change, lane_drift
from lanekit.service.manager import LAUNCHD_WORDS, Vocabulary
from lanekit.system.owned import (
    PRIVATE_FILE,
)
from lanekit.system.quoting import cmdline


class ActionKind(StrEnum):
    """What `apply` does to one lane."""

    CREATE = "create"
    UPDATE = "update"
    LOAD = "load"
    SNAPSHOT = "snapshot"
    REWRITE = "rewrite"
    UNCHANGED = "unchanged"
    REMOVE = "remove"
    SKIP_RUNNING = "skip-running"


@dataclass(frozen=True, slots=True)
class Action:
    """One lane's planned action, with the concrete steps `apply` takes for it."""

    kind: ActionKind
    lane: str
    label: str
    reason: str
    write_plist: bool = False
    write_snapshot: bool = False
    bootout: bool = False
    """The loaded job must be booted out first (the step a running lane is protected from)."""
    bootstrap: bool = False
    enable: bool = False
    """The label is disabled in launchd and must be enabled before the bootstrap."""
    pid: int | None = None
    """The running pid, when the lane is running and launchd reported it."""
    deferred: ActionKind | None = None
    """For skip-running: the action that was deferred (update)."""
    pending: str = ""
    """For skip-running: the change that waits for the run to end (e.g. `plist changed (...)`)."""
    paused: bool = False
    """`lanekit pause` holds the lane: apply neither enables nor bootstraps it."""
    words: Vocabulary = field(default=LAUNCHD_WORDS, repr=False, compare=False)
    """The manager's words the reason and the steps are in."""
    drift: Drift = field(default_factory=Drift)
    """What the plan found different (lanekit.service.launchd.drift): the facts the reason words.
    Doctor's
    `plist.drift` words its findings from these, so it reports what the plan acts on."""

    @property
    def changes(self) -> bool:
        """True when `apply` would change something for this lane."""
        return self.kind not in {ActionKind.UNCHANGED, ActionKind.REMOVE}

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps in the order apply takes them, in words."""
        flags = (
            (self.bootout, self.words.unload),
            (self.write_plist, f"write {self.words.artifact}"),
            (self.write_snapshot, "write snapshot"),
            (self.enable, "enable"),
            (self.bootstrap, self.words.load),
        )
        return tuple(step for on, step in flags if on)


def plan(
    desired: Sequence[Desired],
    installed: Mapping[str, Installed],
    loaded: Set[str],
    running: Mapping[str, int | None],
    *,
    disabled: Set[str] = frozenset(),
    definitions: Mapping[str, ServiceInfo] | None = None,
    paused: Set[str] = frozenset(),
    stale: Mapping[str, tuple[str, ...]] | None = None,
    words: Vocabulary = LAUNCHD_WORDS,
) -> list[Action]:
    """One action per desired lane (in order), then removal offers for orphaned lanekit plists.

    `installed` holds lanekit's plists plus any plist at a desired label, `loaded` the labels of
    one `list()` call, `running` label -> pid (None when only the lane lock says it runs),
    `disabled` launchd's disabled overrides, `definitions` label -> `print()` of the loaded
    lanes (what launchd really runs; a label missing there is compared on its file only),
    `paused` the labels `lanekit pause` holds (never enabled nor loaded by apply:
    lanekit.reconcile.pause), `words` the manager's (a systemd lane has no plist). Pure: no
    I/O.
    """
    definitions = definitions or {}
    actions = [
        _keep_paused(
            plan_lane(
                d,
                installed.get(d.label),
                loaded=loaded,
                running=running,
                disabled=disabled,
                definition=definitions.get(d.label),
                stale=(stale or {}).get(d.label, ()),
                words=words,
            ),
            paused,
        )
        for d in desired
    ]
    wanted = {d.label for d in desired}
    for label in sorted(installed):
        item = installed[label]
        if label in wanted or item.lane is None or item.plist is None:
            continue
        actions.append(replace(_offer_removal(item, label in loaded, running), words=words))
    return actions


def plan_lane(
    want: Desired,
    have: Installed | None,
    *,
    loaded: Set[str],
    running: Mapping[str, int | None] | None = None,
    disabled: Set[str] = frozenset(),
    definition: ServiceInfo | None = None,
    stale: tuple[str, ...] = (),
    words: Vocabulary = LAUNCHD_WORDS,
) -> Action:
    """One lane's action (what `plan` decides for it, before `lanekit pause` is considered),
    carrying the drift it was decided on. `loaded`: the labels launchd lists; `definition`:
    what `print()` says of this one, when loaded. Pure: no I/O."""
    plist = have.plist if have else None
    drift = lane_drift(
        want_plist=want.plist,
        wanted=want.job,
        want_snapshot=want.snapshot,
        have_plist=plist,
        have_snapshot=have.snapshot if have else None,
        loaded=definition if want.label in loaded else None,
        companions=companion_change(want.companions, have.companions if have else {}),
    )
    if stale and want.label in loaded and definition is None and not drift.loaded:
        # A manager that keeps no copy to compare (systemd) says itself that what it has
        # loaded is older than the files (NeedDaemonReload): only a reload makes it current.
        older = tuple(Difference("the loaded units", why, "reloaded") for why in stale)
        drift = replace(drift, loaded=older)
    action = _decide(
        want, have, drift, loaded=loaded, running=running or {}, disabled=disabled, words=words
    )
    return replace(action, drift=drift, words=words)


def _decide(
    want: Desired,
    have: Installed | None,
    drift: Drift,
    *,
    loaded: Set[str],
    running: Mapping[str, int | None],
    disabled: Set[str],
    words: Vocabulary,
) -> Action:
    plist = have.plist if have else None
    thing = words.artifact
    is_loaded = want.label in loaded
    plist_drift = _mode_drift(have.plist_mode if have and plist is not None else None, words)
    snapshot_drift = _mode_drift(have.snapshot_mode if have and have.snapshot else None, words)
    snapshot_stale = drift.snapshot or snapshot_drift is not None
    snapshot_change = drift.snapshot_change or snapshot_drift or ""
    enable = want.label in disabled
    note = disabled_note(words) if enable else ""

    def act(
        kind: ActionKind,
        reason: str,
        *,
        write_plist: bool = False,
        write_snapshot: bool = False,
        bootstrap: bool = False,
        enable: bool = False,
    ) -> Action:
        return Action(
            kind,
            want.lane,
            want.label,
            reason,
            write_plist=write_plist,
            write_snapshot=write_snapshot,
            bootstrap=bootstrap,
            enable=enable,
        )

    if plist is None and not is_loaded:
        return act(
            ActionKind.CREATE,
            "not installed" + note,
            write_plist=True,
            write_snapshot=True,
            bootstrap=True,
            enable=enable,
        )
    foreign = have is not None and plist is not None and have.lane is None
    if is_loaded and drift.rewrite_only and not foreign:
        # launchd's copy is current and the file only looks different: writing it is enough.
        return act(
            ActionKind.REWRITE,
            f"{thing} file differs in formatting only and {words.manager} has the current"
            " definition:"
            " rewritten without a reload" + ("; run snapshot changed" if snapshot_stale else ""),
            write_plist=True,
            write_snapshot=snapshot_stale,
        )
    if drift.plist_bytes or (is_loaded and drift.loaded):
        if plist is None:
            what = f"loaded but its {thing} file is missing"
        elif drift.plist_bytes:
            what = f"{thing} changed ({drift.plist_change})"
        else:
            what = drift.loaded_change
        if drift.plist_bytes and drift.loaded and plist is not None:
            what += f"; {drift.loaded_change}"
        if foreign:
            what += f"; replaces a {thing} lanekit did not install"
        if not is_loaded:
            return act(
                ActionKind.UPDATE,
                f"{what}; not loaded" + note,
                write_plist=True,
                write_snapshot=True,
                bootstrap=True,
                enable=enable,
            )
        reload = Action(
            ActionKind.UPDATE,
            want.lane,
            want.label,
            what + note,
            write_plist=drift.plist_bytes,
            write_snapshot=drift.plist_bytes or snapshot_stale,
            bootout=True,
            bootstrap=True,
            enable=enable,
        )
        if want.label not in running:
            return reload
        pid = running[want.label]
        who = f"pid {pid}" if pid is not None else "lane lock held"
        return replace(
            reload,
            kind=ActionKind.SKIP_RUNNING,
            reason=f"{what}; running ({who}): not reloaded while it runs"
            " (rerun apply when idle, or use --wait SECONDS / --force)",
            pid=pid,
            deferred=ActionKind.UPDATE,
            pending=what,
        )
    if plist_drift is not None:
        # Same bytes, wrong mode (umask 000, a chmod): launchd refuses the plist at its next
        # load, so it is rewritten 0600; launchd's copy is current, so no reload is needed.
        if is_loaded:
            return act(
                ActionKind.REWRITE,
                f"{thing} {plist_drift}: rewritten without a reload"
                + ("; run snapshot changed" if snapshot_stale else ""),
                write_plist=True,
                write_snapshot=snapshot_stale,
            )
        return act(
            ActionKind.UPDATE,
            f"{thing} {plist_drift}; not loaded" + note,
            write_plist=True,
            write_snapshot=snapshot_stale,
            bootstrap=True,
            enable=enable,
        )
    if not is_loaded:
        return act(
            ActionKind.LOAD,
            "installed but not loaded"
            + ("; run snapshot changed" if snapshot_stale else "")
            + note,
            write_snapshot=snapshot_stale,
            bootstrap=True,
            enable=enable,
        )
    if snapshot_stale:
        return act(
            ActionKind.SNAPSHOT,
            f"run snapshot {snapshot_change}, {thing} unchanged: no reload needed",
            write_snapshot=True,
        )
    return act(ActionKind.UNCHANGED, f"{thing} and snapshot up to date, loaded")


def disabled_note(words: Vocabulary) -> str:
    """What a reason adds for a lane its manager has disabled."""
    return f"; disabled in {words.manager}: enable it first"


def _mode_drift(mode: int | None, words: Vocabulary) -> str | None:
    """`mode 0666, not 0600 ...` when an installed file's mode is not the one apply writes."""
    if mode is None or mode == PRIVATE_FILE:
        return None
    refusers = f"{words.manager} and `lanekit run` refuse it"
    why = f" (others may write it: {refusers})" if mode & 0o022 else ""
    return f"mode {mode:04o}, not {PRIVATE_FILE:04o}{why}"


def _keep_paused(action: Action, paused: Set[str]) -> Action:
    """A paused lane stays paused (lanekit.reconcile.pause): its files are still brought up to
    date, but
    apply neither enables nor bootstraps it, so a reload leaves it unloaded until `resume`."""
    if action.label not in paused:
        return action
    note = f"paused: not loaded until `{cmdline('lanekit', 'resume', action.lane)}`"
    if not action.bootstrap and not action.enable:
        if action.kind is ActionKind.UNCHANGED:
            return replace(action, reason=f"{action.reason}; paused", paused=True)
        return replace(action, paused=True)
    reason = action.reason.replace(disabled_note(action.words), "")
    if action.kind is ActionKind.LOAD and not action.write_snapshot:
        return replace(
            action,
            kind=ActionKind.UNCHANGED,
            reason=f"{reason}; {note}",
            bootstrap=False,
            enable=False,
            paused=True,
        )
    return replace(action, reason=f"{reason}; {note}", bootstrap=False, enable=False, paused=True)


def _offer_removal(item: Installed, is_loaded: bool, running: Mapping[str, int | None]) -> Action:
    lane = item.lane or item.label
    state = "loaded" if is_loaded else "not loaded"
    if item.label in running:
        pid = running[item.label]
        state = f"running (pid {pid})" if pid is not None else "running (lane lock held)"
    return Action(
        ActionKind.REMOVE,
        lane=lane,
        label=item.label,
        reason=f"installed by lanekit but not in lanes.toml ({state}):"
        f" left alone; `{cmdline('lanekit', 'remove', lane)}` removes it",
        pid=running.get(item.label),
    )
