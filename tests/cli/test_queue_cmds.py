"""CLI: enqueue, run, recover, jobs, job - exit codes, stdout/stderr, the JSON contract."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.recordstore import RecordStore
from lanekit.queue.records import JobState
from lanekit.run.lanelog import read_events

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.cli"

[queues.inbox]
dir = "{queue}"

[queues.spare]
dir = "{spare}"

[lanes.work]
queue = "inbox"
command = ["{python}", "-c", "import sys; sys.exit(0)", "{{job}}"]
schedule = "@daily"
max_attempts = 2
stale_after = "1h"

[lanes.other]
queue = "spare"
command = ["/bin/true"]
schedule = "@daily"
"""

PAGE_KEYS = {
    "page",
    "per_page",
    "total",
    "total_pages",
    "has_prev",
    "has_next",
    "prev_page",
    "next_page",
    "from",
    "to",
}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A lanes.toml with two lanes on two queues, whose directories exist (as after apply)."""
    queue, spare = tmp_path / "inbox", tmp_path / "spare"
    Queue(queue).ensure()
    Queue(spare).ensure()
    path = tmp_path / "lanes.toml"
    path.write_text(CONFIG.format(queue=queue, spare=spare, python=sys.executable))
    return path


def invoke(*args: str, input: str | bytes | None = None) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args), input=input)
    return result.exit_code, result.stdout, result.stderr


def inbox(config: Path) -> Queue:
    """The queue of lane `work`."""
    return Queue(config.parent / "inbox")


# --- enqueue ------------------------------------------------------------------------------


def test_enqueue_file_prints_the_id(config: Path, tmp_path: Path) -> None:
    """`enqueue LANE FILE` queues the file's JSON object and prints only the new id."""
    job = tmp_path / "job.json"
    job.write_text('{"file": "a.txt"}')
    code, out, err = invoke("enqueue", "work", str(job), "-c", str(config))
    assert (code, err) == (0, "")
    job_id = out.strip()
    assert out == job_id + "\n"
    assert (config.parent / "inbox" / "queue" / f"{job_id}.json").read_text() == (
        '{"file": "a.txt"}'
    )


@pytest.mark.parametrize("args", [["-"], []])
def test_enqueue_reads_stdin(config: Path, args: list[str]) -> None:
    """`-` or no FILE reads the job from stdin."""
    code, out, _ = invoke("enqueue", "work", *args, "-c", str(config), input='{"n": 1}')
    assert code == 0
    assert inbox(config).counts().queued == 1
    assert (config.parent / "inbox" / "queue" / f"{out.strip()}.json").exists()


def test_enqueue_with_id_and_queue(config: Path) -> None:
    """--id names the job; --queue NAME targets a queue directly (FILE then comes first)."""
    code, out, _ = invoke(
        "enqueue", "--queue", "spare", "-", "--id", "job-1", "-c", str(config), input="{}"
    )
    assert (code, out) == (0, "job-1\n")
    assert (config.parent / "spare" / "queue" / "job-1.json").exists()
    code, _, err = invoke("enqueue", "work", "--id", "job-1", "-c", str(config), input="{}")
    assert code == 0, err
    code, _, err = invoke("enqueue", "work", "--id", "job-1", "-c", str(config), input="{}")
    assert code == 2
    assert "already queued" in err


@pytest.mark.parametrize("bad", ["../x", "/abs", ".hidden", "a b", "x" * 129, "a\x00b", ""])
def test_enqueue_rejects_bad_ids(config: Path, bad: str) -> None:
    """Ids become file names: path-escaping, hidden, spaced, overlong or empty ids are refused
    with exit 2 and nothing is queued."""
    code, out, err = invoke("enqueue", "work", "--id", bad, "-c", str(config), input="{}")
    assert code == 2
    assert out == ""
    assert err.startswith("error: job id")
    assert "hint:" in err
    assert inbox(config).counts().queued == 0


@pytest.mark.parametrize(
    ("payload", "why"),
    [("[1, 2]", "array"), ('"text"', "string"), ("not json", "not valid JSON"), ("", "JSON")],
)
def test_enqueue_rejects_non_objects(config: Path, payload: str, why: str) -> None:
    """A payload that is not one JSON object is refused (exit 2) with the reason."""
    code, _, err = invoke("enqueue", "work", "-c", str(config), input=payload)
    assert code == 2
    assert why in err.splitlines()[0]
    assert inbox(config).counts().queued == 0


def test_enqueue_usage_errors(config: Path, tmp_path: Path) -> None:
    """No target, both LANE and --queue, an unknown lane or queue, a missing file: exit 2."""
    cases = [
        (["enqueue", "-c", str(config)], "which queue"),
        (["enqueue", "work", "x.json", "--queue", "spare", "-c", str(config)], "not both"),
        (["enqueue", "nope", "-c", str(config)], "no lane named"),
        (["enqueue", "--queue", "nope", "-c", str(config)], "no queue named"),
        (["enqueue", "work", str(tmp_path / "missing.json"), "-c", str(config)], "no such file"),
    ]
    for args, message in cases:
        code, _, err = invoke(*args, input="{}")
        assert code == 2, args
        assert message in err, args


def test_enqueue_refuses_a_job_over_max_job_bytes_reading_no_more(
    config: Path, tmp_path: Path
) -> None:
    """A job larger than its queue's max_job_bytes (default 1 MiB), from stdin or a FILE, is
    refused with exit 2 and one line naming the input, the queue and its key; the rest of the
    input is never read (issue 30 item 12)."""
    big = b'{"pad": "' + b"x" * (1 << 20) + b'"}'
    code, out, err = invoke("enqueue", "work", "-c", str(config), input=big)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "error: stdin: job payload is larger than queue inbox's max_job_bytes (1048576 bytes)",
        "hint: put bulk data in a file and enqueue a job that names its path, or raise "
        "max_job_bytes in [queues.inbox] of lanes.toml",
    ]
    job = tmp_path / "big.json"
    job.write_bytes(big)
    code, _, err = invoke("enqueue", "work", str(job), "-c", str(config))
    assert code == 2
    assert err.startswith(f"error: {job}: job payload is larger than queue inbox's max_job_bytes")
    assert inbox(config).counts().queued == 0


def test_enqueue_into_missing_queue_is_exit_69(tmp_path: Path, config: Path) -> None:
    """A queue directory that does not exist yet is an environment error naming it."""
    (tmp_path / "gone.toml").write_text(
        config.read_text().replace(str(tmp_path / "inbox"), str(tmp_path / "gone"))
    )
    code, _, err = invoke("enqueue", "work", "-c", str(tmp_path / "gone.toml"), input="{}")
    assert code == 69
    assert "gone" in err


def test_enqueue_into_the_watchdog_is_refused(config: Path, tmp_path: Path) -> None:
    """Lane `watch` is lanekit's watchdog (it runs `lanekit watch`, never a job): enqueueing
    into it is exit 2 naming the lanes that run jobs, and nothing reaches its queue; its queue
    is no queue of lanes.toml's either (`--queue watch` is unknown)."""
    from lanekit.config import load_config
    from lanekit.state.paths import Paths

    with_watch = tmp_path / "watched.toml"
    with_watch.write_text(config.read_text() + '\n[watch]\ncommand = ["/bin/cat"]\n')
    code, out, err = invoke("enqueue", "watch", "-c", str(with_watch), input="{}")
    assert (code, out) == (2, "")
    assert "lane watch in watched.toml is lanekit's watchdog: it runs no jobs" in err
    assert "a lane that runs jobs: work, other" in err
    code, _, err = invoke("enqueue", "--queue", "watch", "-c", str(with_watch), input="{}")
    assert code == 2
    assert "no queue named 'watch'" in err
    watchdog = load_config(with_watch, Paths.from_env()).lanes["watch"].queue.dir
    assert not (watchdog / "queue").exists() or not any((watchdog / "queue").iterdir())


# --- run ----------------------------------------------------------------------------------


def test_run_with_config_drains_the_lane(config: Path) -> None:
    """`lanekit run -c lanes.toml LANE` runs the lane now and summarises on stderr."""
    queue = inbox(config)
    for n in range(3):
        queue.enqueue({"n": n})
    code, out, err = invoke("run", "work", "-c", str(config))
    assert (code, out) == (0, "")
    assert err == "work: 3 done, 0 failed, 0 requeued, 0 skipped, 0 recovered (empty, exit 0)\n"
    assert queue.counts().done == 3
    log = list(read_events(config.parent / "inbox" / "logs" / "work.log"))
    assert [e["event"] for e in log].count("done") == 3


def test_run_exit_code_follows_the_jobs(config: Path, tmp_path: Path) -> None:
    """A failing job makes `lanekit run` exit 1."""
    failing = config.read_text().replace("sys.exit(0)", "sys.exit(5)")
    (tmp_path / "failing.toml").write_text(failing)
    inbox(config).enqueue({"n": 1})
    code, _, err = invoke("run", "work", "-c", str(tmp_path / "failing.toml"))
    assert code == 1
    assert "1 requeued" in err


def test_run_refuses_config_and_snapshot(config: Path) -> None:
    """--config and --snapshot together are a usage error."""
    code, _, err = invoke("run", "work", "-c", str(config), "--snapshot", "/x.json")
    assert code == 2
    assert "not both" in err


def test_run_through_main_with_config_uses_typer(config: Path) -> None:
    """`python -m lanekit run -c FILE LANE` (what a developer types) takes the typer path."""
    inbox(config).enqueue({"n": 1})
    proc = subprocess.run(
        [sys.executable, "-m", "lanekit", "run", "-c", str(config), "work"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 done" in proc.stderr


# --- recover ------------------------------------------------------------------------------


def _dead_claim(config: Path) -> str:
    """A job claimed by a process that has since died (a real, reaped child)."""
    queue = inbox(config)
    job_id = queue.enqueue({"n": 1})
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lanekit.queue.directory.backend import Queue\n"
        f"claim = Queue(Path({str(queue.dir)!r})).claimer().claim()\n"
        "assert claim is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    return job_id


def test_recover_dry_run_moves_nothing(config: Path) -> None:
    """--dry-run lists the dead claim and what would happen, and leaves it where it is."""
    job_id = _dead_claim(config)
    code, out, err = invoke("recover", "--dry-run", "-c", str(config))
    assert (code, err) == (0, "")
    assert job_id in out
    assert "owner-dead" in out
    assert "would move 1 claim" in out
    assert inbox(config).counts().claimed == 1


def test_recover_gives_dead_claims_back(config: Path) -> None:
    """Without --dry-run the dead claim goes back to queue/; a second recover finds nothing."""
    job_id = _dead_claim(config)
    code, out, _ = invoke("recover", "work", "-c", str(config))
    assert code == 0
    assert "moved 1 claim" in out
    assert (config.parent / "inbox" / "queue" / f"{job_id}.json").exists()
    code, out, _ = invoke("recover", "-c", str(config))
    assert (code, out) == (0, "no dead claims\n")


def test_recover_leaves_live_claims_alone(config: Path) -> None:
    """A claim whose runner is alive (holding its lock) is not touched."""
    queue = inbox(config)
    queue.enqueue({"n": 1})
    claim = queue.claimer().claim()
    assert claim is not None
    try:
        code, out, _ = invoke("recover", "-c", str(config))
        assert (code, out) == (0, "no dead claims\n")
    finally:
        queue.complete(claim)


# --- jobs ---------------------------------------------------------------------------------


def test_enqueue_jsonl_prints_ids_and_reports_bad_lines(config: Path, tmp_path: Path) -> None:
    """`enqueue LANE --jsonl FILE`: one job per line, each new id on stdout in input order, a
    bad line named FILE:LINE on stderr with its hint, exit 1, the good lines enqueued."""
    source = tmp_path / "jobs.jsonl"
    source.write_text('{"job": "a"}\n[1]\n{"job": "b", "key": "b-1"}\n', encoding="utf-8")
    code, out, err = invoke(
        "enqueue", "work", "--jsonl", str(source), "--id-field", "key", "-c", str(config)
    )
    assert code == 1
    ids = out.split()
    assert len(ids) == 2 and ids[1] == "b-1"
    assert sorted(ids) == sorted(p.stem for p in inbox(config).queue.iterdir())
    assert err.splitlines()[0] == f"error: {source}:2: job payload is a JSON array, not an object"
    assert err.splitlines()[-1] == (
        f"{source}: enqueued 2 jobs; line 2 not enqueued: fix and enqueue just those again"
    )


def test_enqueue_jsonl_from_stdin_and_option_clashes(config: Path) -> None:
    """`--jsonl -` reads stdin (exit 0 when every line is good); FILE or --id with --jsonl, and
    --id-field without it, are usage errors (exit 2)."""
    code, out, _ = invoke("enqueue", "work", "--jsonl", "-", "-c", str(config), input='{"n":1}\n')
    assert (code, len(out.split())) == (0, 1)
    assert invoke("enqueue", "work", "x.json", "--jsonl", "-", "-c", str(config))[0] == 2
    assert invoke("enqueue", "work", "--jsonl", "-", "--id", "a", "-c", str(config))[0] == 2
    assert invoke("enqueue", "work", "--id-field", "a", "-c", str(config), input="{}")[0] == 2


def _fill(config: Path, count: int) -> list[str]:
    queue = inbox(config)
    return [queue.enqueue({"n": n}) for n in range(count)]


def test_jobs_json_pages_newest_first(config: Path) -> None:
    """--json: schema 1, `items` newest first, `page` with every paging key; pages cover all
    jobs exactly once."""
    ids = _fill(config, 7)
    seen: list[str] = []
    for number in (1, 2, 3):
        code, out, _ = invoke(
            "jobs", "work", "--json", "--per-page", "3", "--page", str(number), "-c", str(config)
        )
        assert code == 0
        data = json.loads(out)
        assert data["schema"] == 1
        assert set(data["page"]) == PAGE_KEYS
        assert data["page"]["page"] == number
        assert data["page"]["total"] == 7
        assert data["page"]["total_pages"] == 3
        seen += [item["job_id"] for item in data["items"]]
    assert seen == list(reversed(ids))
    first = json.loads(invoke("jobs", "work", "--json", "--per-page", "3", "-c", str(config))[1])
    assert first["page"] == {
        "page": 1,
        "per_page": 3,
        "total": 7,
        "total_pages": 3,
        "has_prev": False,
        "has_next": True,
        "prev_page": 0,
        "next_page": 2,
        "from": 1,
        "to": 3,
    }


def test_jobs_paging_edges(config: Path) -> None:
    """Empty queue: no items, page 1; a page past the end clamps to the last page;
    --per-page 0 returns everything on one page."""
    data = json.loads(invoke("jobs", "work", "--json", "-c", str(config))[1])
    assert data["items"] == []
    assert (data["page"]["total"], data["page"]["from"], data["page"]["to"]) == (0, 0, 0)
    _fill(config, 5)
    data = json.loads(
        invoke("jobs", "work", "--json", "--per-page", "2", "--page", "99", "-c", str(config))[1]
    )
    assert (data["page"]["page"], data["page"]["from"], data["page"]["to"]) == (3, 5, 5)
    assert len(data["items"]) == 1
    data = json.loads(invoke("jobs", "work", "--json", "--per-page", "0", "-c", str(config))[1])
    assert (len(data["items"]), data["page"]["total_pages"]) == (5, 1)


def test_jobs_state_filter_and_table(config: Path) -> None:
    """--state keeps one state; the table ends with a footer naming the next page."""
    ids = _fill(config, 3)
    assert invoke("run", "work", "-c", str(config))[0] == 0
    _fill(config, 2)
    data = json.loads(
        invoke("jobs", "work", "--json", "--state", "succeeded", "-c", str(config))[1]
    )
    assert sorted(item["job_id"] for item in data["items"]) == sorted(ids)
    assert {item["state"] for item in data["items"]} == {"succeeded"}
    code, out, _ = invoke("jobs", "work", "--per-page", "2", "-c", str(config))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "LANE", "STATE", "ATTEMPTS", "UPDATED", "ERROR"]
    assert lines[-1] == "1-2 of 5 (page 1/3); next: --page 2"
    code, out, _ = invoke("jobs", "work", "--state", "bogus", "-c", str(config))
    assert code == 2


def test_jobs_state_filter_that_matches_nothing_says_what_else_is_there(config: Path) -> None:
    """`jobs --state failed` with none failed says so and counts the other jobs (issue 12
    item 10: it said "no jobs in lane work's queue" with 5 jobs in it)."""
    code, out, _ = invoke("jobs", "work", "--state", "failed", "-c", str(config))
    assert (code, out) == (0, "no failed jobs (0 in other states)\n")
    _fill(config, 3)
    assert invoke("run", "work", "-c", str(config))[0] == 0
    _fill(config, 2)
    code, out, _ = invoke("jobs", "work", "--state", "failed", "-c", str(config))
    assert (code, out) == (0, "no failed jobs (5 in other states)\n")
    code, out, _ = invoke("jobs", "work", "--state", "running", "-c", str(config))
    assert out == "no running jobs (5 in other states)\n"
    empty = invoke("jobs", "work", "--state", "failed", "--json", "-c", str(config))[1]
    assert json.loads(empty)["page"]["total"] == 0


# --- job ----------------------------------------------------------------------------------


def test_job_detail_of_a_failed_job(config: Path) -> None:
    """`job LANE ID` shows state, file and the failure reason; --json has record and error."""
    (config.parent / "inbox" / "queue" / "broken.json").write_text("[]")
    assert invoke("run", "work", "-c", str(config))[0] == 1
    code, out, _ = invoke("job", "work", "broken", "-c", str(config))
    assert code == 0
    assert "state:      failed" in out
    assert str(config.parent / "inbox" / "failed" / "broken.json") in out
    assert "array" in out
    data = json.loads(invoke("job", "work", "broken", "--json", "-c", str(config))[1])
    assert data["schema"] == 1
    assert (data["job_id"], data["state"]) == ("broken", "failed")
    assert data["path"].endswith("failed/broken.json")
    assert data["record"]["state"] == "failed"
    assert "array" in data["error"]


def test_job_detail_of_a_done_job(config: Path) -> None:
    """A succeeded job shows its record (attempts, lane) and its file in done/."""
    [job_id] = _fill(config, 1)
    invoke("run", "work", "-c", str(config))
    data = json.loads(invoke("job", "work", job_id, "--json", "-c", str(config))[1])
    assert data["state"] == "succeeded"
    assert "/done/" in data["path"]
    assert (data["record"]["attempts"], data["record"]["lane"]) == (1, "work")
    assert data["error"] is None


def test_job_not_found_and_bad_id(config: Path) -> None:
    """An unknown id exits 1 with a hint; an id that is not a valid id exits 2."""
    code, out, err = invoke("job", "work", "nope", "-c", str(config))
    assert (code, out) == (1, "")
    assert "no job 'nope'" in err
    assert "lanekit jobs work" in err
    code, _, err = invoke("job", "work", "../etc", "-c", str(config))
    assert code == 2


def test_job_detail_of_a_queued_job_without_record(config: Path) -> None:
    """A job a foreign producer dropped into queue/ has no record yet; `job` says so."""
    (config.parent / "inbox" / "queue" / "foreign.json").write_text("{}")
    code, out, _ = invoke("job", "work", "foreign", "-c", str(config))
    assert code == 0
    assert "state:      queued" in out


@pytest.mark.slow
def test_sigint_in_foreground_run_restores_the_job(config: Path, tmp_path: Path) -> None:
    """Ctrl-C during `lanekit run -c ...` (SIGINT to the runner) puts the job back, exit 75."""
    started = tmp_path / "started"
    slow = config.read_text().replace(
        '"import sys; sys.exit(0)"',
        f"\"import time; open({str(started)!r}, 'w').close(); time.sleep(60)\"",
    )
    (tmp_path / "slow.toml").write_text(slow)
    [job_id] = _fill(config, 1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lanekit", "run", "-c", str(tmp_path / "slow.toml"), "work"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 75
    assert "1 requeued" in err
    assert (config.parent / "inbox" / "queue" / f"{job_id}.json").exists()
    record = RecordStore(config.parent / "inbox" / "records").read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 0)


def test_job_shows_the_stderr_tail_and_when_the_retry_is_due(tmp_path: Path) -> None:
    """A job that failed once and waits for its retry: `lanekit job` shows the reason with
    the job's last stderr lines, and when the retry is due (text and --json)."""
    queue_dir = tmp_path / "inbox"
    Queue(queue_dir).ensure()
    config = tmp_path / "lanes.toml"
    failing = "import sys; print('disk on fire', file=sys.stderr); sys.exit(4)"
    config.write_text(
        CONFIG.format(queue=queue_dir, spare=tmp_path / "spare", python=sys.executable).replace(
            "import sys; sys.exit(0)", failing
        )
    )
    Queue(tmp_path / "spare").ensure()
    job_id = Queue(queue_dir).enqueue({"n": 1})
    code, _, err = invoke("run", "work", "-c", str(config))
    assert code == 1, err
    code, out, err = invoke("job", "work", job_id, "-c", str(config))
    assert code == 0, err
    assert "retry due:" in out
    assert "last error:\n  exit 4\n  disk on fire\n" in out
    code, out, _ = invoke("job", "work", job_id, "--json", "-c", str(config))
    document = json.loads(out)
    assert document["retry_at"].endswith("Z")
    assert document["record"]["error"] == "exit 4\ndisk on fire"


def test_enqueue_for_later_waits_in_delayed_and_jobs_shows_when(config: Path) -> None:
    """`enqueue --delay` (or --at) puts the job in delayed/ with its time: a run leaves it,
    `jobs` shows it `delayed` with when it is due, `--state delayed` lists only it and
    `--state queued` only the ready ones."""
    code, out, err = invoke("enqueue", "work", "--delay", "2h", "-c", str(config), input="{}")
    assert code == 0, err
    later = out.strip()
    _fill(config, 1)
    assert [p.name.split(".")[0] for p in (config.parent / "inbox" / "delayed").iterdir()] == [
        later
    ]
    code, out, _ = invoke("jobs", "work", "--state", "delayed", "-c", str(config))
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "LANE", "STATE", "ATTEMPTS", "UPDATED", "DUE", "ERROR"]
    assert lines[1].split()[:3] == [later, "-", "delayed"]
    data = json.loads(invoke("jobs", "work", "--json", "--state", "queued", "-c", str(config))[1])
    assert later not in {item["job_id"] for item in data["items"]}
    assert invoke("run", "work", "-c", str(config))[0] == 0
    data = json.loads(invoke("jobs", "work", "--json", "-c", str(config))[1])
    assert [d["job_id"] for d in data["delayed"]] == [later]
    detail = invoke("job", "work", later, "-c", str(config))[1]
    assert "due:" in detail and "retry due" not in detail
    code, _, err = invoke(
        "enqueue", "work", "--at", "09:00", "--delay", "1h", "-c", str(config), input="{}"
    )
    assert code == 2 and "either --at or --delay" in err


def test_enqueue_jsonl_takes_each_lines_time_from_its_field(config: Path, tmp_path: Path) -> None:
    """--jsonl with --delay-field: a line with the field waits that long, one without it is
    queued at once (or waits for --delay, for every line without the field)."""
    source = tmp_path / "jobs.jsonl"
    source.write_text('{"n": 1, "wait": "1h"}\n{"n": 2}\n', encoding="utf-8")
    code, out, err = invoke(
        "enqueue", "work", "--jsonl", str(source), "--delay-field", "wait", "-c", str(config)
    )
    assert code == 0, err
    first, second = out.split()
    queue = inbox(config)
    assert [p.name.split(".")[0] for p in queue.delayed.iterdir()] == [first]
    assert (queue.queue / f"{second}.json").exists()
    code, _, err = invoke("enqueue", "work", "--delay-field", "wait", "-c", str(config), input="{}")
    assert code == 2 and "go with --jsonl" in err


TALKER = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.talk"

[queues.inbox]
dir = "{queue}"

[lanes.talk]
queue = "inbox"
command = ["/bin/sh", "-c", "echo said $LANEKIT_JOB_ID; echo complained >&2; exit 3", "{{job}}"]
schedule = "@daily"
max_attempts = 2
"""


def test_each_jobs_output_is_kept_per_job_and_shown_by_job_output(tmp_path: Path) -> None:
    """A job's stdout and stderr go to its own output file, one header per attempt, with no
    other job's lines; `job --output` prints it, `job` and `job --json` say where it is, and
    purging the job removes it."""
    queue = tmp_path / "inbox"
    Queue(queue, backoff_base=0).ensure()
    config = tmp_path / "lanes.toml"
    config.write_text(TALKER.format(queue=queue), encoding="utf-8")
    for job_id in ("j1", "j2"):
        assert invoke("enqueue", "talk", "--id", job_id, "-c", str(config), input="{}")[0] == 0
    assert invoke("run", "talk", "-c", str(config))[0] == 1
    assert invoke("requeue", "j1", "-c", str(config))[0] == 0
    assert invoke("run", "talk", "-c", str(config))[0] == 1
    code, out, _ = invoke("job", "talk", "j1", "--output", "-c", str(config))
    assert code == 0
    lines = out.splitlines()
    assert [line.split(", started")[0] for line in lines if line.startswith("---")] == [
        "--- attempt 1, lane talk",
        "--- attempt 2, lane talk",
    ]
    assert sorted(line for line in lines if not line.startswith("---")) == sorted(
        ["said j1", "complained"] * 2
    )
    assert "j2" not in out
    data = json.loads(invoke("job", "talk", "j1", "--json", "-c", str(config))[1])
    assert data["output"] == str(queue / "logs" / "output" / "j1.log")
    assert "(--output prints it)" in invoke("job", "talk", "j1", "-c", str(config))[1]
    assert (queue / "logs" / "output" / "j2.log").exists()
    Queue(queue).purge(keep_done=0, keep_failed=0, now=time.time() + 10)
    assert not (queue / "logs" / "output" / "j1.log").exists()


def test_enqueue_jsonl_says_the_good_lines_are_in_and_a_rerun_would_repeat_them(
    config: Path, tmp_path: Path
) -> None:
    """The help says a bad line is not enqueued but the good ones are (not that the batch
    "enqueues nothing"); without --id-field the summary warns that re-running the whole file
    would enqueue the good lines a second time."""
    assert "enqueues nothing" not in " ".join(invoke("enqueue", "--help")[1].split())
    source = tmp_path / "jobs.jsonl"
    source.write_text('{"job": "a"}\n[1]\n', encoding="utf-8")
    code, _, err = invoke("enqueue", "work", "--jsonl", str(source), "-c", str(config))
    assert code == 1
    assert err.splitlines()[-1] == (
        f"{source}: enqueued 1 job; line 2 not enqueued: fix and enqueue just those again "
        "(re-running the whole file would enqueue the other lines a second time, under new "
        "ids; with --id-field a re-run refuses the ids already there)"
    )


def test_jobs_of_a_shared_queue_say_so(tmp_path: Path) -> None:
    """`jobs LANE` lists the jobs of the lane's queue: when another lane drains it too, the
    table says which lane ran each (LANE) and a last line says the queue is shared."""
    queue = tmp_path / "inbox"
    Queue(queue).ensure()
    config = tmp_path / "lanes.toml"
    config.write_text(
        TALKER.format(queue=queue)
        + '\n[lanes.echo]\nqueue = "inbox"\ncommand = ["/bin/true", "{job}"]\n',
        encoding="utf-8",
    )
    assert invoke("enqueue", "talk", "-c", str(config), input="{}")[0] == 0
    code, out, err = invoke("jobs", "echo", "-c", str(config))
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["ID", "LANE"]
    assert out.splitlines()[-1].startswith("lane echo shares its queue with talk: these are all")
