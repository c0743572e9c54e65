"""preflight: what apply refuses and what launchd will do otherwise than written, one function
that `validate` and `apply` both call (issue 12 items 13, 14 and 19)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lanekit.cli import app
from lanekit.config import LaneSpec, QueueSpec
from lanekit.preflight import preflight, throttle_warning
from lanekit.schedule import build_schedule


def lane_on(
    root: Path,
    *,
    queue_dir: Path | None = None,
    schedule: object = None,
    every: str | None = None,
    throttle: int | None = None,
) -> LaneSpec:
    """A lane named `work` draining queue `q` (default: root/q)."""
    where = queue_dir or root / "q"
    return LaneSpec(
        name="work",
        label="test.work",
        queue=QueueSpec("q", where),
        command=("/bin/true",),
        schedule=build_schedule(schedule, every),
        stdout_path=root / "out.log",
        stderr_path=root / "err.log",
        log_path=root / "lane.log",
        throttle_interval=throttle,
    )


@pytest.mark.parametrize(
    "folder", ["Dropbox", "Dropbox (Team)", "Library/Mobile Documents/com~apple~CloudDocs"]
)
def test_a_queue_in_a_sync_folder_is_refused_before_it_exists(tmp_path: Path, folder: str) -> None:
    """The refusal comes from where the queue would be, not from its directories: nothing needs
    to exist yet, and nothing is created."""
    where = tmp_path / folder / "jobs"
    found = preflight(lane_on(tmp_path, queue_dir=where))
    [refusal] = found.refusals
    assert "a sync engine moves and re-creates files" in refusal.message
    assert refusal.hint == "put the queue in a local folder outside any synced folder"
    assert not where.exists()


def test_a_local_queue_passes(tmp_path: Path) -> None:
    """A plain local directory: no refusal, no warning."""
    assert preflight(lane_on(tmp_path, schedule="40 10 * * *")).refusals == ()
    assert preflight(lane_on(tmp_path, schedule="40 10 * * *")).warnings == ()


@pytest.mark.parametrize(
    ("every", "throttle", "warned"),
    [
        ("5s", None, True),
        ("9s", None, True),
        ("10s", None, False),
        ("15m", None, False),
        ("5s", 5, False),
        ("5s", 3, False),
        ("5s", 0, False),
        ("20s", 30, True),
    ],
)
def test_every_below_throttle_interval_warns(
    tmp_path: Path, every: str, throttle: int | None, warned: bool
) -> None:
    """launchd starts a job at most once per ThrottleInterval (10 s unless throttle_interval
    says otherwise), so a shorter `every` is a promise launchd will not keep."""
    text = throttle_warning(lane_on(tmp_path, every=every, throttle=throttle))
    assert (text is not None) is warned


def test_throttle_warning_names_the_fix(tmp_path: Path) -> None:
    """The warning says what launchd will do and both ways to fix it."""
    text = throttle_warning(lane_on(tmp_path, every="5s"))
    assert text == (
        "lane work: every = 5s is below launchd's default ThrottleInterval of 10 s, so launchd "
        'starts it at most every 10 s; set every to "10s" or more, or throttle_interval = '
        '"5s", in [lanes.work]'
    )


def test_schedule_warnings_are_the_lanes(tmp_path: Path) -> None:
    """A cron line that cron ANDs and launchd ORs is a lane warning, naming the lane."""
    found = preflight(lane_on(tmp_path, schedule=["40 10 * * *", "1 1 1-7 * */7"]))
    [text] = found.warnings
    assert text.startswith('lane work: schedule "1 1 1-7 * */7": Vixie/Debian cron runs it only')


# --- validate and apply agree ---------------------------------------------------------------


def _lanes_toml(root: Path, queue_dir: Path, extra: str = "") -> Path:
    path = root / "lanes.toml"
    path.write_text(
        f'[queues.q]\ndir = "{queue_dir}"\n\n'
        '[lanes.work]\nqueue = "q"\ncommand = ["/bin/cat", "{job}"]\n'
        'schedule = "40 10 * * *"\n' + extra,
        encoding="utf-8",
    )
    return path


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path, so messages name `lanes.toml` as a user in that folder sees it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_validate_refuses_what_apply_refuses(here: Path) -> None:
    """A queue in a Dropbox folder: validate fails (exit 1) naming the key, apply fails the
    lane, and neither creates anything inside the synced folder (before, validate said OK and
    apply had already made the queue directories when it refused)."""
    where = here / "Dropbox" / "jobs"
    config = _lanes_toml(here, where)
    checked = _run("validate", "-c", str(config))
    assert checked.exit_code == 1
    assert checked.stderr.startswith(
        f"error: lanes.toml: queues.q.dir: {where}: inside Dropbox; a sync engine"
    )
    applied = _run("apply", "-c", str(config))
    assert applied.exit_code == 1
    assert f"{where}: inside Dropbox" in applied.output
    assert not where.exists()


def test_validate_names_every_bad_schedule_entry(here: Path) -> None:
    """Each bad element of a schedule array is its own error, not only the first."""
    config = _lanes_toml(here, here / "q")
    text = config.read_text(encoding="utf-8").replace(
        'schedule = "40 10 * * *"', 'schedule = ["40 10 * * *", "99 1 * * *", {Hour = 25}]'
    )
    config.write_text(text, encoding="utf-8")
    result = _run("validate", "-c", str(config))
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: lanes.toml: lanes.work.schedule[1]: Minute 99 is out of range 0-59",
        "error: lanes.toml: lanes.work.schedule[2]: Hour 25 is out of range 0-23",
    ]


def test_validate_warns_below_throttle_and_for_cron_and(here: Path) -> None:
    """`every = "5s"` and a starred Day+Weekday cron line pass validate (exit 0) with one
    warning each, on stderr and in --json."""
    config = here / "lanes.toml"
    config.write_text(
        f'[queues.q]\ndir = "{here / "q"}"\n\n'
        '[lanes.fast]\nqueue = "q"\ncommand = ["/bin/cat", "{job}"]\nevery = "5s"\n\n'
        '[lanes.monthly]\nqueue = "q"\ncommand = ["/bin/cat", "{job}"]\n'
        'schedule = "1 1 1-7 * */7"\n',
        encoding="utf-8",
    )
    result = _run("validate", "-c", str(config))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: lanes.toml: lane fast: every = 5s is below")
    assert warnings[1].startswith('warning: lanes.toml: lane monthly: schedule "1 1 1-7 * */7"')
    as_json = _run("validate", "-c", str(config), "--json")
    assert '"lane fast: every = 5s is below' in as_json.stdout


def test_schedule_command_warns_with_both_meanings() -> None:
    """`lanekit schedule "1 1 1-7 * */7"` prints the warning on stderr and in --json, and still
    shows what launchd will run."""
    result = _run("schedule", "1 1 1-7 * */7", "-n", "1", "--after", "2020-01-01T00:00")
    assert result.exit_code == 0
    assert result.stderr.startswith('warning: "1 1 1-7 * */7": Vixie/Debian cron runs it only')
    assert "runs: at 01:01 on days 1 to 7 of every month and every Sunday" in result.stdout
    as_json = _run("schedule", "1 1 1-7 * */7", "--json")
    assert '"warnings": [\n    "\\"1 1 1-7 * */7\\": Vixie/Debian cron' in as_json.stdout
