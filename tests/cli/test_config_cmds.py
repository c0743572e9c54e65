"""`lanekit init`, `lanekit validate`, `lanekit render` through the CLI: output, exit codes,
and bad lanes.toml files that must each get one clear line and leave no file behind."""

from __future__ import annotations

import json
import plistlib
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lanekit.cli import app
from lanekit.service.launchd.plist import ENTRYPOINT_CODE
from lanekit.state.paths import Paths

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
[queues.notes]
dir = "~/q"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
schedule = "40 10 * * *"
"""
OTHER_LANE = '\n[lanes.other]\nqueue = "notes"\ncommand = ["/bin/cat", "{job}"]\n'


@dataclass
class Cli:
    """A working directory with HOME inside it, and the app invoked there."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    def write(self, text: str | bytes, name: str = "lanes.toml") -> Path:
        path = self.root / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(app, list(args))

    def files(self) -> dict[str, bytes]:
        return {
            str(p.relative_to(self.root)): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file()
        }


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """cwd = tmp_path and HOME = tmp_path/home, so `~` in lanes.toml never means the real home."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return Cli(tmp_path)


def _errors(stderr: str) -> list[str]:
    return [
        line.removeprefix("error: ") for line in stderr.splitlines() if line.startswith("error:")
    ]


# Each case: lanes.toml content and the exact one-line message it must produce.
BAD: list[tuple[str, str | bytes, str]] = [
    (
        "toml-syntax",
        '[queues.notes]\ndir = "/q"\nbad key = 1\n',
        "lanes.toml:3:5: Expected '=' after a key in a key/value pair",
    ),
    (
        "not-utf8",
        b'[queues.notes]\ndir = "/q\xff"\n',
        "lanes.toml:2: not valid UTF-8 (byte 0xff)",
    ),
    (
        "unknown-table",
        BASE + '\n[lane.extra]\nqueue = "notes"\n',
        'lanes.toml: lane: unknown table; did you mean "lanes"?',
    ),
    (
        "typo-key",
        BASE + 'shedule = "40 10 * * *"\n',
        'lanes.toml: lanes.funnel.shedule: unknown key; did you mean "schedule"?',
    ),
    (
        "hour-24-in-list",
        BASE.replace('"40 10 * * *"', '["40 10 * * *", "40 24 * * *"]'),
        "lanes.toml: lanes.funnel.schedule[1]: Hour 24 is out of range 0-23",
    ),
    (
        "table-without-minute",
        BASE.replace('"40 10 * * *"', "{ Hour = 3 }"),
        "lanes.toml: lanes.funnel.schedule: {Hour=3} has no Minute, so launchd runs it every "
        "minute from 03:00 to 03:59",
    ),
    (
        "schedule-wrong-type",
        BASE.replace('"40 10 * * *"', "5"),
        "lanes.toml: lanes.funnel.schedule: expected cron text, a table or an array of them, "
        "got an integer (5)",
    ),
    (
        "schedule-and-every",
        BASE + 'every = "15m"\n',
        "lanes.toml: lanes.funnel: schedule and every are both set; launchd would run the lane "
        "on both, independently",
    ),
    (
        "every-zero",
        BASE.replace('schedule = "40 10 * * *"', 'every = "0m"'),
        'lanes.toml: lanes.funnel.every: duration "0m" must be more than zero',
    ),
    (
        "relative-queue-dir",
        BASE.replace('"~/q"', '"queues/notes"'),
        'lanes.toml: queues.notes.dir: "queues/notes" is relative; launchd runs jobs from / '
        "— use an absolute path or ~/...",
    ),
    (
        "variable-in-path",
        BASE + 'stdout_log = "$TMPDIR/funnel.log"\n',
        'lanes.toml: lanes.funnel.stdout_log: "$TMPDIR/funnel.log" uses $TMPDIR; only a '
        "leading ~ or $HOME is expanded",
    ),
    (
        "tilde-user",
        BASE.replace('"~/q"', '"~bob/q"'),
        'lanes.toml: queues.notes.dir: "~bob/q": ~bob is not expanded, only ~ and ~/...',
    ),
    (
        "relative-path-entry",
        BASE + 'path = ["/usr/bin", "bin"]\n',
        'lanes.toml: lanes.funnel.path[1]: "bin" is relative; launchd runs jobs from / '
        "— use an absolute path or ~/...",
    ),
    (
        "label-slash",
        BASE + 'label = "com.example/funnel"\n',
        "lanes.toml: lanes.funnel.label: label \"com.example/funnel\" contains '/', the "
        "separator of launchctl service targets",
    ),
    (
        "label-whitespace",
        BASE + 'label = "com.example funnel"\n',
        'lanes.toml: lanes.funnel.label: label "com.example funnel" contains U+0020 '
        "(whitespace or not printable)",
    ),
    (
        "label-empty",
        BASE + 'label = ""\n',
        'lanes.toml: lanes.funnel.label: label "" is empty',
    ),
    (
        "label-com-apple",
        BASE + 'label = "COM.Apple.funnel"\n',
        'lanes.toml: lanes.funnel.label: label "COM.Apple.funnel" starts with com.apple., which '
        "is reserved for Apple",
    ),
    (
        "label-prefix-com-apple",
        '[defaults]\nlabel_prefix = "com.apple"\n' + BASE,
        'lanes.toml: defaults.label_prefix: "com.apple" starts with com.apple., which is '
        "reserved for Apple",
    ),
    (
        "duplicate-label",
        BASE + OTHER_LANE + 'label = "local.lanekit.funnel"\n',
        'lanes.toml: lanes.other.label: label "local.lanekit.funnel" is already used by lane '
        "funnel",
    ),
    (
        "unsafe-lane-name",
        BASE.replace("[lanes.funnel]", '[lanes."../funnel"]'),
        'lanes.toml: lanes."../funnel": lane name "../funnel" is not a safe name',
    ),
    (
        "unknown-queue",
        BASE.replace('queue = "notes"', 'queue = "note"'),
        'lanes.toml: lanes.funnel.queue: no queue named "note"; did you mean "notes"?',
    ),
    (
        "queue-without-dir",
        BASE.replace('dir = "~/q"', "durable = true"),
        'lanes.toml: queues.notes: missing required key "dir"',
    ),
    (
        "same-queue-dir",
        BASE + '\n[queues.again]\ndir = "$HOME/q"\n',
        'lanes.toml: queues.again.dir: {home}/q is already the dir of queue "notes"',
    ),
    (
        "missing-command",
        BASE.replace('command = ["/bin/cat", "{job}"]\n', ""),
        'lanes.toml: lanes.funnel: missing required key "command"',
    ),
    (
        "empty-command",
        BASE.replace('["/bin/cat", "{job}"]', "[]"),
        "lanes.toml: lanes.funnel.command: is empty",
    ),
    (
        "command-string",
        BASE.replace('["/bin/cat", "{job}"]', '"/bin/cat {job}"'),
        "lanes.toml: lanes.funnel.command: expected an array of strings, got a string "
        '("/bin/cat {job}")',
    ),
    (
        "command-element-number",
        BASE.replace('["/bin/cat", "{job}"]', '["/bin/sleep", 5]'),
        "lanes.toml: lanes.funnel.command[1]: expected a string, got an integer (5)",
    ),
    (
        "control-character",
        BASE.replace('"{job}"', '"a\\u0007b"'),
        "lanes.toml: lanes.funnel.command[1]: contains U+0007, which a launchd plist cannot carry",
    ),
    (
        "max-jobs-string",
        BASE + 'max_jobs = "20"\n',
        'lanes.toml: lanes.funnel.max_jobs: expected an integer, got a string ("20")',
    ),
    (
        "max-jobs-zero",
        BASE + "max_jobs = 0\n",
        "lanes.toml: lanes.funnel.max_jobs: must be at least 1, got 0",
    ),
    (
        "nice-out-of-range",
        BASE + "nice = 30\n",
        "lanes.toml: lanes.funnel.nice: 30 is out of range -20..20",
    ),
    (
        "process-type",
        BASE + 'process_type = "background"\n',
        'lanes.toml: lanes.funnel.process_type: "background" is not one of Background, '
        'Standard, Adaptive, Interactive; did you mean "Background"?',
    ),
    (
        "low-priority-io-string",
        BASE + 'low_priority_io = "yes"\n',
        'lanes.toml: lanes.funnel.low_priority_io: expected a boolean, got a string ("yes")',
    ),
    (
        "stale-after-words",
        BASE + 'stale_after = "1 hour"\n',
        'lanes.toml: lanes.funnel.stale_after: duration "1 hour" is not valid',
    ),
    (
        "line-break-in-value",
        BASE + 'stale_after = "1\\nhour"\n',
        'lanes.toml: lanes.funnel.stale_after: duration "1\\nhour" is not valid',
    ),
    (
        "throttle-negative",
        BASE + "throttle_interval = -1\n",
        "lanes.toml: lanes.funnel.throttle_interval: must be at least 0, got -1",
    ),
    (
        "env-number",
        BASE + "env = { RETRIES = 5 }\n",
        "lanes.toml: lanes.funnel.env.RETRIES: expected a string, got an integer (5)",
    ),
    (
        "env-path",
        BASE + 'env = { PATH = "/usr/bin" }\n',
        "lanes.toml: lanes.funnel.env.PATH: PATH is set by lanekit",
    ),
    (
        "defaults-wrong-type",
        "[defaults]\nrun_at_load = 1\n" + BASE,
        "lanes.toml: defaults.run_at_load: expected a boolean, got an integer (1)",
    ),
    (
        "toml-nested-3000-arrays",
        BASE + "x = " + "[" * 3000 + "]" * 3000 + "\n",
        "lanes.toml: arrays or inline tables are nested too deeply to read",
    ),
    (
        "queue-dir-dotdot-alias",
        BASE + '\n[queues.other]\ndir = "~/z/../q"\n',
        'lanes.toml: queues.other.dir: {home}/z/../q is already the dir of queue "notes" '
        "({home}/q), as real path {home}/q",
    ),
    (
        "queue-dir-nested",
        BASE + '\n[queues.inner]\ndir = "~/q/inner"\n',
        'lanes.toml: queues.inner.dir: {home}/q/inner is inside the dir of queue "notes" '
        "({home}/q): one queue's directories would hold the other's jobs",
    ),
    (
        "queue-dir-contains",
        '[queues.outer]\ndir = "~"\n' + BASE,
        'lanes.toml: queues.notes.dir: {home}/q is inside the dir of queue "outer" ({home}): '
        "one queue's directories would hold the other's jobs",
    ),
    (
        "log-default-collision",
        BASE + '\n[lanes."funnel.out"]\nqueue = "notes"\ncommand = ["/bin/cat", "{job}"]\n',
        'lanes.toml: lanes."funnel.out".log: {home}/q/logs/funnel.out.log (the default) is also '
        "lanes.funnel.stdout_log (the default): two lanes would write one file",
    ),
    (
        "log-explicit-collision",
        BASE + 'log = "~/shared.log"\n' + OTHER_LANE + 'stderr_log = "~/shared.log"\n',
        "lanes.toml: lanes.other.stderr_log: {home}/shared.log is also lanes.funnel.log: two "
        "lanes would write one file",
    ),
    (
        "templates-dir-missing",
        '[defaults]\ntemplates = "~/no-such-templates"\n' + BASE,
        "templates directory {home}/no-such-templates does not exist",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_validate_bad_config_one_line_exit_1_nothing_written(
    cli: Cli, text: str | bytes, message: str
) -> None:
    """`lanekit validate` prints exactly this one error line (plus its hint), exits 1, prints
    nothing on stdout and writes nothing."""
    cli.write(text)
    before = cli.files()
    result = cli.run("validate")
    expected = message.replace("{home}", str(cli.home))
    assert result.exit_code == 1, result.output
    assert _errors(result.stderr) == [expected]
    lines = result.stderr.splitlines()
    assert lines[lines.index(f"error: {expected}") + 1].startswith("hint: ")
    assert result.stdout == ""
    assert cli.files() == before


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_render_bad_config_one_line_exit_2_nothing_written(
    cli: Cli, text: str | bytes, message: str
) -> None:
    """`lanekit render --out DIR` stops on the same line with exit 2 and creates no file."""
    cli.write(text)
    before = cli.files()
    result = cli.run("render", "--out", "out")
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: {message.replace('{home}', str(cli.home))}"
    assert lines[1].startswith("hint: ") and len(lines) == 2
    assert result.stdout == ""
    assert not (cli.root / "out").exists()
    assert cli.files() == before


def test_bad_cases_are_distinct() -> None:
    """At least 20 different bad inputs, each with its own message."""
    assert len({c[2] for c in BAD}) == len(BAD) >= 20


@pytest.mark.parametrize("command", ["validate", "render"])
def test_missing_config_suggests_init(cli: Cli, command: str) -> None:
    """No lanes.toml: exit 2 and a hint to run `lanekit init`."""
    result = cli.run(command)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: lanes.toml: no such file",
        "hint: run `lanekit init` to write an example lanes.toml, or pass --config PATH",
    ]


def test_lanekit_config_env_is_used(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """$LANEKIT_CONFIG picks the file when -c is not given; -c still wins."""
    cli.write(BASE, "a.toml")
    cli.write(BASE.replace("funnel", "other"), "b.toml")
    monkeypatch.setenv("LANEKIT_CONFIG", "a.toml")
    assert cli.run("validate").stdout.startswith("a.toml: OK (1 lane, 1 queue)")
    assert cli.run("validate", "-c", "b.toml").stdout.startswith("b.toml: OK")


def test_validate_lists_every_error(cli: Cli) -> None:
    """Several problems are all listed, each with its hint, then a count; exit 1."""
    cli.write(BASE + "nice = 30\nmax_jobs = 0\n" + OTHER_LANE + 'label = "a b"\n')
    result = cli.run("validate")
    assert result.exit_code == 1
    assert _errors(result.stderr) == [
        "lanes.toml: lanes.funnel.nice: 30 is out of range -20..20",
        "lanes.toml: lanes.funnel.max_jobs: must be at least 1, got 0",
        'lanes.toml: lanes.other.label: label "a b" contains U+0020 (whitespace or not printable)',
    ]
    assert sum(line.startswith("hint: ") for line in result.stderr.splitlines()) == 3
    assert result.stderr.splitlines()[-1] == "lanes.toml: 3 errors"


def test_validate_ok_summary(cli: Cli) -> None:
    """A valid file: exit 0, a summary naming lanes, labels, queues and schedules."""
    cli.write(BASE + OTHER_LANE + 'every = "15m"\n')
    result = cli.run("validate")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "lanes.toml: OK (2 lanes, 1 queue)",
        "  funnel  local.lanekit.funnel  queue=notes  every day at 10:40",
        "  other   local.lanekit.other   queue=notes  every 15 minutes",
    ]
    assert result.stderr == ""


def test_queue_dir_symlinked_alias_is_refused(cli: Cli) -> None:
    """Issue 11 #15: a queue whose dir is a symlink to another queue's dir is the same queue
    by real path: validate exits 1 and apply exits 2, each with one line naming both."""
    (cli.home / "q").mkdir(parents=True)
    (cli.home / "alias").symlink_to(cli.home / "q")
    cli.write(BASE + '\n[queues.other]\ndir = "~/alias"\n')
    expected = (
        f'lanes.toml: queues.other.dir: {cli.home}/alias is already the dir of queue "notes" '
        f"({cli.home}/q), as real path {cli.home}/q"
    )
    result = cli.run("validate")
    assert result.exit_code == 1
    assert _errors(result.stderr) == [expected]
    result = cli.run("apply")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"error: {expected}"
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "text",
    [
        BASE + "x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n",
        "x = " + "[" * 3000 + "]" * 3000 + "\n",
    ],
    ids=["inline-tables", "arrays"],
)
def test_deeply_nested_toml_is_refused_by_every_command(cli: Cli, text: str) -> None:
    """Issue 11 #11: lanes.toml nested 3,000 deep is one line and exit 2 from apply/plan/
    doctor (not a RecursionError traceback and exit 1), and nothing is installed."""
    cli.write(text)
    for command in ("apply", "plan", "doctor"):
        result = cli.run(command)
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.splitlines() == [
            "error: lanes.toml: arrays or inline tables are nested too deeply to read",
            "hint: lanes.toml needs at most a few levels of [...] and {...}: flatten the nesting",
        ]
        assert not isinstance(result.exception, RecursionError)
    assert not Paths.from_env().launch_agents.exists() or not any(
        Paths.from_env().launch_agents.iterdir()
    )


def test_apply_refuses_colliding_log_paths(cli: Cli) -> None:
    """Issue 11 #14: lane funnel's default stdout log is lane funnel.out's default event log:
    apply exits 2 with one line naming both lanes and keys, and installs neither lane."""
    cli.write(BASE + '\n[lanes."funnel.out"]\nqueue = "notes"\ncommand = ["/bin/cat", "{job}"]\n')
    result = cli.run("apply")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == (
        f'error: lanes.toml: lanes."funnel.out".log: {cli.home}/q/logs/funnel.out.log (the '
        "default) is also lanes.funnel.stdout_log (the default): two lanes would write one file"
    )
    assert not Paths.from_env().launch_agents.exists() or not any(
        Paths.from_env().launch_agents.iterdir()
    )


def test_validate_warns_about_collisions_but_passes(cli: Cli) -> None:
    """Two lanes of one queue firing in the same minute: a warning on stderr, exit 0."""
    cli.write(BASE + OTHER_LANE + 'schedule = "40 10 * * *"\n')
    result = cli.run("validate")
    assert result.exit_code == 0
    assert result.stderr.startswith(
        'warning: lanes.toml: lanes "funnel" and "other" both drain queue "notes" and can '
        "start in the same minute"
    )


def test_validate_json(cli: Cli) -> None:
    """--json: schema 1 with ok, errors (message + hint), warnings and lanes."""
    cli.write(BASE + "nice = 30\n")
    bad = json.loads(cli.run("validate", "--json").stdout)
    assert bad == {
        "schema": 1,
        "config": "lanes.toml",
        "ok": False,
        "errors": [
            {
                "message": "lanes.toml: lanes.funnel.nice: 30 is out of range -20..20",
                "hint": "use -20..20",
            }
        ],
        "warnings": [],
        "lanes": [],
    }
    cli.write(BASE)
    result = cli.run("validate", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["lanes"] == [
        {
            "lane": "funnel",
            "label": "local.lanekit.funnel",
            "queue": "notes",
            "schedule": "every day at 10:40",
        }
    ]


def test_render_one_lane_prints_the_canonical_plist(cli: Cli) -> None:
    """One lane: stdout is exactly the canonical plist, running this interpreter with the
    snapshot path from Paths, with ~ expanded to $HOME."""
    cli.write(BASE + OTHER_LANE)
    result = cli.run("render", "funnel")
    assert result.exit_code == 0, result.output
    data = result.stdout.encode("utf-8")
    assert data == plistlib.dumps(plistlib.loads(data))
    plist = plistlib.loads(data)
    snapshot = Paths.from_env().snapshot_for("local.lanekit.funnel")
    assert plist["ProgramArguments"] == [
        sys.executable,
        "-I",
        "-c",
        ENTRYPOINT_CODE,
        "run",
        "funnel",
        "--snapshot",
        str(snapshot),
    ]
    assert plist["WorkingDirectory"] == str(cli.home / "q")
    assert plist["StartCalendarInterval"] == {"Hour": 10, "Minute": 40}


def test_render_several_lanes_marks_each_plist(cli: Cli) -> None:
    """Several lanes: each plist is preceded by a `# <Label>.plist` line."""
    cli.write(BASE + OTHER_LANE)
    result = cli.run("render")
    assert result.exit_code == 0
    chunks = result.stdout.split("# ")[1:]
    assert [chunk.split("\n", 1)[0] for chunk in chunks] == [
        "local.lanekit.funnel.plist",
        "local.lanekit.other.plist",
    ]
    for chunk in chunks:
        assert plistlib.loads(chunk.split("\n", 1)[1].encode("utf-8"))["Label"] in chunk


def test_render_out_writes_label_files_and_reports_unchanged(cli: Cli) -> None:
    """--out DIR writes <Label>.plist (mode 0600, as apply installs it); a second run reports
    them unchanged."""
    cli.write(BASE + OTHER_LANE)
    first = cli.run("render", "--out", "out")
    assert first.exit_code == 0
    assert first.stdout.splitlines() == [
        "wrote out/local.lanekit.funnel.plist",
        "wrote out/local.lanekit.other.plist",
    ]
    written = cli.root / "out" / "local.lanekit.funnel.plist"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert plistlib.loads(written.read_bytes())["Label"] == "local.lanekit.funnel"
    second = cli.run("render", "other", "--out", "out")
    assert second.stdout.splitlines() == ["unchanged out/local.lanekit.other.plist"]


def test_render_unknown_lane_suggests_a_name(cli: Cli) -> None:
    """An unknown lane name: exit 2 with a did-you-mean and the list of lanes."""
    cli.write(BASE + OTHER_LANE)
    result = cli.run("render", "funel", "--out", "out")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        'error: no lane named "funel" in lanes.toml; did you mean "funnel"?',
        "hint: lanes: funnel, other",
    ]
    assert not (cli.root / "out").exists()


def test_render_with_user_templates_option(cli: Cli) -> None:
    """--templates DIR overrides the shipped template; extra keys appear in the output."""
    cli.write(BASE)
    tpl = cli.root / "tpl"
    tpl.mkdir()
    (tpl / "lane.plist.j2").write_text(
        '{% extends "lanekit/lane.plist.j2" %}\n'
        "{% block extra_keys %}\n\t<key>KeepAlive</key>\n\t<true/>\n{% endblock %}\n",
        encoding="utf-8",
    )
    result = cli.run("render", "--templates", "tpl")
    assert result.exit_code == 0, result.output
    assert plistlib.loads(result.stdout.encode("utf-8"))["KeepAlive"] is True


def test_broken_user_template_from_defaults_names_file_and_line(cli: Cli) -> None:
    """[defaults] templates with a syntax error: validate exits 1, render exits 2, both name
    the template file and line."""
    tpl = cli.home / "tpl"
    tpl.mkdir(parents=True)
    (tpl / "lane.plist.j2").write_text("<plist>\n{% for %}\n", encoding="utf-8")
    cli.write('[defaults]\ntemplates = "~/tpl"\n' + BASE + OTHER_LANE)
    message = f"{tpl / 'lane.plist.j2'}:2: Expected an expression, got 'end of statement block'"
    validate = cli.run("validate")
    assert validate.exit_code == 1
    assert _errors(validate.stderr) == [message]
    render = cli.run("render")
    assert render.exit_code == 2
    assert render.stderr.splitlines() == [
        f"error: {message}",
        f"hint: fix the template in {tpl}, or remove it to use the shipped one",
    ]


def test_init_writes_an_example_that_validates(cli: Cli) -> None:
    """init writes ./lanes.toml, which validates with no error or warning."""
    result = cli.run("init")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "wrote lanes.toml"
    check = cli.run("validate")
    assert check.exit_code == 0 and check.stderr == ""
    assert f'"{cli.home}/lanekit/inbox"' in (cli.root / "lanes.toml").read_text(encoding="utf-8")


def test_init_into_a_directory(cli: Cli) -> None:
    """init DIR creates DIR/lanes.toml and says how to use it."""
    result = cli.run("init", "conf")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "wrote conf/lanes.toml",
        "next: edit it, then `lanekit validate -c conf/lanes.toml` and "
        "`lanekit render -c conf/lanes.toml`",
    ]
    assert cli.run("validate", "-c", "conf/lanes.toml").exit_code == 0


def test_init_never_overwrites(cli: Cli) -> None:
    """A second init leaves the file untouched and exits 2 with a hint."""
    cli.write("# my lanes\n")
    before = cli.files()
    result = cli.run("init")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: lanes.toml: already exists; lanekit init never overwrites it",
        "hint: edit it, or run `lanekit init DIR` to write one in another directory",
    ]
    assert cli.files() == before


def test_readme_example_validates_and_renders(cli: Cli) -> None:
    """examples/lanes.toml: one queue, three lanes (two daily times, every 15m, tables with
    nice/low_priority_io), valid and rendered to canonical plists."""
    example = str(ROOT / "examples" / "lanes.toml")
    # validate refuses a job command missing from the lane's PATH: give codex a stand-in.
    bin_dir = cli.root / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\n")
    (bin_dir / "codex").chmod(0o755)
    text = Path(example).read_text().replace("path = [", f'path = ["{bin_dir}", ', 1)
    (cli.root / "example.toml").write_text(text)
    check = cli.run("validate", "-c", "example.toml")
    assert check.exit_code == 0, check.output
    assert check.stdout.splitlines()[0] == "example.toml: OK (3 lanes, 1 queue)"
    assert check.stderr == ""
    bare = cli.run("validate", "-c", example)
    if shutil.which("codex", path="/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin") is None:
        assert bare.exit_code == 1
        assert "the job command codex is not on the job's PATH" in bare.stderr
    result = cli.run("render", "-c", example, "--out", "out")
    assert result.exit_code == 0, result.output
    plists = {p.name: plistlib.loads(p.read_bytes()) for p in (cli.root / "out").iterdir()}
    funnel = plists["com.example.lanekit.funnel.plist"]
    assert funnel["StartCalendarInterval"] == [
        {"Hour": 10, "Minute": 40},
        {"Hour": 16, "Minute": 40},
    ]
    assert funnel["EnvironmentVariables"]["CODEX_HOME"] == f"{cli.home}/.codex"
    assert plists["com.example.lanekit.trickle.plist"]["StartInterval"] == 900
    backlog = plists["com.example.lanekit.backlog.plist"]
    assert (backlog["Nice"], backlog["LowPriorityIO"]) == (10, True)
    assert all(
        p["WorkingDirectory"] == f"{cli.home}/lanekit-example/notes" for p in plists.values()
    )
