"""status: the lane-state vocabulary as a table, exit decoding, status() over launchd and queue."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from fakes import FakeLaunchd
from lanekit.config import Config, load_config
from lanekit.queue.directory.backend import Queue
from lanekit.schedule import describe_schedule
from lanekit.service.exits import describe_exit
from lanekit.service.launchd import ListEntry, ServiceInfo
from lanekit.state.paths import Paths
from lanekit.status.lanes import LaneFacts, LaneState, lane_state, status

RUN, SCH, IDLE, ERR, NL, DIS = (
    LaneState.RUNNING,
    LaneState.SCHEDULED,
    LaneState.IDLE,
    LaneState.ERROR,
    LaneState.NOT_LOADED,
    LaneState.DISABLED,
)

# loaded, disabled, pid, last_exit, has_schedule -> state
STATE_TABLE = [
    (False, False, None, None, True, NL),
    (False, False, None, 1, False, NL),
    (False, True, None, None, True, DIS),
    (False, True, None, 0, False, DIS),
    (False, False, 123, None, True, NL),  # a pid without a loaded job cannot be trusted
    (True, False, 123, None, True, RUN),
    (True, False, 123, 1, False, RUN),  # modern list shows the previous status while running
    (True, False, 123, -9, True, RUN),
    (True, True, 123, 0, True, RUN),  # disabling does not stop a run in progress
    (True, True, None, 0, True, DIS),
    (True, True, None, 1, True, DIS),
    (True, False, None, 1, True, ERR),
    (True, False, None, 78, False, ERR),
    (True, False, None, -15, True, ERR),
    (True, False, None, 75, True, LaneState.STOPPED),  # stopped: its jobs went back (issue 35)
    (True, True, None, 75, True, DIS),
    (True, False, None, 0, True, SCH),
    (True, False, None, None, True, SCH),
    (True, False, None, 0, False, IDLE),
    (True, False, None, None, False, IDLE),
]


@pytest.mark.parametrize(
    ("loaded", "disabled", "pid", "last_exit", "has_schedule", "expected"), STATE_TABLE
)
def test_lane_state_table(
    loaded: bool,
    disabled: bool,
    pid: int | None,
    last_exit: int | None,
    has_schedule: bool,
    expected: LaneState,
) -> None:
    """Each combination of launchd facts maps to exactly one state, with a fixed precedence:
    not loaded > running > disabled > stopped (exit 75) > error > scheduled > idle."""
    facts = LaneFacts(
        loaded=loaded, disabled=disabled, pid=pid, last_exit=last_exit, has_schedule=has_schedule
    )
    assert lane_state(facts) is expected


def test_state_vocabulary_is_closed() -> None:
    """The JSON and table output use exactly these seven strings."""
    assert [s.value for s in LaneState] == [
        "running",
        "scheduled",
        "idle",
        "error",
        "stopped",
        "not-loaded",
        "disabled",
    ]


@pytest.mark.parametrize(
    ("last_exit", "text"),
    [
        (None, "never exited"),
        (0, "exit code 0"),
        (1, "exit code 1 (some jobs failed)"),
        (3, "exit code 3"),
        (69, "exit code 69 (environment unusable, see the lane log)"),
        (75, "exit code 75 (stopped by a signal, jobs restored)"),
        (78, "exit code 78 (EX_CONFIG: launchd could not start the job)"),
        (127, "exit code 127 (command not found)"),
        (-15, "killed by SIGTERM"),
        (-9, "killed by SIGKILL"),
        (-200, "killed by signal 200"),
    ],
)
def test_describe_exit(last_exit: int | None, text: str) -> None:
    """launchctl's last exit status is decoded into words (exit code, signal name, EX_CONFIG)."""
    assert describe_exit(last_exit) == text


# -- status() over FakeLaunchd and a real queue -------------------------------------------------

A, B, C = "com.example.s.alpha", "com.example.s.beta", "com.example.s.gamma"


def _config(paths: Paths) -> Config:
    text = '[defaults]\nlabel_prefix = "com.example.s"\n[queues.q]\ndir = "~/q"\n'
    lanes = (("alpha", 'schedule = "0 3 * * *"'), ("beta", 'every = "15m"'), ("gamma", ""))
    for name, when in lanes:
        text += f'[lanes.{name}]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n{when}\n'
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_config(path, paths)


def test_status_reports_each_lane_from_one_list_call(paths: Paths) -> None:
    """One list() for all lanes, print() only for loaded ones; state, pid, runs, last exit,
    schedule words and next fire per lane, in lanes.toml order."""
    config = _config(paths)
    fake = FakeLaunchd()
    fake.add_job(A, runs=4)
    pid = fake.start(A)
    fake.add_job(B, last_exit=78, runs=1)
    now = datetime(2026, 9, 17, 1, 0)
    rows = status(config, paths, fake, now=now)
    assert [c.op for c in fake.calls].count("list") == 1
    assert [c for c in fake.calls if c.op == "print"] == [("print", A), ("print", B)]
    alpha, beta, gamma = rows
    assert (alpha.state, alpha.pid, alpha.runs) == (LaneState.RUNNING, pid, 5)
    assert alpha.next_fire == datetime(2026, 9, 17, 3, 0)
    assert alpha.schedule == describe_schedule(config.lanes["alpha"].schedule)
    assert (beta.state, beta.last_exit) == (LaneState.ERROR, 78)
    assert beta.last_exit_text == "exit code 78 (EX_CONFIG: launchd could not start the job)"
    assert (beta.next_fire, beta.interval) == (None, 900)
    assert (gamma.state, gamma.runs, gamma.last_exit_text) == (
        LaneState.NOT_LOADED,
        None,
        "never exited",
    )


class PrintsMore(FakeLaunchd):
    """list() without a status (old launchctl), print() with the terminating signal."""

    def list(self) -> list[ListEntry]:
        return [replace(e, last_exit=None) for e in super().list()]

    def print(self, label: str) -> ServiceInfo:
        return replace(super().print(label), last_exit_code=None, last_signal=15, runs=2)


def test_status_takes_print_details_over_list(paths: Paths) -> None:
    """print's last terminating signal and runs are used when list() has no status."""
    config = _config(paths)
    fake = PrintsMore()
    fake.add_job(A, last_exit=-15)
    (alpha, *_) = status(config, paths, fake)
    assert (alpha.state, alpha.last_exit, alpha.runs) == (LaneState.ERROR, -15, 2)
    assert alpha.last_exit_text == "killed by SIGTERM"


def test_status_survives_a_job_vanishing_between_list_and_print(paths: Paths) -> None:
    """A job booted out between list() and print() (113) keeps the facts list() gave."""
    config = _config(paths)
    fake = FakeLaunchd()
    fake.add_job(A, last_exit=-9)
    fake.fail_next("print", 113)
    (alpha, *_) = status(config, paths, fake)
    assert (alpha.state, alpha.last_exit_text, alpha.runs) == (
        LaneState.ERROR,
        "killed by SIGKILL",
        None,
    )


def test_status_disabled_and_named_lanes(paths: Paths) -> None:
    """Disabled overrides come from one print_disabled(); naming lanes filters and orders."""
    config = _config(paths)
    fake = FakeLaunchd()
    fake.disabled.add(C)
    rows = status(config, paths, fake, ["gamma", "alpha"])
    assert [(r.lane, r.state) for r in rows] == [
        ("gamma", LaneState.DISABLED),
        ("alpha", LaneState.NOT_LOADED),
    ]


def test_status_queue_counts_and_oldest_claim(paths: Paths) -> None:
    """Queue counts (queued, delayed, claimed, done, failed) and the oldest claim's age."""
    config = _config(paths)
    queue = Queue(config.queues["q"].dir)
    queue.ensure()
    for n in range(3):
        queue.enqueue({"n": n})
    claim = queue.claimer().claim()
    assert claim is not None
    (row, *_) = status(config, paths, FakeLaunchd())
    q = row.queue
    assert (q.queued, q.delayed, q.claimed, q.done, q.failed, q.error) == (2, 0, 1, 0, 0, None)
    assert q.oldest_claim_age is not None
    assert q.oldest_claim_age >= 0


def test_status_of_a_missing_queue_says_why(paths: Paths) -> None:
    """Before apply created the queue, counts are empty and the reason is given."""
    (row, *_) = status(_config(paths), paths, FakeLaunchd())
    assert row.queue.queued is None
    assert row.queue.error


def test_next_fire_only_when_knowable(paths: Paths) -> None:
    """A lane that is not loaded has no next fire (nothing will start it); a StartInterval
    lane has none either (its timer's phase is not reported by launchd), only its interval."""
    config = _config(paths)
    now = datetime(2026, 9, 17, 1, 0)
    alpha, beta, _ = status(config, paths, FakeLaunchd(), now=now)
    assert (alpha.next_fire, alpha.interval) == (None, None)
    assert (beta.next_fire, beta.interval) == (None, None)
    fake = FakeLaunchd()
    fake.add_job(A)
    fake.add_job(B)
    alpha, beta, _ = status(config, paths, fake, now=now)
    assert (alpha.next_fire, alpha.interval) == (datetime(2026, 9, 17, 3, 0), None)
    assert (beta.next_fire, beta.interval) == (None, 900)
