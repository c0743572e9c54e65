"""Hostile values in suggested commands and in human output (issue 11 item 3, issue 15 item 9).

The unit tables pin `shell_quote`/`printable`; the CLI tests plant the hostile labels, paths and
log lines for real and read what a user would paste or see.
"""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.system.quoting import cmdline, printable, shell_quote

INJECTION = "x.plist; touch PWNED; true "
COLOURED = "evil\n\x1b[31mred"


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS` in-process; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("plain", "plain"),
        (
            "/Users/me/Library/Application Support/pipx",
            "'/Users/me/Library/Application Support/pipx'",
        ),
        (INJECTION, "'x.plist; touch PWNED; true '"),
        ("it's", "'it'\"'\"'s'"),
        ("", "''"),
        ("$(id -u)", "'$(id -u)'"),
        ("~", "~"),
        ("~/", "~/"),
        ("~/Library/Application Support/x", "~/'Library/Application Support/x'"),
        ("~/a;b", "~/'a;b'"),
        ("~root/x", "'~root/x'"),
        ("a~/b", "'a~/b'"),
        ("-rf", "-rf"),
        ("a\nb", "$'a\\x0ab'"),
        ("\x1b[31m it's", "$'\\x1b[31m it\\'s'"),
        ("~/x\ny", "$'~/x\\x0ay'"),
        ("rtl\u202e", "$'rtl\\xe2\\x80\\xae'"),
    ],
)
def test_shell_quote_table(value: str, quoted: str) -> None:
    """Each value becomes exactly one shell word; a leading `~`/`~/` stays home, nothing else
    expands."""
    assert shell_quote(value) == quoted
    assert printable(quoted) == quoted
    if not value.startswith("~") and not quoted.startswith("$"):
        assert shlex.split(quoted) == [value]


@pytest.mark.parametrize("value", ["a\nb", "\x1b[31m it's", "x\x7f\x9b\u202e\\", "a\rb"])
def test_shell_quote_of_controls_round_trips_in_bash(value: str) -> None:
    """`$'...'` gives bash back the exact value, byte for byte."""
    out = subprocess.run(
        ["bash", "-c", f"printf '%s' {shell_quote(value)}"], capture_output=True, check=True
    ).stdout
    assert out == value.encode("utf-8")


def test_shell_quote_keeps_home_meaning_in_a_real_shell(tmp_path: Path) -> None:
    """bash expands the bare `~/` prefix to HOME and takes the quoted rest literally."""
    word = shell_quote("~/A B;touch PWNED")
    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {word}"],
        cwd=tmp_path,
        env={"HOME": "/home/someone", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "/home/someone/A B;touch PWNED\n"
    assert not (tmp_path / "PWNED").exists()


def test_cmdline_quotes_each_argument() -> None:
    """argv joined with one quoted word per argument; ints are allowed (pids, uids)."""
    assert cmdline("chown", 501, "/a b/c") == "chown 501 '/a b/c'"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text", "plain text"),
        ("a\tb", "a\tb"),
        ("two\nlines", "two\\nlines"),
        ("cr\rhere", "cr\\rhere"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("bell\x07", "bell\\x07"),
        ("nul\x00", "nul\\x00"),
        ("del\x7f", "del\\x7f"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("caf\u00e9 \u2713", "caf\u00e9 \u2713"),
    ],
)
def test_printable_table(text: str, shown: str) -> None:
    """C0 (except tab), DEL, C1 and bidi overrides are escaped; other text is untouched."""
    assert printable(text) == shown


def _plist(path: Path, label: str, **extra: object) -> Path:
    data = {"Label": label, "ProgramArguments": ["/bin/echo", "hi"], **extra}
    # XML plists cannot carry control characters; launchd reads binary plists as well.
    path.write_bytes(plistlib.dumps(data, fmt=plistlib.FMT_BINARY))
    path.chmod(0o644)
    return path


def test_doctor_fix_for_an_injection_label_is_safe_to_paste(tmp_path: Path) -> None:
    """Label `x.plist; touch PWNED; true `: the label-mismatch fix, pasted into bash in a
    temporary directory, renames the file to the label and runs nothing else."""
    work = tmp_path / "work"
    work.mkdir()
    plist = _plist(work / "a.plist", INJECTION)
    code, out, err = invoke("doctor", "--plist", str(plist), "--json")
    assert code == 0, err
    fixes = {f["id"]: f["fix"] for f in json.loads(out)["findings"]}
    fix = fixes["plist.label-mismatch"]
    assert shlex.split(fix) == ["mv", str(plist), str(work / f"{INJECTION}.plist")]
    subprocess.run(["bash", "-c", fix], cwd=work, check=True, timeout=30)
    assert not (work / "PWNED").exists()
    assert (work / f"{INJECTION}.plist").is_file()
    assert not plist.exists()
    for text in fixes.values():
        unquoted = text.split("'")[::2]  # outside single quotes
        assert not any("touch PWNED" in part for part in unquoted), text


def test_doctor_prints_control_characters_escaped(tmp_path: Path) -> None:
    """A Label with a newline and ESC shows as `\\n`/`\\x1b` in every line doctor prints: no
    raw control character reaches the terminal and each finding stays on its own line."""
    plist = _plist(tmp_path / "b.plist", COLOURED)
    code, out, err = invoke("doctor", "--plist", str(plist))
    assert code == 0, err
    assert "\x1b" not in out + err
    assert "Label evil\\n\\x1b[31mred" in out
    lines = out.splitlines()
    assert any(line.startswith("  warning  plist.label-mismatch") for line in lines)
    assert not any(line.startswith("[31mred") for line in lines)
    code, out, _ = invoke("doctor", "--plist", str(plist), "--json")
    [fix] = [f["fix"] for f in json.loads(out)["findings"] if f["id"] == "plist.label-mismatch"]
    assert fix in printable(fix) and "$'" in fix
    subprocess.run(["bash", "-c", fix], check=True, timeout=30)
    assert (tmp_path / f"{COLOURED}.plist").is_file()


def test_error_printer_escapes_control_characters(tmp_path: Path) -> None:
    """The CLI's one-line error stays one line when the path it names holds a newline/ESC."""
    hostile = tmp_path / "a\n\x1b[2Jb.plist"
    code, out, err = invoke("doctor", "--plist", str(hostile))
    assert code == 2
    assert out == ""
    assert "\x1b" not in err
    first, hint = err.splitlines()
    assert first == f"error: {tmp_path}/a\\n\\x1b[2Jb.plist: no such plist"
    assert hint.startswith("hint: ")


def test_logs_escape_what_the_job_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lanekit logs --err` shows a job's ESC sequences and bells escaped, line by line."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = tmp_path / "lanes.toml"
    config.write_text(
        '[defaults]\nlabel_prefix = "test.quote"\n[queues.q]\ndir = "~/q"\n'
        '[lanes.funnel]\nqueue = "q"\ncommand = ["cat", "{job}"]\nschedule = ["40 10 * * *"]\n'
    )
    logs = tmp_path / "home" / "q" / "logs"
    logs.mkdir(parents=True)
    (logs / "funnel.err.log").write_text("\x1b[31mred\x1b[0m\x07 over\n")
    code, out, _ = invoke("logs", "funnel", "--err", "-c", str(config))
    assert (code, out) == (0, "\\x1b[31mred\\x1b[0m\\x07 over\n")


def test_not_executable_fix_quotes_a_path_with_spaces(tmp_path: Path) -> None:
    """`chmod +x` for a program under `Application Support` is one quoted word (issue 15 #9)."""
    program = tmp_path / "Library" / "Application Support" / "pipx" / "venvs" / "python"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o644)
    plist = _plist(tmp_path / "com.example.py.plist", "com.example.py")
    plist.write_bytes(
        plistlib.dumps({"Label": "com.example.py", "ProgramArguments": [str(program)]})
    )
    code, out, _ = invoke("doctor", "--plist", str(plist), "--json")
    assert code == 1
    fixes = {f["id"]: f["fix"] for f in json.loads(out)["findings"]}
    assert fixes["program.not-executable"] == f"chmod +x {shlex.quote(str(program))}"
    subprocess.run(["bash", "-c", fixes["program.not-executable"]], check=True, timeout=30)
    assert program.stat().st_mode & 0o100


@pytest.mark.parametrize("flags", [(), ("--json",), ("--all",), ("--all", "--json")])
def test_doctor_on_a_label_with_a_slash(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Issue 11 #13: a Label containing `/` is a finding (change the Label), not a crash, for
    `--plist` and for `--all` over the LaunchAgents directory."""
    agents = Path(os.environ["LANEKIT_LAUNCH_AGENTS"])
    agents.mkdir(parents=True, exist_ok=True)
    plist = _plist(agents / "c.plist", "com/slash")
    args = flags if "--all" in flags else ("--plist", str(plist), *flags)
    result = CliRunner().invoke(app, ["doctor", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "plist.label-mismatch" in result.stdout
    assert "com.slash" in result.stdout


def test_escaped_rich_text_keeps_clean_text_and_escapes_the_rest() -> None:
    """Renderers that build rich Text (timeline, demo chart) print it through `escaped`: clean
    text is passed on as it is (styles kept), text with a control is shown escaped."""
    from rich.text import Text

    from lanekit.cli.render import escaped

    clean = Text("lane funnel", style="bold")
    assert escaped(clean) is clean
    assert escaped(Text("x\x1b[2Jy", style="bold")).plain == "x\\x1b[2Jy"
