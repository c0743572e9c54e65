"""systemd units from lanes.toml: golden bytes, systemd's own reading of them
(`systemd-analyze --user verify`), their calendars against `systemd-analyze calendar` and
lanekit's own next fires (UTC and New York across both DST days), quoting, refusals, templates."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lanekit.config import Config, load_config
from lanekit.errors import ConfigError
from lanekit.schedule import CalendarEntry
from lanekit.schedule.fires import next_fires
from lanekit.schedule.model import can_occur
from lanekit.service.systemd.names import path_name, unit_names
from lanekit.service.systemd.systemctl import calendar_fires, verify
from lanekit.service.systemd.units import (
    calendar_table,
    environment_word,
    exec_line,
    interval_triggers,
    on_calendar,
    parse_unit,
    rendered_units,
    split_words,
)
from lanekit.state.paths import Paths
from places import GOLDEN, REPO
from usermanager import skip_or_fail

GOLDEN_UNITS = GOLDEN / "systemd"
INTERPRETER = "/usr/bin/python3"
HOME = Path("/home/me")
UPDATE_GOLDEN = os.environ.get("LANEKIT_UPDATE_GOLDEN") == "1"

EDGES_TOML = """
[defaults]
label_prefix = "com.example.edge"

[queues.q]
dir = "~/q"

[lanes.either]
queue = "q"
command = ["/bin/echo", "{job}"]
schedule = [{Day = 1, Weekday = 1, Hour = 9, Minute = 0}, {Weekday = 7, Hour = 18, Minute = 5}]

[lanes.nine]
queue = "q"
command = ["/bin/echo", "{job}"]
schedule = "* 9 * * *"

[lanes.odd]
queue = "q"
command = ["/bin/echo", "{job}"]
every = "7m"
run_at_load = true
exit_timeout = "30s"

[lanes.arrives]
queue = "q"
command = ["/bin/echo", "{job}"]
every = "15m"
start = ["schedule", "enqueue"]

[lanes.manual]
queue = "q"
command = ["/bin/echo", "100% $HOME \\"quoted\\" back\\\\slash", "{job}"]
env = { TOKEN_HINT = "50% off $5", QUOTE = "say \\"hi\\"" }
"""


def _paths(tmp_path: Path) -> Paths:
    return Paths(
        home=HOME,
        launch_agents=tmp_path / "agents",
        state=HOME / ".local/state/lanekit",
        cwd=tmp_path,
    )


def _configs(tmp_path: Path) -> dict[str, Config]:
    paths = _paths(tmp_path)
    edges = tmp_path / "edges.toml"
    edges.write_text(EDGES_TOML, encoding="utf-8")
    return {
        "example": load_config(REPO / "examples" / "lanes.toml", paths),
        "edges": load_config(edges, paths),
    }


LANES = [
    ("example", "funnel"),
    ("example", "trickle"),
    ("example", "backlog"),
    ("edges", "either"),
    ("edges", "nine"),
    ("edges", "odd"),
    ("edges", "manual"),
    ("edges", "arrives"),
]


def _render(config: Config, name: str, interpreter: str = INTERPRETER) -> dict[str, bytes]:
    lane = config.lanes[name]
    return rendered_units(
        lane, interpreter=interpreter, snapshot=HOME / f".local/state/lanekit/{lane.label}.json"
    )


@pytest.mark.parametrize(("which", "name"), LANES)
def test_golden_unit_bytes(tmp_path: Path, which: str, name: str) -> None:
    """Each lane renders to exactly the files in tests/golden/systemd/ (a service, and a timer
    when it has a schedule); set LANEKIT_UPDATE_GOLDEN=1 to rewrite them after a deliberate
    change."""
    files = _render(_configs(tmp_path)[which], name)
    for file_name, data in files.items():
        golden = GOLDEN_UNITS / file_name
        if UPDATE_GOLDEN:
            golden.parent.mkdir(exist_ok=True)
            golden.write_bytes(data)
        assert data == golden.read_bytes(), file_name
        assert parse_unit(data).to_bytes() == data  # canonical: parsing changes nothing


def test_every_example_lane_has_its_golden_files(tmp_path: Path) -> None:
    """The golden list covers every lane of examples/lanes.toml and nothing else is there."""
    configs = _configs(tmp_path)
    assert {n for w, n in LANES if w == "example"} == set(configs["example"].lanes)
    wanted = {f for w, n in LANES for f in _render(configs[w], n)}
    assert {p.name for p in GOLDEN_UNITS.iterdir()} == wanted


def test_day_and_weekday_are_two_lines_weekday_seven_is_sunday(tmp_path: Path) -> None:
    """launchd fires on Day OR Weekday; systemd's one expression would AND them, so an entry
    with both is two OnCalendar lines. Weekday 7 is Sun, {Hour=9} every minute of 09:xx, a
    7-minute interval is anchored (OnActiveSec + OnUnitActiveSec), run_at_load is
    OnStartupSec=0 and a manual lane has no timer."""
    configs = _configs(tmp_path)["edges"]
    timer = parse_unit(_render(configs, "either")["com.example.edge.either.timer"])
    assert timer.values("Timer", "OnCalendar") == [
        "Sun *-*-* 18:05:00",
        "*-*-01 09:00:00",
        "Mon *-*-* 09:00:00",
    ]
    assert timer.value("Timer", "Persistent") == "true"
    nine = parse_unit(_render(configs, "nine")["com.example.edge.nine.timer"])
    assert nine.values("Timer", "OnCalendar") == ["*-*-* 09:*:00"]
    assert on_calendar(CalendarEntry(weekday=7, hour=1)) == ["Sun *-*-* 01:*:00"]
    odd = parse_unit(_render(configs, "odd")["com.example.edge.odd.timer"])
    assert odd.values("Timer", "OnActiveSec") == ["420s"]
    assert odd.values("Timer", "OnUnitActiveSec") == ["420s"]
    assert odd.value("Timer", "OnStartupSec") == "0"
    assert odd.value("Timer", "Persistent") is None
    assert list(_render(configs, "manual")) == ["com.example.edge.manual.service"]


def test_a_lane_started_on_enqueue_has_a_path_unit(tmp_path: Path) -> None:
    """start = ["schedule", "enqueue"] adds `<label>.path` watching the queue's ready
    directory (DirectoryNotEmpty=, created 0700 if missing) that starts the lane's service,
    with a trigger limit, and the same start limit on the service: a lane whose runs leave
    their jobs there is not restarted for ever (systemd.path(5)). Other lanes have neither."""
    configs = _configs(tmp_path)["edges"]
    lane = configs.lanes["arrives"]
    files = _render(configs, "arrives")
    assert list(files) == [
        f"{lane.label}.service",
        f"{lane.label}.timer",
        f"{lane.label}.path",
    ]
    path = parse_unit(files[path_name(lane.label)])
    assert path.value("Path", "DirectoryNotEmpty") == str(lane.queue.dir / "queue")
    assert path.value("Path", "Unit") == f"{lane.label}.service"
    assert path.value("Path", "MakeDirectory") == "true"
    assert path.value("Path", "DirectoryMode") == "0700"
    assert path.value("Path", "TriggerLimitIntervalSec") == "10s"
    assert path.value("Path", "TriggerLimitBurst") == "20"
    assert path.value("Install", "WantedBy") == "paths.target"
    service = parse_unit(files[f"{lane.label}.service"])
    assert service.value("Unit", "StartLimitBurst") == "20"
    assert service.value("Unit", "StartLimitIntervalSec") == "10s"
    nine = parse_unit(_render(configs, "nine")["com.example.edge.nine.service"])
    assert nine.value("Unit", "StartLimitBurst") is None
    assert path_name(configs.lanes["nine"].label) not in _render(configs, "nine")


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (2, [("OnCalendar", "*-*-* *:*:00/2")]),
        (30, [("OnCalendar", "*-*-* *:*:00/30")]),
        (900, [("OnCalendar", "*-*-* *:00/15:00")]),
        (7200, [("OnCalendar", "*-*-* 00/2:00:00")]),
        (86400, [("OnCalendar", "*-*-* 00:00:00")]),
        (45, [("OnActiveSec", "45s"), ("OnUnitActiveSec", "45s")]),
        (5400, [("OnActiveSec", "5400s"), ("OnUnitActiveSec", "5400s")]),
    ],
)
def test_intervals_align_when_they_divide_a_minute_hour_or_day(
    seconds: int, expected: list[tuple[str, str]]
) -> None:
    """An interval that divides a minute, an hour or a day is an aligned calendar; any other
    is anchored to the timer's activation, never OnUnitActiveSec alone."""
    assert interval_triggers(seconds) == expected


def test_the_service_runs_as_launchd_would(tmp_path: Path) -> None:
    """The service: oneshot, explicit PATH, logs appended, timeouts, KillMode=mixed (SIGTERM to
    the runner alone), Nice/IOSchedulingClass/CPUSchedulingPolicy for a background lane."""
    service = parse_unit(
        _render(_configs(tmp_path)["example"], "backlog")["com.example.lanekit.backlog.service"]
    )
    assert service.value("Service", "Type") == "oneshot"
    assert service.value("Service", "KillMode") == "mixed"
    assert service.value("Service", "TimeoutStopSec") == "5s"
    assert service.value("Service", "Nice") == "10"
    assert service.value("Service", "IOSchedulingClass") == "idle"
    assert service.value("Service", "CPUSchedulingPolicy") == "idle"
    assert any(
        v.startswith('"PATH=/opt/homebrew/bin:') for v in service.values("Service", "Environment")
    )
    out = service.value("Service", "StandardOutput")
    assert out is not None and out.startswith("append:/")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=12), min_size=1)
)
@example(["/bin/x", "%h", "$HOME", "${X}", '"', "'", "\\", "a b", "\n\t", "\x7f", ";", ""])
def test_exec_and_environment_quoting_round_trips(argv: list[str]) -> None:
    """Every argument survives ExecStart's quoting as systemd splits it back (`%`, `$`, quotes,
    backslashes, whitespace, control characters), and so does an Environment= value."""
    assert split_words(exec_line(argv), command=True) == argv
    for value in argv:
        assert split_words(environment_word("V", value)) == [f"V={value}"]


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("throttle_interval", '"30s"', "throttle_interval means nothing under systemd"),
        ("session_type", '"Aqua"', "session_type means nothing under systemd"),
        ("process_type", '"Interactive"', "process_type 'Interactive' means nothing"),
    ],
)
def test_launchd_only_keys_are_refused_with_the_reason(
    tmp_path: Path, key: str, value: str, words: str
) -> None:
    """What means nothing to systemd is refused, naming the lane, the key and the fix."""
    path = tmp_path / "lanes.toml"
    path.write_text(
        f'[queues.q]\ndir = "~/q"\n[lanes.x]\nqueue = "q"\ncommand = ["/bin/true"]\n'
        f'schedule = "0 3 * * *"\n{key} = {value}\n',
        encoding="utf-8",
    )
    config = load_config(path, _paths(tmp_path))
    with pytest.raises(ConfigError, match=words) as caught:
        _render(config, "x")
    assert caught.value.message.startswith("lane x: ")
    assert key in caught.value.hint


def test_a_user_template_may_add_lines_never_change_lanekits(tmp_path: Path) -> None:
    """A template extending the shipped one adds a line; one that changes a line of lanekit's
    is refused, naming the key."""
    config = _configs(tmp_path)["example"]
    lane = config.lanes["funnel"]
    mine = tmp_path / "templates"
    mine.mkdir()
    mine.chmod(0o755)
    (mine / "lane.service.j2").write_text(
        '{% extends "lanekit/lane.service.j2" %}\n{% block extra_service %}'
        "MemoryMax=2G\n{% endblock %}\n",
        encoding="utf-8",
    )
    files = rendered_units(
        lane, interpreter=INTERPRETER, snapshot=tmp_path / "s.json", templates=mine
    )
    service = parse_unit(files[unit_names(lane.label)[0]])
    assert service.value("Service", "MemoryMax") == "2G"
    (mine / "lane.timer.j2").write_text(
        '{% extends "lanekit/lane.timer.j2" %}\n{% block extra_timer %}'
        "AccuracySec=1h\n{% endblock %}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"renders Timer\.AccuracySec differently"):
        rendered_units(lane, interpreter=INTERPRETER, snapshot=tmp_path / "s.json", templates=mine)


# --- systemd as the oracle ---


@pytest.fixture(scope="module")
def analyze(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment `systemd-analyze --user` runs in (it needs a runtime directory, not a
    running manager)."""
    if shutil.which("systemd-analyze") is None:
        skip_or_fail("systemd-analyze is not installed (apt-get install systemd)")
    home = tmp_path_factory.mktemp("analyze")
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700)
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(home)}


def test_systemd_verifies_every_generated_pair(tmp_path: Path, analyze: dict[str, str]) -> None:
    """`systemd-analyze --user verify` reads every generated unit with rc 0 and nothing on
    stderr (warnings are rc 0 too, so stderr must be empty), and each timer names a service
    that is generated beside it (verify does not check that)."""
    out = tmp_path / "units"
    out.mkdir()
    configs = _configs(tmp_path)
    for which, name in LANES:
        files = _render(configs[which], name, interpreter=sys.executable)
        for file_name, data in files.items():
            (out / file_name).write_bytes(data)
        label = configs[which].lanes[name].label
        service, timer = unit_names(label)
        if timer in files:
            assert parse_unit(files[timer]).value("Timer", "Unit") == service
            assert service in files
        if path_name(label) in files:
            assert parse_unit(files[path_name(label)]).value("Path", "Unit") == service
        checked = verify([str(out / f) for f in files], analyze)
        assert checked.clean, (name, checked.returncode, checked.stderr)


def _local_fires(entries: list[CalendarEntry], after: datetime, n: int) -> list[datetime]:
    """lanekit's next fires after `after` (aware), in the process's zone, as aware UTC."""
    return [f.astimezone(UTC) for f in next_fires(entries, after, n)]


@pytest.fixture
def zone() -> Iterator[None]:
    """Restores the process's time zone after a test changed it."""
    before = os.environ.get("TZ")
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def _in_zone(name: str) -> None:
    os.environ["TZ"] = name
    time.tzset()


DST_CASES = [
    # The spring-forward gap (02:xx does not exist on 2026-03-08 in New York) and the
    # fall-back hour (01:xx happens twice on 2026-11-01): both fire as lanekit says.
    [CalendarEntry(hour=2, minute=30)],
    [CalendarEntry(hour=1, minute=30)],
    [CalendarEntry(minute=30)],
    [CalendarEntry(hour=2)],
    [CalendarEntry(weekday=0, hour=1, minute=45), CalendarEntry(day=8, hour=3, minute=0)],
    [CalendarEntry(day=1, weekday=1, hour=2, minute=15)],
]


@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
@pytest.mark.parametrize("entries", DST_CASES)
@pytest.mark.parametrize("day", ["2026-03-07", "2026-10-31"])
def test_oncalendar_fires_when_lanekit_says(
    analyze: dict[str, str], zone: None, tz: str, entries: list[CalendarEntry], day: str
) -> None:
    """Every generated OnCalendar, run through `systemd-analyze calendar --iterations=20
    --base-time=...`, fires exactly when lanekit.schedule says launchd would, in UTC and in
    New York from the day before each DST change (gap skipped, repeated hour once)."""
    _in_zone(tz)
    base = datetime.fromisoformat(f"{day}T00:00:00").astimezone() - timedelta(seconds=30)
    expressions = [expr for entry in entries for expr in on_calendar(entry)]
    systemd = calendar_fires(expressions, base=base, iterations=20, tz=tz)[:20]
    assert systemd == _local_fires(entries, base, 20)


entries_strategy = st.builds(
    CalendarEntry,
    month=st.none() | st.integers(1, 12),
    day=st.none() | st.integers(1, 31),
    weekday=st.none() | st.integers(0, 6),
    hour=st.none() | st.integers(0, 23),
    minute=st.none() | st.integers(0, 59),
).filter(lambda e: can_occur(e.month, e.day, e.weekday) and (e.day is None or e.day <= 28))


@settings(max_examples=40, deadline=None)
@given(entries_strategy)
@example(CalendarEntry(day=13, weekday=5, hour=0, minute=0))
@example(CalendarEntry(weekday=0))
@example(CalendarEntry(hour=9))
def test_any_calendar_entry_fires_as_lanekit_says(
    analyze: dict[str, str], entry: CalendarEntry
) -> None:
    """Any calendar entry (Day+Weekday, Sunday, `{Hour=9}`...; lanekit reads Weekday 7 as 0,
    and `on_calendar` writes either as Sun): systemd's next 12 elapses
    of its OnCalendar lines are lanekit's next 12 fires, in UTC; and the lines read back as the
    entry's launchd table."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        base = datetime(2026, 1, 1, tzinfo=UTC) - timedelta(seconds=30)
        expressions = on_calendar(entry)
        systemd = calendar_fires(expressions, base=base, iterations=12, tz="UTC")[:12]
        assert systemd == _local_fires([entry], base, 12)
    finally:
        os.environ.pop("TZ", None)
        time.tzset()
    tables = [calendar_table(expression) for expression in expressions]
    wanted = entry.to_plist()
    if entry.day is not None and entry.weekday is not None:
        assert tables == [
            {k: v for k, v in wanted.items() if k != "Weekday"},
            {k: v for k, v in wanted.items() if k != "Day"},
        ]
    else:
        assert tables == [wanted]
