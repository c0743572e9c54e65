"""The one supervision loop: each policy knob stops and waits for a real process group as said."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from lanekit.system.processes import Supervision, group_alive, signal_group, supervise

LEADER = Supervision(group=False, kill_grace=5.0, stop_grace=5.0, poll=0.05)
GROUP = Supervision(
    group=True,
    kill_grace=5.0,
    stop_grace=5.0,
    kill_signal=signal.SIGUSR1,
    leftover_grace=0.3,
    poll=1.0,
)
DEAF = "trap '' TERM; exec sleep 30"
"""A job that ignores SIGTERM (an ignored signal stays ignored across exec)."""

started: list[int] = []


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    yield
    for job in started:
        signal_group(job, signal.SIGKILL)
    started.clear()


def _start(script: str, stderr: int = 2) -> int:
    job = os.posix_spawn(
        "/bin/sh",
        ["/bin/sh", "-c", script],
        dict(os.environ),
        setpgroup=0,
        file_actions=[(os.POSIX_SPAWN_DUP2, stderr, 2)],
    )
    started.append(job)
    return job


def test_the_leaders_policy_returns_at_its_exit_and_leaves_its_group_alone() -> None:
    """launchd's: the leader's exit ends the wait; what it left runs on (AbandonProcessGroup)."""
    job = _start("sleep 30 & exit 3")
    ended = supervise(job, LEADER)
    assert os.waitstatus_to_exitcode(ended.status) == 3
    assert group_alive(job)
    assert not (ended.stopped or ended.timed_out or ended.requested)


def test_the_groups_policy_waits_for_the_leftovers_and_kills_them_after_their_grace() -> None:
    """The run watcher's: it returns only once the group is gone, SIGKILLing a leftover that
    ignores SIGTERM once the leftover grace (not the kill grace) has passed."""
    job = _start("trap '' TERM; sleep 30 & exit 0")
    began = time.monotonic()
    ended = supervise(job, GROUP)
    assert os.waitstatus_to_exitcode(ended.status) == 0
    assert 0.3 <= time.monotonic() - began < 5.0
    reaped = time.monotonic() + 2.0  # a SIGKILLed orphan's zombie lasts until init reaps it
    while group_alive(job) and time.monotonic() < reaped:
        time.sleep(0.01)
    assert not group_alive(job)


def test_a_passed_deadline_stops_the_job_and_sigkills_it_after_the_kill_grace() -> None:
    """SIGTERM at the deadline; a job that ignores it gets SIGKILL kill_grace later."""
    job = _start(DEAF)
    policy = Supervision(group=False, kill_grace=0.3, stop_grace=None, poll=0.05)
    ended = supervise(job, policy, deadline=time.monotonic() + 0.2)
    assert ended.timed_out
    assert os.waitstatus_to_exitcode(ended.status) == -signal.SIGKILL


def test_a_stop_signal_on_the_wake_pipe_is_passed_on_and_the_kill_signal_kills() -> None:
    """A stop read from the wake-up pipe goes to the job as it came; the kill signal is
    SIGKILL at once, whatever grace is left."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    try:
        os.write(wake_w, bytes([signal.SIGTERM]))
        ended = supervise(_start("exec sleep 30"), LEADER, wake=wake_r)
        assert ended.stopped
        assert os.waitstatus_to_exitcode(ended.status) == -signal.SIGTERM
        os.write(wake_w, bytes([signal.SIGUSR1]))
        began = time.monotonic()
        ended = supervise(_start(DEAF), GROUP, wake=wake_r)
        assert os.waitstatus_to_exitcode(ended.status) == -signal.SIGKILL
        assert time.monotonic() - began < 5.0
    finally:
        os.close(wake_r)
        os.close(wake_w)


def test_a_request_stops_the_job_and_its_stderr_tail_is_kept() -> None:
    """`requested` saying yes (here: once the job wrote to stderr) is a SIGTERM; the job's
    stderr pipe is read into `kept`."""
    err_r, err_w = os.pipe()
    os.set_blocking(err_r, False)
    try:
        job = _start("echo bye >&2; exec sleep 30", stderr=err_w)
        os.close(err_w)
        kept = bytearray()
        policy = Supervision(group=True, kill_grace=5.0, stop_grace=5.0, poll=0.05)
        ended = supervise(job, policy, requested=lambda: bool(kept), capture=err_r, kept=kept)
    finally:
        os.close(err_r)
    assert ended.requested
    assert os.waitstatus_to_exitcode(ended.status) == -signal.SIGTERM
    assert bytes(kept) == b"bye\n"
