"""Each doctor check says which service managers it applies to; the context observes every
target's job in one observation of the manager, however many checks ask."""

from __future__ import annotations

import importlib
import plistlib
from pathlib import Path

import pytest

from fakes import FakeLaunchd
from lanekit.doctor import DoctorContext, Problem, Severity, Target, registry
from lanekit.doctor.registry import Check
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.manager import LAUNCHD_ONLY, ManagerKind
from lanekit.state.paths import Paths

ALWAYS = "test.always"


def _target(paths: Paths, label: str = "com.example.job") -> Target:
    job = {"Label": label, "ProgramArguments": ["/bin/true"]}
    path = paths.launch_agents / f"{label}.plist"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(plistlib.dumps(job))
    return Target(subject=str(path), plist_path=path, plist=job, installed=True)


@pytest.fixture
def always(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that always finds something, registered for launchd's world only."""

    def found(target: Target, ctx: DoctorContext) -> list[Problem]:
        return [Problem(Severity.INFO, "seen", "nothing to do")]

    made = Check(ALWAYS, "test", "always", found, managers=LAUNCHD_ONLY)
    # lanekit.doctor.registry, the module (the package exports a function of that name).
    checks = importlib.import_module("lanekit.doctor.registry")._REGISTRY
    monkeypatch.setitem(checks, ALWAYS, made)


@pytest.mark.usefixtures("always")
def test_a_launchd_only_check_runs_under_launchd_and_not_on_the_emulated_domain(
    paths: Paths,
) -> None:
    """The same check on the same target: a finding under launchd's manager, none under the
    emulated domain's; the context says which manager it has."""
    target = _target(paths)
    on_launchd = DoctorContext(paths, launchd=FakeLaunchd())
    assert on_launchd.manager_kind is ManagerKind.LAUNCHD
    assert [f.id for f in on_launchd.findings(ALWAYS, target)] == [ALWAYS]
    emulated = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    on_emulated = DoctorContext(paths, launchd=emulated)
    assert on_emulated.manager_kind is ManagerKind.EMULATED
    assert on_emulated.findings(ALWAYS, target) == []


def test_the_macos_session_checks_are_launchd_only() -> None:
    """Sessions, Background Items and logins after a reboot are launchd's world."""
    checks = registry()
    for check_id in (
        "launchd.no-gui-session",
        "launchd.background-item-off",
        "launchd.no-login-after-reboot",
        "launchd.loaded-twice",
    ):
        assert checks[check_id].managers == LAUNCHD_ONLY
    assert checks["launchd.not-loaded"].managers == frozenset(ManagerKind)


def test_every_target_is_observed_in_one_call(paths: Paths) -> None:
    """Five targets, every launchd check: one list() and one print-disabled in all."""
    fake = FakeLaunchd()
    targets = [_target(paths, f"com.example.job{n}") for n in range(5)]
    for target in targets:
        assert target.plist_path is not None
        fake.bootstrap(target.plist_path)
    ctx = DoctorContext(paths, launchd=fake)
    ctx.expect(t.label for t in targets if t.label is not None)
    for chk in registry().values():
        if chk.asks_launchd:
            for target in targets:
                ctx.findings(chk.id, target)
    ops = [call.op for call in fake.calls if call.op != "bootstrap"]
    assert ops.count("list") == 1
    assert ops.count("print-disabled") == 1
    assert all(ctx.seen(t.label).loaded for t in targets if t.label is not None)


def test_a_target_holds_its_job_in_neutral_terms(tmp_path: Path) -> None:
    """A target built from a plist carries its job's argv, program and logs beside it."""
    target = _target(Paths.under(tmp_path))
    assert target.definition is not None
    assert target.definition.argv == ("/bin/true",)
    assert target.definition.program == "/bin/true"
