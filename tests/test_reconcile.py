"""Reconcile: the pure plan as a table; apply, remove and kick on FakeLaunchd and the emulator."""

from __future__ import annotations

import os
import plistlib
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fakes import FakeLaunchd
from lanekit.config import Config, load_config, run_spec
from lanekit.errors import ExitCode, LaunchdError, UsageError
from lanekit.reconcile import (
    Action,
    ActionKind,
    ApplyResult,
    Desired,
    Installed,
    Outcome,
    RemoveResult,
    Result,
    Timing,
    Waiting,
    apply,
    kick,
    plan,
    remove,
)
from lanekit.run import lanelock
from lanekit.run.lanelock import LaneLock, lane_lock_path
from lanekit.run.lanelog import read_events
from lanekit.service.launchd import LaunchctlError, ListEntry, ServiceInfo
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec

LABEL = "com.example.funnel"


def _plist(gen: int, *, marker: bool = True) -> bytes:
    env = {"PATH": "/usr/bin:/bin", "GEN": str(gen)}
    if marker:
        env["LANEKIT_LANE"] = "funnel"
    return plistlib.dumps({"Label": LABEL, "EnvironmentVariables": env})


def _snap(gen: int) -> bytes:
    return f'{{"lane": "funnel", "max_jobs": {gen}}}\n'.encode()


WANT = Desired(lane="funnel", label=LABEL, plist=_plist(2), snapshot=_snap(2))


@dataclass(frozen=True)
class Case:
    """One row: the facts about lane `funnel`, and the action and steps the plan must choose."""

    plist: bytes | None
    snapshot: bytes | None
    loaded: bool
    running: tuple[int | None, ...] = ()
    disabled: bool = False
    marker: str | None = "funnel"
    definition: ServiceInfo | None = None
    """What launchd has loaded (`print`); None: not asked."""
    kind: ActionKind = ActionKind.UNCHANGED
    steps: frozenset[str] = field(default_factory=frozenset)
    reason: str = ""


def _loaded(gen: int) -> ServiceInfo:
    """launchd's loaded copy of _plist(gen), as `print` shows it."""
    env = {"PATH": "/usr/bin:/bin", "GEN": str(gen), "LANEKIT_LANE": "funnel"}
    return ServiceInfo(
        label=LABEL,
        environment={**env, "XPC_SERVICE_NAME": LABEL},
        exit_timeout=5,
        minimum_runtime=10,
        calendar=(),
    )


REFORMATTED = plistlib.dumps(plistlib.loads(WANT.plist), fmt=plistlib.FMT_BINARY)
"""WANT's plist in other bytes, same meaning."""

STEPS = ("write_plist", "write_snapshot", "bootout", "bootstrap", "enable")
RELOAD = frozenset(STEPS) - {"enable"}
CASES = {
    "create": Case(
        None,
        None,
        loaded=False,
        kind=ActionKind.CREATE,
        steps=frozenset({"write_plist", "write_snapshot", "bootstrap"}),
        reason="not installed",
    ),
    "create-disabled-enables-first": Case(
        None,
        None,
        loaded=False,
        disabled=True,
        kind=ActionKind.CREATE,
        steps=frozenset({"write_plist", "write_snapshot", "bootstrap", "enable"}),
        reason="enable it first",
    ),
    "update-reload-idle": Case(
        _plist(1),
        _snap(1),
        loaded=True,
        kind=ActionKind.UPDATE,
        steps=RELOAD,
        reason="plist changed (EnvironmentVariables)",
    ),
    "update-not-loaded-no-bootout": Case(
        _plist(1),
        _snap(2),
        loaded=False,
        kind=ActionKind.UPDATE,
        steps=frozenset({"write_plist", "write_snapshot", "bootstrap"}),
        reason="not loaded",
    ),
    "update-loaded-plist-missing": Case(
        None,
        _snap(2),
        loaded=True,
        kind=ActionKind.UPDATE,
        steps=RELOAD,
        reason="loaded but its plist file is missing",
    ),
    "update-takes-over-foreign-plist": Case(
        _plist(1, marker=False),
        None,
        loaded=True,
        marker=None,
        kind=ActionKind.UPDATE,
        steps=RELOAD,
        reason="replaces a plist lanekit did not install",
    ),
    "update-unparseable-installed": Case(
        b"<plist>broken",
        _snap(2),
        loaded=True,
        kind=ActionKind.UPDATE,
        steps=RELOAD,
        reason="not a valid plist",
    ),
    "load": Case(
        WANT.plist,
        _snap(2),
        loaded=False,
        kind=ActionKind.LOAD,
        steps=frozenset({"bootstrap"}),
        reason="installed but not loaded",
    ),
    "load-with-stale-snapshot": Case(
        WANT.plist,
        _snap(1),
        loaded=False,
        kind=ActionKind.LOAD,
        steps=frozenset({"bootstrap", "write_snapshot"}),
        reason="installed but not loaded; run snapshot changed",
    ),
    "load-disabled": Case(
        WANT.plist,
        _snap(2),
        loaded=False,
        disabled=True,
        kind=ActionKind.LOAD,
        steps=frozenset({"bootstrap", "enable"}),
        reason="enable it first",
    ),
    "snapshot-only": Case(
        WANT.plist,
        _snap(1),
        loaded=True,
        kind=ActionKind.SNAPSHOT,
        steps=frozenset({"write_snapshot"}),
        reason="run snapshot changed (max_jobs)",
    ),
    "snapshot-only-while-running-is-safe": Case(
        WANT.plist,
        _snap(1),
        loaded=True,
        running=(42,),
        kind=ActionKind.SNAPSHOT,
        steps=frozenset({"write_snapshot"}),
        reason="plist unchanged: no reload needed",
    ),
    "snapshot-missing": Case(
        WANT.plist,
        None,
        loaded=True,
        kind=ActionKind.SNAPSHOT,
        steps=frozenset({"write_snapshot"}),
        reason="run snapshot missing",
    ),
    "unchanged": Case(WANT.plist, _snap(2), loaded=True, reason="up to date"),
    "unchanged-while-running": Case(
        WANT.plist, _snap(2), loaded=True, running=(42,), reason="up to date"
    ),
    "unchanged-while-disabled-and-loaded": Case(
        WANT.plist, _snap(2), loaded=True, disabled=True, reason="up to date"
    ),
    "skip-running-pid": Case(
        _plist(1),
        _snap(1),
        loaded=True,
        running=(4242,),
        kind=ActionKind.SKIP_RUNNING,
        steps=RELOAD,
        reason="running (pid 4242)",
    ),
    "skip-running-lock-held": Case(
        _plist(1),
        _snap(1),
        loaded=True,
        running=(None,),
        kind=ActionKind.SKIP_RUNNING,
        steps=RELOAD,
        reason="running (lane lock held)",
    ),
    "skip-running-plist-missing": Case(
        None,
        _snap(1),
        loaded=True,
        running=(7,),
        kind=ActionKind.SKIP_RUNNING,
        steps=RELOAD,
        reason="plist file is missing; running (pid 7)",
    ),
    "unchanged-with-current-definition-loaded": Case(
        WANT.plist, _snap(2), loaded=True, definition=_loaded(2), reason="up to date"
    ),
    "reload-older-definition-loaded": Case(
        WANT.plist,
        _snap(2),
        loaded=True,
        definition=_loaded(1),
        kind=ActionKind.UPDATE,
        steps=frozenset({"bootout", "bootstrap"}),
        reason="launchd has an older definition loaded (EnvironmentVariables",
    ),
    "older-definition-loaded-while-running": Case(
        WANT.plist,
        _snap(2),
        loaded=True,
        running=(42,),
        definition=_loaded(1),
        kind=ActionKind.SKIP_RUNNING,
        steps=frozenset({"bootout", "bootstrap"}),
        reason="launchd has an older definition loaded",
    ),
    "rewrite-reformatted-plist-without-reload": Case(
        REFORMATTED,
        _snap(2),
        loaded=True,
        definition=_loaded(2),
        kind=ActionKind.REWRITE,
        steps=frozenset({"write_plist"}),
        reason="formatting only",
    ),
    "rewrite-while-running-is-safe": Case(
        REFORMATTED,
        _snap(1),
        loaded=True,
        running=(42,),
        definition=_loaded(2),
        kind=ActionKind.REWRITE,
        steps=frozenset({"write_plist", "write_snapshot"}),
        reason="rewritten without a reload",
    ),
    "reformatted-but-older-definition-loaded-reloads": Case(
        REFORMATTED,
        _snap(2),
        loaded=True,
        definition=_loaded(1),
        kind=ActionKind.UPDATE,
        steps=RELOAD,
        reason="launchd has an older definition loaded",
    ),
    "create-while-lock-held-needs-no-bootout": Case(
        None,
        None,
        loaded=False,
        running=(None,),
        kind=ActionKind.CREATE,
        steps=frozenset({"write_plist", "write_snapshot", "bootstrap"}),
        reason="not installed",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_plan_table(name: str) -> None:
    """Each combination of installed/loaded/running/disabled facts yields one action with its steps
    and a reason a person can read."""
    case = CASES[name]
    installed = {}
    if case.plist is not None or case.snapshot is not None:
        installed[LABEL] = Installed(LABEL, case.plist, case.snapshot, lane=case.marker)
    running = {LABEL: case.running[0]} if case.running else {}
    (action,) = plan(
        [WANT],
        installed,
        loaded={LABEL} if case.loaded else set(),
        running=running,
        disabled={LABEL} if case.disabled else set(),
        definitions={LABEL: case.definition} if case.definition else {},
    )
    assert action.kind is case.kind
    assert action.lane == "funnel"
    assert action.label == LABEL
    assert {s for s in STEPS if getattr(action, s)} == case.steps
    assert case.reason in action.reason
    if case.kind is ActionKind.SKIP_RUNNING:
        assert action.deferred is ActionKind.UPDATE
        assert action.pid == case.running[0]


def _orphan(label: str, lane: str | None, plist: bytes | None = b"x") -> Installed:
    return Installed(label, plist, None, lane=lane)


@pytest.mark.parametrize(
    ("loaded", "running", "reason"),
    [
        (False, {}, "not loaded"),
        (True, {}, "(loaded)"),
        (True, {"com.example.old": 99}, "running (pid 99)"),
    ],
)
def test_plan_offers_removal_of_orphaned_lanekit_plists(
    loaded: bool, running: dict[str, int | None], reason: str
) -> None:
    """A lanekit plist no longer in lanes.toml becomes a `remove` offer naming the command; it
    never carries steps, so apply cannot act on it."""
    installed = {"com.example.old": _orphan("com.example.old", "old")}
    (action,) = plan([], installed, {"com.example.old"} if loaded else set(), running)
    assert action.kind is ActionKind.REMOVE
    assert action.lane == "old"
    assert "`lanekit remove old`" in action.reason
    assert reason in action.reason
    assert not any(getattr(action, s) for s in STEPS)
    assert not action.changes


def test_plan_ignores_foreign_and_snapshot_only_leftovers() -> None:
    """Plists without the lanekit marker, and labels with a snapshot but no plist, are never
    offered for removal."""
    installed = {
        "com.other.tool": _orphan("com.other.tool", None),
        "com.example.ghost": _orphan("com.example.ghost", "ghost", plist=None),
    }
    assert plan([], installed, {"com.other.tool"}, {}) == []


def test_plan_keeps_lanes_toml_order_then_sorted_offers() -> None:
    """Desired lanes come first in lanes.toml order, then removal offers sorted by label."""
    a = Desired("zeta", "com.example.zeta", _plist(1), _snap(1))
    b = Desired("alpha", "com.example.alpha", _plist(1), _snap(1))
    installed = {
        "com.example.y": _orphan("com.example.y", "y"),
        "com.example.x": _orphan("com.example.x", "x"),
    }
    actions = plan([a, b], installed, set(), {})
    assert [x.lane for x in actions] == ["zeta", "alpha", "x", "y"]
    assert [x.kind for x in actions] == [ActionKind.CREATE] * 2 + [ActionKind.REMOVE] * 2


def test_action_changes_flag() -> None:
    """`changes` is False exactly for unchanged lanes and removal offers."""
    for kind in ActionKind:
        action = Action(kind, "l", "x", "r")
        assert action.changes is (kind not in {ActionKind.UNCHANGED, ActionKind.REMOVE})


# -- apply, remove and kick against FakeLaunchd ------------------------------------------------

A = "com.example.t.alpha"
B = "com.example.t.beta"


def _config(paths: Paths, *, gen: int = 1, lanes: str = "alpha beta", max_jobs: int = 5) -> Config:
    """Write lanes.toml with the named lanes (GEN in env changes their plists) and load it."""
    text = '[defaults]\nlabel_prefix = "com.example.t"\n[queues.q]\ndir = "~/q"\n'
    for name in lanes.split():
        schedule = 'schedule = "0 3 * * *"' if name == "alpha" else 'every = "15m"'
        text += (
            f'[lanes.{name}]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n{schedule}\n'
            f'env = {{ GEN = "{gen}" }}\nmax_jobs = {max_jobs}\n'
        )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


class FakeTime:
    """A clock that only moves when slept; `on_sleep` runs before each sleep returns."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps = 0
        self.on_sleep: Callable[[int], None] = lambda n: None

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        self.on_sleep(self.sleeps)

    def timing(self) -> Timing:
        return Timing(clock=self.clock, sleep=self.sleep, poll=0.5, start_grace=2.0)


def _gen(paths: Paths, label: str) -> str:
    env = plistlib.loads(paths.plist_for(label).read_bytes())["EnvironmentVariables"]
    return str(env["GEN"])


def _by_lane(result: ApplyResult) -> dict[str, Outcome]:
    return {o.action.lane: o for o in result.outcomes}


def _installed(paths: Paths, fake: FakeLaunchd, *, gen: int = 1) -> Config:
    config = _config(paths, gen=gen)
    assert not apply(config, paths, fake).nothing_to_do
    fake.calls.clear()
    return config


def test_apply_installs_everything_then_second_apply_has_nothing_to_do(paths: Paths) -> None:
    """First apply writes 0600 plists, snapshots and queue dirs and bootstraps each lane; the
    second apply makes no launchd changes and says nothing to do."""
    fake = FakeLaunchd()
    config = _config(paths)
    first = apply(config, paths, fake)
    assert [(o.action.kind, o.result) for o in first.outcomes] == [
        (ActionKind.CREATE, Result.DONE),
        (ActionKind.CREATE, Result.DONE),
    ]
    for lane in config.lanes.values():
        assert stat.S_IMODE(paths.plist_for(lane.label).stat().st_mode) == 0o600
        snapshot = RunSpec.load(paths.snapshot_for(lane.label))
        assert snapshot == run_spec(lane)
        assert fake.ops(lane.label) == ["bootstrap"]
    assert (paths.home / "q" / "queue").is_dir()
    assert (paths.home / "q" / "logs").is_dir()
    fake.calls.clear()
    second = apply(config, paths, fake)
    assert second.nothing_to_do
    assert {o.result for o in second.outcomes} == {Result.UNCHANGED}
    assert {c.op for c in fake.calls} <= {"list", "print-disabled", "print"}


def test_changed_plist_reloads_idle_lane_and_skips_running_one(paths: Paths) -> None:
    """With beta running, a plist change reloads alpha (bootout then bootstrap) but leaves beta
    alone: no signal, old plist kept, and `skipped reason=running pid=N` in its lane log after
    the install's `applied action=create`; once idle, beta's reload is logged `applied`."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    pid = fake.start(B)
    config = _config(paths, gen=2)
    result = apply(config, paths, fake)
    out = _by_lane(result)
    assert out["alpha"].result is Result.DONE
    assert out["alpha"].detail.startswith("reloaded")
    assert fake.ops(A) == ["bootout", "bootstrap"]
    assert out["beta"].result is Result.SKIPPED
    assert out["beta"].pid == pid
    assert f"running (pid {pid})" in out["beta"].detail
    assert fake.ops(B) == []
    assert fake.signalled == []
    assert (_gen(paths, A), _gen(paths, B)) == ("2", "1")
    events = list(read_events(config.lanes["beta"].log_path))
    assert [(e["event"], e.get("reason"), e.get("pid"), e.get("action")) for e in events] == [
        ("applied", None, None, "create"),
        ("skipped", "running", str(pid), None),
    ]
    assert result.exit_code == ExitCode.PENDING  # beta's change waits for its run
    assert not result.nothing_to_do

    fake.finish(B)
    again = _by_lane(apply(config, paths, fake))
    assert again["beta"].result is Result.DONE
    assert again["alpha"].result is Result.UNCHANGED
    assert _gen(paths, B) == "2"
    last = list(read_events(config.lanes["beta"].log_path))[-1]
    assert (last["event"], last["action"], last["by"]) == ("applied", "update", "apply")


def test_wait_reloads_the_running_lane_once_its_run_ends(paths: Paths) -> None:
    """--wait polls until the run is over, then reloads; the run is never signalled."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.start(B)
    t = FakeTime()
    t.on_sleep = lambda n: fake.finish(B) if n == 3 else None
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, wait=60, timing=t.timing()))
    assert out["beta"].result is Result.DONE
    assert "waited" in out["beta"].detail
    assert fake.ops(B) == ["bootout", "bootstrap"]
    assert fake.signalled == []
    assert t.sleeps == 3


def test_wait_gives_up_at_the_deadline(paths: Paths) -> None:
    """A run that outlasts --wait is skipped, after the budget is spent, not signalled."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.start(B)
    t = FakeTime()
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, wait=10, timing=t.timing()))
    assert out["beta"].result is Result.SKIPPED
    assert t.now >= 1000 + 10
    assert fake.signalled == []


def test_force_reloads_a_running_lane(paths: Paths) -> None:
    """--force boots the running lane out (signalling its run) and reloads it."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    pid = fake.start(B)
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, force=True))
    assert out["beta"].result is Result.DONE
    assert f"--force stopped run pid {pid}" in out["beta"].detail
    assert fake.signalled == [(B, pid)]
    assert _gen(paths, B) == "2"


@pytest.mark.parametrize("how", ["force", "wait"])
def test_a_forced_or_waited_reload_is_logged_as_the_reload_it_was(paths: Paths, how: str) -> None:
    """A running lane reloaded by --force (its run stopped) or --wait (its run over) logs
    `applied action=update`, the reload carried out, not `skip-running`, the kind planned."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.start(B)
    t = FakeTime()
    t.on_sleep = lambda n: fake.finish(B) if n == 2 else None
    config = _config(paths, gen=2)
    options = {"force": True} if how == "force" else {"wait": 60.0, "timing": t.timing()}
    out = _by_lane(apply(config, paths, fake, **options))
    assert out["beta"].result is Result.DONE
    last = list(read_events(config.lanes["beta"].log_path))[-1]
    assert (last["event"], last["action"]) == ("applied", "update")


def test_lane_lock_held_counts_as_running(paths: Paths) -> None:
    """A run holding the lane lock (no pid in launchd, e.g. started by hand) blocks a reload."""
    fake = FakeLaunchd()
    config = _installed(paths, fake)
    spec = run_spec(config.lanes["beta"])
    lock = LaneLock(lane_lock_path(spec.queue_dir, spec.lane))
    assert lock.acquire()
    try:
        out = _by_lane(apply(_config(paths, gen=2), paths, fake))
    finally:
        lock.release()
    assert out["beta"].action.kind is ActionKind.SKIP_RUNNING
    assert out["beta"].result is Result.SKIPPED
    assert "lane lock held" in out["beta"].detail
    assert fake.ops(B) == []


def test_run_starting_after_the_plan_is_not_booted_out(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan saw the lane idle, but a run took the lock before the bootout: apply re-checks
    under the lock and skips it instead of signalling the run."""
    fake = FakeLaunchd()
    config = _installed(paths, fake)
    spec = run_spec(config.lanes["beta"])
    lock = LaneLock(lane_lock_path(spec.queue_dir, spec.lane))
    assert lock.acquire()
    # The plan's probe ran a moment before the run took the lock: it saw the lane idle.
    monkeypatch.setattr(lanelock, "lane_busy", lambda path: False)
    try:
        out = _by_lane(apply(_config(paths, gen=2), paths, fake, lanes=["beta"]))
    finally:
        lock.release()
    assert out["beta"].action.kind is ActionKind.UPDATE
    assert out["beta"].result is Result.SKIPPED
    assert "lane lock held" in out["beta"].detail
    assert fake.ops(B) == []
    assert _gen(paths, B) == "1"


def test_just_launched_run_is_let_go_before_the_bootout(paths: Paths) -> None:
    """Holding the lock, apply sees a fresh pid (a run that will find the lane busy) and waits
    for it to exit before booting out, so it is not signalled."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    t = FakeTime()

    real_list = fake.list
    seen = {"n": 0}

    def list_with_late_start() -> list[ListEntry]:
        seen["n"] += 1
        if seen["n"] == 2:  # first list() in the stopper, after the plan's observation
            fake.start(B)
        return real_list()

    fake.list = list_with_late_start  # type: ignore[method-assign]
    t.on_sleep = lambda n: fake.finish(B) if n == 1 else None
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, lanes=["beta"], timing=t.timing()))
    assert out["beta"].result is Result.DONE
    assert fake.signalled == []


def test_bootout_is_drained_before_bootstrap(paths: Paths) -> None:
    """bootout is asynchronous: apply polls list() until the label is gone, then bootstraps."""
    fake = FakeLaunchd(bootout_lag=3)
    _installed(paths, fake)
    t = FakeTime()
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, lanes=["alpha"], timing=t.timing()))
    assert out["alpha"].result is Result.DONE
    ops = [c.op for c in fake.calls if c.target in {A, ""}]
    boot = ops.index("bootout")
    # the label stays listed for three list() calls; the fourth finds it gone
    assert ops[boot:] == ["bootout", "list", "list", "list", "list", "bootstrap"]


def test_bootstrap_retries_once_on_error_5(paths: Paths) -> None:
    """A bootstrap failing with 5 (previous instance still draining) is retried once."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.fail_next("bootstrap", 5)
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, lanes=["alpha"]))
    assert out["alpha"].result is Result.DONE
    assert fake.ops(A) == ["bootout", "bootstrap", "bootstrap"]


def test_bootstrap_failing_twice_is_reported_with_its_meaning(paths: Paths) -> None:
    """Two failures: the lane fails with launchctl's code and meaning, the others go on, and
    apply exits 1; the next apply sees the written plist and only loads it."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.fail_next("bootstrap", 5)
    fake.fail_next("bootstrap", 5)
    result = apply(_config(paths, gen=2), paths, fake)
    out = _by_lane(result)
    assert out["alpha"].result is Result.FAILED
    assert isinstance(out["alpha"].error, LaunchctlError)
    assert out["alpha"].error.code == 5
    assert out["alpha"].error.meaning
    assert out["beta"].result is Result.DONE
    assert result.exit_code == 1
    retry = _by_lane(apply(_config(paths, gen=2), paths, fake))
    assert retry["alpha"].action.kind is ActionKind.LOAD
    assert retry["alpha"].result is Result.DONE


@pytest.mark.parametrize("code", [119, 125])
def test_other_bootstrap_errors_are_not_retried(paths: Paths, code: int) -> None:
    """Errors that waiting cannot fix (disabled, wrong domain) fail at once, explained."""
    fake = FakeLaunchd()
    fake.fail_next("bootstrap", code)
    out = _by_lane(apply(_config(paths), paths, fake, lanes=["alpha"]))
    assert out["alpha"].result is Result.FAILED
    assert fake.ops(A) == ["bootstrap"]
    assert isinstance(out["alpha"].error, LaunchctlError)
    assert out["alpha"].error.code == code


def test_label_that_never_drains_fails_and_writes_nothing(paths: Paths) -> None:
    """If the label is still listed after ExitTimeOut + margin, the lane fails and the old plist
    and snapshot stay, so the next apply tries the reload again."""
    fake = FakeLaunchd(bootout_lag=10_000)
    _installed(paths, fake)
    t = FakeTime()
    out = _by_lane(apply(_config(paths, gen=2), paths, fake, lanes=["alpha"], timing=t.timing()))
    assert out["alpha"].result is Result.FAILED
    assert "still loaded" in out["alpha"].detail
    assert _gen(paths, A) == "1"
    assert t.now >= 1000 + 5 + 5


def test_bootout_in_progress_36_is_waited_out(paths: Paths) -> None:
    """bootout answering 36 (someone else's bootout is still draining) is not an error: apply
    waits for the label to go, then bootstraps."""
    fake = FakeLaunchd(bootout_lag=3)
    _installed(paths, fake)
    fake.bootout(A)
    fake.calls.clear()
    out = _by_lane(
        apply(_config(paths, gen=2), paths, fake, lanes=["alpha"], timing=FakeTime().timing())
    )
    assert out["alpha"].result is Result.DONE
    assert fake.ops(A) == ["bootout", "bootstrap"]


def test_disabled_lane_is_enabled_then_bootstrapped(paths: Paths) -> None:
    """apply is the user's intent: a disabled label is enabled, then loaded, and it says so."""
    fake = FakeLaunchd()
    fake.disabled.add(A)
    out = _by_lane(apply(_config(paths), paths, fake, lanes=["alpha"]))
    assert out["alpha"].result is Result.DONE
    assert "enabled" in out["alpha"].detail
    assert fake.ops(A) == ["enable", "bootstrap"]


def test_snapshot_only_change_needs_no_reload_even_while_running(paths: Paths) -> None:
    """max_jobs lives in the snapshot only: apply rewrites the snapshot, boots nothing out,
    and does so even while the lane runs (the run keeps the copy it read)."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    fake.start(B)
    config = _config(paths, max_jobs=9)
    out = _by_lane(apply(config, paths, fake))
    assert out["beta"].action.kind is ActionKind.SNAPSHOT
    assert out["beta"].result is Result.DONE
    assert fake.ops(B) == []
    assert RunSpec.load(paths.snapshot_for(B)).max_jobs == 9
    assert apply(config, paths, fake).nothing_to_do


def test_loaded_lane_with_missing_plist_is_rewritten_and_reloaded(paths: Paths) -> None:
    """A loaded lane whose plist file was deleted gets it back and is reloaded."""
    fake = FakeLaunchd()
    config = _installed(paths, fake)
    paths.plist_for(A).unlink()
    out = _by_lane(apply(config, paths, fake))
    assert out["alpha"].action.kind is ActionKind.UPDATE
    assert out["alpha"].result is Result.DONE
    assert paths.plist_for(A).exists()
    assert fake.ops(A) == ["bootout", "bootstrap"]


def test_dry_run_changes_nothing(paths: Paths) -> None:
    """--dry-run returns the plan: no file written, no launchd change."""
    fake = FakeLaunchd()
    result = apply(_config(paths), paths, fake, dry_run=True)
    assert result.dry_run
    assert {o.result for o in result.outcomes} == {Result.PLANNED}
    assert not paths.plist_for(A).exists()
    assert not (paths.home / "q").exists()
    assert {c.op for c in fake.calls} <= {"list", "print-disabled", "print"}


def test_orphaned_lane_is_offered_never_touched(paths: Paths) -> None:
    """A lane dropped from lanes.toml is listed as a removal offer; apply leaves it loaded."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    result = apply(_config(paths, lanes="alpha"), paths, fake)
    out = _by_lane(result)
    assert out["beta"].result is Result.OFFERED
    assert "`lanekit remove beta`" in out["beta"].detail
    assert result.nothing_to_do
    assert paths.plist_for(B).exists()
    assert fake.ops(B) == []
    named = apply(_config(paths, lanes="alpha"), paths, fake, lanes=["alpha"])
    assert [o.action.lane for o in named.outcomes] == ["alpha"]


def test_apply_unknown_lane_is_a_usage_error(paths: Paths) -> None:
    """Naming a lane that lanes.toml lacks fails before anything is done."""
    fake = FakeLaunchd()
    with pytest.raises(UsageError, match="gamma"):
        apply(_config(paths), paths, fake, lanes=["gamma"])
    assert fake.calls == []


def test_remove_orphan_boots_out_and_deletes_but_keeps_the_queue(paths: Paths) -> None:
    """remove boots the lane out and deletes plist and snapshot; queue and logs stay."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    (paths.home / "q" / "queue" / "job.json").write_text("{}")
    config = _config(paths, lanes="alpha")
    result = remove(config, paths, fake, "beta")
    assert result.booted_out
    assert set(result.deleted) == {paths.plist_for(B), paths.snapshot_for(B)}
    assert not result.still_configured
    assert fake.ops(B) == ["bootout"]
    assert (paths.home / "q" / "queue" / "job.json").exists()
    assert B not in {e.label for e in fake.list()}


def test_remove_without_config_finds_the_lane_by_marker(paths: Paths) -> None:
    """With no lanes.toml at all, the installed plist's marker names the lane."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    assert remove(None, paths, fake, "alpha").label == A
    assert remove(None, paths, fake, B).lane == "beta"


def test_remove_refuses_a_running_lane_unless_forced(paths: Paths) -> None:
    """A running lane is not removed (nothing deleted) unless --force, which signals it."""
    fake = FakeLaunchd()
    config = _installed(paths, fake)
    pid = fake.start(B)
    with pytest.raises(LaunchdError, match=f"running \\(pid {pid}\\)"):
        remove(config, paths, fake, "beta")
    assert paths.plist_for(B).exists()
    assert fake.signalled == []
    result = remove(config, paths, fake, "beta", force=True)
    assert result.stopped_pid == pid
    assert result.still_configured
    assert fake.signalled == [(B, pid)]


def test_remove_refuses_plists_lanekit_did_not_install(paths: Paths) -> None:
    """A plist without the LANEKIT_LANE marker is never removed."""
    fake = FakeLaunchd()
    config = _config(paths)
    paths.launch_agents.mkdir(parents=True)
    paths.plist_for(A).write_bytes(plistlib.dumps({"Label": A, "Program": "/bin/true"}))
    with pytest.raises(UsageError, match="not installed by lanekit"):
        remove(config, paths, fake, "alpha")
    assert paths.plist_for(A).exists()
    with pytest.raises(UsageError, match="no lane named"):
        remove(config, paths, fake, "nope")


def _other_project(paths: Paths) -> Config:
    """A second project in its own directory with the same label prefix and lane names."""
    other = paths.cwd / "other"
    other.mkdir()
    text = (paths.cwd / "lanes.toml").read_text(encoding="utf-8")
    (other / "lanes.toml").write_text(text, encoding="utf-8")
    return load_config(other / "lanes.toml", paths)


def test_remove_refuses_a_lane_another_project_installed(paths: Paths) -> None:
    """From a second project with a lane of the same name (and label), `remove alpha` is
    refused with one line naming both lanes.toml files, and nothing is booted out or deleted;
    adopt=True removes it deliberately."""
    fake = FakeLaunchd()
    mine = _installed(paths, fake)
    theirs = _other_project(paths)
    with pytest.raises(UsageError) as refused:
        remove(theirs, paths, fake, "alpha")
    message = refused.value.message
    assert "\n" not in message
    assert str(mine.path.resolve()) in message
    assert str(theirs.path.resolve()) in message
    assert "--adopt" in refused.value.hint
    assert fake.ops(A) == []
    assert paths.plist_for(A).exists()
    assert paths.snapshot_for(A).exists()
    result = remove(theirs, paths, fake, "alpha", adopt=True)
    assert result.booted_out
    assert fake.ops(A) == ["bootout"]
    assert not paths.plist_for(A).exists()


def test_remove_from_its_own_project_or_from_nowhere_needs_no_adopt(paths: Paths) -> None:
    """The project that installed a lane removes it; so does a remove without any lanes.toml
    (no other project to protect it from); a lane whose lanes.toml is gone is anyone's."""
    fake = FakeLaunchd()
    mine = _installed(paths, fake)
    assert remove(mine, paths, fake, "alpha").booted_out
    assert remove(None, paths, fake, "beta").booted_out
    theirs = _other_project(paths)
    apply(mine, paths, fake)
    mine.path.unlink()
    assert remove(theirs, paths, fake, "alpha").booted_out


def test_remove_waits_for_the_apply_lock(paths: Paths) -> None:
    """While an apply holds the domain's apply lock, remove waits (told who holds it) and
    touches nothing; it removes the lane once the lock is released."""
    import threading

    from lanekit.reconcile.applylock import apply_lock

    fake = FakeLaunchd()
    config = _installed(paths, fake)
    told: list[int | None] = []
    waiting = threading.Event()
    done: list[RemoveResult] = []

    def on_wait(pid: int | None) -> None:
        told.append(pid)
        waiting.set()

    def remove_beta() -> None:
        done.append(remove(config, paths, fake, "beta", on_wait=on_wait))

    with apply_lock(paths.state):
        worker = threading.Thread(target=remove_beta)
        worker.start()
        assert waiting.wait(10)
        assert told == [os.getpid()]
        assert paths.plist_for(B).exists()
        assert fake.ops(B) == []
        assert done == []
    worker.join(10)
    assert not worker.is_alive()
    assert done[0].booted_out
    assert not paths.plist_for(B).exists()


def test_kick_returns_the_pid_and_needs_a_loaded_lane(paths: Paths) -> None:
    """kick starts the lane and returns its pid; a running lane keeps its run; an unloaded
    lane is an error that suggests `lanekit apply`."""
    fake = FakeLaunchd()
    config = _config(paths)
    with pytest.raises(LaunchdError, match="not loaded") as caught:
        kick(config, paths, fake, "alpha")
    assert "lanekit apply" in caught.value.hint
    apply(config, paths, fake)
    first = kick(config, paths, fake, "alpha")
    assert first.pid is not None
    assert not first.already_running
    again = kick(config, paths, fake, "alpha")
    assert (again.pid, again.already_running) == (first.pid, True)
    assert fake.ops(A).count("kickstart") == 1


def _nice_config(paths: Paths, nice: int) -> Config:
    """One calendar lane `alpha` with `nice`."""
    text = (
        '[defaults]\nlabel_prefix = "com.example.t"\n[queues.q]\ndir = "~/q"\n'
        '[lanes.alpha]\nqueue = "q"\ncommand = ["/bin/true", "{job}"]\n'
        f'schedule = "0 3 * * *"\nnice = {nice}\n'
    )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def test_plist_replaced_without_reload_is_reloaded(paths: Paths) -> None:
    """Nice 10 applied, then the Nice 11 plist put in place without a reload: launchd still
    runs Nice 10, so plan and apply say "launchd has an older definition loaded" and reload;
    afterwards launchd runs Nice 11 and a second apply has nothing to do."""
    from lanekit.reconcile import desired_lane
    from lanekit.service.emulated.emulator import EmulatedDomain

    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(_nice_config(paths, 10), paths, domain)
    config = _nice_config(paths, 11)
    lane = config.lanes["alpha"]
    want = desired_lane(lane, paths, interpreter=_interpreter(paths, lane.label))
    paths.plist_for(lane.label).write_bytes(want.plist)
    paths.snapshot_for(lane.label).write_bytes(want.snapshot)
    assert domain.print(lane.label).extra["nice"] == "10"

    (planned,) = apply(config, paths, domain, dry_run=True).outcomes
    assert planned.action.kind is ActionKind.UPDATE
    assert "launchd has an older definition loaded (Nice 10 -> 11)" in planned.action.reason
    assert planned.action.steps == ("bootout", "bootstrap")
    (done,) = apply(config, paths, domain).outcomes
    assert done.result is Result.DONE
    assert domain.print(lane.label).extra["nice"] == "11"
    assert apply(config, paths, domain).nothing_to_do


def _interpreter(paths: Paths, label: str) -> str:
    return str(plistlib.loads(paths.plist_for(label).read_bytes())["ProgramArguments"][0])


def test_reformatted_plist_is_rewritten_without_a_bootout(paths: Paths) -> None:
    """The installed plist rewritten in another format (same keys and values): apply rewrites
    it and never boots the lane out."""
    fake = FakeLaunchd()
    config = _installed(paths, fake)
    label = config.lanes["alpha"].label
    path = paths.plist_for(label)
    canonical = path.read_bytes()
    path.write_bytes(plistlib.dumps(plistlib.loads(canonical), fmt=plistlib.FMT_BINARY))
    out = _by_lane(apply(config, paths, fake))
    assert out["alpha"].action.kind is ActionKind.REWRITE
    assert out["alpha"].result is Result.DONE
    assert fake.ops(label) == []
    assert path.read_bytes() == canonical


def test_apply_installs_the_rescue_script_and_says_where_lanes_live(paths: Paths) -> None:
    """apply writes the interpreter rescue script next to the snapshots; in user/<uid> it
    notes that lanes return after a reboot only at login; in gui/<uid> it says nothing."""
    config = _config(paths)
    result = apply(config, paths, FakeLaunchd(domain="user/501"))
    assert (paths.state / "rescue.sh").is_file()
    assert any("only once you log in" in note for note in result.notes)
    assert apply(config, paths, FakeLaunchd(domain="gui/501"), dry_run=True).notes == ()


def test_apply_warns_about_an_interpreter_upgrades_remove(paths: Paths, tmp_path: Path) -> None:
    """A venv python linked into a patch-release Homebrew keg gets a warning naming the keg
    and the fix; dry runs say it too, and write nothing."""
    keg = tmp_path / "opt/homebrew/Cellar/python@3.12/3.12.4/bin/python3.12"
    keg.parent.mkdir(parents=True)
    keg.symlink_to(sys.executable)
    venv_python = tmp_path / "venv/bin/python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(keg)
    result = apply(_config(paths), paths, FakeLaunchd(), dry_run=True, interpreter=str(venv_python))
    [note] = result.notes
    assert "brew upgrade" in note and "lanekit apply" in note
    assert not (paths.state / "rescue.sh").exists()


def test_wait_reports_what_it_waits_for(paths: Paths) -> None:
    """--wait tells its progress callback, at each poll, the lane, its pid and the time spent
    waiting for the run to end."""
    fake = FakeLaunchd()
    _installed(paths, fake)
    pid = fake.start(B)
    t = FakeTime()
    t.on_sleep = lambda n: fake.finish(B) if n == 3 else None
    seen: list[Waiting] = []
    apply(_config(paths, gen=2), paths, fake, wait=60, timing=t.timing(), progress=seen.append)
    assert [(w.lane, w.label, w.pid, w.what) for w in seen] == [
        ("beta", B, pid, "for its run to end")
    ] * 3
    assert [w.elapsed for w in seen] == [0.0, 0.5, 1.0]


def test_remove_force_reports_the_bootout_it_waits_for(paths: Paths) -> None:
    """remove --force waits for launchd to let the run go after the bootout, and says so."""
    fake = FakeLaunchd(bootout_lag=3)
    config = _installed(paths, fake)
    fake.start(B)
    seen: list[Waiting] = []
    t = FakeTime()
    remove(config, paths, fake, "beta", force=True, timing=t.timing(), progress=seen.append)
    assert seen
    assert {(w.lane, w.what) for w in seen} == {("beta", "for launchd to let it go (bootout)")}
    assert [w.elapsed for w in seen] == sorted(w.elapsed for w in seen)


def test_apply_refuses_an_interpreter_that_imports_lanekit_only_outside_isolated_mode(
    paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 3: lanes run `python -I`, which drops PYTHONPATH and the user site; an
    install found only there works in the terminal and exits 1 under launchd, so apply runs
    `[python, -I, -c, "import lanekit"]` once and refuses (exit 69) with the fix, before it
    writes anything."""
    import lanekit
    from lanekit.errors import EnvironmentUnusableError

    base = Path(getattr(sys, "_base_executable", sys.executable))
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nexec "{base}" "$@"\n')
    python.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", str(Path(lanekit.__file__).resolve().parent.parent))
    fake = FakeLaunchd()
    with pytest.raises(EnvironmentUnusableError) as caught:
        apply(_config(paths), paths, fake, interpreter=str(python))
    assert caught.value.exit_code == ExitCode.UNAVAILABLE
    assert f"{python} -I -c 'import lanekit'" in caught.value.message
    assert "PYTHONPATH" in caught.value.message
    assert "uv tool install --python" in caught.value.hint
    assert "/usr/bin/python3" not in caught.value.hint
    assert not paths.launch_agents.exists() or not any(paths.launch_agents.iterdir())
    assert not (paths.state / "rescue.sh").exists()
    # A dry run changes nothing and says nothing about it; the real interpreter is fine.
    apply(_config(paths), paths, fake, dry_run=True, interpreter=str(python))
    assert all(o.result is Result.DONE for o in apply(_config(paths), paths, fake).outcomes)
