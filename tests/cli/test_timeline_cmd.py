"""`lanekit timeline`: golden terminal renders at 80 and 120 columns, and the command run for
real on lanes whose logs are on disk (usage errors, --html, --open without an opener, --job)."""

from __future__ import annotations

import io
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.cli.render.timeline import render_lines
from timeline_world import NY, at, incident_result, line, run_lines

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE_GOLDEN = os.environ.get("LANEKIT_UPDATE_GOLDEN") == "1"


def _plain(width: int) -> str:
    """The render as a terminal without colour shows it (rich's own text export)."""
    sink = io.StringIO()
    console = Console(width=width, no_color=True, color_system=None, file=sink)
    for text in render_lines(incident_result(), width, NY):
        text.no_wrap = True
        console.print(text, crop=True)
    return sink.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_golden_terminal_render(width: int) -> None:
    """The incident day renders exactly as tests/golden/timeline-<width>.txt, no line wider
    than the terminal (set LANEKIT_UPDATE_GOLDEN=1 to rewrite after a deliberate change)."""
    text = _plain(width)
    golden = GOLDEN / f"timeline-{width}.txt"
    if UPDATE_GOLDEN:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    chart = text.split("\n\n")[0].splitlines()
    assert all(len(row) <= width for row in chart)
    assert any(row.startswith("burst") and "^" in row for row in chart)


CONFIG = """\
[defaults]
label_prefix = "com.example"

[queues.notes]
dir = "~/queues/notes"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
schedule = "40 10 * * *"

[lanes.thumbs]
queue = "notes"
command = ["/bin/cat", "{job}"]
schedule = "40 10 * * *"
"""


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """lanes.toml with two lanes of one queue, installed, and a burst at 10:40 New York time
    on 2026-11-30 in their logs (the machine's zone is New York for the test)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lanes.toml").write_text(CONFIG, encoding="utf-8")
    logs = home / "queues" / "notes" / "logs"
    logs.mkdir(parents=True)
    for n, lane in enumerate(("funnel", "thumbs")):
        jobs = [f"job-{lane}-{k}" for k in range(3)]
        with (logs / f"{lane}.log").open("a", encoding="utf-8") as handle:
            handle.write(line(at("06:00"), lane, "applied", action="create", by="apply"))
            handle.writelines(run_lines(lane, at("10:40:00.300"), jobs, pid=10 + n))
    # Installed now, after that history: apply logs `applied` at today's date.
    assert CliRunner().invoke(app, ["apply"]).exit_code == 0
    yield tmp_path
    monkeypatch.undo()
    time.tzset()


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_timeline_day_in_the_terminal(sandbox: Path) -> None:
    """The day's chart names both lanes, marks the burst and says who won which claims."""
    code, out, err = _run("timeline", "--day", "2026-11-30", "--width", "80")
    assert code == 0, err

    assert out.startswith("timeline 2026-11-30 Mon")
    assert "funnel " in out and "thumbs " in out
    assert "burst 10:40:00-10:40:03 on queue notes: 2 lanes at once" in out
    assert max(len(row) for row in out.split("\n\n")[0].splitlines()) <= 80


def test_timeline_html_file_and_directory(sandbox: Path) -> None:
    """--html FILE writes that file (0600); a directory gets timeline-YYYY-MM-DD.html."""
    code, out, err = _run("timeline", "--day", "2026-11-30", "--html", "day.html")
    assert code == 0, err
    page = sandbox / "day.html"
    assert out == f"wrote {page}\n"
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    assert 'id="day-2026-11-30"' in page.read_text(encoding="utf-8")
    (sandbox / "pages").mkdir()
    code, out, _ = _run("timeline", "--day", "2026-11-30", "--html", "pages")
    assert code == 0
    assert (sandbox / "pages" / "timeline-2026-11-30.html").is_file()
    assert not [p for p in sandbox.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--day", "2026-13-01"], "--day '2026-13-01' is not a day"),
        (["--day", "2026-11-30", "--since", "2026-11-01"], "--day and --since cannot be combined"),
        (["--open"], "--open needs --html FILE"),
        (["nosuch"], 'no lane named "nosuch" in lanes.toml'),
        (["--since", "2999-01-01"], "--since 2999-01-01 is in the future"),
        (["--html", "no/such/dir/day.html"], "no/such/dir/day.html: cannot write it"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(sandbox: Path, args: list[str], words: str) -> None:
    """Bad options: `error:` naming the option, a hint, exit 2, nothing on stdout."""
    code, out, err = _run("timeline", *args)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("error: ") and words in lines[0], err
    assert lines[1].startswith("hint: ")
    assert "Traceback" not in err


def test_open_without_an_opener_is_a_clear_error(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--open on a machine without xdg-open: the page is written, then one error line naming
    the opener and how to open it by hand, exit 69."""
    empty = sandbox / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out, err = _run("timeline", "--day", "2026-11-30", "--html", "day.html", "--open")
    assert code == 69
    assert "wrote" in out
    assert err.splitlines()[0] == (
        f"error: cannot open {sandbox / 'day.html'}: `xdg-open` is not on PATH"
    )
    assert err.splitlines()[1].startswith("hint: open ")


def test_open_runs_the_opener_with_the_page_as_one_argument(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--open runs `xdg-open PAGE` (argv, no shell): a stand-in opener records its argv."""
    tools = sandbox / "bin"
    tools.mkdir()
    record = sandbox / "opened.txt"
    opener = tools / "xdg-open"
    opener.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}"\n', encoding="utf-8")
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin:/bin")
    code, _, err = _run("timeline", "--day", "2026-11-30", "--html", "my day.html", "--open")
    assert code == 0, err
    assert record.read_text(encoding="utf-8") == f"{sandbox / 'my day.html'}\n"


def test_job_life(sandbox: Path) -> None:
    """--job ID adds the job's claim and outcome, with its lane."""
    code, out, err = _run("timeline", "--day", "2026-11-30", "--job", "job-thumbs-1")
    assert code == 0, err
    assert "job job-thumbs-1: not found in the lanes' queues" in out
    assert "thumbs: claimed attempt=1" in out
    assert "thumbs: done exit=0" in out


def test_html_with_json_keeps_stdout_a_json_document(sandbox: Path) -> None:
    """--html with --json: the document alone on stdout, where the page went on stderr."""
    import json

    result = CliRunner().invoke(
        app, ["timeline", "--day", "2026-11-30", "--html", "day.html", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["day"] == "2026-11-30"
    assert result.stderr == f"wrote {sandbox / 'day.html'}\n"


def test_a_traced_job_links_its_output(sandbox: Path) -> None:
    """--job names the job's output file once it has one: a line in the terminal, the path in
    --json, a link in the page."""
    import json

    from lanekit.queue.directory.backend import Queue

    queue = Queue(sandbox / "home" / "queues" / "notes")
    queue.ensure()
    queue.enqueue({}, job_id="job-thumbs-1")
    output = Path(str(queue.output_path("job-thumbs-1")))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("--- attempt 1, lane thumbs, started T ---\nhello\n", encoding="utf-8")
    code, out, err = _run("timeline", "--day", "2026-11-30", "--job", "job-thumbs-1")
    assert code == 0, err
    flat = "".join(out.split())  # the terminal folds a long path, anywhere in it
    assert f"output{output}(lanekitjobLANEjob-thumbs-1--output)" in flat
    data = json.loads(_run("timeline", "--day", "2026-11-30", "--job", "job-thumbs-1", "--json")[1])
    assert data["job"]["output"] == str(output)
    code, _, err = _run(
        "timeline", "--day", "2026-11-30", "--job", "job-thumbs-1", "--html", "p.html"
    )
    assert code == 0, err
    assert f'href="{output.as_uri()}"' in (sandbox / "p.html").read_text(encoding="utf-8")
