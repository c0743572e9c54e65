"""The `doctor`, `try` and `logs` commands: exit codes, stdout/stderr, the JSON contract."""

from __future__ import annotations

import importlib.util
import json
import plistlib
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config import load_config
from lanekit.doctor import list_checks
from lanekit.reconcile import apply
from lanekit.service.launchd import open_launchd
from lanekit.state.paths import Paths

REPO = Path(__file__).resolve().parent.parent.parent
BROKEN = REPO / "examples" / "broken"

HEALTHY = """
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.cli"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["cat", "{job}"]
schedule = ["40 10 * * *"]
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    """HOME under tmp_path; the CLI's Paths.from_env() then matches the returned Paths."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return Paths.from_env()


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def healthy(tmp_path: Path, paths: Paths) -> Path:
    """A healthy lanes.toml, applied on the emulator and run once."""
    config_path = tmp_path / "lanes.toml"
    config_path.write_text(HEALTHY)
    config = load_config(config_path, paths)
    domain = open_launchd(paths)
    apply(config, paths, domain)
    code, _, _ = invoke("kick", "funnel", "-c", str(config_path))
    assert code == 0
    label = config.lanes["funnel"].label
    wait_idle = getattr(domain, "wait_idle", None)
    assert wait_idle is not None and wait_idle(label, 30)
    return config_path


@pytest.fixture
def broken(home: Paths, monkeypatch: pytest.MonkeyPatch) -> Paths:
    """examples/broken planted under the temporary home, bin/ on the test's PATH."""
    monkeypatch.setenv("PATH", f"{BROKEN / 'bin'}:/usr/bin:/bin")
    spec = importlib.util.spec_from_file_location("broken_plant_cli", BROKEN / "plant.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.plant(BROKEN / "lanes.toml", home)
    return home


@pytest.mark.slow
def test_doctor_on_a_healthy_example_reports_nothing(tmp_path: Path, home: Paths) -> None:
    """Nothing found: one line on stdout, nothing on stderr, exit 0."""
    config_path = healthy(tmp_path, home)
    code, out, err = invoke("doctor", "-c", str(config_path))
    assert code == 0, out + err
    assert out == f"no problems found (2 subjects, {len(list_checks())} checks)\n"
    assert err == ""


@pytest.mark.slow
def test_doctor_on_the_broken_example(broken: Paths) -> None:
    """Exit 1; a table grouped by lane, most severe first, each finding with its fix."""
    code, out, err = invoke("doctor", "-c", str(BROKEN / "lanes.toml"), "--all")
    assert code == 1
    assert err == ""
    blocks = out.split("\n\n")
    notify = next(b for b in blocks if b.startswith("notify\n"))
    assert "  error    path.command-missing" in notify
    assert f'fix: add "{BROKEN / "bin"}" to `path` of [lanes.notify]' in notify
    assert notify.index("error") < notify.index("warning")
    reports = next(b for b in blocks if b.startswith("reports\n"))
    assert "launchd.exit-78" in reports
    queue = next(b for b in blocks if b.startswith("queue reports (drained by reports)\n"))
    assert "fix: lanekit recover reports" in queue
    notes = [
        b for b in blocks if b.startswith("queue notes (drained by notify, funnel, funnel-pm)")
    ]
    assert len(notes) == 1
    assert notes[0].count("queue.duplicate-success") == 1
    summary = out.rstrip().splitlines()[-1]  # "9 errors, 18 warnings, 0 info (11 subjects..."
    assert re.fullmatch(
        r"[1-9]\d* errors, \d+ warnings, \d+ info \(\d+ subjects, \d+ checks\)", summary
    )


@pytest.mark.slow
def test_doctor_json_contract(broken: Paths) -> None:
    """`--json`: schema 2, findings with exactly id/severity/subject/subject_kind/lanes/
    message/fix, a summary; a queue's finding is on the queue, listing its lanes."""
    code, out, _ = invoke("doctor", "-c", str(BROKEN / "lanes.toml"), "--json")
    assert code == 1
    document = json.loads(out)
    assert set(document) == {"schema", "findings", "summary", "notes"}
    assert document["schema"] == 2
    assert document["findings"]
    for finding in document["findings"]:
        assert set(finding) == {
            "id",
            "severity",
            "subject",
            "subject_kind",
            "lanes",
            "message",
            "fix",
        }
        assert finding["severity"] in {"error", "warning", "info"}
    stale = [f for f in document["findings"] if f["id"] == "queue.stale-claim"]
    assert [(f["subject"], f["subject_kind"], f["lanes"]) for f in stale] == [
        ("reports", "queue", ["reports"])
    ]
    assert set(document["summary"]) == {"errors", "warnings", "info", "subjects", "checks"}
    assert document["summary"]["errors"] == sum(
        f["severity"] == "error" for f in document["findings"]
    )


def test_doctor_check_option_runs_only_those(tmp_path: Path, home: Paths) -> None:
    """`--check ID` (repeatable) runs just those checks."""
    plist = tmp_path / "com.example.job.plist"
    plist.write_bytes(
        plistlib.dumps({"Label": "com.example.job", "ProgramArguments": ["/bin/true"]})
    )
    plist.chmod(0o666)
    code, out, _ = invoke("doctor", "--plist", str(plist), "--check", "plist.permissions", "--json")
    document = json.loads(out)
    assert code == 1
    assert [f["id"] for f in document["findings"]] == ["plist.permissions"]
    assert document["summary"]["checks"] == 1


def test_doctor_unknown_check(home: Paths) -> None:
    """A misspelt check id: exit 2, error and did-you-mean on stderr, nothing on stdout."""
    code, out, err = invoke("doctor", "--check", "plist.invalidd", "--plist", "/dev/null")
    assert code == 2
    assert out == ""
    assert (
        err == "error: --check plist.invalidd: no such check\nhint: did you mean plist.invalid?\n"
    )


def test_doctor_plist_without_lanes_toml(tmp_path: Path, home: Paths) -> None:
    """`--plist` works on a plist lanekit did not write, with no lanes.toml around."""
    plist = tmp_path / "com.example.codex-note-funnel.plist"
    plist.write_bytes((BROKEN / "plists" / plist.name).read_bytes())
    plist.chmod(0o644)
    code, out, _ = invoke("doctor", "--plist", str(plist), "--json")
    ids = {f["id"] for f in json.loads(out)["findings"]}
    assert code == 1
    assert {"program.missing", "env.path-unset", "env.unexpanded"} <= ids


def test_list_checks(home: Paths) -> None:
    """`--list-checks` lists every id with what it needs; `--json` too, versioned."""
    code, out, _ = invoke("doctor", "--list-checks")
    assert code == 0
    assert "path.command-missing" in out
    assert "lane.missed-run" in out
    code, out, _ = invoke("doctor", "--list-checks", "--json")
    document = json.loads(out)
    assert document["schema"] == 1
    assert len(document["checks"]) == len(list_checks())
    assert set(document["checks"][0]) == {"id", "group", "summary", "lanekit_only", "asks_launchd"}


def test_doctor_without_config(
    home: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No lanes.toml and nothing else asked: the standard config error, exit 2."""
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("doctor")
    assert code == 2
    assert "lanekit init" in err


@pytest.mark.slow
def test_try_shows_the_path_problem_the_shell_hides(broken: Paths) -> None:
    """`lanekit try notify`: notify-ledger runs from the user's shell, but under the lane's PATH
    it is missing; try says so before running anything and exits 1."""
    import shutil

    assert shutil.which("notify-ledger") == str(BROKEN / "bin" / "notify-ledger")
    code, out, err = invoke("try", "notify", "-c", str(BROKEN / "lanes.toml"))
    assert code == 1
    assert err == ""
    assert "PATH:    /usr/bin:/bin:/usr/sbin:/sbin" in out
    assert "path.command-missing" in out
    assert f"your shell finds it at {BROKEN / 'bin' / 'notify-ledger'}, launchd will not" in out
    assert "not run: launchd would hit the errors above" in out


def test_try_a_plist_reports_exit_and_stderr(tmp_path: Path, home: Paths) -> None:
    """`try --plist`: runs the job, decodes its exit, shows the stderr tail."""
    plist = tmp_path / "com.example.try.plist"
    plist.write_bytes(
        plistlib.dumps(
            {
                "Label": "com.example.try",
                "ProgramArguments": ["/bin/sh", "-c", "echo oops >&2; exit 3"],
                "StandardErrorPath": str(tmp_path / "err.log"),
            }
        )
    )
    code, out, _ = invoke("try", "--plist", str(plist))
    assert code == 1
    assert "result: exit code 3 in " in out
    assert f"stderr ({tmp_path / 'err.log'}), last 1 line:\n  oops\n" in out


def test_logs_command(tmp_path: Path, home: Paths) -> None:
    """`logs LANE -n N`, `--err`; both `--err` and `--out` is a usage error."""
    config_path = tmp_path / "lanes.toml"
    config_path.write_text(HEALTHY)
    logs = home.home / "notes" / "logs"
    logs.mkdir(parents=True)
    (logs / "funnel.log").write_text("".join(f"event {i}\n" for i in range(30)))
    (logs / "funnel.err.log").write_text("Traceback\n")
    code, out, _ = invoke("logs", "funnel", "-n", "2", "-c", str(config_path))
    assert (code, out) == (0, "event 28\nevent 29\n")
    code, out, _ = invoke("logs", "funnel", "--err", "-c", str(config_path))
    assert (code, out) == (0, "Traceback\n")
    code, _, err = invoke("logs", "funnel", "--err", "--out", "-c", str(config_path))
    assert code == 2
    assert err.startswith("error: --err and --out")


def test_logs_before_the_first_run(tmp_path: Path, home: Paths) -> None:
    """No log yet: exit 1 with the reason and what to run."""
    config_path = tmp_path / "lanes.toml"
    config_path.write_text(HEALTHY)
    code, out, err = invoke("logs", "funnel", "-c", str(config_path))
    assert code == 1
    assert out == ""
    assert "no log yet for lane funnel" in err


def test_help_of_each_command(home: Paths) -> None:
    """Every command and option has help text."""
    for command in ("doctor", "try", "logs"):
        code, out, _ = invoke(command, "--help")
        assert code == 0
        assert "Usage: lanekit " + command in out


@pytest.mark.slow
def test_logs_follow_exits_0_on_ctrl_c(tmp_path: Path, home: Paths) -> None:
    """`logs -f` prints the tail, then new lines; Ctrl-C (SIGINT) ends it with exit 0."""
    config_path = tmp_path / "lanes.toml"
    config_path.write_text(HEALTHY)
    log = home.home / "notes" / "logs" / "funnel.log"
    log.parent.mkdir(parents=True)
    log.write_text("before\n")
    # A suite started in the background (`cmd &` in a script) inherits SIGINT ignored, and so
    # would the follower, which a user's Ctrl-C reaches with SIGINT at its default: give it
    # that default (a handler in this process is reset to it across exec; an ignore is not).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        follower = subprocess.Popen(
            [sys.executable, "-m", "lanekit", "logs", "funnel", "-f", "-c", str(config_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline() == "before\n"
        with log.open("a") as handle:
            handle.write("after\n")
        assert follower.stdout.readline() == "after\n"
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=30) == 0
    finally:
        follower.kill()
        follower.wait()
