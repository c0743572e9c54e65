"""CLI: plan, apply, remove, kick, status - on the emulated domain with real processes."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.run.lanelog import read_events
from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.state.paths import Paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lanes.toml"
PREFIX = "com.example.lanekit"
LANE_KEYS = {
    "lane",
    "label",
    "state",
    "paused",
    "project",
    "watchdog",
    "pid",
    "last_exit",
    "last_exit_text",
    "runs",
    "schedule",
    "next_fire",
    "queue",
}
QUEUE_KEYS = {
    "queued",
    "delayed",
    "claimed",
    "done",
    "failed",
    "oldest_claim_age_seconds",
    "error",
    "leases",
}

FAKE_CODEX = """#!/bin/sh
# Stands in for `codex exec --file JOB`: sleeps as long as the job asks, then succeeds.
secs=$(sed -n 's/.*"sleep": *\\([0-9.]*\\).*/\\1/p' "$3")
sleep "${secs:-0}"
echo "handled $3"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME inside tmp_path, so `~` in lanes.toml never reaches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def example(tmp_path: Path, home: Path) -> Path:
    """A copy of the README example (examples/lanes.toml)."""
    target = tmp_path / "lanes.toml"
    # apply refuses a lane whose command is missing from its PATH: a stand-in `codex` first.
    stub = tmp_path / "stub-bin"
    stub.mkdir()
    (stub / "codex").write_text("#!/bin/sh\n", encoding="utf-8")
    (stub / "codex").chmod(0o755)
    text = EXAMPLE.read_text(encoding="utf-8")
    target.write_text(text.replace("path = [", f'path = ["{stub}", ', 1), encoding="utf-8")
    return target


def _domain() -> EmulatedDomain:
    paths = Paths.from_env()
    return EmulatedDomain(paths.emulator, launch_agents=paths.launch_agents)


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _ok(*args: str) -> Any:
    result = _invoke(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def _status(config: Path) -> dict[str, dict[str, Any]]:
    document = json.loads(_ok("status", "--json", "-c", str(config)).stdout)
    assert document["schema"] == 1
    return {lane["lane"]: lane for lane in document["lanes"]}


def _with_fake_codex(config: Path, bin_dir: Path, *, codex_home: str = "~/.codex") -> None:
    """Prepend a dir holding a fake `codex` to the lanes' PATH (a plist change)."""
    bin_dir.mkdir(exist_ok=True)
    codex = bin_dir / "codex"
    codex.write_text(FAKE_CODEX, encoding="utf-8")
    codex.chmod(0o755)
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace('path = ["/opt/homebrew/bin"', f'path = ["{bin_dir}", "/opt/homebrew/bin"')
    text = text.replace('CODEX_HOME = "~/.codex"', f'CODEX_HOME = "{codex_home}"')
    config.write_text(text, encoding="utf-8")


def test_status_json_keys_are_a_contract(example: Path) -> None:
    """`status --json` has schema 1, the domain, whether it is the emulated one, and per lane
    exactly the documented keys."""
    document = json.loads(_ok("status", "--json", "-c", str(example)).stdout)
    assert set(document) == {"schema", "domain", "domain_reason", "emulated", "lanes"}
    assert document["schema"] == 1
    assert document["emulated"] is True
    assert [lane["lane"] for lane in document["lanes"]] == ["funnel", "trickle", "backlog"]
    for lane in document["lanes"]:
        assert set(lane) == LANE_KEYS
        assert set(lane["queue"]) == QUEUE_KEYS
        assert lane["state"] == "not-loaded"
        assert lane["pid"] is None
        assert lane["label"] == f"{PREFIX}.{lane['lane']}"


def test_readme_example_end_to_end(example: Path, home: Path, tmp_path: Path) -> None:
    """The issue's "done when": apply installs the README example into the emulated domain,
    kick drains real jobs, a plist change reloads only the idle lanes and skips the running
    one (logged), and status --json tells the truth at every step."""
    c = str(example)
    # 1. install; a second apply has nothing to do
    out = _ok("apply", "-c", c).stdout
    assert re.search(r"^funnel\s+create\s+installed and loaded", out, re.M), out
    assert "apply: 3 changed, 0 unchanged" in out
    paths = Paths.from_env()
    for lane in ("funnel", "trickle", "backlog"):
        plist = paths.plist_for(f"{PREFIX}.{lane}")
        assert stat.S_IMODE(plist.stat().st_mode) == 0o600
    assert _ok("apply", "-c", c).stdout.strip() == "nothing to do: 3 lanes unchanged"
    lanes = _status(example)
    assert {lane["state"] for lane in lanes.values()} == {"scheduled"}
    assert lanes["trickle"]["schedule"] == "every 15 minutes"
    assert lanes["trickle"]["next_fire"] is None  # StartInterval's phase is not knowable
    assert lanes["funnel"]["next_fire"] is not None

    # 2. a plist change (PATH gains the fake codex) reloads every idle lane
    _with_fake_codex(example, tmp_path / "bin")
    plan = _ok("plan", "-c", c).stdout
    assert re.search(r"^trickle\s+update\s+plist changed \(EnvironmentVariables\)", plan, re.M)
    assert "bootout, write plist, write snapshot, bootstrap" in plan
    assert "apply: 3 changed" in _ok("apply", "-c", c).stdout

    # 3. kick drains real jobs
    queue = Queue(home / "lanekit-example" / "notes")
    ids = [queue.enqueue({"note": n, "sleep": 0}) for n in range(3)]
    pid = int(_ok("kick", "funnel", "-c", c).stdout)
    assert pid > 0
    domain = _domain()
    assert domain.wait_idle(f"{PREFIX}.funnel", timeout=60)
    counts = queue.counts()
    assert (counts.queued, counts.claimed, counts.done, counts.failed) == (0, 0, 3, 0)
    funnel = _status(example)["funnel"]
    assert (funnel["state"], funnel["last_exit"], funnel["runs"]) == ("scheduled", 0, 1)
    assert funnel["queue"]["done"] == 3
    done = [
        e["job"]
        for e in read_events(home / "lanekit-example/notes/logs/funnel.log")
        if e["event"] == "done"
    ]
    assert sorted(done) == sorted(ids)

    # 4. trickle is busy with a slow job; a plist change reloads funnel and backlog only
    queue.enqueue({"note": "slow", "sleep": 30})
    trickle_pid = int(_ok("kick", "trickle", "-c", c).stdout)
    assert _wait_claimed(queue)
    running = _status(example)["trickle"]
    assert (running["state"], running["pid"]) == ("running", trickle_pid)
    assert running["queue"]["claimed"] == 1
    _with_fake_codex(example, tmp_path / "bin", codex_home="~/.codex-2")
    result = _invoke("apply", "-c", c)
    assert result.exit_code == 3, (result.stdout, result.stderr)  # PENDING: trickle runs
    assert re.search(r"^funnel\s+update\s+reloaded", result.stdout, re.M), result.stdout
    assert re.search(r"^backlog\s+update\s+reloaded", result.stdout, re.M)
    assert re.search(rf"^trickle\s+skipped\s+running \(pid {trickle_pid}\)", result.stdout, re.M)
    assert "apply: 2 changed, 1 skipped (running), 0 unchanged" in result.stdout
    skipped = [
        e
        for e in read_events(home / "lanekit-example/notes/logs/trickle.log")
        if e["event"] == "skipped"
    ]
    assert [(e["reason"], e["pid"]) for e in skipped] == [("running", str(trickle_pid))]
    lanes = _status(example)
    assert (lanes["trickle"]["state"], lanes["trickle"]["pid"]) == ("running", trickle_pid)
    assert lanes["funnel"]["state"] == "scheduled"
    assert lanes["funnel"]["runs"] == 0  # reloaded: launchd counts runs since load

    # 5. --force reloads trickle; its job goes back to the queue, none is lost
    forced = _ok("apply", "--force", "-c", c).stdout
    assert re.search(rf"trickle\s+update\s+reloaded.*--force stopped run pid {trickle_pid}", forced)
    assert _ok("apply", "-c", c).stdout.strip() == "nothing to do: 3 lanes unchanged"
    counts = queue.counts()
    assert counts.claimed == 0
    assert counts.queued + counts.delayed == 1
    assert counts.done == 3


def _wait_claimed(queue: Queue) -> bool:
    for _ in range(600):
        if queue.counts().claimed:
            return True
        time.sleep(0.05)
    return False


def test_kick_of_an_unloaded_lane_suggests_apply(example: Path) -> None:
    """kick before apply exits 1 with a one-line error and a hint naming `lanekit apply`."""
    result = _invoke("kick", "funnel", "-c", str(example))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "error: lane 'funnel' is not loaded" in result.stderr
    assert "hint: run `lanekit apply`" in result.stderr


def test_dry_run_and_plan_change_nothing(example: Path) -> None:
    """plan and apply --dry-run print the plan and leave the domain and disk alone."""
    plan = _ok("plan", "-c", str(example)).stdout
    dry = _ok("apply", "--dry-run", "-c", str(example)).stdout
    assert plan == dry
    assert "plan: 3 to change, 0 unchanged (nothing was changed)" in plan
    assert re.search(r"^backlog\s+create\s+not installed -> write plist", plan, re.M)
    assert _domain().list() == []
    assert not any(Paths.from_env().launch_agents.glob("*.plist"))


def test_wait_and_force_together_are_a_usage_error(example: Path) -> None:
    """--wait and --force contradict each other: exit 2 before anything happens."""
    result = _invoke("apply", "--wait", "5", "--force", "-c", str(example))
    assert result.exit_code == 2
    assert "--wait and --force" in result.stderr


def test_remove_after_dropping_a_lane_from_lanes_toml(example: Path) -> None:
    """A lane dropped from lanes.toml is offered by apply, then removed by `lanekit remove`."""
    c = str(example)
    _ok("apply", "-c", c)
    text = example.read_text(encoding="utf-8")
    example.write_text(text.split("# Weekday nights")[0], encoding="utf-8")
    out = _ok("apply", "-c", c).stdout
    assert re.search(r"^backlog\s+offered\s+.*`lanekit remove backlog`", out, re.M), out
    assert "nothing to do: 2 lanes unchanged; 1 lane offered for removal" in out
    removed = _ok("remove", "backlog", "-c", c)
    assert removed.stdout.startswith(f"removed backlog ({PREFIX}.backlog): booted out")
    assert f"{PREFIX}.backlog" not in {e.label for e in _domain().list()}
    assert _ok("apply", "-c", c).stdout.strip() == "nothing to do: 2 lanes unchanged"


def test_remove_warns_when_the_lane_is_still_configured(example: Path) -> None:
    """Removing a lane that lanes.toml still has works, and warns that apply brings it back,
    naming the table to delete."""
    c = str(example)
    _ok("apply", "-c", c)
    removed = _ok("remove", "trickle", "-c", c)
    assert removed.stderr.strip() == (
        "warning: lane trickle is still in lanes.toml: the next `lanekit apply` installs it"
        " again (delete its [lanes.trickle] table to keep it removed)"
    )


def test_remove_from_another_project_is_refused_in_one_line(example: Path) -> None:
    """Two projects in two directories with a lane `trickle` on one label: `remove trickle`
    from the second exits 2 with one error line naming both lanes.toml files, the first's lane
    stays loaded; `--adopt` removes it."""
    _ok("apply", "-c", str(example))
    other = example.parent / "other" / "lanes.toml"
    other.parent.mkdir()
    other.write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    refused = _invoke("remove", "trickle", "-c", str(other))
    assert refused.exit_code == 2, (refused.stdout, refused.stderr)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert str(example.resolve()) in errors[0]
    assert str(other.resolve()) in errors[0]
    assert "Traceback" not in refused.stderr
    assert f"{PREFIX}.trickle" in {e.label for e in _domain().list()}
    removed = _ok("remove", "trickle", "--adopt", "-c", str(other))
    assert removed.stdout.startswith(f"removed trickle ({PREFIX}.trickle): booted out")
    assert f"{PREFIX}.trickle" not in {e.label for e in _domain().list()}


def test_status_human_table(example: Path) -> None:
    """The human status is a header plus one row per lane, one detail line per lane, then the
    launchd domain and why it was chosen, then (emulated domain) the note that nothing fires
    on a clock."""
    _ok("apply", "-c", str(example))
    out = _ok("status", "-c", str(example)).stdout.splitlines()
    assert out[0].split()[:4] == ["LANE", "STATE", "PID", "LAST"]
    assert [row.split()[:2] for row in out[1:4]] == [
        ["funnel", "scheduled"],
        ["trickle", "scheduled"],
        ["backlog", "scheduled"],
    ]
    assert out[4].startswith("funnel: ")
    assert "last exit: never exited" in out[4]
    assert out[-1].startswith("emulated launchd: nothing fires on a clock")
    single = _ok("status", "trickle", "-c", str(example)).stdout.splitlines()
    assert len(single) == 5
    assert single[3].startswith("launchd domain: gui/")
    assert "emulated launchd domain under" in single[3]
    assert single[4].startswith("emulated launchd: nothing fires on a clock")
    assert "\x1b[" not in "".join(out)  # no colour off a terminal


def test_status_of_unknown_lane_is_a_usage_error(example: Path) -> None:
    """status NAME for a lane not in lanes.toml exits 2 and names the lane."""
    result = _invoke("status", "nope", "-c", str(example))
    assert result.exit_code == 2
    assert "nope" in result.stderr


def test_missing_config_suggests_init(home: Path) -> None:
    """Without lanes.toml, the commands exit 2 with a hint to run `lanekit init`."""
    for command in ("plan", "apply", "status", "kick"):
        args = [command, "x"] if command == "kick" else [command]
        result = _invoke(*args)
        assert result.exit_code == 2, command
        assert "lanekit init" in result.stderr
    assert os.environ["HOME"] == str(home)


def _one_lane(tmp_path: Path, **extra: str) -> Path:
    """lanes.toml with one on-demand lane `solo` running /bin/true."""
    config = tmp_path / "solo.toml"
    keys = "".join(f"{k} = {v}\n" for k, v in extra.items())
    config.write_text(
        '[defaults]\nlabel_prefix = "com.example.solo"\n[queues.q]\ndir = "~/q"\n'
        f'[lanes.solo]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n{keys}',
        encoding="utf-8",
    )
    return config


def test_kick_within_throttle_interval_says_postponed(tmp_path: Path, home: Path) -> None:
    """A second kick right after a run: launchd postpones it (ThrottleInterval 10 s); kick says
    so, with about when it runs, and exits 4 (POSTPONED) with nothing on stdout."""
    c = str(_one_lane(tmp_path))
    _ok("apply", "-c", c)
    int(_ok("kick", "solo", "-c", c).stdout)
    assert _domain().wait_idle("com.example.solo.solo", 30)
    result = _invoke("kick", "solo", "-c", c)
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert result.stdout == ""
    match = re.search(
        r"launchd postponed the start \(ThrottleInterval 10 s\): it runs in about (\d+) s",
        result.stderr,
    )
    assert match, result.stderr
    assert 1 <= int(match.group(1)) <= 10
    assert "(emulated launchd: at the first lanekit command after that)" in result.stderr


def test_kick_that_launchd_cannot_start_says_exit_78(tmp_path: Path, home: Path) -> None:
    """The lane's log directory is gone: launchd cannot open StandardOutPath and records exit
    78. kick says launchd could not start it, names exit 78, and exits 5 (NOT_STARTED)."""
    c = str(_one_lane(tmp_path))
    _ok("apply", "-c", c)
    shutil.rmtree(home / "q" / "logs")
    result = _invoke("kick", "solo", "-c", c)
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: lane 'solo': launchd could not start it: exit 78 (EX_CONFIG")
    assert "lanekit doctor solo" in result.stderr


def test_apply_with_a_pending_change_exits_3(tmp_path: Path, home: Path) -> None:
    """A change to a lane that is running (its lane lock held) is pending: apply exits 3
    (PENDING) and `--json` lists the lane under `pending`; once idle, apply exits 0."""
    from lanekit.config import load_config
    from lanekit.run.lanelock import LaneLock, lane_lock_path

    config = _one_lane(tmp_path)
    c = str(config)
    _ok("apply", "-c", c)
    config.write_text(config.read_text() + "nice = 5\n", encoding="utf-8")
    lane = load_config(config, Paths.from_env()).lanes["solo"]
    lock = LaneLock(lane_lock_path(lane.queue.dir, "solo"))
    assert lock.acquire()
    try:
        result = _invoke("apply", "--json", "-c", c)
    finally:
        lock.release()
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert json.loads(result.stdout)["pending"] == ["solo"]
    assert _ok("apply", "-c", c).exit_code == 0


class _Stream(io.StringIO):
    """A stderr that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_waiting_line_updates_in_place_on_a_terminal_only() -> None:
    """On a terminal the wait is one line redrawn in place (carriage return, erase) naming the
    lane, its pid and the elapsed time, cleared at the end; not on a terminal: nothing."""
    from lanekit.cli.render.launchd import waiting
    from lanekit.reconcile import Waiting

    tty = _Stream(True)
    with waiting(tty) as show:
        show(Waiting("trickle", "x.trickle", 4242, 1.2, "for its run to end"))
        show(Waiting("trickle", "x.trickle", 4242, 2.4, "for its run to end"))
    text = tty.getvalue()
    assert text.count("\r\x1b[K") == 3
    assert "waiting for its run to end: lane trickle (pid 4242), 2 s" in text
    assert "\n" not in text
    pipe = _Stream(False)
    with waiting(pipe) as show:
        show(Waiting("trickle", "x.trickle", 4242, 1.2, "for its run to end"))
    assert pipe.getvalue() == ""
