"""doctor's registry, runner and report, and the two examples: a healthy lane set reports
nothing, the deliberately broken one (examples/broken) reports every planted problem."""

from __future__ import annotations

import importlib.util
import plistlib
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from lanekit.config import load_config
from lanekit.doctor import (
    DOCTOR_SCHEMA,
    DoctorContext,
    DoctorReport,
    DoctorRequest,
    Finding,
    Severity,
    SubjectKind,
    diagnose,
    list_checks,
    plist_target,
    registry,
    run_checks,
    select_checks,
)
from lanekit.errors import ExitCode, UsageError
from lanekit.reconcile import apply
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths

REPO = Path(__file__).resolve().parent.parent
BROKEN = REPO / "examples" / "broken"

ISSUE_CHECK_IDS = {
    "plist.invalid",
    "plist.label-mismatch",
    "plist.permissions",
    "plist.drift",
    "program.missing",
    "program.not-executable",
    "program.bad-interpreter",
    "path.command-missing",
    "env.path-unset",
    "env.unexpanded",
    "logs.unwritable",
    "logs.dir-missing",
    "workdir.missing",
    "workdir.default-root",
    "logs.large",
    "queue.cross-device",
    "queue.permissions",
    "schedule.every-minute",
    "schedule.out-of-range",
    "schedule.collision",
    "schedule.interval-below-throttle",
    "launchd.not-loaded",
    "launchd.disabled",
    "launchd.exit-78",
    "launchd.exit-126",
    "launchd.exit-127",
    "launchd.killed",
    "launchd.crash-loop",
    "queue.stale-claim",
    "queue.orphaned-job",
    "queue.backlog",
    "queue.failed-jobs",
    "queue.record-mismatch",
    "queue.duplicate-success",
    "queue.timeouts",
    "queue.resubmitted",
    "lane.missed-run",
    "lane.cannot-start",  # issue 10 item 8
    "lane.respawn-loop",  # issue 35 item 3: a lane started on enqueue that launchd restarts
    "watch.not-running",  # issue 9 item 6
    "watch.channel-unconfirmed",  # issue 32 item 1
    "priority.background-burst",
    # issue 15: what real Macs do silently
    "tcc.protected-path",
    "volume.external",
    "volume.no-rename-excl",
    "program.quarantined",
    "launchd.no-gui-session",
    "lane.stuck-run",
    "launchd.background-item-off",
    "launchd.no-login-after-reboot",
    "launchd.loaded-twice",  # issue 32 item 6
    # issue 33: systemd's user manager
    "systemd.no-user-manager",
    "systemd.linger-off",
    "systemd.unit-drift",
    "systemd.exec-failed",
    "systemd.never-elapses",
    "systemd.unanchored-interval",
    "systemd.next-fire-disagrees",
    "systemd.enqueue-watch-failed",
    # issue 34: a queue on a PostgreSQL server
    "queue.db-unreachable",
    "queue.schema-version",
    "queue.lease-expired",
    "queue.clock-skew",
    "queue.secret-in-dsn",
    "queue.pgpass-mode",
}

HEALTHY = """
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.healthy"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["cat", "{job}"]
schedule = ["40 10 * * *", "40 16 * * *"]

[lanes.trickle]
queue = "notes"
command = ["cat", "{job}"]
every = "15m"
"""


def test_every_check_of_the_issue_is_registered() -> None:
    """The registry holds exactly the check ids issue 5 lists, each with a summary."""
    assert set(registry()) == ISSUE_CHECK_IDS
    assert all(check.summary for check in list_checks())


def test_checks_run_in_group_order() -> None:
    """File checks run first, launchd and queue checks later (slow checks last)."""
    ids = [check.id for check in list_checks()]
    assert ids.index("plist.invalid") < ids.index("logs.dir-missing")
    assert ids.index("logs.dir-missing") < ids.index("launchd.exit-78")
    assert ids.index("launchd.exit-78") < ids.index("queue.stale-claim")
    # The watchdog's dead man's switch comes after the lane checks it reuses.
    assert ids[-3:] == [
        "priority.background-burst",
        "watch.channel-unconfirmed",
        "watch.not-running",
    ]


def test_select_checks_keeps_registry_order() -> None:
    """`--check` picks checks by id, in run order, each once."""
    chosen = select_checks(["launchd.exit-78", "plist.invalid", "plist.invalid"])
    assert [c.id for c in chosen] == ["plist.invalid", "launchd.exit-78"]


def test_unknown_check_id_suggests_the_closest() -> None:
    """A typo in `--check` is a usage error with a did-you-mean."""
    with pytest.raises(UsageError) as caught:
        select_checks(["path.command-mising"])
    assert caught.value.hint == "did you mean path.command-missing?"
    assert caught.value.exit_code == ExitCode.USAGE


def test_report_json_contract() -> None:
    """`doctor --json`: schema 2 with findings (id, severity, subject, subject_kind, lanes,
    message, fix) and a summary; these keys are a contract (docs/json.md)."""
    report = DoctorReport(
        findings=(
            Finding(
                "plist.permissions",
                Severity.ERROR,
                "x.plist",
                "bad mode.",
                "chmod 644 x",
                SubjectKind.PLIST,
            ),
            Finding(
                "queue.failed-jobs",
                Severity.WARNING,
                "notes",
                "1 job.",
                "lanekit jobs a --state failed",
                SubjectKind.QUEUE,
                ("a", "b"),
            ),
        ),
        subjects=("x.plist", "notes"),
        checks=("plist.permissions", "queue.failed-jobs"),
    )
    document = report.to_json()
    assert DOCTOR_SCHEMA == 2
    assert set(document) == {"schema", "findings", "summary", "notes"}
    assert document["schema"] == 2
    assert [set(f) for f in document["findings"]] == [
        {"id", "severity", "subject", "subject_kind", "lanes", "message", "fix"}
    ] * 2
    assert document["findings"][0]["severity"] == "error"
    assert [(f["subject_kind"], f["lanes"]) for f in document["findings"]] == [
        ("plist", []),
        ("queue", ["a", "b"]),
    ]
    assert document["summary"] == {
        "errors": 1,
        "warnings": 1,
        "info": 0,
        "subjects": 2,
        "checks": 2,
    }
    assert report.exit_code == ExitCode.FAILURE


def test_warnings_alone_exit_zero() -> None:
    """Exit 1 only when an error is found."""
    report = DoctorReport(
        findings=(Finding("env.path-unset", Severity.WARNING, "x", "m.", "f"),),
        subjects=("x",),
        checks=("env.path-unset",),
    )
    assert report.exit_code == ExitCode.OK


def write_plist(path: Path, job: dict[str, object], mode: int = 0o644) -> Path:
    """A hand-written plist file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(plistlib.dumps(job))
    path.chmod(mode)
    return path


def test_findings_sorted_most_severe_first(tmp_path: Path) -> None:
    """Within a subject: errors, then warnings, then info."""
    paths = Paths.under(tmp_path)
    plist = write_plist(
        tmp_path / "com.example.job.plist",
        {"Label": "com.example.job", "ProgramArguments": ["/bin/true"]},
        mode=0o666,
    )
    report = run_checks([plist_target(plist, None)], DoctorContext(paths))
    ranks = [f.severity.rank for f in report.findings]
    assert ranks == sorted(ranks)
    assert {f.id for f in report.findings} >= {
        "plist.permissions",
        "env.path-unset",
        "workdir.default-root",
    }


def test_lanekit_checks_skip_a_foreign_plist(tmp_path: Path) -> None:
    """A plist without lanekit's marker gets no lane finding (queue, drift, missed run...)."""
    paths = Paths.under(tmp_path)
    plist = write_plist(
        tmp_path / "com.example.job.plist",
        {"Label": "com.example.job", "ProgramArguments": ["/bin/true"]},
    )
    report = run_checks([plist_target(plist, None)], DoctorContext(paths))
    lane_only = {c.id for c in list_checks() if c.needs_lane}
    assert lane_only
    assert not lane_only & {f.id for f in report.findings}


def run_healthy(tmp_path: Path, paths: Paths) -> EmulatedDomain:
    """Apply a healthy lanes.toml on the emulator and run each lane once."""
    (tmp_path / "lanes.toml").write_text(HEALTHY)
    config = load_config(tmp_path / "lanes.toml", paths)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    for lane in config.lanes.values():
        domain.kickstart(lane.label)
        assert domain.wait_idle(lane.label, 30)
    return domain


@pytest.mark.slow
def test_healthy_lanes_report_nothing(tmp_path: Path) -> None:
    """Applied with `apply`, loaded, each run once: every check is silent, exit 0."""
    paths = Paths.under(tmp_path)
    domain = run_healthy(tmp_path, paths)
    report = diagnose(
        DoctorRequest(config_path=tmp_path / "lanes.toml"), paths, launchd=domain, env={}
    )
    assert report.findings == ()
    assert report.subjects == ("funnel", "trickle", "notes")
    assert report.exit_code == ExitCode.OK


def load_plant() -> ModuleType:
    """examples/broken/plant.py as a module."""
    spec = importlib.util.spec_from_file_location("broken_plant", BROKEN / "plant.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Paths, list[tuple[str, str]]]:
    """examples/broken planted under a temporary home, with its bin/ on the test's PATH."""
    monkeypatch.setenv("PATH", f"{BROKEN / 'bin'}:/usr/bin:/bin")
    paths = Paths.under(tmp_path)
    planted: list[tuple[str, str]] = load_plant().plant(BROKEN / "lanes.toml", paths)
    return paths, planted


def by_key(report: DoctorReport) -> Callable[[str, str], Finding]:
    """Look a finding up by (id, subject)."""
    index = {(f.id, f.subject): f for f in report.findings}

    def get(check_id: str, subject: str) -> Finding:
        assert (check_id, subject) in index, f"{check_id} not reported for {subject}"
        return index[(check_id, subject)]

    return get


@pytest.mark.slow
def test_broken_example_reports_every_planted_problem(
    broken: tuple[Paths, list[tuple[str, str]]],
) -> None:
    """`lanekit doctor --all` on examples/broken names each planted problem, with its fix."""
    paths, planted = broken
    report = diagnose(DoctorRequest(all_plists=True, config_path=BROKEN / "lanes.toml"), paths)
    found = {(f.id, f.subject) for f in report.findings}
    missing = [item for item in planted if item not in found]
    assert missing == []
    assert all(f.fix for f in report.findings)
    assert report.exit_code == ExitCode.FAILURE
    get = by_key(report)
    bin_dir = BROKEN / "bin"
    assert get("path.command-missing", "notify").fix == (
        f'add "{bin_dir}" to `path` of [lanes.notify] in lanes.toml, then run `lanekit apply`'
    )
    reports_logs = paths.home / "lanekit-broken" / "reports" / "logs"
    assert get("launchd.exit-78", "reports").fix == f"mkdir -p {reports_logs}"
    assert "likely cause: logs.dir-missing" in get("launchd.exit-78", "reports").message
    assert get("queue.stale-claim", "reports").fix == "lanekit recover reports"
    cleanup = paths.launch_agents / "cleanup-job.plist"
    assert get("plist.permissions", str(cleanup)).fix == f"chmod 644 {cleanup}"


def test_doctor_plist_on_a_hand_written_plist(tmp_path: Path) -> None:
    """`doctor --plist` on a plist lanekit did not write (modelled on the seed's), with no
    lanes.toml anywhere: its problems are found and lane-only checks are skipped."""
    paths = Paths.under(tmp_path)
    plist = tmp_path / "com.example.codex-note-funnel.plist"
    shutil.copyfile(BROKEN / "plists" / plist.name, plist)
    plist.chmod(0o644)
    report = diagnose(DoctorRequest(plists=(plist,)), paths, env={})
    ids = {f.id for f in report.findings}
    assert {
        "program.missing",
        "env.unexpanded",
        "env.path-unset",
        "logs.dir-missing",
        "workdir.default-root",
    } <= ids
    assert report.subjects == (str(plist),)
    assert all(f.subject == str(plist) for f in report.findings)
    lane_only = {c.id for c in list_checks() if c.needs_lane}
    assert not lane_only & ids
    guard = paths.home / ".claude" / "scripts" / "claude-quota-guard.py"
    [missing] = [f for f in report.findings if f.id == "program.missing"]
    assert missing.fix == f"write the absolute path {guard} in {plist}"


def test_lanes_need_a_config(tmp_path: Path) -> None:
    """Without lanes.toml and without --plist/--all there is nothing to examine: ConfigError."""
    paths = Paths.under(tmp_path)
    with pytest.raises(UsageError) as caught:
        diagnose(DoctorRequest(), paths, env={})
    assert "lanekit init" in caught.value.hint


def test_unknown_lane_is_a_usage_error(tmp_path: Path) -> None:
    """Naming a lane lanes.toml does not have suggests the closest one."""
    paths = Paths.under(tmp_path)
    (tmp_path / "lanes.toml").write_text(HEALTHY)
    with pytest.raises(UsageError) as caught:
        diagnose(DoctorRequest(lanes=("funel",), config_path=tmp_path / "lanes.toml"), paths)
    assert caught.value.hint == "did you mean funnel?"


def test_all_picks_up_every_plist_and_recognises_lanes(tmp_path: Path) -> None:
    """`--all`: lanes by name (their own plists are not examined twice), then other plists."""
    paths = Paths.under(tmp_path)
    (tmp_path / "lanes.toml").write_text(HEALTHY)
    config = load_config(tmp_path / "lanes.toml", paths)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    other = write_plist(
        paths.launch_agents / "com.example.other.plist",
        {"Label": "com.example.other", "ProgramArguments": ["/bin/true"]},
    )
    report = diagnose(
        DoctorRequest(
            all_plists=True, config_path=tmp_path / "lanes.toml", checks=("plist.invalid",)
        ),
        paths,
        launchd=domain,
    )
    assert report.subjects == ("funnel", "trickle", "notes", str(other))


def test_launchd_unreachable_is_a_note_not_a_crash(tmp_path: Path) -> None:
    """When launchd cannot be asked, its checks are skipped and the report says why."""
    from lanekit.errors import LaunchdError
    from lanekit.service.launchd import ListEntry, ServiceInfo

    class Down:
        """A launchd that refuses every question."""

        domain = "gui/501"

        def list(self) -> list[ListEntry]:
            raise LaunchdError("launchctl: no GUI session", "log in")

        def print(self, label: str) -> ServiceInfo:
            raise LaunchdError("launchctl: no GUI session", "log in")

        def print_disabled(self) -> dict[str, bool]:
            raise LaunchdError("launchctl: no GUI session", "log in")

    paths = Paths.under(tmp_path)
    plist = write_plist(
        tmp_path / "com.example.job.plist",
        {"Label": "com.example.job", "ProgramArguments": ["/bin/true"]},
    )
    ctx = DoctorContext(paths, launchd=Down())  # type: ignore[arg-type]
    report = run_checks([plist_target(plist, None)], ctx, select_checks(["launchd.not-loaded"]))
    assert report.findings == ()
    assert report.notes == ("launchd checks skipped: launchctl: no GUI session; log in",)


def test_a_check_run_alone_answers_as_in_a_full_run(tmp_path: Path) -> None:
    """`--check lane.missed-run` on a disabled lane says "disabled", as the full run does: a
    check that consults launchd when it can makes diagnose open launchd even when run alone."""
    from datetime import datetime, timedelta

    from lanekit.run.lanelog import LaneLog

    paths = Paths.under(tmp_path)
    (tmp_path / "lanes.toml").write_text(HEALTHY)
    config = load_config(tmp_path / "lanes.toml", paths)
    domain = EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)
    apply(config, paths, domain)
    lane = config.lanes["funnel"]
    LaneLog(lane.log_path, "funnel").event("finish", claimed=0)
    domain.disable(lane.label)
    later = datetime.now() + timedelta(days=2)
    env = {"LANEKIT_LAUNCHD": "emulated"}

    def missed(checks: tuple[str, ...]) -> list[str]:
        request = DoctorRequest(
            lanes=("funnel",), checks=checks, config_path=tmp_path / "lanes.toml"
        )
        report = diagnose(request, paths, env=env, now=lambda: later)
        return [f.message for f in report.findings if f.id == "lane.missed-run"]

    alone = missed(("lane.missed-run",))
    assert alone == missed(())
    assert len(alone) == 1
    assert ": disabled: " in alone[0]


def test_list_checks_says_which_checks_ask_launchd() -> None:
    """`--list-checks --json` reports asks_launchd for the checks that consult launchd when it
    can (lane.missed-run), not only for those that need it."""
    checks = registry()
    assert checks["lane.missed-run"].asks_launchd
    assert not checks["lane.missed-run"].needs_launchd
    assert checks["launchd.exit-78"].asks_launchd
    assert not checks["plist.permissions"].asks_launchd


@pytest.mark.slow
def test_every_check_alone_answers_as_in_the_full_run(
    broken: tuple[Paths, list[tuple[str, str]]],
) -> None:
    """On examples/broken, `--check ID` alone finds exactly what the full run finds for ID,
    for every check (findings that lean on other checks or on launchd included)."""
    from datetime import datetime

    paths, _ = broken
    config_path = BROKEN / "lanes.toml"
    moment = datetime.now()  # one clock for every run: ages in messages do not move

    def now() -> datetime:
        return moment

    full = diagnose(DoctorRequest(all_plists=True, config_path=config_path), paths, now=now)
    for check_id in registry():
        request = DoctorRequest(all_plists=True, config_path=config_path, checks=(check_id,))
        alone = diagnose(request, paths, now=now)
        assert alone.findings == tuple(f for f in full.findings if f.id == check_id), check_id
