"""`lanekit try`: one foreground run exactly as launchd would start it, with problems launchd
would hit reported before anything runs."""

from __future__ import annotations

import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

from lanekit.config import load_config, run_spec
from lanekit.errors import ExitCode, UsageError
from lanekit.proof.tryrun import TryRequest, decode_status, try_run
from lanekit.queue.directory.backend import Queue
from lanekit.run.runner import run_lane
from lanekit.service.launchd.plist import render_lane
from lanekit.state.paths import Paths
from places import FAKE_LAUNCHCTL

LANES = """
[defaults]
path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
label_prefix = "test.try"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = COMMAND
schedule = ["40 10 * * *"]
"""


@pytest.fixture
def shell_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with `jqish` in it, on the test's PATH (the user's shell) only."""
    directory = tmp_path / "shell-bin"
    directory.mkdir()
    jqish = directory / "jqish"
    jqish.write_text("#!/bin/sh\necho jqish ran\n")
    jqish.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}:/usr/bin:/bin")
    return directory


def lanes(tmp_path: Path, command: str, *, install: bool = True) -> tuple[Paths, Path]:
    """A lanes.toml with one lane running `command` (TOML array text), installed like apply."""
    paths = Paths.under(tmp_path)
    config_path = tmp_path / "lanes.toml"
    config_path.write_text(LANES.replace("COMMAND", command))
    if install:
        lane = load_config(config_path, paths).lanes["funnel"]
        plist = paths.plist_for(lane.label)
        plist.parent.mkdir(parents=True, exist_ok=True)
        plist.write_bytes(
            render_lane(lane, interpreter=sys.executable, snapshot=paths.snapshot_for(lane.label))
        )
        run_spec(lane).write(paths.snapshot_for(lane.label))
        Queue(lane.queue.dir).ensure()
        lane.stderr_path.parent.mkdir(parents=True, exist_ok=True)
    return paths, config_path


def write_plist(path: Path, **keys: object) -> Path:
    """A hand-written plist with Label com.example.try and `keys`."""
    job: dict[str, object] = {"Label": "com.example.try"}
    job.update(keys)
    path.write_bytes(plistlib.dumps(job))
    return path


def test_path_problem_reported_before_running(tmp_path: Path, shell_bin: Path) -> None:
    """The lane's command is on the user's PATH, not the lane's: `try` says so and runs
    nothing (the queued job is still queued), exit 1."""
    paths, config_path = lanes(tmp_path, '["jqish", "{job}"]')
    queue = Queue(load_config(config_path, paths).lanes["funnel"].queue.dir)
    job_id = queue.enqueue({"n": 1})
    result = try_run(TryRequest(lane="funnel", config_path=config_path), paths)
    assert not result.ran
    assert [p.id for p in result.problems] == ["path.command-missing"]
    assert f"your shell finds it at {shell_bin / 'jqish'}" in result.problems[0].message
    assert result.exit_status == ExitCode.FAILURE
    assert (queue.queue / f"{job_id}.json").exists()


def test_try_reproduces_the_path_failure_a_shell_hides(tmp_path: Path, shell_bin: Path) -> None:
    """The seed's story: a script calls jqish. From the user's shell it works; under launchd's
    PATH it fails with 127 and `try` shows that, with the stderr line that says why."""
    script = tmp_path / "run-funnel.sh"
    script.write_text("#!/bin/sh\njqish .flag\n")
    script.chmod(0o755)
    from_shell = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    assert from_shell.returncode == 0
    assert from_shell.stdout == "jqish ran\n"
    plist = write_plist(
        tmp_path / "com.example.try.plist",
        ProgramArguments=[str(script)],
        StandardErrorPath=str(tmp_path / "err.log"),
    )
    result = try_run(TryRequest(plist=plist), Paths.under(tmp_path))
    assert result.ran
    assert result.exit_code == 127
    assert result.status == "exit code 127 (command not found)"
    assert any("jqish" in line and "not found" in line for line in result.stderr_tail)
    assert result.env_path == "/usr/bin:/bin:/usr/sbin:/sbin"
    assert result.exit_status == ExitCode.FAILURE


def test_try_uses_launchds_environment_not_the_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only EnvironmentVariables + PATH default + XPC_SERVICE_NAME reach the job, from its
    WorkingDirectory; the caller's variables do not."""
    monkeypatch.setenv("LANEKIT_TEST_CALLER_ONLY", "leaked")
    work = tmp_path / "work"
    work.mkdir()
    plist = write_plist(
        tmp_path / "com.example.try.plist",
        ProgramArguments=["/bin/sh", "-c", "env >&2; pwd >&2"],
        EnvironmentVariables={"GREETING": "hello"},
        WorkingDirectory=str(work),
    )
    result = try_run(TryRequest(plist=plist), Paths.under(tmp_path))
    assert result.exit_code == 0
    lines = set(result.stderr_tail)
    assert "PATH=/usr/bin:/bin:/usr/sbin:/sbin" in lines
    assert "GREETING=hello" in lines
    assert "XPC_SERVICE_NAME=com.example.try" in lines
    assert str(work) in lines
    assert not any("LANEKIT_TEST_CALLER_ONLY" in line for line in lines)


def test_missing_log_directory_is_reported_not_run(tmp_path: Path) -> None:
    """launchd would fail the spawn with 78: `try` names the directory and runs nothing."""
    plist = write_plist(
        tmp_path / "com.example.try.plist",
        ProgramArguments=["/bin/true"],
        StandardOutPath=str(tmp_path / "missing" / "out.log"),
    )
    result = try_run(TryRequest(plist=plist), Paths.under(tmp_path))
    assert not result.ran
    assert [p.id for p in result.problems] == ["logs.dir-missing"]
    assert result.problems[0].fix == f"mkdir -p {tmp_path / 'missing'}"


def test_lane_entrypoint_drains_real_jobs(tmp_path: Path) -> None:
    """`try LANE` runs the installed entrypoint: a real run that processes queued jobs."""
    paths, config_path = lanes(tmp_path, '["cat", "{job}"]')
    lane = load_config(config_path, paths).lanes["funnel"]
    queue = Queue(lane.queue.dir)
    job_id = queue.enqueue({"n": 1})
    result = try_run(TryRequest(lane="funnel", config_path=config_path), paths)
    assert result.ran
    assert result.exit_code == 0
    assert result.status == "exit code 0"
    assert not (queue.queue / f"{job_id}.json").exists()
    assert queue.counts().done == 1


def test_job_option_runs_the_command_once_without_the_queue(tmp_path: Path) -> None:
    """`try LANE --job FILE`: the job command on that file, with the lane's environment and
    job variables, output where launchd would put it; the queue is not touched."""
    paths, config_path = lanes(
        tmp_path, '["/bin/sh", "-c", "cat \\"$LANEKIT_JOB_FILE\\"; echo $LANEKIT_LANE", "{job}"]'
    )
    lane = load_config(config_path, paths).lanes["funnel"]
    queue = Queue(lane.queue.dir)
    queued = queue.enqueue({"n": 1})
    job = tmp_path / "one-job.json"
    job.write_text('{"hello": "world"}\n')
    result = try_run(TryRequest(lane="funnel", job=job, config_path=config_path), paths)
    assert result.ran
    assert result.exit_code == 0
    assert result.argv[:2] == ("/bin/sh", "-c")
    assert lane.stdout_path.read_text() == '{"hello": "world"}\nfunnel\n'
    assert (queue.queue / f"{queued}.json").exists()


DUMP_ENV = """
import json, os, sys, time
from pathlib import Path
seen = {k: v for k, v in os.environ.items() if k.startswith("LANEKIT_")}
seen["payload"] = Path(sys.argv[1]).read_text()
seen["job_file_is_argv"] = seen["LANEKIT_JOB_FILE"] == sys.argv[1]
out = Path(__file__).parent / "seen"
out.mkdir(exist_ok=True)
(out / f"{time.time_ns()}.json").write_text(json.dumps(seen))
"""


def test_try_and_run_give_a_job_the_same_environment(tmp_path: Path) -> None:
    """A job whose id has a dot (`2026-09-17.report`) sees the same LANEKIT_JOB_ID, LANE and
    ATTEMPT from a real run of its lane as from `try LANE --job` on its file (try used to cut
    the id at the first dot); LANEKIT_JOB_FILE is `{job}` in both. (The rest of the runner's
    environment is its caller's here; under launchd both get the plist's.)"""
    import json

    script = tmp_path / "dump.py"
    script.write_text(DUMP_ENV)
    paths, config_path = lanes(tmp_path, f'["{sys.executable}", "{script}", "{{job}}"]')
    lane = load_config(config_path, paths).lanes["funnel"]
    payload = '{"n": 1}'
    Queue(lane.queue.dir).enqueue(payload, "2026-09-17.report")
    assert run_lane(run_spec(lane)).done == 1
    job = tmp_path / "2026-09-17.report.json"
    job.write_text(payload)
    tried = try_run(TryRequest(lane="funnel", job=job, config_path=config_path), paths)
    assert tried.ran and tried.exit_code == 0
    ran, by_try = (json.loads(p.read_text()) for p in sorted((tmp_path / "seen").glob("*.json")))
    identity = ("LANEKIT_JOB_ID", "LANEKIT_LANE", "LANEKIT_ATTEMPT", "payload", "job_file_is_argv")
    assert {key: ran[key] for key in identity} == {
        "LANEKIT_JOB_ID": "2026-09-17.report",
        "LANEKIT_LANE": "funnel",
        "LANEKIT_ATTEMPT": "1",
        "payload": payload,
        "job_file_is_argv": True,
    }
    assert {key: by_try[key] for key in identity} == {key: ran[key] for key in identity}


def test_lane_not_installed_cannot_be_tried(tmp_path: Path) -> None:
    """Without an installed entrypoint there is nothing launchd would run: a usage error."""
    paths, config_path = lanes(tmp_path, '["true"]', install=False)
    with pytest.raises(UsageError) as caught:
        try_run(TryRequest(lane="funnel", config_path=config_path), paths)
    assert "lanekit apply funnel" in caught.value.hint


def test_lane_or_plist_not_both(tmp_path: Path) -> None:
    """Exactly one of LANE and --plist."""
    with pytest.raises(UsageError):
        try_run(TryRequest(), Paths.under(tmp_path))


def test_killed_run_is_decoded(tmp_path: Path) -> None:
    """A job that dies by SIGKILL is reported by signal name."""
    plist = write_plist(
        tmp_path / "com.example.try.plist", ProgramArguments=["/bin/sh", "-c", "kill -9 $$"]
    )
    result = try_run(TryRequest(plist=plist), Paths.under(tmp_path))
    assert result.signal == 9
    assert result.status == "killed by SIGKILL"
    assert result.exit_status == ExitCode.FAILURE


def test_timeout_stops_the_job(tmp_path: Path) -> None:
    """--timeout stops a job that would run on (SIGTERM, as launchd's stop does)."""
    plist = write_plist(tmp_path / "com.example.try.plist", ProgramArguments=["/bin/sleep", "30"])
    result = try_run(TryRequest(plist=plist, timeout=0.2), Paths.under(tmp_path))
    assert result.timed_out
    assert result.signal == 15


@pytest.mark.parametrize(
    ("code", "sig", "runner", "text"),
    [
        (0, None, False, "exit code 0"),
        (3, None, False, "exit code 3"),
        (78, None, False, "exit code 78 (EX_CONFIG: launchd could not start the job)"),
        (126, None, False, "exit code 126 (command found but not executable)"),
        (1, None, True, "exit code 1 (some jobs failed)"),
        (1, None, False, "exit code 1"),
        (69, None, True, "exit code 69 (environment unusable, see the lane log)"),
        (69, None, False, "exit code 69 (EX_UNAVAILABLE)"),
        (None, 15, False, "killed by SIGTERM"),
        (-9, None, False, "killed by SIGKILL"),
        (None, None, False, "did not run"),
    ],
)
def test_decode_status(code: int | None, sig: int | None, runner: bool, text: str) -> None:
    """Exit statuses in words: lanekit's own codes only for the lane entrypoint."""
    assert decode_status(code, sig, lanekit_runner=runner) == text


def test_try_on_macos_runs_a_one_shot_launchd_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the launchctl backend (the scripted fake, replying with a real `print` capture),
    `try LANE --job F` bootstraps the job under a temporary label, kickstarts it, reads its
    exit from print, boots it out and deletes the temporary plist; the lane's own label is
    never touched. `--here` runs it in this process instead."""
    import json
    import os

    from lanekit.service.launchd.domain import Caller

    fake = FAKE_LAUNCHCTL
    wrapper = tmp_path / "launchctl"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n')
    wrapper.chmod(0o755)
    capture = (fake.parent / "samples" / "print-05.txt").read_text().partition("# ---\n")[2]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"print": {"stdout": capture}}))
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(script))
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", str(log))
    monkeypatch.setattr(Caller, "current", classmethod(lambda cls: Caller(501, 501, 501)))
    paths, config_path = lanes(tmp_path, '["/bin/cat", "{job}"]')
    job = tmp_path / "job.json"
    job.write_text('{"n": 1}')
    env = {**os.environ, "LANEKIT_LAUNCHD": "launchctl", "LANEKIT_LAUNCHCTL": str(wrapper)}
    request = TryRequest(lane="funnel", job=job, config_path=config_path)
    result = try_run(request, paths, env)
    assert result.ran and result.exit_code == 2  # print-05: last exit code = 2
    assert result.launchd_job is not None
    target = result.launchd_job
    label = target.removeprefix("gui/501/")
    assert label == "local.lanekit.try"  # one label for every try (one Background Items record)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    plist = paths.state / "try" / f"{label}.plist"
    # the fake's print says "loaded" to every label: a leftover of a killed try is booted out
    assert calls[:3] == [["print", target], ["bootout", target], ["bootout", "user/501/" + label]]
    calls = calls[3:]
    assert [c[0] for c in calls] == [
        "bootstrap",
        "print",
        "kickstart",
        "print",
        "bootout",
        "bootout",
    ]
    assert calls[0] == ["bootstrap", "gui/501", str(plist)]
    assert calls[2] == ["kickstart", "-p", target]
    assert calls[4] == ["bootout", target]
    assert not plist.exists()
    assert all(c[-1].rsplit("/", 1)[-1] != "test.try.funnel" for c in calls)
    log.unlink()
    here = try_run(
        TryRequest(lane="funnel", job=job, config_path=config_path, here=True), paths, env
    )
    assert here.ran and here.exit_code == 0 and here.launchd_job is None
    assert not log.exists()


def test_two_tries_at_once_are_refused(tmp_path: Path) -> None:
    """try loads every lane under one label, so while one try holds it (its lock) a second
    is refused with one line naming the label and `--here`; nothing is loaded or written."""
    import os

    from lanekit.errors import LanekitError
    from lanekit.proof.tryjob import run_one_shot
    from lanekit.run.jobenv import TRY_LABEL
    from lanekit.run.lanelock import try_lock

    directory = tmp_path / "try"
    directory.mkdir()
    fd = try_lock(str(directory / ".lock"))
    assert fd is not None

    class NoManager:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the refused try touched the manager: {name}")

    try:
        with pytest.raises(LanekitError) as refused:
            run_one_shot({"Label": "test.try.funnel"}, NoManager(), directory)  # type: ignore[arg-type]
    finally:
        os.close(fd)
    assert TRY_LABEL in refused.value.message and "--here" in refused.value.hint
    assert list(directory.iterdir()) == [directory / ".lock"]
