"""The loaded definition against a plist, on what `launchctl print` really shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lanekit.service.launchd import ServiceInfo
from lanekit.service.launchd.definition import calendar_facts, differences
from lanekit.service.launchd.parse import parse_print

SAMPLES = Path(__file__).parent / "samples"


def _sample(name: str) -> str:
    text = (SAMPLES / name).read_text()
    return text.split("# ---\n", 1)[1]


def _plist_of_print_03(**changes: Any) -> dict[str, Any]:
    """The job print-03 shows, as a plist (RunAtLoad, no ExitTimeOut/ThrottleInterval)."""
    info = parse_print(_sample("print-03.txt"))
    plist: dict[str, Any] = {
        "Label": info.label,
        "ProgramArguments": list(info.arguments),
        "StandardOutPath": info.stdout_path,
        "StandardErrorPath": info.stderr_path,
        "RunAtLoad": True,
    }
    plist.update(changes)
    return {k: v for k, v in plist.items() if v is not None}


def test_a_real_capture_matches_its_plist() -> None:
    """print-03 (macOS 2026): the plist that produced it has no differences; launchd's own
    environment entries (XPC_SERVICE_NAME, OSLogRateLimit) and defaults are not differences."""
    info = parse_print(_sample("print-03.txt"))
    assert differences(_plist_of_print_03(), info) == ()


@pytest.mark.parametrize(
    ("changes", "fact"),
    [
        ({"Nice": 11}, "Nice"),
        ({"ThrottleInterval": 30}, "ThrottleInterval"),
        ({"ExitTimeOut": 20}, "ExitTimeOut"),
        ({"EnvironmentVariables": {"A": "1"}}, "EnvironmentVariables"),
        ({"StandardOutPath": "/tmp/other.out"}, "StandardOutPath"),
        ({"StartInterval": 300}, "StartInterval"),
        ({"WorkingDirectory": "/tmp"}, "WorkingDirectory"),
    ],
)
def test_each_visible_fact_is_compared(changes: dict[str, Any], fact: str) -> None:
    """Each fact print shows is compared: a plist that differs in it names it."""
    info = parse_print(_sample("print-03.txt"))
    assert [d.fact for d in differences(_plist_of_print_03(**changes), info)] == [fact]


def test_invisible_facts_are_not_compared() -> None:
    """RunAtLoad, LowPriorityIO and Umask are not (reliably) in print: never a difference."""
    info = parse_print(_sample("print-03.txt"))
    plist = _plist_of_print_03(RunAtLoad=False, LowPriorityIO=True, Umask=63)
    assert differences(plist, info) == ()


def test_a_trimmed_capture_compares_only_what_it_shows() -> None:
    """print-11 is trimmed (no environment, no arguments block): what it lacks is not a
    difference (Nice, arguments), what it shows (program, exit timeout) is compared."""
    info = parse_print(_sample("print-11.txt"))
    plist = {"Label": info.label, "ProgramArguments": ["/bin/sh", "-c", "x"], "Nice": 5}
    assert differences(plist, info) == ()
    assert [d.fact for d in differences({**plist, "ExitTimeOut": 9}, info)] == ["ExitTimeOut"]
    assert [d.fact for d in differences({**plist, "ProgramArguments": ["/bin/zsh"]}, info)] == [
        "Program"
    ]


def test_nice_as_print_shows_it() -> None:
    """print-01 shows `nice = -1`: equal to Nice -1, different from Nice 10."""
    info = parse_print(_sample("print-01.txt"))
    base = {
        "Label": info.label,
        "ProgramArguments": list(info.arguments),
        "StandardOutPath": info.stdout_path,
        "StandardErrorPath": info.stderr_path,
        "ThrottleInterval": 2,
    }
    assert differences({**base, "Nice": -1}, info) == ()
    (diff,) = differences({**base, "Nice": 10}, info)
    assert str(diff) == "Nice -1 -> 10"


CALENDAR_PRINT = """gui/501/com.example.cal = {
\tpath = /Users/u/Library/LaunchAgents/com.example.cal.plist
\ttype = LaunchAgent
\tstate = not running
\tprogram = /bin/true
\targuments = {
\t\t/bin/true
\t}
\tenvironment = {
\t\tXPC_SERVICE_NAME => com.example.cal
\t}
\tminimum runtime = 10
\texit timeout = 5
\tevent triggers = {
\t\tcom.example.cal.268435459 => {
\t\t\tkeepalive = 0
\t\t\tservice = com.example.cal
\t\t\tstream = com.apple.launchd.calendarinterval
\t\t\tmonitor = com.apple.UserEventAgent-Aqua
\t\t\tdescriptor = {
\t\t\t\t"Minute" => 5
\t\t\t\t"Hour" => 3
\t\t\t}
\t\t}
\t}
}
"""


def test_calendar_from_event_triggers() -> None:
    """A calendar job's `event triggers` (the print-02 layout) give its StartCalendarInterval;
    a changed minute is a difference, the same dict in another order is not."""
    info = parse_print(CALENDAR_PRINT)
    assert info.calendar == ({"Minute": 5, "Hour": 3},)
    plist = {"Label": "com.example.cal", "ProgramArguments": ["/bin/true"]}
    assert differences({**plist, "StartCalendarInterval": {"Hour": 3, "Minute": 5}}, info) == ()
    (diff,) = differences({**plist, "StartCalendarInterval": [{"Hour": 3, "Minute": 6}]}, info)
    assert diff.fact == "StartCalendarInterval"
    assert "Minute=5" in diff.loaded and "Minute=6" in diff.wanted


def test_no_event_triggers_block_means_calendar_not_visible() -> None:
    """A capture without `event triggers` (print-03) says nothing about the calendar."""
    assert parse_print(_sample("print-03.txt")).calendar is None
    assert parse_print(_sample("print-01.txt")).calendar == ()
    assert calendar_facts({"Minute": 1}) == ((("Minute", 1),),)


def test_spawn_type_is_compared_where_it_is_certain() -> None:
    """A job printed as background (5) whose plist asks for Standard is a difference; a plist
    asking for Background printed as daemon (3) is not trusted to be one (that print is a
    claim, and a wrong guess would make apply reload forever); Interactive is not compared."""
    daemon = ServiceInfo(label="x", extra={"spawn type": "daemon (3)"})
    background = ServiceInfo(label="x", extra={"spawn type": "background (5)"})
    assert differences({"Label": "x", "ProcessType": "Interactive"}, daemon) == ()
    assert differences({"Label": "x", "ProcessType": "Background"}, daemon) == ()
    assert differences({"Label": "x", "ProcessType": "Background"}, background) == ()
    (diff,) = differences({"Label": "x"}, background)
    assert str(diff) == "ProcessType background -> daemon"


def test_variables_launchd_adds_are_not_differences() -> None:
    """Only the plist's own variables are compared: one launchd added (known or not) never
    makes apply reload; a changed or missing one does."""
    info = ServiceInfo(
        label="x",
        environment={"A": "1", "XPC_SERVICE_NAME": "x", "OSLogRateLimit": "64", "NEW": "y"},
    )
    assert differences({"Label": "x", "EnvironmentVariables": {"A": "1"}}, info) == ()
    (diff,) = differences({"Label": "x", "EnvironmentVariables": {"A": "2", "B": "3"}}, info)
    assert diff.fact == "EnvironmentVariables"


def test_exit_timeout_defaults_of_both_eras() -> None:
    """No ExitTimeOut in the plist: 5 (modern) and 20 (10.9) are launchd's defaults, not a
    difference; a leftover 30 from an earlier plist is."""
    plist = {"Label": "x"}
    for default in (5, 20):
        assert differences(plist, ServiceInfo(label="x", exit_timeout=default)) == ()
    (diff,) = differences(plist, ServiceInfo(label="x", exit_timeout=30))
    assert diff.fact == "ExitTimeOut"
