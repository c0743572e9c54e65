"""The ServiceManager contract: what every service manager lanekit drives must do, run over each
implementation (lanekit.service.manager).

Each implementation is one entry of SUBJECTS: a function that builds the manager under test
in a `Paths` tree, says how many domain-wide reads it has made (an observation of N lanes must
make as many as one of a single lane), and makes a lane run as its manager would start it. The
next manager (systemd) joins by adding its entry; every test below then runs on it too.

(The file is not named test_contract.py: pytest imports test modules by base name, and
tests/queue/test_contract.py is the queue's contract suite.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from fakes import FakeLaunchd
from lanekit.config import Config, load_config
from lanekit.config.provenance import MARKER
from lanekit.errors import Refusal, ServiceError
from lanekit.queue import open_queue
from lanekit.reconcile import ActionKind, Result, apply, remove
from lanekit.reconcile.pause import pause
from lanekit.service import manager_of, open_manager
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.emulated.manager import EmulatedManager
from lanekit.service.launchd.launchctl import LaunchctlDomain
from lanekit.service.launchd.manager import LaunchdManager
from lanekit.service.manager import Ending, ManagerKind, ServiceManager
from lanekit.service.systemd.manager import SystemdManager
from lanekit.service.systemd.systemctl import Systemctl
from lanekit.state.paths import Paths, is_paused
from lanekit.system.atomic import write_atomic
from usermanager import UserManager

LANES = ("alpha", "beta", "gamma", "delta", "epsilon")


@dataclass
class Subject:
    """One implementation under test."""

    manager: ServiceManager
    reads: Callable[[], int]
    """How many domain-wide reads the backend has answered so far."""
    run: Callable[[Config, str], int]
    """Start lane NAME of the config so that it keeps running; its pid."""


def _launchd(paths: Paths) -> Subject:
    """launchd's manager over the in-memory launchd (tests/fakes.py): launchctl's verbs, codes
    and words, without a Mac."""
    fake = FakeLaunchd()

    def reads() -> int:
        return sum(1 for call in fake.calls if call.op in {"list", "print-disabled"})

    def run(config: Config, name: str) -> int:
        return fake.start(config.lanes[name].label)

    return Subject(LaunchdManager(fake, paths.launch_agents), reads, run)


def _emulated(paths: Paths) -> Subject:
    """The emulated domain: real processes, its state file read under its lock."""
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    count = [0]
    read_state = domain._read_state_bytes

    def counted() -> bytes:
        count[0] += 1
        return read_state()

    domain._read_state_bytes = counted  # type: ignore[method-assign]

    def run(config: Config, name: str) -> int:
        lane = config.lanes[name]
        open_queue(lane.queue.dir, durable=False).enqueue({"sleep": True})
        pid = domain.kickstart(lane.label)
        assert pid is not None
        return pid

    return Subject(EmulatedManager(domain, paths.launch_agents), lambda: count[0], run)


def _systemd(paths: Paths, user: UserManager) -> Subject:
    """A real systemd user manager (tests/usermanager.py): units in its unit directory, runs
    started by systemd itself; `reads` counts `systemctl --user show` calls."""
    systemctl = Systemctl(user.env)
    manager = SystemdManager(systemctl, user.unit_dir, paths.state, "the test's user manager")

    def reads() -> int:
        return sum(1 for call in systemctl.calls if "show" in call)

    def run(config: Config, name: str) -> int:
        lane = config.lanes[name]
        open_queue(lane.queue.dir, durable=False).enqueue({"sleep": True})
        deadline = time.monotonic() + 10
        pid = manager.kick(lane.label)
        while pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
            pid = manager.observe_lane(lane.label).pid
        assert pid is not None
        return pid

    return Subject(manager, reads, run)


SUBJECTS: dict[str, Callable[[Paths, UserManager | None], Subject]] = {
    ManagerKind.LAUNCHD: lambda paths, _: _launchd(paths),
    ManagerKind.EMULATED: lambda paths, _: _emulated(paths),
    ManagerKind.SYSTEMD: lambda paths, user: _systemd(paths, _needed(user)),
}
"""Every implementation the contract runs over: add the next one here."""


def _needed(user: UserManager | None) -> UserManager:
    assert user is not None
    return user


@pytest.fixture(params=sorted(SUBJECTS))
def subject(request: pytest.FixtureRequest, paths: Paths) -> Iterator[Subject]:
    """Each implementation in turn; whatever a test left loaded is unloaded (and stopped).
    systemd's runs against a real user manager (the `systemd` fixture: skipped where none can
    run, except in CI)."""
    user = request.getfixturevalue("systemd") if request.param == ManagerKind.SYSTEMD else None
    made = SUBJECTS[request.param](paths, user)
    assert made.manager.kind == request.param
    yield made
    for label in made.manager.loaded():
        made.manager.unload(label, grace=15.0)


def _config(paths: Paths, *, gen: int = 1, lanes: tuple[str, ...] = LANES[:2]) -> Config:
    """lanes.toml with `lanes` on one queue; GEN changes every lane's definition. A job runs
    `sleep 30`, so a lane given a job keeps running."""
    text = '[defaults]\nlabel_prefix = "com.example.contract"\n'
    text += f'[queues.q]\ndir = "{paths.home / "q"}"\n'
    for name in lanes:
        text += (
            f'[lanes.{name}]\nqueue = "q"\n'
            'command = ["/bin/sh", "-c", "sleep 30", "job", "{job}"]\n'
            f'schedule = "0 3 * * *"\nenv = {{ GEN = "{gen}" }}\n'
        )
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def _wanted(manager: ServiceManager, config: Config, paths: Paths) -> dict[str, bytes]:
    """label -> the artifact `apply` would install, as the manager renders it."""
    return {
        lane.label: manager.render(
            lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label)
        ).files[manager.artifact_path(lane.label).name]
        for lane in config.lanes.values()
    }


def test_apply_twice_changes_nothing(subject: Subject, paths: Paths) -> None:
    """The first apply installs and loads every lane; the second changes nothing and says so,
    and the manager then has every lane loaded with a definition as new as its artifact."""
    config = _config(paths)
    manager = subject.manager
    first = apply(config, paths, manager)
    assert {o.action.kind for o in first.outcomes} == {ActionKind.CREATE}
    assert {o.result for o in first.outcomes} == {Result.DONE}
    second = apply(config, paths, manager)
    assert second.nothing_to_do
    assert {o.action.kind for o in second.outcomes} == {ActionKind.UNCHANGED}
    labels = [lane.label for lane in config.lanes.values()]
    seen = manager.observe(labels, _wanted(manager, config, paths))
    for label in labels:
        assert seen[label].loaded
        assert not seen[label].running
        assert seen[label].ended is Ending.NEVER
        assert not seen[label].needs_reload, seen[label].stale
        defined = manager.define(manager.artifact_path(label).read_bytes())
        assert defined.label == label
        assert defined.program == sys.executable
        assert defined.calendar
    assert set(labels) <= manager.installed().keys()
    with pytest.raises(ValueError, match="not a valid"):
        manager.define(b"not an artifact")


def test_what_render_makes_is_what_installed_lists(subject: Subject, paths: Paths) -> None:
    """A lane's artifacts, put in the install directory they name, are what `installed()`
    lists (the main one at `artifact_path`) and what `define()` reads back: the lane's
    label, the interpreter it runs and lanekit's marker naming the lane. Not loaded yet."""
    manager = subject.manager
    lane = _config(paths).lanes["alpha"]
    made = manager.render(lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label))
    main = manager.artifact_path(lane.label)
    assert made.install_dir == manager.install_dir == main.parent
    assert main.name in made.files
    assert lane.label not in manager.installed()
    for name, data in made.files.items():
        write_atomic(made.install_dir / name, data)
    assert manager.installed()[lane.label] == main
    defined = manager.define(main.read_bytes())
    assert (defined.label, defined.program) == (lane.label, sys.executable)
    assert defined.env[MARKER] == lane.name
    assert not manager.observe([lane.label])[lane.label].loaded


def test_refusals_are_neutral(subject: Subject, paths: Paths) -> None:
    """What a manager refuses it says in the seam's words (ServiceError.reason): starting a
    lane that is not loaded is NOT_LOADED, loading one still loaded is BUSY (retry once it is
    gone), loading a disabled one is REFUSED; unloading one that is not loaded is no error,
    it is gone already."""
    manager = subject.manager
    config = _config(paths)
    apply(config, paths, manager)
    label = config.lanes["alpha"].label
    with pytest.raises(ServiceError) as caught:
        manager.kick("test.never.loaded")
    assert caught.value.reason is Refusal.NOT_LOADED
    assert manager.unload("test.never.loaded")
    with pytest.raises(ServiceError) as caught:
        manager.load(manager.artifact_path(label))
    assert caught.value.reason is Refusal.BUSY
    manager.disable(label)
    assert manager.unload(label, grace=15.0)
    with pytest.raises(ServiceError) as caught:
        manager.load(manager.artifact_path(label))
    assert caught.value.reason is Refusal.REFUSED
    assert caught.value.message


def test_a_changed_lane_needs_reload_until_applied(subject: Subject, paths: Paths) -> None:
    """An artifact newer than what the manager loaded is seen as needing a reload; apply
    reloads it and the observation agrees."""
    manager = subject.manager
    apply(_config(paths), paths, manager)
    changed = _config(paths, gen=2)
    label = changed.lanes["alpha"].label
    assert manager.observe([label], _wanted(manager, changed, paths))[label].needs_reload
    assert {o.result for o in apply(changed, paths, manager).outcomes} == {Result.DONE}
    assert not manager.observe([label], _wanted(manager, changed, paths))[label].needs_reload


def test_a_running_lane_is_not_stopped_without_force(subject: Subject, paths: Paths) -> None:
    """A change to a running lane is skipped (its run keeps going, nothing is reloaded) until
    apply is forced; then the run is stopped and the new definition loaded."""
    manager = subject.manager
    apply(_config(paths), paths, manager)
    config = _config(paths)
    pid = subject.run(config, "alpha")
    label = config.lanes["alpha"].label
    changed = _config(paths, gen=2)
    kept = {o.action.lane: o for o in apply(changed, paths, manager).outcomes}
    assert kept["alpha"].result is Result.SKIPPED
    assert kept["beta"].result is Result.DONE
    assert manager.observe([label])[label].pid == pid
    forced = {o.action.lane: o for o in apply(changed, paths, manager, force=True).outcomes}
    assert forced["alpha"].result is Result.DONE
    after = manager.observe([label], _wanted(manager, changed, paths))[label]
    assert after.loaded
    assert after.pid != pid
    assert not after.needs_reload


def test_pause_survives_apply(subject: Subject, paths: Paths) -> None:
    """A paused lane stays disabled (and marked) through apply, which loads nothing for it."""
    manager = subject.manager
    config = _config(paths)
    apply(config, paths, manager)
    lane = config.lanes["alpha"]
    pause([lane], paths, manager)
    assert manager.observe([lane.label])[lane.label].disabled
    apply(config, paths, manager)
    apply(_config(paths, gen=2), paths, manager)
    assert manager.observe([lane.label])[lane.label].disabled
    assert is_paused(paths, lane.label)


def test_remove_cleans_up(subject: Subject, paths: Paths) -> None:
    """remove unloads the lane and deletes its artifact and snapshot; the others stay."""
    manager = subject.manager
    config = _config(paths)
    apply(config, paths, manager)
    gone, kept = config.lanes["alpha"].label, config.lanes["beta"].label
    result = remove(config, paths, manager, "alpha")
    assert result.booted_out
    seen = manager.observe([gone, kept])
    assert not seen[gone].loaded
    assert seen[kept].loaded
    assert gone not in manager.loaded()
    assert not manager.artifact_path(gone).exists()
    assert not paths.snapshot_for(gone).exists()
    assert gone not in manager.installed()


def test_observing_n_lanes_is_one_observation(subject: Subject, paths: Paths) -> None:
    """Observing five lanes reads the domain as often as observing one: one observation for
    all lanes, never one per lane."""
    manager = subject.manager
    config = _config(paths, lanes=LANES)
    apply(config, paths, manager)
    labels = [lane.label for lane in config.lanes.values()]
    before = subject.reads()
    one = manager.observe(labels[:1])
    for_one = subject.reads() - before
    before = subject.reads()
    many = manager.observe(labels)
    assert subject.reads() - before == for_one
    assert for_one >= 1
    assert one[labels[0]] == many[labels[0]]
    assert all(many[label].loaded for label in labels)


def test_observing_one_lane_agrees_with_the_whole_picture(subject: Subject, paths: Paths) -> None:
    """observe_lane (what `try` polls) says what observe says of a lane's run: loaded, pid,
    exit; a label the manager never loaded is not loaded (no error)."""
    manager = subject.manager
    config = _config(paths)
    apply(config, paths, manager)
    label = next(iter(config.lanes.values())).label
    whole = manager.observe([label])[label]
    one = manager.observe_lane(label)
    assert (one.loaded, one.pid, one.exit_code, one.signal) == (
        whole.loaded,
        whole.pid,
        whole.exit_code,
        whole.signal,
    )
    assert one.loaded
    assert not manager.observe_lane("test.never.loaded").loaded


def test_the_factory_picks_and_wraps_managers(paths: Paths) -> None:
    """open_manager gives the emulated domain's manager under LANEKIT_LAUNCHD=emulated;
    manager_of wraps launchctl's verbs in launchd's manager and leaves a manager as it is."""
    chosen = open_manager(paths, {"LANEKIT_LAUNCHD": "emulated"})
    assert chosen.kind is ManagerKind.EMULATED
    assert chosen.install_dir == paths.launch_agents
    real = manager_of(LaunchctlDomain("gui/501"), paths.launch_agents)
    assert real.kind is ManagerKind.LAUNCHD
    assert real.domain == "gui/501"
    assert real.artifact_path("x.y") == paths.launch_agents / "x.y.plist"
    assert manager_of(real, paths.state) is real


def test_stop_ends_the_run_and_leaves_the_lane_loaded(subject: Subject, paths: Paths) -> None:
    """stop signals the running instance as unloading would, waits for it to end, and leaves
    the lane loaded and idle (kickable again); an idle lane is left alone (no pid, nothing
    sent); a lane that is not loaded is NOT_LOADED."""
    manager = subject.manager
    config = _config(paths)
    apply(config, paths, manager)
    label = config.lanes["alpha"].label
    pid = subject.run(config, "alpha")
    stopped = manager.stop(label, kill_after=5.0, grace=15.0)
    assert (stopped.pid, stopped.ended, stopped.killed) == (pid, True, False)
    seen = manager.observe([label])[label]
    assert seen.loaded and seen.pid is None
    assert manager.stop(label, kill_after=5.0, grace=1.0).pid is None
    with pytest.raises(ServiceError) as caught:
        manager.stop("test.never.loaded", kill_after=None, grace=1.0)
    assert caught.value.reason is Refusal.NOT_LOADED
