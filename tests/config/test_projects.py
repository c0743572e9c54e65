"""Read commands from anywhere: status, jobs, job, doctor and the verbs use the installed
snapshots' projects when no lanes.toml is here; --project names one; doctor --plist/--all
finds a lanekit lane's problems whatever the current directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.state.paths import Paths

PROJECT = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "com.me.{name}"

[queues.inbox]
dir = "{queue}"

[lanes.{lane}]
queue = "inbox"
command = ["{command}", "{{job}}"]
"""


def project(root: Path, name: str, lane: str, command: str = "/bin/cat") -> Path:
    """A project directory with one lane, applied (installed) with --force."""
    root.mkdir(parents=True)
    config = root / "lanes.toml"
    config.write_text(PROJECT.format(name=name, lane=lane, queue=root / "q", command=command))
    result = CliRunner().invoke(app, ["apply", "--force", "-c", str(config)])
    assert result.exit_code == 0, result.output
    return config


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two installed projects (lanes `alpha` and `beta`); the cwd is an unrelated directory."""
    project(tmp_path / "one", "one", "alpha")
    project(tmp_path / "two", "two", "beta", command="lanekit-projects-missing-tool")
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    monkeypatch.chdir(unrelated)
    return tmp_path


def test_status_from_an_unrelated_directory_lists_every_project_with_its_project(
    elsewhere: Path,
) -> None:
    """status without a lanes.toml here: both projects' lanes, each with its lanes.toml;
    --project narrows to one."""
    code, out, err = invoke("status", "--json")
    assert code == 0, err
    lanes = {lane["lane"]: lane for lane in json.loads(out)["lanes"]}
    assert lanes["alpha"]["project"] == str((elsewhere / "one" / "lanes.toml").resolve())
    assert lanes["beta"]["project"] == str((elsewhere / "two" / "lanes.toml").resolve())
    code, out, _ = invoke("status")
    assert f"project: {(elsewhere / 'one' / 'lanes.toml').resolve()}" in out
    code, out, _ = invoke("status", "--json", "--project", str(elsewhere / "two"))
    assert [lane["lane"] for lane in json.loads(out)["lanes"]] == ["beta"]


def test_jobs_job_and_verbs_from_an_unrelated_directory(elsewhere: Path) -> None:
    """jobs/job find the lane among the installed projects; cancel and retry too."""
    queue = Queue(elsewhere / "one" / "q")
    job_id = queue.enqueue({"n": 1})
    code, out, err = invoke("jobs", "alpha", "--json")
    assert code == 0, err
    assert [item["job_id"] for item in json.loads(out)["items"]] == [job_id]
    code, out, _ = invoke("job", "alpha", job_id)
    assert code == 0
    assert job_id in out
    assert invoke("cancel", job_id)[0] == 0
    assert invoke("retry", job_id)[0] == 0
    assert (queue.queue / f"{job_id}.json").exists()
    code, _, err = invoke("jobs", "gamma")
    assert code == 2
    assert "no lane named 'gamma'" in err


def test_doctor_from_an_unrelated_directory_examines_every_installed_lane(
    elsewhere: Path,
) -> None:
    """doctor without a lanes.toml here: both lanes (and their queues), beta's missing command
    found; and `doctor --plist` of beta's installed plist finds it too (its project, from the
    snapshot)."""
    code, out, _ = invoke("doctor", "--json")
    assert code == 1
    document = json.loads(out)
    # Both projects' lanes and the queue each drains.
    assert document["summary"]["subjects"] == 4
    missing = [f for f in document["findings"] if f["id"] == "path.command-missing"]
    assert [f["subject"] for f in missing] == ["beta"]

    plist = Paths.from_env().plist_for("com.me.two.beta")
    code, out, _ = invoke("doctor", "--json", "--plist", str(plist))
    document = json.loads(out)
    assert document["summary"]["subjects"] == 1
    assert ("path.command-missing", "beta") in {
        (f["id"], f["subject"]) for f in document["findings"]
    }
    code, out, _ = invoke("doctor", "--json", "--all")
    assert "path.command-missing" in {f["id"] for f in json.loads(out)["findings"]}


def test_no_lanes_toml_and_nothing_installed_is_the_usual_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no lanes.toml here and no installed lane, status says how to start (exit 2)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("status")
    assert code == 2
    assert "lanekit init" in err


def test_logs_from_an_unrelated_directory(elsewhere: Path) -> None:
    """logs finds the lane among the installed projects: alpha's event log after a run, beta's
    own (never run) log; --project narrows, and a lane of another project is then unknown."""
    Queue(elsewhere / "one" / "q").enqueue({"n": 1})
    code, _, err = invoke("run", "alpha")
    assert code == 0, err
    code, out, err = invoke("logs", "alpha")
    assert code == 0, err
    assert "event=done" in out
    code, out, err = invoke("logs", "beta")
    assert code == 0, err
    assert "event=done" not in out  # beta's own log (apply's lines), not alpha's
    code, out, err = invoke("logs", "alpha", "--project", str(elsewhere / "one"))
    assert code == 0, err
    assert "event=done" in out
    code, _, err = invoke("logs", "alpha", "--project", str(elsewhere / "two"))
    assert code == 2
    assert "no lane named 'alpha'" in err


def test_try_from_an_unrelated_directory(elsewhere: Path) -> None:
    """try runs a lane of an installed project from anywhere: alpha's job command on a file
    (--job), alpha's installed entrypoint, and beta's missing command is reported before
    anything runs; --project says which project."""
    job = elsewhere / "unrelated" / "job.json"
    job.write_text('{"hello": "from anywhere"}\n')
    code, out, err = invoke("try", "alpha", "--job", str(job), "--here")
    assert code == 0, out + err
    assert (elsewhere / "one" / "q").is_dir()
    code, out, err = invoke("try", "alpha", "--here")
    assert code == 0, out + err
    code, out, err = invoke("try", "beta", "--here", "--project", str(elsewhere / "two"))
    assert code == 1
    assert "lanekit-projects-missing-tool" in out + err


def test_logs_and_try_name_the_projects_of_an_ambiguous_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two projects with a lane of the same name: logs and try from elsewhere refuse to guess
    (exit 2, naming both lanes.toml) and --project picks one."""
    first = project(tmp_path / "a", "a", "same")
    second = project(tmp_path / "b", "b", "same")
    (tmp_path / "unrelated").mkdir()
    monkeypatch.chdir(tmp_path / "unrelated")
    for command in (["logs", "same"], ["try", "same", "--here"]):
        code, _, err = invoke(*command)
        assert code == 2, err
        assert "is in several projects" in err
        assert str(first.resolve()) in err
        assert str(second.resolve()) in err
        assert "--project" in err
    Queue(tmp_path / "b" / "q").enqueue({"n": 2})
    code, out, err = invoke("try", "same", "--here", "--project", str(tmp_path / "b"))
    assert code == 0, out + err
    code, out, err = invoke("logs", "same", "--project", str(tmp_path / "b"))
    assert code == 0, err
    assert "event=done" in out
    code, out, err = invoke("logs", "same", "--project", str(tmp_path / "a"))
    assert code == 0, err
    assert "event=done" not in out  # a's lane never ran: only b's log has the run


def test_status_of_two_projects_with_one_lane_name_has_a_project_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two projects each install a lane `funnel`: from outside both, status lists two funnel
    rows, told apart by a PROJECT column (the project's directory)."""
    project(tmp_path / "one", "one", "funnel")
    project(tmp_path / "two", "two", "funnel")
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    monkeypatch.chdir(unrelated)
    code, out, err = invoke("status")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[-1] == "PROJECT"
    rows = [line.split() for line in lines[1:3]]
    assert [row[0] for row in rows] == ["funnel", "funnel"]
    assert sorted(row[-1] for row in rows) == sorted(
        str((tmp_path / name).resolve()) for name in ("one", "two")
    )


def test_a_paused_lane_shows_no_next_fire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A paused lane is disabled in launchd: nothing fires it, so status shows no NEXT FIRE
    (and --json none), though its schedule would."""
    root = tmp_path / "one"
    root.mkdir()
    config = root / "lanes.toml"
    text = PROJECT.format(name="one", lane="alpha", queue=root / "q", command="/bin/cat")
    config.write_text(text + 'schedule = "40 10 * * *"\n')
    assert invoke("apply", "--force", "-c", str(config))[0] == 0
    monkeypatch.chdir(root)
    before = {row["lane"]: row for row in json.loads(invoke("status", "--json")[1])["lanes"]}
    assert before["alpha"]["next_fire"] is not None
    code, _, err = invoke("pause", "alpha")
    assert code == 0, err
    lane = {row["lane"]: row for row in json.loads(invoke("status", "--json")[1])["lanes"]}
    assert lane["alpha"]["paused"] is True
    assert lane["alpha"]["next_fire"] is None
    header, *rows = invoke("status")[1].splitlines()
    alpha = next(row.split() for row in rows if row.startswith("alpha"))
    assert alpha[header.split().index("NEXT")] == "-"
