"""preflight: what apply refuses and what launchd will do otherwise than written, one function
that `validate` and `apply` both call (issue 12 items 13, 14 and 19)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lanekit.cli import app
from lanekit.config import LaneSpec, QueueSpec
from lanekit.errors import ExitCode, UnsafeStateError
from lanekit.reconcile.preflight import preflight, throttle_warning, untrusted_dirs
from lanekit.schedule import build_schedule
from neighbours import SECOND_UID, SecondUser


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


@pytest.mark.parametrize("inside", [False, True])
def test_a_queue_dir_that_is_a_file_is_refused_by_validate_and_apply(
    here: Path, inside: bool
) -> None:
    """A queue `dir` that is a regular file (or lies under one): validate fails naming the key
    and the fix, and apply fails the lane with the same words, without a traceback (before,
    validate said OK and apply crashed in flock on <dir>/logs/work.lock; issue 30 item 7)."""
    afile = here / "inbox"
    afile.write_text("not a queue\n")
    where = afile / "jobs" if inside else afile
    config = _lanes_toml(here, where)
    what = (
        f"is not a directory ({afile} is a regular file)"
        if inside
        else ("is a regular file, not a directory")
    )
    checked = _run("validate", "-c", str(config))
    assert checked.exit_code == 1
    assert checked.stderr.splitlines() == [
        f"error: lanes.toml: queues.q.dir: {where}: {what}",
        "hint: point the queue's dir at a directory (or where `lanekit apply` may create one), "
        "or move the file out of the way",
        "lanes.toml: 1 error",
    ]
    for command in ("plan", "apply"):
        done = _run(command, "-c", str(config))
        assert done.exception is None or isinstance(done.exception, SystemExit), command
        assert "Traceback" not in done.output
    applied = _run("apply", "-c", str(config))
    assert applied.exit_code == 1
    assert f"{where}: {what}" in applied.output
    assert afile.read_text() == "not a queue\n"


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


def test_a_queue_or_log_in_another_users_directory_is_refused_before_it_exists(
    tmp_path: Path, second_user: SecondUser
) -> None:
    """The queue dir, or a log's directory, inside a directory of another user (or reached
    through a symlink into one): refused with exit 69 naming that directory and a place of
    your own, never a chown of theirs; nothing needs to exist below it (issue 30 item 5)."""
    theirs = second_user.mkdir("theirs")
    (tmp_path / "linked").symlink_to(theirs)
    for where in (theirs / "jobs", tmp_path / "linked" / "jobs"):
        [refusal] = preflight(lane_on(tmp_path, queue_dir=where)).refusals
        assert isinstance(refusal, UnsafeStateError)
        assert refusal.exit_code is ExitCode.UNAVAILABLE
        assert refusal.message.startswith(
            f"{where}: queue directory is reached through {theirs}, which is owned by uid "
            f"{SECOND_UID} (nobody)"
        )
        assert refusal.hint.startswith("point [queues.q] dir at a directory of your own, e.g. ")
        assert "chown" not in refusal.hint
        assert not (theirs / "jobs").exists()
    lane = replace(lane_on(tmp_path), log_path=theirs / "logs" / "work.log")
    [refusal] = untrusted_dirs(lane)
    assert refusal.message.startswith(f"{theirs / 'logs'}: log directory is reached through")
    assert refusal.hint.startswith("point [lanes.work] log at a directory of your own")
    assert untrusted_dirs(lane_on(tmp_path)) == []
