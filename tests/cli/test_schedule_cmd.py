"""`lanekit schedule EXPR...`: entries, description and next fires, as text and as JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app

AFTER = ["--after", "2026-11-30T12:00:00"]


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is America/New_York (UTC-5 in winter) for the test."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["schedule", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_two_entries_and_next_fires() -> None:
    """The issue's example: two entries, the description and the next five fires, schema 1."""
    code, out, err = invoke("40 10,16 * * *", "--json", *AFTER)
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "schema": 1,
        "entries": [{"Hour": 10, "Minute": 40}, {"Hour": 16, "Minute": 40}],
        "description": "every day at 10:40 and 16:40",
        "next": [
            "2026-11-30T16:40:00",
            "2026-12-01T10:40:00",
            "2026-12-01T16:40:00",
            "2026-12-02T10:40:00",
            "2026-12-02T16:40:00",
        ],
        "warnings": [],
    }


def test_text_output() -> None:
    """Plain output lists the plist dicts, the description and the fires with weekdays."""
    code, out, err = invoke("40 10,16 * * *", "--next", "2", *AFTER)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "StartCalendarInterval (2 entries):",
        '  {"Hour": 10, "Minute": 40}',
        '  {"Hour": 16, "Minute": 40}',
        "runs: every day at 10:40 and 16:40",
        "next fires after 2026-11-30T12:00:00:",
        "  2026-11-30T16:40:00  Mon",
        "  2026-12-01T10:40:00  Tue",
    ]


@pytest.mark.parametrize(
    "exprs",
    [
        ["Hour=10,Minute=40", "{Hour=16, Minute=40}"],
        ["40 10 * * *", "Minute=40, Hour=16"],
        ["40 16 * * *", "40 10,16 * * *"],
    ],
)
def test_tables_and_cron_merge(exprs: list[str]) -> None:
    """Several EXPRs, cron or launchd tables, merge into one deduplicated calendar."""
    code, out, _ = invoke(*exprs, "--json", "--next", "1", *AFTER)
    assert code == 0
    data = json.loads(out)
    assert data["entries"] == [{"Hour": 10, "Minute": 40}, {"Hour": 16, "Minute": 40}]
    assert data["next"] == ["2026-11-30T16:40:00"]


def test_every_gives_interval() -> None:
    """every=15m (spaces allowed) is StartInterval: no entries, an `interval` key, fires
    counted from --after."""
    code, out, _ = invoke("every = 15m", "--json", "--next", "3", *AFTER)
    assert code == 0
    assert json.loads(out) == {
        "schema": 1,
        "entries": [],
        "interval": 900,
        "description": "every 15 minutes",
        "next": ["2026-11-30T12:15:00", "2026-11-30T12:30:00", "2026-11-30T12:45:00"],
        "warnings": [],
    }


def test_after_with_offset_is_converted_to_local_time(new_york: None) -> None:
    """An --after with an offset is converted to local wall time; output stays naive local."""
    code, out, _ = invoke("40 10 * * *", "--json", "--next", "1", "--after", "2026-11-30T12:00Z")
    assert code == 0
    assert json.loads(out)["next"] == ["2026-11-30T10:40:00"]
    code, out, _ = invoke("40 10 * * *", "--json", "--next", "1", "--after", "2026-11-30T12:00")
    assert json.loads(out)["next"] == ["2026-12-01T10:40:00"]


def test_default_after_is_now() -> None:
    """Without --after the fires are in the future and in order."""
    code, out, _ = invoke("* * * * *", "--json", "--next", "3")
    assert code == 0
    fires = json.loads(out)["next"]
    assert len(fires) == 3
    assert fires == sorted(fires)
    assert all(f.endswith(":00") for f in fires)


@pytest.mark.parametrize(
    ("args", "error", "hint"),
    [
        (["40 24 * * *"], 'error: "40 24 * * *": Hour 24 is out of range 0-23', "hint: hours"),
        (
            ["@reboot"],
            'error: "@reboot": @reboot cannot be expressed in launchd\'s StartCalendarInterval',
            "hint: use run_at_load",
        ),
        (
            ["0 0 * * * *"],
            'error: "0 0 * * * *": cron with 6 fields (seconds) cannot be expressed in launchd',
            "hint: drop the seconds",
        ),
        (
            ["40", "10", "*", "*", "*"],
            'error: "40": cron needs 5 fields (minute hour day month weekday), got 1',
            "hint: quote the whole expression",
        ),
        (
            ["0 0 * * *", "{Hour=3}"],
            'error: "{Hour=3}": {Hour=3} has no Minute, so launchd runs '
            "it every minute from 03:00 to 03:59",
            "hint: add Minute=0 to run once at 03:00",
        ),
        (
            ["Minut=5"],
            'error: "Minut=5": unknown calendar key "Minut"',
            'hint: did you mean "Minute"?',
        ),
        (["Hour=ten"], 'error: "Hour=ten": Hour value "ten" is not an integer', "hint: write"),
        (
            ["*/2 0-22 * * 1-5"],
            'error: "*/2 0-22 * * 1-5": expands to 3450 launchd entries; at most 1000 are allowed',
            "hint: launchd needs one dict",
        ),
        (["every=0"], 'error: "every=0": duration "0" must be more than zero', "hint: write"),
        (["every=1m", "every=2m"], "error: every= is given twice", "hint: give one"),
        (
            ["40 10 * * *", "every=15m"],
            "error: schedule and every are both set; launchd would "
            "run the lane on both, independently",
            "hint: keep one",
        ),
        (
            ["* * * * *", "--after", "tomorrow"],
            'error: --after "tomorrow" is not an ISO 8601 time',
            "hint: write e.g.",
        ),
    ],
)
def test_bad_input_is_one_error_line(args: list[str], error: str, hint: str) -> None:
    """Bad EXPR: exit 2, `error:` naming the expression plus `hint:`, nothing on stdout,
    no traceback."""
    code, out, err = invoke(*args)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0] == error
    assert lines[1].startswith(hint)
    assert "Traceback" not in err


LANES = """
[queues.inbox]
dir = "{root}/inbox"

[queues.other]
dir = "{root}/other"

[lanes.funnel]
queue = "inbox"
command = ["/bin/true"]
schedule = "40 10 * * *"

[lanes.trickle]
queue = "inbox"
command = ["/bin/true"]
schedule = "0 3 * * *"

[lanes.nightly]
queue = "other"
command = ["/bin/true"]
schedule = "40 10 * * mon"
"""


def test_schedule_shows_collisions_with_the_lanes_of_lanes_toml(tmp_path: Path) -> None:
    """--lane takes the schedule as that lane's: the other lanes of its queue that can start in
    the same minute are named (text and --json); --config alone compares with every lane; an
    unknown lane is refused naming the known ones."""
    config = tmp_path / "lanes.toml"
    config.write_text(LANES.format(root=tmp_path), encoding="utf-8")
    after = ("--after", "2026-12-05T12:00")
    code, out, _ = invoke("40 10 * * *", "--lane", "trickle", "-c", str(config), *after)
    assert code == 0
    assert (
        'collision: lane "trickle" with this schedule and lane "funnel" both drain queue '
        '"inbox" and can start in the same minute, next at 2026-12-06 10:40'
    ) in out.splitlines()
    code, out, _ = invoke("40 10 * * *", "-c", str(config), "--json", *after)
    found = json.loads(out)["collisions"]
    assert [(c["lane"], c["queue"], c["example"]) for c in found] == [
        ("funnel", "inbox", "2026-12-06T10:40:00"),
        ("nightly", "other", "2026-12-07T10:40:00"),
    ]
    code, out, _ = invoke("0 4 * * *", "-c", str(config), *after)
    assert "collisions: none with the lanes of lanes.toml" in out.splitlines()
    assert "collision" not in invoke("40 10 * * *", *after)[1]
    code, _, err = invoke("40 10 * * *", "--lane", "nope", "-c", str(config))
    assert code == 2 and "nope" in err
