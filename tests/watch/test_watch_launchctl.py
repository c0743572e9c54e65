"""The cheap watchdog pass on the launchctl backend (a Mac), against the full one: launchd is the
scripted fake launchctl (tests/launchd/fake_launchctl.py) answering `print DOMAIN`,
`print-disabled DOMAIN` and `print DOMAIN/LABEL` from a model of each label; the lanes'
files are real. Each launchd fact a cached result read (pid, exit status, loaded, disabled,
runs, the loaded definition) is changed, and the next pass must leave open exactly the alerts a
pass from scratch finds, having asked launchctl as little as it can."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from test_watch_entry import LANES, Cheap

from lanekit.config.watch import WATCH_LANE
from lanekit.service.launchd import codes
from lanekit.service.launchd.domain import Caller
from lanekit.service.launchd.launch import launch_for
from lanekit.service.launchd.launchctl import DEFAULT_LAUNCHCTL, LaunchctlDomain
from lanekit.watch import cache, entry, launchdlook
from lanekit.watch.watchdog import PassResult, WatchRequest, run_pass
from places import FAKE_LAUNCHCTL

FAKE = FAKE_LAUNCHCTL
DOMAIN = "gui/501"


@dataclass(frozen=True)
class Job:
    """What the fake launchd says of one label."""

    loaded: bool = True
    pid: int | None = None
    status: int | None = 0
    disabled: bool = False
    runs: int = 1
    state: str = "not running"
    program: str | None = None
    """`program = ...` in its print (None: the plist's, as launchd infers it)."""


@dataclass
class Launchd:
    """The fake's model: label -> Job, rendered into its script on every change."""

    script: Path
    plists: Callable[[str], Path]
    jobs: dict[str, Job] = field(default_factory=dict)

    def set(self, label: str, **facts: object) -> None:
        """Change some facts of one label."""
        self.jobs[label] = replace(self.jobs.get(label, Job()), **facts)  # type: ignore[arg-type]
        self.write()

    def write(self) -> None:
        """The fake's replies for the model as it is now."""
        rows = [
            f"\t\t{job.pid or 0:>8} {'-' if job.status is None else job.status:>6} \t{label}"
            for label, job in self.jobs.items()
            if job.loaded
        ]
        disabled = [
            f'\t"{label}" => {"disabled" if job.disabled else "enabled"}'
            for label, job in self.jobs.items()
        ]
        script: dict[str, dict[str, object]] = {
            f"print {DOMAIN}": {"stdout": _domain(DOMAIN, rows)},
            "print user/501": {"stdout": _domain("user/501", [])},
            f"print-disabled {DOMAIN}": {
                "stdout": "disabled services = {\n" + "\n".join(disabled) + "\n}\n"
            },
        }
        for label, job in self.jobs.items():
            for domain in (DOMAIN, "user/501"):
                missing: dict[str, object] = {
                    "stderr": f'Could not find service "{label}" in domain for port\n',
                    "exit": 113,
                }
                reply: dict[str, object] = (
                    {"stdout": self._print(label, job)} if job.loaded else missing
                )
                script[f"print {domain}/{label}"] = reply if domain == DOMAIN else missing
        self.script.write_text(json.dumps(script), encoding="utf-8")

    def _print(self, label: str, job: Job) -> str:
        plist = self.plists(label)
        import plistlib

        program = job.program or launch_for(plistlib.loads(plist.read_bytes())).executable
        if job.status is None:
            ended = "\tlast exit code = (never exited)"
        elif job.status < 0:
            ended = f"\tlast terminating signal = Killed: {-job.status}"
        else:
            ended = f"\tlast exit code = {job.status}"
        lines = [
            f"{DOMAIN}/{label} = {{",
            "\tactive count = 0",
            f"\tpath = {plist}",
            "\ttype = LaunchAgent",
            f"\tstate = {job.state}",
            f"\tprogram = {program}",
            f"\truns = {job.runs}",
            ended,
            "}",
        ]
        if job.pid is not None:
            lines.insert(5, f"\tpid = {job.pid}")
        return "\n".join(lines) + "\n"


def _domain(name: str, rows: list[str]) -> str:
    """`launchctl print DOMAIN` in print-domain-01's layout, with Apple's rows around ours."""
    return "\n".join(
        [
            f"{name} = {{",
            "\ttype = login",
            "\tsession = Aqua",
            "\tservices = {",
            "\t\t     887      - \tnet.jwpconsulting.postgresql",
            *rows,
            "\t\t       0      0 \tcom.apple.syncdefaultsd",
            "\t}",
            "\tdisabled services = {",
            '\t\t"com.apple.rcd" => disabled',
            "\t}",
            "\tproperties = gui | gui login",
            "}",
            "",
        ]
    )


class Mac(Cheap):
    """Cheap's world on the launchctl backend: the fake launchctl is launchd."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fake_dir = tmp_path / "fake"
        self.fake_dir.mkdir()
        self.wrapper = self.fake_dir / "launchctl"
        self.wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        self.wrapper.chmod(self.wrapper.stat().st_mode | stat.S_IXUSR)
        self.log = self.fake_dir / "calls.jsonl"
        self.launchd = Launchd(self.fake_dir / "script.json", self._plist)
        self.launchd.write()
        self._labels: list[str] = []
        # The user at the Mac's screen (these tests may run as root, which lanekit refuses).
        monkeypatch.setattr(Caller, "current", classmethod(lambda cls: Caller(501, 501, 501)))
        super().__init__(tmp_path, monkeypatch)

    def _plist(self, label: str) -> Path:
        return self.paths.plist_for(label)

    def env(self) -> dict[str, str]:
        """What the watchdog lane's plist gives the pass, on launchctl through the fake."""
        if not self._labels:
            # The lanes are installed (Cheap applies them to the emulated domain, for their
            # files): the fake says each one is loaded, has run once and exited 0.
            config = self.world.config()
            self._labels = [lane.label for lane in config.lanes.values()]
            for label in self._labels:
                self.launchd.jobs[label] = Job()
            self.launchd.write()
        return {
            **super().env(),
            "LANEKIT_LAUNCHD": "launchctl",
            "LANEKIT_LAUNCHCTL": str(self.wrapper),
            "LANEKIT_LAUNCHD_DOMAIN": DOMAIN,
            "FAKE_LAUNCHCTL_SCRIPT": str(self.launchd.script),
            "FAKE_LAUNCHCTL_LOG": str(self.log),
        }

    def full(self, *, dry_run: bool = False) -> PassResult:
        """A full pass as `lanekit watch --config X` runs it on a Mac (the adapter)."""
        return run_pass(
            WatchRequest(config_path=self.world.config_path, dry_run=dry_run),
            self.paths,
            env=self.env(),
        )

    def label(self, lane: str) -> str:
        """The label of one lane."""
        return self.world.lane(lane).label

    def calls(self) -> list[list[str]]:
        """The fake's calls so far."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def mac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mac]:
    """A Mac world after its first full pass (which wrote the pass cache)."""
    yield Mac(tmp_path, monkeypatch)


def test_a_pass_with_nothing_new_asks_launchctl_twice(mac: Mac) -> None:
    """Nothing moved: the cheap pass runs no check and asks launchctl exactly two things, the
    chosen domain's rows and its disabled services, and agrees with a pass from scratch."""
    assert mac.next()
    before = len(mac.calls())
    assert mac.next()
    assert mac.calls()[before:] == [["print", DOMAIN], ["print-disabled", DOMAIN]]
    assert mac.agrees() == set()


def test_the_full_pass_writes_a_launchctl_cache(mac: Mac) -> None:
    """The cache says which backend it is for, how to ask launchctl again and when the next
    full pass is due at the latest (REVERIFY after this one)."""
    import marshal

    path = entry.cache_path(str(mac.paths.state), entry.absolute(str(mac.world.config_path)))
    _, document = marshal.loads(Path(path).read_bytes())
    assert document["backend"] == "launchctl"
    how = document["launchctl"]
    assert (how["launchctl"], how["candidates"]) == (str(mac.wrapper), [DOMAIN, "user/501"])
    assert how["choice"] == launchdlook.choice_inputs(os.environ)
    assert document["due"] <= time.time() + cache.REVERIFY
    assert all("service" not in known for known in document["labels"].values())


def _killed(mac: Mac) -> None:
    mac.launchd.set(mac.label("hourly"), status=-9, runs=2)


def _exit_78(mac: Mac) -> None:
    mac.launchd.set(mac.label("hourly"), status=78, runs=2)


def _booted_out(mac: Mac) -> None:
    mac.launchd.set(mac.label("hourly"), loaded=False)


def _disabled(mac: Mac) -> None:
    mac.launchd.set(mac.label("hourly"), disabled=True)


def _never_ran(mac: Mac) -> None:
    mac.launchd.set(mac.label("hourly"), status=None, runs=0)


LAUNCHD_CHANGES: dict[str, tuple[Callable[[Mac], None], str | None]] = {
    "a run killed by SIGKILL (exit status)": (_killed, "launchd.killed"),
    "exit 78 (exit status)": (_exit_78, "launchd.exit-78"),
    "a lane booted out (loaded)": (_booted_out, "launchd.not-loaded"),
    "a lane disabled (disabled)": (_disabled, "launchd.disabled"),
    "a lane loaded again, never run (exit status unknown)": (_never_ran, None),
}


@pytest.mark.parametrize("change", list(LAUNCHD_CHANGES))
def test_a_changed_launchd_fact_alerts_as_a_full_pass_does(mac: Mac, change: str) -> None:
    """Each launchd fact, changed in the fake: the next pass is a full one that alerts exactly
    as a pass from scratch does (and the notice goes out), then passes are cheap again."""
    make, check = LAUNCHD_CHANGES[change]
    assert mac.next()
    sent = len(mac.world.sent())
    make(mac)
    assert not mac.next()
    open_now = mac.agrees()
    if check is not None:
        assert check in open_now
        assert check in {n["id"] for n in mac.world.sent()[sent:]}
    assert mac.next()
    mac.agrees()


def test_a_job_running_makes_the_pass_full_until_it_stops(mac: Mac) -> None:
    """A label with a pid (pid): nothing about it is reused while it runs; once it has
    stopped, with the same exit status as before, passes are cheap again."""
    label = mac.label("hourly")
    assert mac.next()
    mac.launchd.set(label, pid=4242, state="running", runs=2)
    assert not mac.next()
    assert not mac.next()
    mac.agrees()
    mac.launchd.set(label, pid=None, state="not running")
    assert not mac.next()
    assert mac.next()
    assert mac.agrees() == set()


def test_runs_that_grow_behind_an_unchanged_row_are_seen(mac: Mac) -> None:
    """A failing lane respawned by launchd: its row (`0 1 label`) stays the same while `runs`
    grows, which only its `print` shows. The pass keeps that print for a label whose last
    exit was not 0, so the run that makes it a crash loop alerts at the next pass."""
    label = mac.label("hourly")
    mac.launchd.set(label, status=1, runs=3, state="spawn scheduled")
    assert not mac.next()
    assert "launchd.crash-loop" not in mac.agrees()
    before = len(mac.calls())
    assert mac.next()
    assert [f"{DOMAIN}/{label}"] in [call[1:] for call in mac.calls()[before:]]
    mac.launchd.set(label, runs=5)
    assert not mac.next()
    assert "launchd.crash-loop" in mac.agrees()
    assert mac.next()


def test_a_reload_that_clears_drift_is_seen(mac: Mac) -> None:
    """The loaded definition differs from the plist (launchd runs an older program): an open
    plist.drift alert keeps the label's print in the cache, so the reload that fixes it
    (another print, the same row) resolves it at the next pass."""
    label = mac.label("hourly")
    # Bootstrapped from another file, then run (the row moves with the run).
    mac.launchd.set(label, program="/opt/old/mytool", pid=77, state="running", runs=2)
    assert not mac.next()
    mac.launchd.set(label, pid=None, state="not running")
    assert not mac.next()
    assert "plist.drift" in mac.agrees()
    assert mac.next()
    sent = len(mac.world.sent())
    mac.launchd.set(label, program=None)
    assert not mac.next()
    assert "plist.drift" not in mac.agrees()
    assert ("resolved", "plist.drift") in {(n["kind"], n["id"]) for n in mac.world.sent()[sent:]}
    assert mac.next()


def test_a_full_pass_is_due_an_hour_after_the_last_one(
    mac: Mac, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loaded definition of a healthy label is in no row: a definition swapped behind
    lanekit's back with the row as before is not seen by a cheap pass (the documented
    limit), but the cache is not reused past REVERIFY, so it is seen within the hour."""
    assert mac.next()
    mac.launchd.set(mac.label("hourly"), program="/opt/old/mytool")
    assert mac.next()
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + cache.REVERIFY + 1)
    assert not mac.next()
    assert "plist.drift" in mac.agrees()
    assert mac.next()


def test_another_domain_choice_is_a_full_pass(mac: Mac, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache was written for gui/501 with this launchctl: another domain (or binary, or
    timeout) is not answered from it."""
    assert mac.next()
    monkeypatch.setenv("LANEKIT_LAUNCHD_DOMAIN", "user/501")
    assert entry.main(["watch", "--config", str(mac.world.config_path)]) is None


def test_a_cache_of_the_other_backend_is_not_read(
    mac: Mac, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache written on launchctl is not reused by a pass on the emulated domain."""
    assert mac.next()
    monkeypatch.setenv("LANEKIT_LAUNCHD", "emulated")
    assert entry.main(["watch", "--config", str(mac.world.config_path)]) is None


def test_launchctl_that_fails_or_hangs_leaves_it_to_the_full_pass(
    mac: Mac, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing `print DOMAIN` (no GUI session: 125) or one that does not answer within the
    timeout: the cheap pass gives up without writing anything, the full pass reports it."""
    assert mac.next()
    script = json.loads(mac.launchd.script.read_text())
    refused = {"stderr": "Domain does not support specified action\n", "exit": 125}
    script[f"print {DOMAIN}"] = refused
    mac.launchd.script.write_text(json.dumps(script))
    lines = mac.world.lane(WATCH_LANE).log_path.read_text()
    assert entry.main(["watch", "--config", str(mac.world.config_path)]) is None
    assert mac.world.lane(WATCH_LANE).log_path.read_text() == lines
    assert mac.full().notes
    mac.launchd.write()
    assert not mac.next()
    assert mac.next()


def test_a_hanging_launchctl_is_killed_at_the_timeout(tmp_path: Path) -> None:
    """launchdlook.run kills a launchctl that does not answer in time, and says so."""
    hang = tmp_path / "launchctl"
    hang.write_text("#!/bin/sh\necho started\nexec sleep 30\n")
    hang.chmod(0o755)
    began = time.monotonic()
    with pytest.raises(launchdlook.Unanswered, match="in time"):
        launchdlook.run(str(hang), ["print", DOMAIN], 0.5)
    assert time.monotonic() - began < 10


def test_run_gives_the_exit_status_and_stdout(tmp_path: Path) -> None:
    """launchdlook.run: the status and stdout of the program, stderr not mixed in; a program
    that cannot be started is Unanswered."""
    tool = tmp_path / "launchctl"
    tool.write_text('#!/bin/sh\necho "$@"\necho noise >&2\nexit 113\n')
    tool.chmod(0o755)
    assert launchdlook.run(str(tool), ["print", "gui/501/x y"], 5) == (113, "print gui/501/x y\n")
    with pytest.raises(launchdlook.Unanswered):
        launchdlook.run(str(tmp_path / "missing"), ["print"], 5)


def test_the_look_asks_the_next_candidate_only_when_needed(mac: Mac) -> None:
    """A label not in the chosen domain's rows is looked for in the next candidate (where the
    adapter finds it too); one that is there costs nothing more."""
    look = launchdlook.Look(str(mac.wrapper), 5.0, (DOMAIN, "user/501"))
    before = len(mac.calls())
    assert look.row(mac.label("hourly")) is not None
    assert mac.calls()[before:] == [["print", DOMAIN]]
    assert look.row("com.example.elsewhere") is None
    assert mac.calls()[before:] == [["print", DOMAIN], ["print", "user/501"]]


def test_the_constants_are_the_adapters() -> None:
    """The lean look's copies of the adapter's facts are the adapter's."""
    assert launchdlook.DEFAULT_LAUNCHCTL == DEFAULT_LAUNCHCTL
    assert {int(code) for code in codes.ABSENT} == launchdlook.ABSENT
    assert {"LANEKIT_LAUNCHD_DOMAIN", "LANEKIT_LAUNCHCTL", "LANEKIT_LAUNCHCTL_TIMEOUT"} <= set(
        launchdlook.CHOICE_VARIABLES
    )


def test_equal_choice_inputs_choose_the_same_domain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The domain the adapter chooses depends on nothing but choice_inputs: whatever else the
    environment holds, equal inputs give the same domain, candidates, binary and timeout."""
    monkeypatch.setattr(Caller, "current", classmethod(lambda cls: Caller(501, 501, 501)))
    env = {"SSH_CONNECTION": "1 2 3 4", "LANEKIT_LAUNCHCTL": "/x/launchctl", "OTHER": "1"}
    one = LaunchctlDomain.from_env(env)
    other = LaunchctlDomain.from_env({**env, "OTHER": "2", "PATH": "/elsewhere"})
    assert launchdlook.choice_inputs(env) == launchdlook.choice_inputs({**env, "OTHER": "2"})
    assert (one.domain, one.candidates, one.launchctl, one.timeout) == (
        other.domain,
        other.candidates,
        other.launchctl,
        other.timeout,
    )


def test_the_lean_entry_on_launchctl_imports_no_adapter(mac: Mac) -> None:
    """What launchd runs on a Mac finishes a reusable pass without typer, rich, dataclasses,
    pathlib, json, re, subprocess or lanekit.service.launchd (the adapter), and exits 0."""
    probe = (
        "import sys\n"
        "from lanekit.watch.entry import main\n"
        f"code = main(['watch', '--config', {str(mac.world.config_path)!r}])\n"
        "heavy = ('typer', 'rich', 'dataclasses', 'pathlib', 'json', 're', 'subprocess',\n"
        "         'lanekit.service.launchd', 'lanekit.doctor')\n"
        "print(code, [m for m in heavy if m in sys.modules])\n"
    )
    env = {**os.environ, **mac.env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "0 []"


def test_the_first_cheap_pass_after_apply_agrees(mac: Mac) -> None:
    """LANES' lanes all alert-free on the fake Mac: the world the tests above change is a
    healthy one, and stays so over cheap passes."""
    assert "hourly" in LANES
    for _ in range(3):
        assert mac.next()
    assert mac.agrees() == set()
