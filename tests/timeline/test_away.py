"""Two "hosts" (each its own HOME and state directory, each lanekit process told its own host
name) drain one queue on a real PostgreSQL server: each host's timeline draws its own runs
from its lane log and the other's jobs as the other's (text, JSON and the page), an orphaned
attempt (its holder's lease lapsed, another host recovered it) as orphaned."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lanekit.config import LaneSpec, load_config
from lanekit.errors import QueueError
from lanekit.queue.model import Claim
from lanekit.queue.paging import AttemptSpan
from lanekit.state.paths import Paths
from lanekit.timeline import build
from lanekit.timeline.build import away_runs
from lanekit.timeline.layout import away_cells
from lanekit.timeline.model import AwayOutcome, AwayRun, LaneInfo, Window, build_timeline
from pglane import queue_of, setup
from pgserver import PgServer
from test_json_contracts import TIMELINE_AWAY_KEYS, contracts, problems

AS_HOST = (
    "import runpy, socket, sys\n"
    "name = sys.argv.pop(1)\n"
    "socket.gethostname = lambda: name\n"
    "runpy.run_module('lanekit', run_name='__main__', alter_sys=True)\n"
)
"""`python -c AS_HOST NAME ARGS...`: lanekit as run on a machine called NAME (the one thing
that differs between two machines that a test on one cannot give it for real)."""


def as_host(host: str, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", AS_HOST, host, *args],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def host_env(root: Path) -> dict[str, str]:
    """A second machine's environment: its own HOME, state directory and launchd domain."""
    (root / "home").mkdir(parents=True)
    return {
        **os.environ,
        "HOME": str(root / "home"),
        "LANEKIT_STATE_DIR": str(root / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(root / "state" / "emulator" / "LaunchAgents"),
    }


def test_each_host_draws_the_others_jobs_as_theirs(
    pg_server: PgServer, pg_schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = setup(pg_server, pg_schema, tmp_path)  # "mini" here: this test's own state dir
    mini = dict(os.environ)
    laptop = host_env(tmp_path / "laptop")
    as_host("laptop", laptop, "apply", "-c", str(config))
    queue = queue_of(pg_server, pg_schema, tmp_path)
    for job_id in ("a0", "a1"):
        queue.enqueue({}, job_id=job_id)
    as_host("mini", mini, "run", "publish")
    for job_id in ("b0", "b1"):
        queue.enqueue({}, job_id=job_id)
    as_host("laptop", laptop, "run", "publish")
    # The laptop claims one more and vanishes mid-job (its lease lapses, as 30 s later):
    # the mini's next run recovers it (an orphaned attempt of the laptop's) and runs it.
    queue.enqueue({}, job_id="lost")
    monkeypatch.setattr(socket, "gethostname", lambda: "laptop")
    taken: Claim | None = queue.claimer(lane="publish").claim()
    monkeypatch.undo()
    assert taken is not None and taken.job_id == "lost"
    queue.session.rows(
        f"UPDATE \"{pg_schema}\".jobs SET lease_expires = now() - interval '1 s' WHERE id = %s",
        ("lost",),
    )
    as_host("mini", mini, "run", "publish")

    seen_by_mini = json.loads(as_host("mini", mini, "timeline", "--json", "-c", str(config)).stdout)
    seen_by_laptop = json.loads(
        as_host("laptop", laptop, "timeline", "--json", "-c", str(config)).stdout
    )
    [mini_row] = seen_by_mini["lanes"]
    [laptop_row] = seen_by_laptop["lanes"]

    def away(row: dict[str, object]) -> list[tuple[str, str, str]]:
        return [(a["host"], a["job"], a["outcome"]) for a in row["away"]]  # type: ignore[attr-defined]

    def own_jobs(row: dict[str, object]) -> list[str]:
        return [job for run in row["runs"] for job in run["jobs"]]  # type: ignore[attr-defined]

    assert own_jobs(mini_row) == ["a0", "a1", "lost"]
    assert away(mini_row) == [
        ("laptop", "b0", "succeeded"),
        ("laptop", "b1", "succeeded"),
        ("laptop", "lost", "orphaned"),
    ]
    assert own_jobs(laptop_row) == ["b0", "b1"]
    assert away(laptop_row) == [
        ("mini", "a0", "succeeded"),
        ("mini", "a1", "succeeded"),
        ("mini", "lost", "succeeded"),
    ]
    assert {a["lane"] for a in mini_row["away"] + laptop_row["away"]} == {"publish"}
    traced = json.loads(
        as_host("mini", mini, "timeline", "--json", "--job", "lost", "-c", str(config)).stdout
    )
    assert [(a["host"], a["outcome"]) for a in traced["job"]["attempt_history"]] == [
        ("laptop", "orphaned"),
        ("mini", "succeeded"),
    ]
    shown: set[str] = set()
    for document in (seen_by_mini, seen_by_laptop, traced):
        found, paths = problems(contracts()["timeline"], document)
        assert not found
        shown |= paths
    assert shown >= TIMELINE_AWAY_KEYS

    text = as_host("mini", mini, "timeline", "--width", "100", "-c", str(config)).stdout
    lines = text.splitlines()
    [lane_line] = [line for line in lines if line.startswith("publish ")]
    [laptop_line] = [line for line in lines if line.startswith("@laptop")]
    assert lines.index(laptop_line) == lines.index(lane_line) + 1  # under its lane
    # All in one minute: one column, where the orphaned attempt outranks the successes.
    assert laptop_line.split()[1:] == ["O", "3j"]
    assert "@ host: a line of jobs another host ran, not this one" in " ".join(lines)
    assert "job lost (attempt 1) on host laptop: orphaned (its lease lapsed)" in text
    assert "@mini" not in text  # its own runs are on the lane's line, from its log
    trace = as_host("mini", mini, "timeline", "--job", "lost", "-c", str(config)).stdout
    assert "  attempt 1 on host laptop (pid " in trace and "): orphaned, " in trace

    page = tmp_path / "day.html"
    as_host("laptop", laptop, "timeline", "--html", str(page), "-c", str(config))
    html = page.read_text(encoding="utf-8")
    assert len(re.findall(r'<rect class="away succeeded" [^>]*data-host="mini"', html)) == 3
    assert 'data-host="laptop"' not in html
    assert "a job ran on another host (not this machine's; hover for the host)" in html
    assert "3 jobs on other hosts" in " ".join(re.sub(r"<[^>]+>", " ", html).split())


# -- the pure parts: which attempts go where, and how a line of them is drawn ---------------

UNIT_CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]

[queues.shared]
backend = "postgres"
dsn = "host=127.0.0.1 dbname=lanes"

[queues.local]
dir = "{queues}/local"

[lanes.publish]
queue = "shared"
command = ["/bin/true", "{{job}}"]
every = "5m"

[lanes.draft]
queue = "shared"
command = ["/bin/true", "{{job}}"]
every = "5m"

[lanes.tidy]
queue = "local"
command = ["/bin/true", "{{job}}"]
every = "5m"
"""

NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _span(job: str, lane: str | None, host: str, outcome: str | None, minute: int) -> AttemptSpan:
    started = (NOON + timedelta(minutes=minute)).timestamp()
    ended = None if outcome is None else started + 30
    return AttemptSpan(job, lane, 1, host, 42, outcome, started, ended)


class _Server:
    """A postgres queue as the timeline sees it: attempts_between, counted."""

    def __init__(self, spans: list[AttemptSpan], down: bool = False) -> None:
        self.spans, self.down = spans, down
        self.asked: list[str] = []

    def open(self, location: object) -> _Server:
        self.asked.append(str(location))
        return self

    def attempts_between(self, start: float, end: float) -> list[AttemptSpan]:
        if self.down:
            raise QueueError("server down", "start it")
        return [s for s in self.spans if s.started < end and (s.ended or end) >= start]


def _lanes(tmp_path: Path) -> list[LaneSpec]:
    path = tmp_path / "lanes.toml"
    path.write_text(UNIT_CONFIG.format(queues=tmp_path), encoding="utf-8")
    config = load_config(path, Paths.from_env())
    return [config.lanes[name] for name in ("publish", "draft", "tidy")]


def test_other_hosts_attempts_go_to_their_lanes_row_never_this_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One query per server queue (a directory queue is not asked); this host's attempts
    (also as `name.local`) are left to its lane log; an attempt under a lane not shown goes to
    the first row of its queue; one still running is drawn up to now."""
    server = _Server(
        [
            _span("mine", "publish", "Mini.local", "succeeded", 1),
            _span("p1", "publish", "laptop", "succeeded", 2),
            _span("d1", "draft", "laptop", "orphaned", 3),
            _span("x1", "elsewhere-only", "linux", "failed", 4),
            _span("live", "draft", "linux", None, 5),
        ]
    )
    monkeypatch.setattr(build, "open_queue", server.open)
    window = Window(NOON, NOON + timedelta(hours=1), NOON + timedelta(minutes=30))
    found, notes = away_runs(_lanes(tmp_path), window, "mini")
    assert len(server.asked) == 1 and notes == ()
    assert {lane: [(r.job, r.host, r.outcome) for r in runs] for lane, runs in found.items()} == {
        "publish": [
            ("p1", "laptop", AwayOutcome.SUCCEEDED),
            ("x1", "linux", AwayOutcome.FAILED),
        ],
        "draft": [
            ("d1", "laptop", AwayOutcome.ORPHANED),
            ("live", "linux", AwayOutcome.RUNNING),
        ],
    }
    assert found["draft"][1].end == window.now


def test_a_server_that_cannot_be_asked_leaves_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "open_queue", _Server([], down=True).open)
    window = Window(NOON, NOON + timedelta(hours=1), NOON)
    found, notes = away_runs(_lanes(tmp_path), window, "mini")
    assert found == {}
    assert notes == (
        "queue shared could not be asked (server down): runs on other hosts not shown",
    )


def _away(job: str, start: int, end: int, outcome: AwayOutcome) -> AwayRun:
    return AwayRun(
        "laptop", "publish", job, 1, 42,
        NOON + timedelta(minutes=start), NOON + timedelta(minutes=end), outcome,
    )  # fmt: skip


def test_a_host_line_keeps_the_worst_outcome_of_a_shared_column() -> None:
    window = Window(NOON, NOON + timedelta(minutes=10), NOON + timedelta(hours=1))
    cells = away_cells(
        [
            _away("a", 0, 4, AwayOutcome.SUCCEEDED),
            _away("b", 3, 3, AwayOutcome.ORPHANED),
            _away("c", 8, 30, AwayOutcome.RUNNING),
        ],
        window,
        10,
    )
    assert cells == [AwayOutcome.SUCCEEDED] * 3 + [AwayOutcome.ORPHANED] + [
        AwayOutcome.SUCCEEDED,
        None,
        None,
        None,
        AwayOutcome.RUNNING,
        AwayOutcome.RUNNING,
    ]


def test_the_model_keeps_only_the_away_runs_that_touch_the_window() -> None:
    window = Window(NOON, NOON + timedelta(hours=1), NOON + timedelta(hours=2))
    inside = _away("in", 10, 11, AwayOutcome.SUCCEEDED)
    before = _away("before", -90, -70, AwayOutcome.SUCCEEDED)
    timeline = build_timeline(
        [],
        [LaneInfo("publish", "shared"), LaneInfo("draft", "shared")],
        window,
        read_to_now=True,
        away={"publish": [inside, before]},
    )
    assert [row.away for row in timeline.rows] == [(inside,), ()]
    assert timeline.rows[0].away_hosts == ("laptop",)
    assert timeline.rows[0].runs == ()  # never one of this machine's runs
