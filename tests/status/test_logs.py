"""`lanekit logs`: last lines of a lane's logs, and following them across rotation. `follow`
is driven step by step: its `sleep` is replaced by a script of file changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lanekit.errors import LanekitError, UsageError
from lanekit.run.lanelog import LaneLog, rotate_if_needed
from lanekit.state.paths import Paths
from lanekit.status.logs import LogsRequest, LogStream, follow, lane_logs, tail

LANES = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.logs"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["true"]
schedule = ["40 10 * * *"]
"""


def write_lines(path: Path, lines: list[str]) -> None:
    """Append lines (each with a newline)."""
    with path.open("a") as handle:
        handle.write("".join(line + "\n" for line in lines))


def test_tail_returns_the_last_lines(tmp_path: Path) -> None:
    """The last n lines, oldest first, without newlines; across block boundaries too."""
    log = tmp_path / "x.log"
    write_lines(log, [f"line {i} " + "x" * 300 for i in range(100)])
    got = tail(log, 3)
    assert [line.split(" ")[:2] for line in got] == [["line", "97"], ["line", "98"], ["line", "99"]]
    assert tail(log, 0) == []
    assert len(tail(log, 500)) == 100


def test_tail_keeps_a_last_line_without_newline(tmp_path: Path) -> None:
    """A line still being written (no newline yet) is shown."""
    log = tmp_path / "x.log"
    log.write_text("one\ntwo\nthree")
    assert tail(log, 2) == ["two", "three"]


def test_tail_fills_up_from_rotated_files(tmp_path: Path) -> None:
    """With `rotated`, a short live log is topped up from log.1, log.2, oldest first."""
    log = tmp_path / "lane.log"
    (tmp_path / "lane.log.2").write_text("a\nb\n")
    (tmp_path / "lane.log.1").write_text("c\nd\n")
    log.write_text("e\n")
    assert tail(log, 4, rotated=True) == ["b", "c", "d", "e"]
    assert tail(log, 4) == ["e"]


def scripted_sleep(
    steps: list[Callable[[], None]],
) -> tuple[Callable[[float], None], Callable[[], bool]]:
    """A `sleep` that performs the next scripted change instead of waiting, and a `stop` that
    is True once every change was made and seen."""
    pending = list(steps)
    done = {"flag": False}

    def sleep(_seconds: float) -> None:
        if pending:
            pending.pop(0)()
        else:
            done["flag"] = True

    return sleep, lambda: done["flag"]


def collect(lines: Iterator[str]) -> list[str]:
    """Everything a follow yields until it stops."""
    return list(lines)


def test_follow_prints_the_tail_then_new_lines(tmp_path: Path) -> None:
    """Like tail -f: the last lines first, then each line appended."""
    log = tmp_path / "x.log"
    write_lines(log, ["old 1", "old 2", "old 3"])
    sleep, stop = scripted_sleep(
        [lambda: write_lines(log, ["new 1"]), lambda: write_lines(log, ["new 2"])]
    )
    assert collect(follow(log, lines=2, stop=stop, sleep=sleep)) == [
        "old 2",
        "old 3",
        "new 1",
        "new 2",
    ]


def test_follow_across_rotation(tmp_path: Path) -> None:
    """The runner rotates the lane log (rename to .1, new file): follow reads what was left in
    the old file, then continues in the new one from its start."""
    log = tmp_path / "lane.log"
    lanelog = LaneLog(log, "funnel", clock=lambda: 0.0)
    lanelog.event("start", n=1)

    def rotate() -> None:
        lanelog.event("finish", n=1)  # written to the old file just before it is rotated
        assert rotate_if_needed(log, max_bytes=1, keep=3)
        lanelog.event("start", n=2)  # a fresh file

    def finish() -> None:
        lanelog.event("finish", n=2)

    sleep, stop = scripted_sleep([rotate, finish])
    got = [line.split(" event=")[1] for line in follow(log, lines=5, stop=stop, sleep=sleep)]
    assert got == ["start n=1", "finish n=1", "start n=2", "finish n=2"]
    assert (tmp_path / "lane.log.1").exists()


def test_follow_across_two_rotations_in_one_poll(tmp_path: Path) -> None:
    """Two rotations between two looks: the file in between (now lane.log.1, the old one
    lane.log.2) is read whole, in order, before the new file; nothing is skipped."""
    log = tmp_path / "lane.log"
    lanelog = LaneLog(log, "funnel", clock=lambda: 0.0)
    lanelog.event("start", n=1)

    def rotate_twice() -> None:
        lanelog.event("finish", n=1)
        assert rotate_if_needed(log, max_bytes=1, keep=3)
        lanelog.event("start", n=2)  # only ever in the middle file
        lanelog.event("finish", n=2)
        assert rotate_if_needed(log, max_bytes=1, keep=3)
        lanelog.event("start", n=3)

    sleep, stop = scripted_sleep([rotate_twice])
    got = [line.split(" event=")[1] for line in follow(log, lines=5, stop=stop, sleep=sleep)]
    assert got == ["start n=1", "finish n=1", "start n=2", "finish n=2", "start n=3"]


def test_follow_after_truncation(tmp_path: Path) -> None:
    """A log truncated in place (`: > log`) is read again from its start."""
    log = tmp_path / "err.log"
    write_lines(log, ["a long line before truncation"])

    def truncate_and_write() -> None:
        log.write_text("")
        write_lines(log, ["after"])

    sleep, stop = scripted_sleep([truncate_and_write])
    assert collect(follow(log, lines=5, stop=stop, sleep=sleep)) == [
        "a long line before truncation",
        "after",
    ]


def test_follow_waits_for_a_log_that_does_not_exist_yet(tmp_path: Path) -> None:
    """Before the lane's first run there is no log: follow waits and shows it from the start."""
    log = tmp_path / "later.log"
    sleep, stop = scripted_sleep([lambda: None, lambda: write_lines(log, ["first"])])
    assert collect(follow(log, lines=5, stop=stop, sleep=sleep)) == ["first"]


def test_follow_holds_back_a_partial_line(tmp_path: Path) -> None:
    """A line is printed once complete, not in pieces."""
    log = tmp_path / "x.log"
    log.write_text("")

    def part() -> None:
        with log.open("a") as handle:
            handle.write("hel")

    sleep, stop = scripted_sleep([part, lambda: write_lines(log, ["lo"])])
    assert collect(follow(log, lines=0, stop=stop, sleep=sleep)) == ["hello"]


@pytest.fixture
def lane_paths(tmp_path: Path) -> tuple[Paths, Path]:
    """Paths and a lanes.toml with one lane whose logs live under ~/notes/logs."""
    paths = Paths.under(tmp_path)
    config = tmp_path / "lanes.toml"
    config.write_text(LANES)
    (paths.home / "notes" / "logs").mkdir(parents=True)
    return paths, config


def test_lane_logs_chooses_the_file(lane_paths: tuple[Paths, Path]) -> None:
    """Default: the event log; --err / --out: launchd's files of the job."""
    paths, config = lane_paths
    logs = paths.home / "notes" / "logs"
    write_lines(logs / "funnel.log", ["ts=1 event=start"])
    write_lines(logs / "funnel.err.log", ["Traceback"])
    write_lines(logs / "funnel.out.log", ["hello"])
    for stream, expected in (
        (LogStream.EVENTS, ["ts=1 event=start"]),
        (LogStream.ERR, ["Traceback"]),
        (LogStream.OUT, ["hello"]),
    ):
        request = LogsRequest("funnel", stream=stream, config_path=config)
        assert list(lane_logs(request, paths, {})) == expected


def test_lane_logs_without_a_log_yet(lane_paths: tuple[Paths, Path]) -> None:
    """No log file: an error that says the lane has not run and how to run it."""
    paths, config = lane_paths
    with pytest.raises(LanekitError) as caught:
        lane_logs(LogsRequest("funnel", config_path=config), paths, {})
    assert "no log yet for lane funnel" in caught.value.message
    assert "lanekit try funnel" in caught.value.hint


def test_lane_logs_unknown_lane_and_bad_count(lane_paths: tuple[Paths, Path]) -> None:
    """An unknown lane and a negative -n are usage errors."""
    paths, config = lane_paths
    with pytest.raises(UsageError):
        lane_logs(LogsRequest("nope", config_path=config), paths, {})
    with pytest.raises(UsageError):
        lane_logs(LogsRequest("funnel", lines=-1, config_path=config), paths, {})


def test_lane_logs_follow_is_a_generator(lane_paths: tuple[Paths, Path]) -> None:
    """`-f` returns the follow generator over the chosen file."""
    paths, config = lane_paths
    err = paths.home / "notes" / "logs" / "funnel.err.log"
    write_lines(err, ["one"])
    sleep, stop = scripted_sleep([lambda: write_lines(err, ["two"])])
    request = LogsRequest("funnel", stream=LogStream.ERR, follow=True, config_path=config)
    assert list(lane_logs(request, paths, {}, stop=stop, sleep=sleep)) == ["one", "two"]
