"""Plists: golden bytes, parse-back equality, canonical form, user templates, atomic writes."""

from __future__ import annotations

import os
import plistlib
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lanekit.config import Config, LaneSpec, QueueSpec, load_config
from lanekit.errors import ConfigError, EnvironmentUnusableError, ExitCode, UnsafeStateError
from lanekit.reconcile.validate import check_config
from lanekit.schedule import Schedule
from lanekit.service.launchd.plist import (
    ENTRYPOINT_CODE,
    LANE_TEMPLATE,
    init_config,
    lane_plist,
    program_arguments,
    render_config,
    render_lane,
    templates_dir,
    write_plist,
)
from lanekit.state.paths import Paths
from neighbours import SECOND_UID, SecondUser
from places import GOLDEN, REPO

ROOT = REPO
INTERPRETER = "/usr/local/bin/python3"
HOME = Path("/Users/me")
STATE = HOME / "Library" / "Application Support" / "lanekit"
UPDATE_GOLDEN = os.environ.get("LANEKIT_UPDATE_GOLDEN") == "1"

GOLDEN_TOML = r"""
[defaults]
label_prefix = "com.example"

[queues.notes]
dir = "~/notes"

[lanes.daily]
queue = "notes"
command = ["codex", "exec", "--file", "{job}"]
schedule = "40 10 * * *"

[lanes.twice]
queue = "notes"
command = ["codex", "exec", "--file", "{job}"]
schedule = ["40 11 * * *", "40 16 * * *"]
env = { CODEX_HOME = "~/.codex" }

[lanes.interval]
queue = "notes"
command = ["/usr/bin/true"]
every = "15m"

[lanes.manual]
queue = "notes"
command = ["/usr/bin/true"]

[lanes.everything]
queue = "notes"
command = ["/bin/sh", "-c", "echo \"$1\" '<&>]]>'", "sh", "{job}"]
schedule = [{ Weekday = 0, Hour = 3, Minute = 0 }, { Day = 1, Hour = 4, Minute = 30 }]
env = { GREETING = "héllo <wörld> & \"friends\" ]]>", EMPTY = "" }
path = ["/opt/tools/bin", "/usr/bin", "/bin"]
label = "com.example.all-keys"
stdout_log = "/var/tmp/all.out"
stderr_log = "/var/tmp/all.err"
log = "/var/tmp/all.log"
nice = -5
low_priority_io = false
process_type = "Interactive"
session_type = "Background"
throttle_interval = 0
exit_timeout = "30s"
run_at_load = true
"""

DEFAULT_PATH_TEXT = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


def _args(lane: str, label: str) -> list[str]:
    snapshot = f"{STATE}/lanes/{label}.json"
    return [INTERPRETER, "-I", "-c", ENTRYPOINT_CODE, "run", lane, "--snapshot", snapshot]


def _common(lane: str, label: str) -> dict[str, Any]:
    return {
        "Label": label,
        "ProgramArguments": _args(lane, label),
        "EnvironmentVariables": {"PATH": DEFAULT_PATH_TEXT, "LANEKIT_LANE": lane},
        "WorkingDirectory": "/Users/me/notes",
        "StandardOutPath": f"/Users/me/notes/logs/{lane}.out.log",
        "StandardErrorPath": f"/Users/me/notes/logs/{lane}.err.log",
        "RunAtLoad": False,
        "LimitLoadToSessionType": ["Aqua", "Background"],
    }


EXPECTED: dict[str, dict[str, Any]] = {
    "daily": {
        **_common("daily", "com.example.daily"),
        "StartCalendarInterval": {"Hour": 10, "Minute": 40},
    },
    "twice": {
        **_common("twice", "com.example.twice"),
        "EnvironmentVariables": {
            "CODEX_HOME": "/Users/me/.codex",
            "PATH": DEFAULT_PATH_TEXT,
            "LANEKIT_LANE": "twice",
        },
        "StartCalendarInterval": [{"Hour": 11, "Minute": 40}, {"Hour": 16, "Minute": 40}],
    },
    "interval": {**_common("interval", "com.example.interval"), "StartInterval": 900},
    "manual": _common("manual", "com.example.manual"),
    "everything": {
        "Label": "com.example.all-keys",
        "ProgramArguments": _args("everything", "com.example.all-keys"),
        "EnvironmentVariables": {
            "GREETING": 'héllo <wörld> & "friends" ]]>',
            "EMPTY": "",
            "PATH": "/opt/tools/bin:/usr/bin:/bin",
            "LANEKIT_LANE": "everything",
        },
        "WorkingDirectory": "/Users/me/notes",
        "StandardOutPath": "/var/tmp/all.out",
        "StandardErrorPath": "/var/tmp/all.err",
        "StartCalendarInterval": [
            {"Weekday": 0, "Hour": 3, "Minute": 0},
            {"Day": 1, "Hour": 4, "Minute": 30},
        ],
        "RunAtLoad": True,
        "LimitLoadToSessionType": "Background",
        "ThrottleInterval": 0,
        "ExitTimeOut": 30,
        "Nice": -5,
        "LowPriorityIO": False,
        "ProcessType": "Interactive",
    },
}


def _fixed_paths(tmp_path: Path) -> Paths:
    return Paths(home=HOME, launch_agents=tmp_path / "agents", state=STATE, cwd=tmp_path)


def _golden_config(tmp_path: Path) -> tuple[Config, Paths]:
    paths = _fixed_paths(tmp_path)
    path = tmp_path / "lanes.toml"
    path.write_text(GOLDEN_TOML, encoding="utf-8")
    return load_config(path, paths), paths


def _render(lane: LaneSpec, paths: Paths, templates: Path | None = None) -> bytes:
    return render_lane(
        lane,
        interpreter=INTERPRETER,
        snapshot=paths.snapshot_for(lane.label),
        templates=templates,
    )


def _strict(value: Any) -> Any:
    """The value with every bool tagged, so True and 1 compare unequal."""
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_strict(item) for item in value]
    if isinstance(value, bool):
        return ("bool", value)
    return value


@pytest.mark.parametrize("name", list(EXPECTED))
def test_golden_plist_bytes(tmp_path: Path, name: str) -> None:
    """Each representative lane renders to exactly the bytes in tests/golden/<Label>.plist
    (set LANEKIT_UPDATE_GOLDEN=1 to rewrite them after a deliberate change)."""
    config, paths = _golden_config(tmp_path)
    lane = config.lanes[name]
    data = _render(lane, paths)
    golden = GOLDEN / f"{lane.label}.plist"
    if UPDATE_GOLDEN:
        golden.write_bytes(data)
    assert data == golden.read_bytes()


@pytest.mark.parametrize("name", list(EXPECTED))
def test_golden_plist_parses_back_to_the_expected_dict(tmp_path: Path, name: str) -> None:
    """The rendered plist reads back (plistlib) as the hand-written dict, types included:
    integers are <integer>, booleans <true/>/<false/>, one calendar entry is a dict."""
    config, paths = _golden_config(tmp_path)
    parsed = plistlib.loads(_render(config.lanes[name], paths))
    assert _strict(parsed) == _strict(EXPECTED[name])


@pytest.mark.parametrize("name", list(EXPECTED))
def test_model_matches_expected_dict(tmp_path: Path, name: str) -> None:
    """lane_plist (the model the template is checked against) is the same dict."""
    config, paths = _golden_config(tmp_path)
    lane = config.lanes[name]
    model = lane_plist(lane, interpreter=INTERPRETER, snapshot=paths.snapshot_for(lane.label))
    assert _strict(model) == _strict(EXPECTED[name])


def test_golden_files_are_canonical_and_tab_indented() -> None:
    """Every golden file is plistlib's canonical form: sorted keys, tab indentation."""
    files = sorted(GOLDEN.glob("*.plist"))
    assert len(files) >= 4
    for file in files:
        data = file.read_bytes()
        assert data == plistlib.dumps(plistlib.loads(data)), file.name
        assert b"\n\t<key>Label</key>" in data


def test_no_optional_key_appears_unless_set(tmp_path: Path) -> None:
    """ThrottleInterval, ExitTimeOut, Nice, LowPriorityIO and ProcessType are omitted when the
    lane does not set them; StartInterval and StartCalendarInterval only when scheduled;
    LimitLoadToSessionType is always written (agents would otherwise load only into Aqua)."""
    config, paths = _golden_config(tmp_path)
    parsed = plistlib.loads(_render(config.lanes["manual"], paths))
    assert set(parsed) == {
        "Label",
        "ProgramArguments",
        "EnvironmentVariables",
        "WorkingDirectory",
        "StandardOutPath",
        "StandardErrorPath",
        "RunAtLoad",
        "LimitLoadToSessionType",
    }


XML_CHAR = st.characters(codec="utf-8", exclude_characters="\r\ufffe\uffff").filter(
    lambda c: c in "\t\n" or ord(c) >= 0x20
)
SPECIALS = st.sampled_from(["<", "&", ">", '"', "'", "]]>", "&amp;", "<![CDATA[", "\n", "\t"])
XML_TEXT = st.lists(st.one_of(XML_CHAR, SPECIALS), max_size=30).map("".join)
LABEL = st.text(
    st.characters(codec="utf-8").filter(lambda c: c.isprintable() and not c.isspace() and c != "/"),
    min_size=1,
    max_size=60,
)
ENV_KEY = XML_TEXT.filter(lambda k: k != "" and "=" not in k and k not in {"PATH", "LANEKIT_LANE"})
LONG = "<&>\"']]>" * 1000 + "é😀"


@settings(max_examples=80, deadline=None)
@given(
    label=LABEL,
    interpreter=XML_TEXT.map(lambda t: "/" + t),
    snapshot=XML_TEXT.map(lambda t: "/" + t),
    queue_dir=XML_TEXT.map(lambda t: "/" + t),
    env=st.dictionaries(ENV_KEY, XML_TEXT, max_size=4),
)
@example(label=LONG, interpreter="/" + LONG, snapshot="/" + LONG, queue_dir="/q", env={LONG: LONG})
@example(label="]]>", interpreter="/]]>", snapshot="/a'b\"c", queue_dir="/<q>", env={"&": "]]>"})
def test_rendering_round_trips_any_xml_text(
    label: str, interpreter: str, snapshot: str, queue_dir: str, env: dict[str, str]
) -> None:
    """For any text XML 1.0 can carry (specials, ]]>, unicode, long), the rendered plist
    parses back to exactly the input values, and the bytes are canonical."""
    lane = LaneSpec(
        name="lane",
        label=label,
        queue=QueueSpec("q", Path(queue_dir)),
        command=("x",),
        schedule=Schedule(),
        stdout_path=Path(queue_dir) / "out",
        stderr_path=Path(queue_dir) / "err",
        log_path=Path(queue_dir) / "log",
        env=env,
    )
    data = render_lane(lane, interpreter=interpreter, snapshot=Path(snapshot))
    parsed = plistlib.loads(data)
    assert parsed["Label"] == label
    assert parsed["ProgramArguments"] == [
        interpreter,
        "-I",
        "-c",
        ENTRYPOINT_CODE,
        "run",
        "lane",
        "--snapshot",
        str(Path(snapshot)),
    ]
    assert parsed["EnvironmentVariables"] == {
        **env,
        "PATH": ":".join(lane.path),
        "LANEKIT_LANE": "lane",
    }
    assert parsed["WorkingDirectory"] == str(Path(queue_dir))
    assert data == plistlib.dumps(plistlib.loads(data))


def test_relative_interpreter_is_refused(tmp_path: Path) -> None:
    """launchd resolves nothing, so ProgramArguments[0] must be an absolute path."""
    config, _ = _golden_config(tmp_path)
    with pytest.raises(EnvironmentUnusableError) as caught:
        render_lane(config.lanes["daily"], interpreter="python3", snapshot=Path("/s.json"))
    assert caught.value.message == "the Python interpreter path 'python3' is not absolute"


# -- templates -----------------------------------------------------------------------------


def _shipped() -> str:
    return (templates_dir() / LANE_TEMPLATE).read_text(encoding="utf-8")


def _user_templates(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "my-templates"
    directory.mkdir(exist_ok=True)
    (directory / LANE_TEMPLATE).write_text(text, encoding="utf-8")
    return directory


def test_templates_are_found_in_the_checkout() -> None:
    """From a source checkout / editable install the shipped templates are <repo>/templates."""
    assert templates_dir() == ROOT / "templates"
    assert (templates_dir() / "lanes.toml.j2").is_file()


def test_templates_inside_an_installed_package_win(tmp_path: Path) -> None:
    """In a wheel install the templates sit inside the package (lanekit/templates), and that
    is where templates_dir looks first."""
    package = tmp_path / "site-packages" / "lanekit"
    (package / "templates").mkdir(parents=True)
    (package / "templates" / LANE_TEMPLATE).write_text("x", encoding="utf-8")
    assert templates_dir(package) == package / "templates"
    checkout = tmp_path / "repo"
    (checkout / "src" / "lanekit").mkdir(parents=True)
    (checkout / "templates").mkdir()
    (checkout / "templates" / LANE_TEMPLATE).write_text("x", encoding="utf-8")
    assert templates_dir(checkout / "src" / "lanekit") == checkout / "templates"
    with pytest.raises(EnvironmentUnusableError):
        templates_dir(tmp_path / "nowhere" / "lanekit")


def test_user_template_may_add_keys(tmp_path: Path) -> None:
    """A user template that extends the shipped one can add keys (KeepAlive here); the model
    keys are kept and the output is still canonical."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(
        tmp_path,
        '{% extends "lanekit/lane.plist.j2" %}\n'
        "{% block extra_keys %}\n\t<key>KeepAlive</key>\n\t<false/>\n{% endblock %}\n",
    )
    data = _render(config.lanes["daily"], paths, user)
    parsed = plistlib.loads(data)
    assert parsed.pop("KeepAlive") is False
    assert _strict(parsed) == _strict(EXPECTED["daily"])
    assert data == plistlib.dumps(plistlib.loads(data))


def _documented_addable_keys() -> list[str]:
    """The keys docs/configuration.md says a user template may add."""
    import re

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    sentence = text.split("What a user template may do: **add** keys lanekit does not set (", 1)
    assert len(sentence) == 2, "the templates section names the keys a template may add"
    return re.findall(r"`([A-Za-z]+)`", sentence[1].split(")", 1)[0])


@pytest.mark.parametrize("key", _documented_addable_keys())
def test_each_key_the_docs_say_a_template_may_add_can_be_added(tmp_path: Path, key: str) -> None:
    """docs/configuration.md's list of keys a template may add holds only keys lanekit does
    not set: a template adding one renders (LimitLoadToSessionType, which lanekit sets from
    `session_type`, was listed and refused)."""
    config, paths = _golden_config(tmp_path)
    value = "\t<true/>" if key != "Umask" else "\t<integer>63</integer>"
    user = _user_templates(
        tmp_path,
        '{% extends "lanekit/lane.plist.j2" %}\n'
        f"{{% block extra_keys %}}\n\t<key>{key}</key>\n{value}\n{{% endblock %}}\n",
    )
    assert key in plistlib.loads(_render(config.lanes["daily"], paths, user))


def test_user_dir_without_the_template_falls_back_to_the_shipped_one(tmp_path: Path) -> None:
    """A template directory lacking lane.plist.j2 renders with the shipped template."""
    config, paths = _golden_config(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _render(config.lanes["daily"], paths, empty) == _render(config.lanes["daily"], paths)


@pytest.mark.parametrize("part", ["directory", "template", "included"])
def test_a_user_template_others_may_write_is_refused(tmp_path: Path, part: str) -> None:
    """A template renders the plist, so it says what launchd runs as you: one that group or
    others may write (the directory, the template, or a template it includes) is refused,
    exit 69 with the chmod, not rendered (issue 30 item 4)."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(
        tmp_path,
        '{% extends "lanekit/lane.plist.j2" %}\n'
        '{% block extra_keys %}{% include "extra.j2" %}{% endblock %}\n',
    )
    (user / "extra.j2").write_text("\t<key>KeepAlive</key>\n\t<false/>\n", encoding="utf-8")
    assert plistlib.loads(_render(config.lanes["daily"], paths, user))["KeepAlive"] is False
    target = {
        "directory": user,
        "template": user / LANE_TEMPLATE,
        "included": user / "extra.j2",
    }[part]
    target.chmod(0o777 if part == "directory" else 0o666)
    with pytest.raises(UnsafeStateError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.exit_code is ExitCode.UNAVAILABLE
    assert caught.value.message.startswith(f"{target}: ")
    assert "is writable by group and others" in caught.value.message
    assert caught.value.hint == f"chmod go-w {target}"


def test_another_users_template_is_refused(tmp_path: Path, second_user: SecondUser) -> None:
    """A template another user owns (or one in their directory) could be theirs to change:
    refused, with a copy of your own as the fix, never a chown of their directory."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, _shipped())
    os.chown(user / LANE_TEMPLATE, SECOND_UID, SECOND_UID)
    with pytest.raises(UnsafeStateError, match=f"template is owned by uid {SECOND_UID}"):
        _render(config.lanes["daily"], paths, user)
    theirs = second_user.mkdir("templates")
    (theirs / LANE_TEMPLATE).write_text(_shipped(), encoding="utf-8")
    with pytest.raises(UnsafeStateError) as caught:
        _render(config.lanes["daily"], paths, theirs)
    assert caught.value.hint.startswith("keep your templates in a directory of your own")


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "{% for name, value in environment|dictsort %}",
            '{% for name, value in environment|dictsort if name != "PATH" %}',
            "renders EnvironmentVariables differently from the lane spec",
        ),
        (
            "\t<key>WorkingDirectory</key>\n\t<string>{{ working_directory }}</string>\n",
            "",
            "drops WorkingDirectory",
        ),
        (
            "{% if run_at_load %}<true/>{% else %}<false/>{% endif %}",
            "<integer>0</integer>",
            "renders RunAtLoad differently from the lane spec",
        ),
        (
            "<string>{{ label }}</string>",
            "<string>x{{ label }}</string>",
            "renders Label differently from the lane spec",
        ),
    ],
)
def test_user_template_may_not_change_or_drop_model_keys(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    """Parsing the output back catches a template that changes, drops or mistypes a key the
    lane spec sets (an <integer>0</integer> RunAtLoad is not <false/>)."""
    config, paths = _golden_config(tmp_path)
    shipped = _shipped()
    assert old in shipped
    user = _user_templates(tmp_path, shipped.replace(old, new))
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.message == f"lane daily: template {user / LANE_TEMPLATE} {problem}"
    assert caught.value.hint == f"fix the template in {user}, or remove it to use the shipped one"


def test_user_template_rendering_bad_xml_is_reported(tmp_path: Path) -> None:
    """Output that is not a plist at all is reported with the parser's reason."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, "<plist><dict>\n")
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.message == (
        f"lane daily: template {user / LANE_TEMPLATE} does not render a valid plist "
        "(no element found: line 2, column 0)"
    )


def test_broken_user_template_is_reported_with_file_and_line(tmp_path: Path) -> None:
    """A syntax error names the template file and line (not a traceback)."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, "<plist>\n<dict>\n{% if %}\n")
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.message == (
        f"{user / LANE_TEMPLATE}:3: Expected an expression, got 'end of statement block'"
    )


def test_undefined_name_in_user_template_is_reported_with_lane_file_and_line(
    tmp_path: Path,
) -> None:
    """Undefined names are errors (StrictUndefined), reported with the lane, file and line."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, "<plist>\n<dict>\n{{ lane.nope }}\n")
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.message == (
        f"lane daily: {user / LANE_TEMPLATE}:3: 'lanekit.config.model.LaneSpec object' "
        "has no attribute 'nope'"
    )


def test_user_template_extending_itself_is_explained(tmp_path: Path) -> None:
    """`{% extends "lane.plist.j2" %}` in the user's lane.plist.j2 would recurse forever; the
    error says to extend lanekit/lane.plist.j2."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, '{% extends "lane.plist.j2" %}\n')
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, user)
    assert caught.value.message == (
        f"lane daily: template {user / LANE_TEMPLATE} extends or includes itself"
    )
    assert caught.value.hint == 'extend the shipped template as "lanekit/lane.plist.j2"'


def test_missing_template_directory_is_a_config_error(tmp_path: Path) -> None:
    """A templates directory that does not exist is named in the error."""
    config, paths = _golden_config(tmp_path)
    with pytest.raises(ConfigError) as caught:
        _render(config.lanes["daily"], paths, tmp_path / "nope")
    assert caught.value.message == f"templates directory {tmp_path / 'nope'} does not exist"


def test_check_config_reports_a_broken_template_once(tmp_path: Path) -> None:
    """validate renders every lane; a template that fails them all the same way is one error
    (with the first lane's name), not one per lane."""
    config, paths = _golden_config(tmp_path)
    user = _user_templates(tmp_path, "<plist>\n{{ nope }}\n")
    check = check_config(config.path, paths, interpreter=INTERPRETER, templates=user)
    assert [e.message for e in check.errors] == [
        f"lane daily: {user / LANE_TEMPLATE}:2: 'nope' is undefined"
    ]
    assert check.config is None and not check.ok


def _runnable_golden(tmp_path: Path) -> str:
    """GOLDEN_TOML with `codex` replaced by a stand-in that exists: check_config refuses a job
    command missing from the lane's PATH (lanekit.reconcile.preflight)."""
    stub = tmp_path / "codex"
    stub.write_text("#!/bin/sh\n", encoding="utf-8")
    stub.chmod(0o755)
    return GOLDEN_TOML.replace('"codex"', f'"{stub}"')


def test_check_config_refuses_the_golden_config_without_its_codex(tmp_path: Path) -> None:
    """The golden lanes run `codex`, which is not on their PATH here: one error per lane."""
    config, paths = _golden_config(tmp_path)
    check = check_config(config.path, paths, interpreter=INTERPRETER)
    assert not check.ok
    assert [e.message.split(":")[1].strip() for e in check.errors] == [
        "lanes.daily.command",
        "lanes.twice.command",
    ]


def test_check_config_passes_the_golden_config(tmp_path: Path) -> None:
    """A valid config checks clean and carries the loaded Config."""
    config, paths = _golden_config(tmp_path)
    config.path.write_text(_runnable_golden(tmp_path), encoding="utf-8")
    config = load_config(config.path, paths)
    check = check_config(config.path, paths, interpreter=INTERPRETER)
    assert check.ok and check.errors == () and check.warnings == ()
    assert check.config == config and check.display == "lanes.toml"


def test_check_config_warns_about_collisions(tmp_path: Path) -> None:
    """Two lanes on one queue firing in the same minute are a warning, not an error."""
    config, paths = _golden_config(tmp_path)
    text = _runnable_golden(tmp_path).replace('"40 11 * * *"', '"40 10 * * *"')
    config.path.write_text(text, encoding="utf-8")
    check = check_config(config.path, paths, interpreter=INTERPRETER)
    assert check.ok and check.config is not None
    assert len(check.warnings) == 1
    assert check.warnings[0].startswith(
        'lanes "daily" and "twice" both drain queue "notes" and can start in the same minute'
    )


def test_render_config_writes_only_after_every_lane_rendered(tmp_path: Path) -> None:
    """render_config with out= writes <Label>.plist per lane; if any lane fails to render,
    nothing is written."""
    config, paths = _golden_config(tmp_path)
    out = tmp_path / "out"
    user = _user_templates(
        tmp_path, _shipped().replace("{{ label }}", "{{ label if lane.name != 'twice' else 'x' }}")
    )
    with pytest.raises(ConfigError):
        render_config(config.path, paths, interpreter=INTERPRETER, templates=user, out=out)
    assert not out.exists()
    written = render_config(config.path, paths, interpreter=INTERPRETER, out=out)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{w.lane.label}.plist" for w in written)
    assert all(w.changed for w in written)
    again = render_config(config.path, paths, interpreter=INTERPRETER, out=out, names=["daily"])
    assert [(w.lane.name, w.changed) for w in again] == [("daily", False)]


# -- writing -------------------------------------------------------------------------------


def test_write_plist_is_0600_and_reports_unchanged(tmp_path: Path) -> None:
    """write_plist creates the file with mode 0600 whatever the umask, returns False when the
    same bytes are already there, True when it replaced them; no temp file is left."""
    target = tmp_path / "agents" / "x.plist"
    old_umask = os.umask(0)
    try:
        assert write_plist(target, b"one") is True
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    inode = target.stat().st_ino
    assert write_plist(target, b"one") is False
    assert target.stat().st_ino == inode
    assert write_plist(target, b"two") is True
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.plist"]


def test_write_plist_fixes_a_wrong_mode(tmp_path: Path) -> None:
    """Identical bytes with a group/world-writable mode (which launchd refuses) are rewritten."""
    target = tmp_path / "x.plist"
    target.write_bytes(b"same")
    target.chmod(0o666)
    assert write_plist(target, b"same") is True
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# -- lanekit init ---------------------------------------------------------------------------


def test_init_example_loads_validates_and_renders_cleanly(tmp_path: Path) -> None:
    """The lanes.toml written by init is valid as is: no errors, no warnings, every lane
    renders, and its paths use the user's home."""
    paths = Paths.under(tmp_path)
    written = init_config(tmp_path / "new", paths)
    assert written == tmp_path / "new" / "lanes.toml"
    text = written.read_text(encoding="utf-8")
    assert f'dir = "{paths.home}/lanekit/inbox"' in text
    check = check_config(written, paths, interpreter=sys.executable)
    assert check.errors == () and check.warnings == ()
    assert check.config is not None and len(check.config.lanes) >= 2


def test_init_quotes_an_unusual_home_for_toml(tmp_path: Path) -> None:
    """A home with quotes, backslashes or DEL still yields valid TOML with the exact path."""
    home = tmp_path / 'odd "home" \\ \x7f'
    paths = Paths(home=home, launch_agents=tmp_path / "a", state=tmp_path / "s", cwd=tmp_path)
    config = load_config(init_config(tmp_path, paths), paths)
    assert config.queues["inbox"].dir == home / "lanekit" / "inbox"


def test_init_never_overwrites(tmp_path: Path) -> None:
    """An existing lanes.toml is left byte-for-byte alone and init raises ConfigError."""
    paths = Paths.under(tmp_path)
    existing = tmp_path / "lanes.toml"
    existing.write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        init_config(tmp_path, paths)
    assert caught.value.message == "lanes.toml: already exists; lanekit init never overwrites it"
    assert existing.read_text(encoding="utf-8") == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lanes.toml"]


def test_the_runner_argv_keeps_the_queue_dir_off_sys_path(tmp_path: Path) -> None:
    """launchd starts the runner in the queue dir (WorkingDirectory); with plain `-c` a
    `lanekit.py` dropped there would be imported instead of lanekit. The plist's argv runs
    isolated (-I), so the real lanekit answers (`run --help` exits 0)."""
    import subprocess
    import sys

    (tmp_path / "lanekit.py").write_text("import sys\nsys.exit(42)\n")
    config, _ = _golden_config(tmp_path)
    argv = program_arguments(config.lanes["daily"], interpreter=sys.executable, snapshot=tmp_path)
    done = subprocess.run(
        [*argv[:4], "--help"], cwd=tmp_path, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    shadowed = subprocess.run(
        [sys.executable, *argv[2:4], "--help"], cwd=tmp_path, capture_output=True, check=False
    )
    assert shadowed.returncode == 42  # what -I prevents
