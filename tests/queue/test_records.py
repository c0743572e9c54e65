"""Job records: strict reading (no duplicate keys, no trailing bytes), the file as a short log,
carry-over. The store that writes them is tests/test_recordstore.py."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.errors import ExitCode
from lanekit.queue.recordline import iso_utc
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.state.schemas import RECORD_SCHEMA as SCHEMA_VERSION
from lanekit.system.strictjson import strict_loads

GOOD = Record("j1", JobState.RUNNING, 2, "2026-07-26T12:00:00.000Z", "2026-07-26T12:00:31.000Z")

TEXT = st.text(max_size=40)
RECORDS = st.builds(
    Record,
    job_id=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=30),
    state=st.sampled_from(JobState),
    attempts=st.integers(min_value=0, max_value=10_000),
    queued_at=TEXT,
    updated_at=TEXT,
    lane=st.none() | TEXT,
    error=st.none() | TEXT,
)


@given(RECORDS)
@settings(max_examples=60)
def test_records_round_trip(record: Record) -> None:
    """Whatever is written reads back identical (any text in lane and error included)."""
    assert Record.from_bytes(record.to_bytes(), "r.json") == record


def _strictly_parsed(data: bytes) -> Record | None:
    """The record the strict JSON parser makes of `data` (None when it refuses it)."""
    try:
        return Record.from_dict(strict_loads(data), "r.json")
    except (RecordError, ValueError):
        return None


def _read(data: bytes) -> Record | None:
    """What Record.from_bytes makes of `data` (None when it refuses it)."""
    try:
        return Record.from_bytes(data, "r.json")
    except RecordError:
        return None


@given(RECORDS)
@settings(max_examples=60)
def test_written_bytes_are_what_json_dumps_makes(record: Record) -> None:
    """to_bytes formats the record itself: byte for byte json.dumps of to_dict(), plus a
    newline, for any text in the string fields."""
    assert record.to_bytes() == json.dumps(record.to_dict()).encode("utf-8") + b"\n"


@given(RECORDS, st.integers(min_value=0), st.binary(max_size=3), st.integers(0, 3))
@settings(max_examples=200)
def test_the_canonical_fast_read_agrees_with_the_strict_parser(
    record: Record, where: int, insert: bytes, delete: int
) -> None:
    """Records in the layout to_bytes writes are read without the general JSON parser; for
    any record, intact or damaged (bytes inserted or removed anywhere), from_bytes returns
    what the strict parser makes of the bytes, and refuses what it refuses."""
    data = record.to_bytes()
    assert _read(data) == _strictly_parsed(data) == record
    at = where % (len(data) + 1)
    damaged = data[:at] + insert + data[at + delete :]
    assert _read(damaged) == _strictly_parsed(damaged)


def test_written_form_is_one_line_with_every_field() -> None:
    """The file is one JSON line holding all fields, schema_version first."""
    data = GOOD.to_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert list(json.loads(data)) == [
        "schema_version",
        "job_id",
        "state",
        "attempts",
        "queued_at",
        "updated_at",
        "lane",
        "error",
    ]
    assert json.loads(data)["schema_version"] == SCHEMA_VERSION


def test_duplicate_keys_make_a_record_unreadable() -> None:
    """`state` twice (a torn write followed by another) is an error naming the file and key,
    never "last key wins" (which would roll succeeded back to running)."""
    data = b'{"schema_version":1,"job_id":"j1","state":"succeeded","attempts":1,'
    data += b'"queued_at":"a","updated_at":"b","state":"running"}'
    with pytest.raises(RecordError, match=r"records/j1\.json.*duplicate key 'state'") as info:
        Record.from_bytes(data, "records/j1.json")
    assert info.value.exit_code == ExitCode.FAILURE


@pytest.mark.parametrize(
    "tail",
    [
        GOOD.to_bytes(),  # a second record after the first
        b"\x00\x00\x00",  # zero fill after a crash
        b"}",
        b"x",
    ],
)
def test_trailing_bytes_make_a_record_unreadable(tail: bytes) -> None:
    """Anything but whitespace after the JSON value is rejected."""
    with pytest.raises(RecordError, match="Extra data"):
        Record.from_bytes(GOOD.to_bytes() + tail, "r.json")


def test_trailing_whitespace_is_fine() -> None:
    """The newline we write (and other whitespace) is not trailing garbage."""
    assert Record.from_bytes(GOOD.to_bytes() + b"  \n", "r.json") == GOOD


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not strict JSON"),
        (b"\xff\xfe{}", "not strict JSON"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b"[]", "JSON list, not an object"),
        (b"{}", "lacks schema_version, job_id, state"),
    ],
)
def test_not_a_record(data: bytes, reason: str) -> None:
    """Empty, non-UTF-8, NaN, non-object and empty-object files are unreadable, with the reason."""
    with pytest.raises(RecordError, match=reason):
        Record.from_bytes(data, "r.json")


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("state", "done", "state must be one of queued/running/succeeded/failed"),
        ("attempts", "1", "attempts must be a non-negative integer"),
        ("attempts", True, "attempts must be a non-negative integer"),
        ("attempts", -1, "attempts must be a non-negative integer"),
        ("job_id", 7, "job_id must be a string"),
        ("queued_at", None, "queued_at must be a string"),
        ("lane", 3, "lane must be a string or null"),
        ("error", ["x"], "error must be a string or null"),
        ("schema_version", 0, "schema_version must be a positive integer"),
        ("schema_version", SCHEMA_VERSION + 1, "newer than this lanekit"),
    ],
)
def test_invalid_fields_are_named(field: str, value: object, reason: str) -> None:
    """Each wrong field is reported by name with what was expected."""
    data = GOOD.to_dict()
    data[field] = value
    with pytest.raises(RecordError, match=reason):
        Record.from_bytes(json.dumps(data).encode(), "r.json")


def test_unknown_keys_are_ignored() -> None:
    """Extra keys (from a future minor addition) do not make a record unreadable."""
    data = {**GOOD.to_dict(), "extra": 1}
    assert Record.from_bytes(json.dumps(data).encode(), "r.json") == GOOD


PREV = Record("j", JobState.FAILED, 2, "Q0", "U0", lane="l0", error="exit 1")


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        # attempts and queued_at survive; state, error, updated_at are this event's
        (
            Record("j", JobState.RUNNING, 0, "Q1", "U1", lane="l1"),
            Record("j", JobState.RUNNING, 2, "Q0", "U1", lane="l1"),
        ),
        # a success drops the old error
        (
            Record("j", JobState.SUCCEEDED, 0, "Q1", "U1"),
            Record("j", JobState.SUCCEEDED, 2, "Q0", "U1", lane="l0"),
        ),
        # a new error replaces the old one
        (
            Record("j", JobState.QUEUED, 0, "Q1", "U1", error="exit 2"),
            Record("j", JobState.QUEUED, 2, "Q0", "U1", lane="l0", error="exit 2"),
        ),
    ],
)
def test_carry_over(new: Record, expected: Record) -> None:
    """Seed 003's rule: attempts and queued_at survive; state, error and updated_at do not;
    lane survives only when the new record names none."""
    assert new.carry_over(PREV) == expected


def test_carry_over_from_nothing_keeps_the_record() -> None:
    """A first record has nothing to inherit."""
    assert GOOD.carry_over(None) == GOOD


def test_carry_over_keeps_our_queued_at_when_the_old_one_is_empty() -> None:
    """An empty queued_at in an old record does not erase a known one."""
    prev = Record("j", JobState.QUEUED, 1, "", "U0")
    assert GOOD.carry_over(prev).queued_at == GOOD.queued_at


def test_iso_utc() -> None:
    """Timestamps are ISO 8601 UTC with milliseconds."""
    assert iso_utc(1758105600.25) == "2025-09-17T10:40:00.250Z"


# -- the record file as a short log (a settle appends its line) --------------------------------

QUEUED = Record("j1", JobState.QUEUED, 1, "2026-07-26T12:00:00.000Z", "2026-07-26T12:01:00.000Z")
DONE = Record("j1", JobState.SUCCEEDED, 2, "2026-07-26T12:00:00.000Z", "2026-07-26T12:02:00.000Z")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (GOOD.to_bytes(), GOOD),
        (GOOD.to_bytes() + b"\n\n  \n", GOOD),  # whitespace after the one line
        (GOOD.to_bytes() + QUEUED.to_bytes(), QUEUED),  # the last complete line
        (GOOD.to_bytes() + QUEUED.to_bytes()[:-1], QUEUED),  # complete, without its newline
        (GOOD.to_bytes() + QUEUED.to_bytes()[:40], GOOD),  # an append cut short
        (GOOD.to_bytes() + b"\x00" * 64, GOOD),  # zero fill where an append was cut short
        (GOOD.to_bytes() + DONE.to_bytes() + QUEUED.to_bytes(), DONE),  # success never undone
        (DONE.to_bytes() + GOOD.to_bytes()[:30], DONE),
    ],
)
def test_a_record_file_reads_as_its_last_complete_line(data: bytes, expected: Record) -> None:
    """The record is the last complete line; a line cut short is passed over; an earlier
    success is never rolled back by a later line."""
    assert Record.from_file(data, "r.json") == expected


@pytest.mark.parametrize(
    "data",
    [
        GOOD.to_bytes()[:40],  # one record cut short: nothing complete to fall back on
        GOOD.to_bytes() + b"{}\n",  # the last complete line is no record
        GOOD.to_bytes()[:-1] + QUEUED.to_bytes(),  # two records on one line
        b"garbage\n" + DONE.to_bytes()[:30],  # a cut line after a damaged one
    ],
)
def test_a_damaged_last_line_makes_the_record_unreadable(data: bytes) -> None:
    """Damage where the record is read is never guessed around."""
    with pytest.raises(RecordError, match=r"r\.json"):
        Record.from_file(data, "r.json")


def test_a_damaged_line_that_may_say_succeeded_is_not_passed_over() -> None:
    """A damaged earlier line that may hold a success makes the record unreadable: it might
    be the success the later line would roll back."""
    damaged = DONE.to_bytes().replace(b'"job_id"', b'"job_id": 1, "job_id"')
    with pytest.raises(RecordError, match="duplicate key"):
        Record.from_file(damaged + QUEUED.to_bytes(), "r.json")


@given(
    lines=st.lists(
        RECORDS.map(lambda r: dataclasses.replace(r, job_id="j1")), min_size=1, max_size=6
    ),
    torn=st.none() | st.floats(min_value=0.0, max_value=0.99),
    after=RECORDS.map(lambda r: dataclasses.replace(r, job_id="j1")),
)
@settings(max_examples=200)
def test_any_record_log_reads_as_its_newest_success_or_else_its_last_line(
    lines: list[Record], torn: float | None, after: Record
) -> None:
    """Whatever lines a record file holds, and wherever an append after them was cut short,
    it reads as its newest `succeeded` line, or else its last complete line."""
    data = b"".join(record.to_bytes() for record in lines)
    if torn is not None:
        cut = after.to_bytes()
        data += cut[: int(torn * (len(cut) - 1))]  # never the whole line
    successes = [record for record in lines if record.state is JobState.SUCCEEDED]
    expected = successes[-1] if successes else lines[-1]
    assert Record.from_file(data, "r.json") == expected
