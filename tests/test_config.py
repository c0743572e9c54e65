"""lanes.toml loading: schema, defaults, expansion of ~ and $HOME, and every error collected."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.config import (
    DEFAULT_LABEL_PREFIX,
    DEFAULT_PATH,
    Config,
    display_path,
    expand_home,
    find_config,
    load_config,
    plist_safe,
    read_config,
    run_spec,
    select_lanes,
    validate_config,
)
from lanekit.errors import ConfigError, ExitCode, UnsafeStateError, UsageError
from lanekit.schedule import CalendarEntry, Schedule
from lanekit.state.paths import Paths
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT
from neighbours import SECOND_UID, SecondUser

BASE = """
[queues.notes]
dir = "~/q"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
schedule = "40 10 * * *"
"""


def _write(paths: Paths, text: str) -> Path:
    path = paths.cwd / "lanes.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _load(paths: Paths, text: str) -> Config:
    return load_config(_write(paths, text), paths)


def _errors(paths: Paths, text: str) -> list[str]:
    config, errors = validate_config(_write(paths, text), paths)
    assert (config is None) == bool(errors)
    return [error.message for error in errors]


def test_minimal_lane_gets_documented_defaults(paths: Paths) -> None:
    """A lane with only queue, command and schedule gets the default label, PATH, logs and
    limits, and its queue dir is expanded under Paths.home."""
    config = _load(paths, BASE)
    lane = config.lanes["funnel"]
    queue_dir = paths.home / "q"
    assert config.label_prefix == DEFAULT_LABEL_PREFIX == "local.lanekit"
    assert lane.label == "local.lanekit.funnel"
    assert lane.queue.dir == queue_dir and lane.queue.durable is True
    assert lane.command == ("/bin/cat", "{job}")
    assert lane.schedule == Schedule(calendar=(CalendarEntry(hour=10, minute=40),))
    assert lane.path == DEFAULT_PATH
    assert lane.stdout_path == queue_dir / "logs" / "funnel.out.log"
    assert lane.stderr_path == queue_dir / "logs" / "funnel.err.log"
    assert lane.log_path == queue_dir / "logs" / "funnel.log"
    assert (lane.max_jobs, lane.max_seconds, lane.max_attempts, lane.stale_after) == (
        10,
        None,
        3,
        3600,
    )
    assert (lane.nice, lane.low_priority_io, lane.process_type) == (None, None, None)
    assert (lane.throttle_interval, lane.exit_timeout, lane.run_at_load) == (None, None, False)
    assert lane.env == {}
    assert config.templates is None


def test_every_lane_option_is_read(paths: Paths) -> None:
    """Each documented lane key reaches the LaneSpec, durations in seconds."""
    config = _load(
        paths,
        """
        [queues.notes]
        dir = "/data/q"
        durable = false

        [lanes.full]
        queue = "notes"
        command = ["tool", "--in", "{job}"]
        every = "15m"
        env = { A = "1", B = "two" }
        path = ["/opt/bin", "/bin"]
        label = "com.example.full"
        stdout_log = "/var/log/full.out"
        stderr_log = "/var/log/full.err"
        log = "/var/log/full.log"
        max_jobs = 7
        max_seconds = "1h30m"
        max_attempts = 5
        stale_after = 120
        nice = -5
        low_priority_io = false
        process_type = "Adaptive"
        throttle_interval = 0
        exit_timeout = "30s"
        run_at_load = true
        """,
    )
    lane = config.lanes["full"]
    assert lane.queue.durable is False
    assert lane.schedule == Schedule(interval=900)
    assert lane.env == {"A": "1", "B": "two"}
    assert lane.path == ("/opt/bin", "/bin")
    assert lane.label == "com.example.full"
    assert lane.stdout_path == Path("/var/log/full.out")
    assert lane.stderr_path == Path("/var/log/full.err")
    assert lane.log_path == Path("/var/log/full.log")
    assert (lane.max_jobs, lane.max_seconds, lane.max_attempts, lane.stale_after) == (
        7,
        5400,
        5,
        120,
    )
    assert (lane.nice, lane.low_priority_io, lane.process_type) == (-5, False, "Adaptive")
    assert (lane.throttle_interval, lane.exit_timeout, lane.run_at_load) == (0, 30, True)


def test_defaults_apply_to_every_lane_and_lanes_override_them(paths: Paths) -> None:
    """[defaults] sets path, label_prefix, templates and any lane option; a lane's own value
    wins over the default."""
    config = _load(
        paths,
        """
        [defaults]
        path = ["/usr/bin", "/bin"]
        label_prefix = "com.example"
        templates = "~/tpl"
        max_jobs = 3
        nice = 5
        run_at_load = true

        [queues.notes]
        dir = "/q"

        [lanes.a]
        queue = "notes"
        command = ["x"]

        [lanes.b]
        queue = "notes"
        command = ["x"]
        max_jobs = 9
        path = ["/opt/bin"]
        """,
    )
    a, b = config.lanes["a"], config.lanes["b"]
    assert config.templates == paths.home / "tpl"
    assert (a.label, b.label) == ("com.example.a", "com.example.b")
    assert (a.max_jobs, b.max_jobs) == (3, 9)
    assert a.nice == b.nice == 5
    assert a.run_at_load and b.run_at_load
    assert a.path == ("/usr/bin", "/bin") and b.path == ("/opt/bin",)
    assert a.schedule.is_empty


@pytest.mark.parametrize("form", ["~", "$HOME", "${HOME}"])
def test_home_forms_expand_in_paths_env_and_command(paths: Paths, form: str) -> None:
    """~, $HOME and ${HOME} at the start of a path, env value or argument become Paths.home,
    because launchd expands none of them."""
    config = _load(
        paths,
        f"""
        [defaults]
        path = ["{form}/bin", "/bin"]

        [queues.notes]
        dir = "{form}/q"

        [lanes.funnel]
        queue = "notes"
        command = ["{form}/bin/tool", "{form}/arg"]
        env = {{ CODEX_HOME = "{form}/.codex", BARE = "{form}" }}
        log = "{form}/logs/funnel.log"
        """,
    )
    lane = config.lanes["funnel"]
    home = str(paths.home)
    assert lane.queue.dir == paths.home / "q"
    assert lane.path == (f"{home}/bin", "/bin")
    assert lane.command == (f"{home}/bin/tool", f"{home}/arg")
    assert lane.env == {"CODEX_HOME": f"{home}/.codex", "BARE": home}
    assert lane.log_path == paths.home / "logs" / "funnel.log"


def test_env_values_keep_tilde_and_dollar_not_at_the_start(paths: Paths) -> None:
    """Only a leading ~ / $HOME is expanded in env values; anything else is kept verbatim."""
    config = _load(
        paths,
        BASE
        + """env = { A = "a~b", B = "$OTHER/x", C = "~bob", D = "x/$HOME", E = "$HOMEDIR" }\n""",
    )
    assert dict(config.lanes["funnel"].env) == {
        "A": "a~b",
        "B": "$OTHER/x",
        "C": "~bob",
        "D": "x/$HOME",
        "E": "$HOMEDIR",
    }


def test_expand_home_only_touches_a_whole_leading_home() -> None:
    """expand_home needs ~ / $HOME / ${HOME} followed by / or the end."""
    home = Path("/Users/me")
    assert expand_home("~", home) == "/Users/me"
    assert expand_home("~/x", home) == "/Users/me/x"
    assert expand_home("$HOME/x", home) == "/Users/me/x"
    assert expand_home("${HOME}", home) == "/Users/me"
    assert expand_home("~x", home) == "~x"
    assert expand_home("$HOMES/x", home) == "$HOMES/x"
    assert expand_home("/a/~/b", home) == "/a/~/b"


def test_validate_collects_every_error_in_file_order(paths: Paths) -> None:
    """validate_config does not stop at the first problem: each is one line naming the key."""
    messages = _errors(
        paths,
        """
        [defaults]
        max_jobs = "20"

        [queues.notes]
        dir = "notes"

        [lanes.funnel]
        nice = 21
        queue = "notes"
        command = []
        max_jobs = 0
        """,
    )
    assert messages == [
        'lanes.toml: defaults.max_jobs: expected an integer, got a string ("20")',
        'lanes.toml: queues.notes.dir: "notes" is relative; launchd runs jobs from / '
        "— use an absolute path or ~/...",
        "lanes.toml: lanes.funnel.nice: 21 is out of range -20..20",
        "lanes.toml: lanes.funnel.command: is empty",
        "lanes.toml: lanes.funnel.max_jobs: must be at least 1, got 0",
    ]


def test_load_config_raises_the_first_error_and_counts_the_rest(paths: Paths) -> None:
    """load_config raises ConfigError (exit 2) with the first message; the hint says how many
    more there are."""
    path = _write(paths, BASE + "nice = 99\nmax_jobs = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, paths)
    assert caught.value.message == "lanes.toml: lanes.funnel.nice: 99 is out of range -20..20"
    assert caught.value.hint == "use -20..20 (1 more error: run `lanekit validate`)"
    assert caught.value.exit_code == ExitCode.USAGE


def test_read_config_keeps_the_valid_lanes(paths: Paths) -> None:
    """read_config returns the lanes that built next to the errors of the others."""
    config, errors = read_config(
        _write(paths, BASE + '\n[lanes.bad]\nqueue = "notes"\ncommand = "x"\n'), paths
    )
    assert config is not None and list(config.lanes) == ["funnel"]
    assert [e.message for e in errors] == [
        'lanes.toml: lanes.bad.command: expected an array of strings, got a string ("x")'
    ]


def test_toml_syntax_error_names_line_and_column(paths: Paths) -> None:
    """A TOML syntax error is `file:LINE:COL: <tomllib message>`."""
    assert _errors(paths, '[queues.notes]\ndir = "/q"\nbad key = 1\n') == [
        "lanes.toml:3:5: Expected '=' after a key in a key/value pair"
    ]


def test_schedule_errors_carry_the_list_index(paths: Paths) -> None:
    """An error in the second schedule entry is reported as schedule[1], with lanekit.schedule's
    message unchanged."""
    text = BASE.replace('"40 10 * * *"', '["40 10 * * *", "40 24 * * *"]')
    assert _errors(paths, text) == [
        "lanes.toml: lanes.funnel.schedule[1]: Hour 24 is out of range 0-23"
    ]


def test_every_errors_name_the_every_key(paths: Paths) -> None:
    """A bad interval is reported at lanes.NAME.every."""
    text = BASE.replace('schedule = "40 10 * * *"', 'every = "soon"')
    assert _errors(paths, text) == ['lanes.toml: lanes.funnel.every: duration "soon" is not valid']


@pytest.mark.parametrize(
    ("char", "name"),
    [("\x00", "U+0000"), ("\x1b", "U+001B"), ("\r", "U+000D"), ("\ufffe", "U+FFFE")],
)
def test_characters_a_plist_cannot_carry_are_rejected(paths: Paths, char: str, name: str) -> None:
    """Control characters (except tab and newline), CR and U+FFFE/U+FFFF cannot survive an XML
    plist, so the config refuses them with the code point."""
    escaped = json.dumps(char)
    text = BASE + f"env = {{ X = {escaped} }}\n"
    assert _errors(paths, text) == [
        f"lanes.toml: lanes.funnel.env.X: contains {name}, which a launchd plist cannot carry"
    ]


def test_plist_safe_allows_tab_newline_and_astral_characters() -> None:
    """Tab, newline, ordinary and astral text are fine; DEL and C1 controls are legal XML."""
    assert plist_safe("a\tb\nc é 😀 \x7f \x85 \U0010fffd") is None
    assert plist_safe("a\x0bb") == "contains U+000B, which a launchd plist cannot carry"


@settings(max_examples=60, deadline=None)
@given(
    st.text(
        st.characters(codec="utf-8", exclude_characters="\r\ufffe\uffff").filter(
            lambda c: c in "\t\n" or ord(c) >= 0x20
        ),
        max_size=40,
    ).filter(lambda s: not s.startswith(("~", "$")))
)
def test_any_plist_safe_env_value_loads_unchanged(
    tmp_path_factory: pytest.TempPathFactory, value: str
) -> None:
    """Whatever XML 1.0 can carry, written as a TOML string, loads back as exactly that env
    value."""
    paths = Paths.under(tmp_path_factory.mktemp("prop"))
    escaped = json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    config = _load(paths, BASE + f"env = {{ VALUE = {escaped} }}\n")
    assert config.lanes["funnel"].env["VALUE"] == value


def test_labels_must_be_unique_ignoring_case(paths: Paths) -> None:
    """Two lanes may not share a label, nor labels that differ only in case (the plist file
    name would clash on a case-insensitive volume)."""
    text = BASE + (
        '\n[lanes.b]\nqueue = "notes"\ncommand = ["x"]\nlabel = "local.lanekit.funnel"\n'
        '\n[lanes.c]\nqueue = "notes"\ncommand = ["x"]\nlabel = "LOCAL.lanekit.funnel"\n'
    )
    assert _errors(paths, text) == [
        'lanes.toml: lanes.b.label: label "local.lanekit.funnel" is already used by lane funnel',
        'lanes.toml: lanes.c.label: label "LOCAL.lanekit.funnel" differs from lane funnel\'s '
        '"local.lanekit.funnel" only in case (macOS file names ignore case)',
    ]


def test_derived_label_too_long_is_reported_on_the_lane(paths: Paths) -> None:
    """label_prefix + name must fit a file name; the error names the lane and the length."""
    prefix = "p" * 190
    text = f'[defaults]\nlabel_prefix = "{prefix}"\n' + BASE.replace("funnel", "f" * 20)
    label = f"{prefix}.{'f' * 20}"
    assert _errors(paths, text) == [
        f'lanes.toml: lanes.{"f" * 20}: label "{label}" (label_prefix.name) is 211 bytes long '
        "(at most 200: it names the plist file)"
    ]


def test_unknown_key_in_defaults_suggests_the_closest(paths: Paths) -> None:
    """Typos in [defaults] get a did-you-mean too."""
    assert _errors(paths, "[defaults]\nlabel_prefx = 'x'\n" + BASE) == [
        'lanes.toml: defaults.label_prefx: unknown key; did you mean "label_prefix"?'
    ]


def test_keys_that_need_quotes_are_quoted_in_messages(paths: Paths) -> None:
    """Key paths are written the way TOML would: a lane called a.b is lanes."a.b"."""
    text = BASE.replace("[lanes.funnel]", '[lanes."a.b"]') + "nice = 50\n"
    assert _errors(paths, text) == ['lanes.toml: lanes."a.b".nice: 50 is out of range -20..20']


def test_zero_throttle_and_exit_timeout_are_kept(paths: Paths) -> None:
    """ThrottleInterval 0 and ExitTimeOut 0 mean something to launchd, so 0 (or "0s") is
    accepted for them though durations elsewhere must be positive."""
    lane = _load(paths, BASE + 'throttle_interval = "0s"\nexit_timeout = 0\n').lanes["funnel"]
    assert (lane.throttle_interval, lane.exit_timeout) == (0, 0)
    assert _errors(paths, BASE + "max_seconds = 0\n") == [
        "lanes.toml: lanes.funnel.max_seconds: must be at least 1, got 0"
    ]


def test_config_file_is_named_relative_to_cwd_or_absolute(tmp_path: Path) -> None:
    """Messages name the config relative to the current directory when inside it."""
    assert display_path(tmp_path / "lanes.toml", tmp_path) == "lanes.toml"
    assert display_path(tmp_path / "etc" / "l.toml", tmp_path) == "etc/l.toml"
    assert display_path(Path("/elsewhere/l.toml"), tmp_path) == "/elsewhere/l.toml"


def test_find_config_prefers_option_then_env_then_cwd(tmp_path: Path) -> None:
    """--config wins over $LANEKIT_CONFIG, which wins over ./lanes.toml; relative paths are
    taken from cwd."""
    for name in ("opt.toml", "env.toml", "lanes.toml"):
        (tmp_path / name).write_text("", encoding="utf-8")
    env = {"LANEKIT_CONFIG": "env.toml"}
    assert find_config(Path("opt.toml"), env, tmp_path) == tmp_path / "opt.toml"
    assert find_config(None, env, tmp_path) == tmp_path / "env.toml"
    assert find_config(None, {"LANEKIT_CONFIG": ""}, tmp_path) == tmp_path / "lanes.toml"
    assert find_config(None, {}, tmp_path) == tmp_path / "lanes.toml"


def test_find_config_missing_file_suggests_init(tmp_path: Path) -> None:
    """A missing lanes.toml is a ConfigError naming where it looked and suggesting init."""
    with pytest.raises(ConfigError) as caught:
        find_config(None, {}, tmp_path)
    assert caught.value.message == "lanes.toml: no such file"
    assert "lanekit init" in caught.value.hint
    with pytest.raises(ConfigError) as from_env:
        find_config(None, {"LANEKIT_CONFIG": "/nope/l.toml"}, tmp_path)
    assert from_env.value.message == "/nope/l.toml: no such file (from $LANEKIT_CONFIG)"


def test_select_lanes_keeps_order_and_suggests_names(paths: Paths) -> None:
    """Named lanes come back in the order asked (once each); an unknown one is a UsageError
    with a did-you-mean."""
    config = _load(paths, BASE + '\n[lanes.other]\nqueue = "notes"\ncommand = ["x"]\n')
    assert [lane.name for lane in select_lanes(config, ["other", "funnel", "other"])] == [
        "other",
        "funnel",
    ]
    assert [lane.name for lane in select_lanes(config, [])] == ["funnel", "other"]
    with pytest.raises(UsageError) as caught:
        select_lanes(config, ["funel"])
    assert caught.value.message == 'no lane named "funel" in lanes.toml; did you mean "funnel"?'
    assert caught.value.hint == "lanes: funnel, other"


def test_run_spec_carries_what_the_runner_needs(paths: Paths) -> None:
    """run_spec copies the lane's limits; exit_timeout falls back to launchd's modern default
    and a set 0 is kept; max_seconds becomes a float."""
    lane = _load(paths, BASE + 'max_seconds = "2m"\n').lanes["funnel"]
    spec = run_spec(lane)
    assert spec.lane == "funnel" and spec.label == "local.lanekit.funnel"
    assert spec.queue_dir == paths.home / "q"
    assert spec.command == ("/bin/cat", "{job}")
    assert spec.max_seconds == 120.0 and isinstance(spec.max_seconds, float)
    assert spec.stale_after == 3600.0
    assert spec.exit_timeout == DEFAULT_EXIT_TIMEOUT
    assert spec.log_path == lane.log_path and spec.durable is True
    zero = _load(paths, BASE + "exit_timeout = 0\n").lanes["funnel"]
    assert run_spec(zero).exit_timeout == 0
    assert run_spec(zero).max_seconds is None


def test_run_spec_keeps_the_environment_the_plist_carries(paths: Paths) -> None:
    """The snapshot keeps exactly the lane's EnvironmentVariables, from the one function the
    plist renders them with (a run by hand builds launchd's environment from them)."""
    from lanekit.service.launchd.plist import lane_plist

    lane = _load(paths, BASE + 'env = { TOKEN = "x" }\npath = ["/opt/bin", "/usr/bin"]\n')
    funnel = lane.lanes["funnel"]
    plist = lane_plist(funnel, interpreter="/usr/bin/python3", snapshot=paths.snapshot_for("x"))
    assert run_spec(funnel).environment == plist["EnvironmentVariables"]
    assert plist["EnvironmentVariables"] == {
        "TOKEN": "x",
        "PATH": "/opt/bin:/usr/bin",
        "LANEKIT_LANE": "funnel",
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("Aqua", "Background")),
        ('"Background"', ("Background",)),
        ('["Aqua", "StandardIO"]', ("Aqua", "StandardIO")),
    ],
)
def test_session_type_defaults_to_both_user_domains(
    paths: Paths, value: str | None, expected: tuple[str, ...]
) -> None:
    """session_type (LimitLoadToSessionType) is one session or an array; by default Aqua and
    Background, so one plist loads into gui/<uid> and into user/<uid> (SSH, headless)."""
    text = BASE if value is None else BASE + f"session_type = {value}\n"
    assert _load(paths, text).lanes["funnel"].session_type == expected


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ('"aqua"', '"aqua" is not one of Aqua, Background, LoginWindow, StandardIO'),
        ("[]", "needs at least one value"),
        ('["Aqua", "Aqua"]', "lists a value twice"),
        ("3", "expected a string or an array of strings, got an integer"),
    ],
)
def test_bad_session_types_are_refused(paths: Paths, value: str, error: str) -> None:
    """A session launchd does not know, an empty or repeated list, or a non-string is an error
    at lanes.NAME.session_type."""
    errors = _errors(paths, BASE + f"session_type = {value}\n")
    assert len(errors) == 1
    assert errors[0].startswith("lanes.toml: lanes.funnel.session_type: ")
    assert error in errors[0]


def test_max_job_bytes_is_read_defaulted_and_carried_to_the_snapshot(paths: Paths) -> None:
    """[queues.NAME] max_job_bytes sets the queue's largest job (default 1 MiB) and reaches
    the runner through the snapshot; below 2 bytes (`{}`) or not an integer it is refused at
    its key (issue 30 item 12)."""
    default = _load(paths, BASE).lanes["funnel"]
    assert default.queue.max_job_bytes == 1024 * 1024
    assert run_spec(default).max_job_bytes == 1024 * 1024
    text = BASE.replace('dir = "~/q"\n', 'dir = "~/q"\nmax_job_bytes = 4096\n')
    lane = _load(paths, text).lanes["funnel"]
    assert lane.queue.max_job_bytes == 4096
    assert run_spec(lane).max_job_bytes == 4096
    assert json.loads(run_spec(lane).to_json())["max_job_bytes"] == 4096
    for value, error in (("1", "must be at least 2, got 1"), ('"1MiB"', "expected an integer")):
        bad = BASE.replace('dir = "~/q"\n', f'dir = "~/q"\nmax_job_bytes = {value}\n')
        [message] = _errors(paths, bad)
        assert message.startswith("lanes.toml: queues.notes.max_job_bytes: "), message
        assert error in message


# -- issue 30 item 4: a lanes.toml someone other than you or root could have written ---------


@pytest.mark.parametrize(
    ("where", "mode", "what"),
    [
        ("file", 0o666, "lanes.toml: configuration is writable by group and others (mode 0666)"),
        ("file", 0o664, "lanes.toml: configuration is writable by group (mode 0664)"),
        ("dir", 0o777, "lanes.toml: configuration is reached through {dir}, which is writable"),
    ],
)
def test_a_lanes_toml_others_may_write_is_refused(
    paths: Paths, where: str, mode: int, what: str
) -> None:
    """lanes.toml says what every lane and the watchdog run as you: writable by group or
    others (the file, or a directory above it, not sticky) it is refused before it is read,
    by load_config and by validate's read_config alike: exit 69, the chmod that fixes it."""
    path = _write(paths, BASE)
    part = path if where == "file" else path.parent
    part.chmod(mode)
    try:
        for read in (load_config, read_config, validate_config):
            with pytest.raises(UnsafeStateError) as caught:
                read(path, paths)
            assert caught.value.exit_code is ExitCode.UNAVAILABLE
            assert caught.value.message.startswith(what.format(dir=part))
            assert caught.value.hint == f"chmod go-w {part}"
    finally:
        part.chmod(0o700 if where == "dir" else 0o644)
    assert load_config(path, paths).lanes


def test_a_lanes_toml_in_another_users_directory_is_refused_without_a_chown(
    paths: Paths, second_user: SecondUser
) -> None:
    """In a directory of another user (reached directly or through a symlink of ours) it
    could be replaced by them: refused, and the fix is a directory of your own, never a chown
    of theirs. Another user's lanes.toml in your own directory: a copy of your own."""
    theirs = second_user.mkdir("theirs")
    config = theirs / "lanes.toml"
    config.write_text(BASE, encoding="utf-8")
    link = paths.cwd / "linked.toml"
    link.symlink_to(config)
    for path in (config, link):
        with pytest.raises(UnsafeStateError) as caught:
            load_config(path, paths)
        assert f"is reached through {theirs}, which is owned by uid {SECOND_UID}" in (
            caught.value.message
        )
        assert caught.value.hint.startswith("keep lanes.toml in a directory of your own")
        assert "chown" not in caught.value.hint
    mine = _write(paths, BASE)
    os.chown(mine, SECOND_UID, SECOND_UID)
    with pytest.raises(UnsafeStateError, match=f"configuration is owned by uid {SECOND_UID}"):
        load_config(mine, paths)


@pytest.mark.parametrize(
    ("key", "where"),
    [
        ("log", "~/q/queue/funnel.log"),
        ("stdout_log", "~/q/failed/out.log"),
        ("stderr_log", "~/other/records"),
        ("log", "~/other/done/2026-01-01/funnel.log"),
    ],
)
def test_a_log_inside_a_queues_directories_is_refused(paths: Paths, key: str, where: str) -> None:
    """A lane's log, stdout_log or stderr_log inside any queue's own directories (its own or
    another's) would be taken for the queue's: in queue/ the event log is claimed as a job.
    Refused at the lane's key, naming the queue and the fix (issue 30 item 9)."""
    text = BASE + f'{key} = "{where}"\n[queues.other]\ndir = "~/other"\n'
    [message] = _errors(paths, text)
    shown = where.replace("~", str(paths.home))
    assert message.startswith(f"lanes.toml: lanes.funnel.{key}: {shown} is inside "), message
    assert "of queue " in message
    _, errors = validate_config(_write(paths, text), paths)
    assert errors[0].hint.startswith(f"leave {key} out (its default is {paths.home}/q/logs/")


def test_a_log_in_a_queues_logs_dir_or_beside_it_is_accepted(paths: Paths) -> None:
    """logs/ is the lanes' own (the default), and the queue's top directory holds no jobs."""
    text = BASE + 'log = "~/q/logs/mine.log"\nstdout_log = "~/q/out.log"\n'
    lane = _load(paths, text).lanes["funnel"]
    assert lane.log_path == paths.home / "q" / "logs" / "mine.log"
