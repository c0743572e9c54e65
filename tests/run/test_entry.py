"""The lane's process entry: the cheap empty run, its JSON reader, and the hand-over to the
full runner for everything else."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lanekit.queue.directory.backend import Queue
from lanekit.run.entry import empty_run, main
from lanekit.run.lanelock import LaneLock, lane_lock_path
from lanekit.run.lanelog import read_events
from lanekit.run.runner import run_lane
from lanekit.service.launchd.plist import ENTRYPOINT_CODE
from lanekit.state import snapshot as snapshot_module
from lanekit.state.schemas import SNAPSHOT_SCHEMA
from lanekit.state.snapshot import RunSpec
from lanekit.state.snapshot_schema import SNAPSHOT_KEYS, parse_json, read_snapshot

PY = sys.executable

HEAVY = (
    "json",
    "re",
    "dataclasses",
    "inspect",
    "pathlib",
    "enum",
    "signal",
    "contextlib",
    "typing",
    "runpy",
    "subprocess",
    "typer",
    "rich",
    "lanekit.errors",
    "lanekit.state.snapshot",
    "lanekit.run.runner",
    "lanekit.queue.directory.backend",
    "lanekit.queue.directory.state",
    "lanekit.queue.model",
)
"""Modules an empty run must not import (each costs start-up time on every scheduled run): the
queue's machinery among them (it peeks through lanekit.queue, which imports nothing, and the
directory backend's peek, which imports only os and time)."""


def make_spec(root: Path, **overrides: object) -> RunSpec:
    """A RunSpec for lane `work` on a fresh queue under `root`, written to root/snap.json."""
    queue_dir = root / "q"
    Queue(queue_dir).ensure()
    fields: dict[str, object] = {
        "lane": "work",
        "label": "test.work",
        "queue_dir": queue_dir,
        "command": ("true",),
        "max_jobs": 10,
        "max_seconds": None,
        "max_attempts": 3,
        "stale_after": 3600.0,
        "exit_timeout": 5,
        "log_path": queue_dir / "logs" / "work.log",
        "durable": False,
    }
    fields.update(overrides)
    spec = RunSpec(**fields)  # type: ignore[arg-type]
    spec.write(root / "snap.json")
    return spec


def args(root: Path, lane: str = "work") -> list[str]:
    """`LANE --snapshot root/snap.json`."""
    return [lane, "--snapshot", str(root / "snap.json")]


def logged(spec: RunSpec) -> list[dict[str, str]]:
    """The lane log's events without what differs between two runs (time, pid, duration)."""
    varying = {"ts", "pid", "duration"}
    return [{k: v for k, v in e.items() if k not in varying} for e in read_events(spec.log_path)]


def same(a: object, b: object) -> bool:
    """Equal and of the same types all the way down (1, 1.0 and True differ; so do 0.0 and
    -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# --- the JSON reader ----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
JSONISH = st.text(
    alphabet='{}[]",:0123456789-+.eE \t\n\\/ubfnrtalsd\x01\u00e9\ud800\udc00', max_size=24
)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 2]))
def test_json_round_trip(value: object, ascii_only: bool, indent: int | None) -> None:
    """Whatever json.dumps writes, parse_json reads back to the same value and types."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent, sort_keys=True)
    assert same(parse_json(text), value)


@settings(max_examples=300, deadline=None)
@given(text=JSONISH)
@example(text='"\\ud83d\\ude00"')
@example(text='"\\ud800\\u0041"')
@example(text='{"a": 1, "a": 2}')
@example(text=" -0.0 ")
def test_json_accepts_nothing_json_reads_differently(text: str) -> None:
    """On arbitrary JSON-like text parse_json either refuses (the caller then asks json) or
    gives exactly what json.loads gives."""
    try:
        mine = parse_json(text)
    except ValueError:
        return
    assert same(mine, json.loads(text))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('"\\udbff\\udfff"', "\U0010ffff"),
        ('"\\ud800"', "\ud800"),
        ('"\\u00e9\\n\\t\\/\\\\\\""', 'é\n\t/\\"'),
        ("-0", 0),
        ("1E+2", 100.0),
        (' {"a" : [1, 2.5, true, false, null]} \n', {"a": [1, 2.5, True, False, None]}),
    ],
)
def test_json_reads(text: str, value: object) -> None:
    """Escapes (surrogate pairs joined, lone surrogates kept), numbers and whitespace as JSON
    defines them."""
    assert same(parse_json(text), value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "NaN",
        "-Infinity",
        "[1,]",
        '{"a": 1,}',
        "01",
        "1.",
        ".5",
        "+1",
        "\u0663",
        '"tab\there"',
        '"\\x41"',
        '"\\u12"',
        "\ufeff{}",
        "{} x",
        "[1 2]",
        "{'a': 1}",
        '"open',
        "tru",
    ],
)
def test_json_refuses(text: str) -> None:
    """Anything that is not strict JSON is a ValueError (non-ASCII digits included)."""
    with pytest.raises(ValueError):
        parse_json(text)


# --- the snapshot --------------------------------------------------------------------------


def test_snapshot_keys_match_runspec() -> None:
    """The fast reader expects exactly the keys RunSpec.to_json writes, and the same schema."""
    names = {f.name for f in dataclasses.fields(RunSpec)}
    assert names | {"schema"} == SNAPSHOT_KEYS
    assert SNAPSHOT_SCHEMA == snapshot_module.SNAPSHOT_SCHEMA


def test_snapshot_reads_like_json(tmp_path: Path) -> None:
    """A snapshot apply wrote reads to what json reads."""
    spec = make_spec(
        tmp_path,
        command=("tool", "--name=é 😀", "{job}"),
        max_seconds=2.5,
        environment={"PATH": "/usr/bin:/bin", "NOTE": 'é \\ "q"'},
    )
    data = read_snapshot(str(tmp_path / "snap.json"))
    assert data is not None
    assert same(data, json.loads(spec.to_json()))


@pytest.mark.parametrize(
    "damage",
    ["missing", "not-json", "array", "extra-key", "missing-key", "schema", "empty-lane"],
)
def test_doubtful_snapshot_is_left_to_the_full_path(tmp_path: Path, damage: str) -> None:
    """A snapshot the fast reader cannot vouch for reads as None (the full path explains)."""
    spec = make_spec(tmp_path)
    path = tmp_path / "snap.json"
    data = json.loads(spec.to_json())
    if damage == "missing":
        path.unlink()
    elif damage == "not-json":
        path.write_text("{")
    elif damage == "array":
        path.write_text("[]")
    else:
        if damage == "extra-key":
            data["surprise"] = 1
        elif damage == "missing-key":
            del data["log_keep"]
        elif damage == "schema":
            data["schema"] = 2
        else:
            data["lane"] = ""
        path.write_text(json.dumps(data))
    assert empty_run(args(tmp_path)) is None


# --- the empty run -------------------------------------------------------------------------


def test_fast_and_full_empty_runs_log_the_same(tmp_path: Path) -> None:
    """On an empty queue the fast path logs exactly what the full run logs: start, then
    finish reason=empty exit=0 with zero counts."""
    spec = make_spec(tmp_path)
    assert empty_run(args(tmp_path)) == 0
    fast = logged(spec)
    spec.log_path.unlink()
    assert run_lane(spec).exit_code == 0
    assert fast == logged(spec)
    assert [e["event"] for e in fast] == ["start", "finish"]


def test_busy_lane_is_skipped_by_the_fast_path(tmp_path: Path) -> None:
    """With the lane lock held elsewhere, the empty run exits 0 logging skipped lane-busy."""
    spec = make_spec(tmp_path)
    lock = LaneLock(lane_lock_path(spec.queue_dir, "work"))
    assert lock.acquire()
    try:
        assert empty_run(args(tmp_path)) == 0
    finally:
        lock.release()
    assert logged(spec) == [{"lane": "work", "event": "skipped", "reason": "lane-busy"}]


@pytest.mark.parametrize(
    "case",
    ["queued", "delayed", "claimed", "no-snapshot-arg", "other-lane", "bad-usage", "no-logs"],
)
def test_anything_but_a_plain_empty_run_goes_to_the_full_path(tmp_path: Path, case: str) -> None:
    """Work to do, a snapshot to search for, a lane mismatch, bad usage or an unusable logs/:
    the fast path steps aside (None) having logged and moved nothing."""
    spec = make_spec(tmp_path)
    argv = args(tmp_path)
    if case in {"queue", "delayed", "claimed"}:
        (spec.queue_dir / case / "job.json").write_text("{}")
    elif case == "no-snapshot-arg":
        argv = ["work"]
    elif case == "other-lane":
        argv = args(tmp_path, lane="other")
    elif case == "bad-usage":
        argv = [*argv, "--bogus"]
    else:
        (spec.queue_dir / "logs").rmdir()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert empty_run(argv) is None
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_work_to_do_runs_through_the_full_path(tmp_path: Path) -> None:
    """main() hands a queue with a job to the runner, which runs and completes it."""
    spec = make_spec(tmp_path)
    queue = Queue(spec.queue_dir, durable=False)
    queue.enqueue({"n": 1})
    assert main(args(tmp_path)) == 0
    assert queue.counts().done == 1
    assert [e["event"] for e in logged(spec)] == ["start", "claimed", "done", "finish"]


def test_errors_are_reported_by_the_full_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged snapshot is the full path's usage error (exit 2), with its message."""
    (tmp_path / "snap.json").write_text("{")
    assert main(args(tmp_path)) == 2
    assert "lane snapshot is unreadable" in capsys.readouterr().err


def test_lanekit_run_by_hand_runs_jobs_as_launchd_would(tmp_path: Path) -> None:
    """`lanekit run LANE` typed in a terminal whose PATH has a tool the lane's `path` lacks:
    the job (that tool) cannot start, exactly as under launchd (exit 69, the job back in
    queue/, `requeued reason=cannot-start`); nothing else is printed than that error."""
    directory = tmp_path / "terminal-bin"
    directory.mkdir()
    tool = directory / "only-in-terminal"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    spec = make_spec(
        tmp_path,
        command=("only-in-terminal", "{job}"),
        environment={"PATH": "/usr/bin:/bin", "LANEKIT_LANE": "work"},
    )
    Queue(spec.queue_dir, durable=False).enqueue({"n": 1})
    terminal = {k: v for k, v in os.environ.items() if k != "XPC_SERVICE_NAME"}
    terminal["PATH"] = f"{directory}{os.pathsep}{os.environ['PATH']}"
    ran = subprocess.run(
        [PY, "-m", "lanekit", "run", *args(tmp_path)],
        capture_output=True,
        text=True,
        env=terminal,
        check=False,
    )
    assert ran.returncode == 69, ran.stderr
    assert ran.stdout == ""
    assert ran.stderr.startswith("error: lane work: cannot start 'only-in-terminal'")
    assert Queue(spec.queue_dir, durable=False).counts().queued == 1
    assert ("requeued", "cannot-start") in [(e["event"], e.get("reason")) for e in logged(spec)]


def _bare_modules() -> set[str]:
    """What this interpreter has imported after start-up alone (site, .pth hooks)."""
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_plist_entry_on_an_empty_queue_imports_nothing_heavy(tmp_path: Path) -> None:
    """The plist's `python -c ENTRYPOINT_CODE run LANE --snapshot PATH` on an empty queue
    exits 0 and imports none of json, re, dataclasses, pathlib, enum, signal, typing,
    lanekit.errors/snapshot/runner/queue (beyond what the bare interpreter already has):
    the import list, not a timing."""
    spec = make_spec(tmp_path)
    baseline = _bare_modules()
    argv = ["run", *args(tmp_path)]
    code = (
        "try:\n"
        f"    {ENTRYPOINT_CODE}\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code)\n"
        "    print(' '.join(sorted(sys.modules)))\n"
        "    raise SystemExit(0)\n"
    )
    proc = subprocess.run(
        [PY, "-c", "import sys\n" + code, *argv], capture_output=True, text=True, check=True
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "exit 0"
    loaded = set(lines[1].split())
    assert "lanekit.run.entry" in loaded
    assert sorted((loaded - baseline) & set(HEAVY)) == []
    assert [e["event"] for e in logged(spec)] == ["start", "finish"]
