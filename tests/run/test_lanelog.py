"""The lane log: logfmt lines that round-trip, never interleave, and rotate safely."""

from __future__ import annotations

import multiprocessing
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.run.lanelog import (
    LaneLog,
    format_line,
    format_ts,
    format_value,
    log_files,
    parse_line,
    read_between,
    read_events,
    rotate_if_needed,
    rotated_name,
)

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.-0123456789", min_size=1, max_size=12).filter(
    lambda k: k not in {"ts", "lane", "event"}
)
VALUES = st.text(max_size=80).filter(lambda v: "\x00" not in v)


def test_event_line_shape(tmp_path: Path) -> None:
    """An event is one line: ts, lane and event first, then the fields in the order given."""
    log = LaneLog(tmp_path / "logs" / "funnel.log", "funnel", clock=lambda: 1758105600.25)
    log.event("claimed", job="j-1", attempt=1)
    text = (tmp_path / "logs" / "funnel.log").read_text()
    assert text == "ts=2025-09-17T10:40:00.250Z lane=funnel event=claimed job=j-1 attempt=1\n"


def test_values_with_spaces_quotes_and_equals_are_quoted() -> None:
    """Values that would break the key=value grammar are quoted and escaped; plain ones are not."""
    assert format_value("plain") == "plain"
    assert format_value("two words") == '"two words"'
    assert format_value('say "hi"') == '"say \\"hi\\""'
    assert format_value("a=b") == '"a=b"'
    assert format_value("") == '""'
    assert format_value("line\nbreak") == '"line\\nbreak"'
    assert format_value("back\\slash") == '"back\\\\slash"'


def test_none_fields_are_left_out() -> None:
    """A field whose value is None does not appear in the line."""
    line = format_line("T", "l", "done", {"job": "x", "exit": None})
    assert parse_line(line) == {"ts": "T", "lane": "l", "event": "done", "job": "x"}


def test_bad_key_is_a_programming_error() -> None:
    """Keys are restricted so every line stays parseable; a bad key raises ValueError."""
    with pytest.raises(ValueError, match="logfmt key"):
        format_line("T", "l", "done", {"bad key": 1})


def test_long_values_are_cut() -> None:
    """A huge error text is cut so one event stays one short line."""
    value = format_value("x" * 5000)
    assert len(value) <= 1000
    assert value.endswith("...")


@settings(max_examples=150)
@given(lane=VALUES, fields=st.dictionaries(KEYS, VALUES, max_size=6))
def test_format_then_parse_round_trips(lane: str, fields: dict[str, str]) -> None:
    """Whatever the values contain, parse_line(format_line(...)) gives them back unchanged."""
    line = format_line("2026-01-01T00:00:00.000Z", lane, "claimed", dict(fields))
    assert line.count("\n") == 1
    parsed = parse_line(line)
    assert parsed == {
        "ts": "2026-01-01T00:00:00.000Z",
        "lane": lane,
        "event": "claimed",
        **fields,
    }


@pytest.mark.parametrize(
    "text",
    ["no-equals-here", 'key="unterminated', "a=1 junk b=2", 'k="bad \\q escape"'],
)
def test_malformed_lines_raise(text: str) -> None:
    """A line that is not logfmt raises ValueError instead of giving a half-parsed dict."""
    with pytest.raises(ValueError, match="logfmt"):
        parse_line(text)


def test_blank_line_parses_to_empty() -> None:
    """A blank line (trailing newline at end of file) is no event."""
    assert parse_line("\n") == {}


def test_format_ts_is_fixed_width_utc() -> None:
    """Timestamps have a fixed width so they sort and compare as strings."""
    assert format_ts(0) == "1970-01-01T00:00:00.000Z"
    assert format_ts(1.5) == "1970-01-01T00:00:01.500Z"


def test_write_failure_goes_to_on_error(tmp_path: Path) -> None:
    """With on_error, a log that cannot be written is reported to the callback, not raised."""
    (tmp_path / "blocker").write_text("a file where the log dir should be")
    seen: list[OSError] = []
    log = LaneLog(tmp_path / "blocker" / "lane.log", "l", on_error=seen.append)
    log.event("start")
    assert len(seen) == 1
    with pytest.raises(OSError):
        LaneLog(tmp_path / "blocker" / "lane.log", "l").event("start")


def test_log_never_builds_a_missing_tree(tmp_path: Path) -> None:
    """The log creates its own directory, but not a missing parent of it (a queue on an
    unmounted volume must fail, not be rebuilt on the boot disk)."""
    seen: list[OSError] = []
    LaneLog(tmp_path / "gone" / "logs" / "lane.log", "l", on_error=seen.append).event("start")
    assert len(seen) == 1
    assert not (tmp_path / "gone").exists()
    LaneLog(tmp_path / "logs" / "lane.log", "l").event("start")
    assert (tmp_path / "logs" / "lane.log").exists()


def _append_many(path: str, worker: int, count: int) -> None:
    log = LaneLog(Path(path), f"w{worker}")
    for i in range(count):
        log.event("claimed", job=f"{worker}-{i}", note="x" * 300)


@pytest.mark.slow
def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    """Four processes appending at once: every line parses and no line is lost."""
    path = tmp_path / "lane.log"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 300)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    jobs = [parse_line(line)["job"] for line in path.read_text().splitlines()]
    assert sorted(jobs) == sorted(f"{w}-{i}" for w in range(4) for i in range(300))


def test_rotate_keeps_n_files(tmp_path: Path) -> None:
    """Each rotation shifts log -> log.1 -> log.2 ...; only `keep` rotated copies remain."""
    path = tmp_path / "lane.log"
    for generation in range(5):
        path.write_text(f"gen{generation}\n" * 10)
        assert rotate_if_needed(path, max_bytes=10, keep=3) is True
    assert not path.exists()
    assert [p.name for p in log_files(path, rotated=True)] == [
        "lane.log.3",
        "lane.log.2",
        "lane.log.1",
    ]
    assert rotated_name(path, 1).read_text().startswith("gen4")
    assert rotated_name(path, 3).read_text().startswith("gen2")
    assert not rotated_name(path, 4).exists()


def test_rotate_leaves_small_or_missing_logs_alone(tmp_path: Path) -> None:
    """No rotation when the log is within the limit, missing, or max_bytes is 0."""
    path = tmp_path / "lane.log"
    assert rotate_if_needed(path, 10, 3) is False
    path.write_text("short\n")
    assert rotate_if_needed(path, 100, 3) is False
    path.write_text("x" * 500)
    assert rotate_if_needed(path, 0, 3) is False
    assert path.read_text() == "x" * 500


def test_rotate_with_keep_zero_drops_the_log(tmp_path: Path) -> None:
    """keep=0 removes the oversized log instead of keeping a copy."""
    path = tmp_path / "lane.log"
    path.write_text("x" * 50)
    assert rotate_if_needed(path, 10, 0) is True
    assert log_files(path, rotated=True) == []


def test_str_paths_work_like_paths(tmp_path: Path) -> None:
    """The runner's fast path passes plain strings: logging (creating logs/) and rotation
    behave exactly as with Path objects."""
    path = str(tmp_path / "logs" / "lane.log")
    LaneLog(path, "l", clock=lambda: 0.0).event("start", pid=1)
    assert rotate_if_needed(path, max_bytes=10, keep=2) is True
    LaneLog(path, "l", clock=lambda: 0.0).event("finish")
    rotated = [p.name for p in log_files(Path(path), rotated=True)]
    assert rotated == ["lane.log.1", "lane.log"]
    assert [e["event"] for e in read_events(Path(path), rotated=True)] == ["start", "finish"]


def _rotate_and_log(path: str, worker: int, rounds: int) -> None:
    log = LaneLog(Path(path), f"w{worker}")
    for i in range(rounds):
        rotate_if_needed(Path(path), max_bytes=2000, keep=1000)
        log.event("claimed", job=f"{worker}-{i}")


@pytest.mark.slow
def test_concurrent_rotation_loses_no_lines(tmp_path: Path) -> None:
    """Several processes rotating and appending at once: every line survives in some file."""
    path = tmp_path / "lane.log"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_rotate_and_log, args=(str(path), w, 200)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    jobs = [event["job"] for event in read_events(path, rotated=True)]
    assert sorted(jobs) == sorted(f"{w}-{i}" for w in range(4) for i in range(200))
    assert len(log_files(path, rotated=True)) > 1


def test_read_events_in_order_across_rotations(tmp_path: Path) -> None:
    """read_events(rotated=True) yields the oldest rotated file first and the live log last."""
    path = tmp_path / "lane.log"
    ticks = iter(range(1000, 2000))
    log = LaneLog(path, "l", clock=lambda: float(next(ticks)))
    for i in range(6):
        log.event("claimed", job=str(i))
        if i % 2:
            rotate_if_needed(path, max_bytes=1, keep=10)
    assert [e["job"] for e in read_events(path, rotated=True)] == [str(i) for i in range(6)]
    assert [e["job"] for e in read_events(path)] == []


def test_read_events_since_and_skips_torn_lines(tmp_path: Path) -> None:
    """`since` keeps only newer events (datetime or ts string); unparseable lines are skipped."""
    path = tmp_path / "lane.log"
    ticks = iter([100.0, 200.0, 300.0])
    log = LaneLog(path, "l", clock=lambda: next(ticks))
    log.event("start")
    with path.open("a") as handle:
        handle.write('ts=x lane=l event="torn\n')
    log.event("claimed", job="a")
    log.event("finish")
    since = datetime.fromtimestamp(200, tz=UTC)
    assert [e["event"] for e in read_events(path, since)] == ["claimed", "finish"]
    assert [e["event"] for e in read_events(path, format_ts(300))] == ["finish"]
    assert [e["event"] for e in read_events(path)] == ["start", "claimed", "finish"]


def test_log_file_mode(tmp_path: Path) -> None:
    """The lane log is created 0600 even under umask 000: doctor and `lanekit logs` read it as
    the same user, nobody else needs to."""
    old = os.umask(0o000)
    try:
        LaneLog(tmp_path / "lane.log", "l").event("start")
    finally:
        os.umask(old)
    assert (tmp_path / "lane.log").stat().st_mode & 0o777 == 0o600


def _busy_log(path: Path, start: float, lines: int, step: float) -> list[float]:
    """`lines` events `step` seconds apart from `start`, appended as runners append them."""
    clock = [start]
    log = LaneLog(path, "busy", clock=lambda: clock[0])
    stamps = []
    for n in range(lines):
        clock[0] = start + n * step
        stamps.append(clock[0])
        log.event("claimed", job=f"j{n}", attempt=1, error="x" * (n % 50))
    return stamps


@pytest.mark.parametrize(
    ("begin", "end"),
    [(0.0, 1.0), (1e9, 3e9), (1.7e9, 1.7e9 + 5000), (1.7e9 + 1234.5, 1.7e9 + 86400)],
)
def test_read_between_equals_a_full_read_filtered(tmp_path: Path, begin: float, end: float) -> None:
    """The span read by binary search holds exactly the events a full read keeps for it, in
    order, across a rotated copy and the live log (empty spans before and after included)."""
    path = tmp_path / "busy.log"
    _busy_log(path, 1.7e9, 3000, 7.0)
    os.replace(path, rotated_name(path, 1))
    _busy_log(path, 1.7e9 + 21000, 3000, 7.0)
    floor, ceiling = format_ts(begin), format_ts(end)
    expected = [f for f in read_events(path, rotated=True) if floor <= f["ts"] < ceiling]
    assert list(read_between(path, begin, end)) == expected


@pytest.mark.parametrize("begin", [0.0, 1.7e9 + 1234.5, 1.7e9 + 22000.0, 3e9])
def test_read_between_without_an_end_reads_to_the_log_end(tmp_path: Path, begin: float) -> None:
    """No end: every event from `begin` on, across the rotated copy and the live log, as a
    full read filtered by its start alone keeps them (none when `begin` is after the last)."""
    path = tmp_path / "busy.log"
    _busy_log(path, 1.7e9, 3000, 7.0)
    os.replace(path, rotated_name(path, 1))
    _busy_log(path, 1.7e9 + 21000, 3000, 7.0)
    floor = format_ts(begin)
    expected = [f for f in read_events(path, rotated=True) if floor <= f["ts"]]
    assert list(read_between(path, begin)) == expected


def test_read_between_tolerates_lines_a_little_out_of_order(tmp_path: Path) -> None:
    """Runners take their timestamp just before their one write, so lines land slightly out
    of order; a line a minute late at the span's edge is still found, and torn lines skipped."""
    path = tmp_path / "busy.log"
    _busy_log(path, 1.7e9, 1006, 10.0)  # up to 10050 s
    late = format_line(format_ts(1.7e9 + 9990.5), "busy", "done", {"job": "late"})
    with path.open("a", encoding="utf-8") as handle:
        handle.write('ts=2023-11-14T22:13:20.000Z lane=busy event=torn job="unterminated\n')
        handle.write(late)  # taken at 9990.5, written a minute later
    _busy_log(path, 1.7e9 + 10060, 1000, 10.0)
    got = [f["job"] for f in read_between(path, 1.7e9 + 9985, 1.7e9 + 9995)]
    assert got == ["j999", "late"]


def test_read_between_reads_awkward_bytes_as_a_full_read_does(tmp_path: Path) -> None:
    """read_between decodes a chunk at a time: a character cut by a chunk's edge, bytes that
    are not UTF-8 and CRLF line ends read as read_events reads them."""
    path = tmp_path / "busy.log"
    for pad in range(40):
        lines = [
            format_line(
                format_ts(1.7e9 + n),
                "busy",
                "claimed",
                {"job": f"j{n}", "note": "x" * pad + "é" * 300},
            )
            for n in range(400)
        ]
        data = "".join(lines).encode("utf-8")
        if data[65535] == 0xC3:  # the first 64 KiB chunk ends inside an é
            break
    else:
        pytest.fail("no padding put a chunk's edge inside a character")
    data += f"ts={format_ts(1.7e9 + 500)} lane=busy event=odd note=".encode() + b"\xff\xfe\r\n"
    data += format_line(format_ts(1.7e9 + 501), "busy", "done", {"job": "crlf"}).encode()[:-1]
    data += b"\r\n"
    path.write_bytes(data)
    expected = list(read_events(path))
    assert len(expected) == 402
    assert list(read_between(path, 0.0, 3e9)) == expected


_READ_ALL = """
import sys
from pathlib import Path
from lanekit.run.lanelog import read_between, read_events
from lanekit.status.logs import tail
path = Path(sys.argv[1])
print(len(list(read_events(path, rotated=True))), len(list(read_between(path, 0.0))),
      len(tail(path, 5, rotated=True)))
"""


def test_readers_pass_over_a_fifo_or_a_symlink_planted_at_the_log(tmp_path: Path) -> None:
    """A FIFO at the live log and a symlink at a rotated copy (pointing at a real log) are
    not the lane's log: read_events and read_between read neither, and `lanekit logs`' tail
    follows only the symlink (it shows StandardOutPath too, which launchd opens through
    one); all return at once (a FIFO blocked every reader: doctor, status, timeline, logs).
    The same files as regular files are read, so the check can fail."""
    import subprocess
    import sys

    elsewhere = tmp_path / "elsewhere.log"
    _busy_log(elsewhere, 1.7e9, 3, 1.0)
    path = tmp_path / "lane.log"
    os.mkfifo(path)
    rotated_name(path, 1).symlink_to(elsewhere)
    argv = [sys.executable, "-c", _READ_ALL, str(path)]
    planted = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert planted.stdout.split() == ["0", "0", "3"]
    path.unlink()
    rotated_name(path, 1).unlink()
    _busy_log(path, 1.7e9, 3, 1.0)
    regular = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert regular.stdout.split() == ["3", "3", "3"]
