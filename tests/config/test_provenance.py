"""Lanes belong to their project: apply never takes over another lanes.toml's label without
--adopt, removal offers are this project's only, and init derives a prefix of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.config.provenance import label_prefix_for
from lanekit.state.paths import Paths

PROJECT = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "com.me.app"

[queues.inbox]
dir = "{queue}"

[lanes.process]
queue = "inbox"
command = ["/bin/cat", "{{job}}"]
{extra}
"""


def project(root: Path, extra: str = "") -> Path:
    """A project directory `root` whose lanes.toml has lane `process` on its own queue."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "lanes.toml"
    config.write_text(PROJECT.format(queue=root / "queue", extra=extra))
    return config


def invoke(*args: str) -> tuple[int, str, str]:
    """Run `lanekit ARGS`; (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def snapshot_queue(label: str) -> str:
    """The queue dir the installed snapshot of `label` runs."""
    data = json.loads(Paths.from_env().snapshot_for(label).read_text())
    return str(data["queue_dir"])


def test_a_second_project_with_the_same_lane_refuses_naming_both_files(tmp_path: Path) -> None:
    """Project B (same prefix, same lane name) cannot take A's label: exit 2, one line naming
    both lanes.toml files, A's snapshot still points at A's queue; plan says the same; --adopt
    takes it over deliberately."""
    a = project(tmp_path / "a" / "app")
    b = project(tmp_path / "b" / "app")
    code, _, err = invoke("apply", "-c", str(a))
    assert code == 0, err
    code, out, err = invoke("apply", "-c", str(b))
    assert code == 2
    assert out == ""
    first = err.splitlines()[0]
    assert str(a.resolve()) in first
    assert str(b.resolve()) in first
    assert "--adopt" in err
    assert snapshot_queue("com.me.app.process") == str(a.parent / "queue")
    assert invoke("plan", "-c", str(b))[0] == 2

    code, _, err = invoke("apply", "-c", str(b), "--adopt")
    assert code == 0, err
    assert snapshot_queue("com.me.app.process") == str(b.parent / "queue")
    code, _, err = invoke("apply", "-c", str(a))
    assert code == 2
    assert str(b.resolve()) in err


def test_removal_offers_list_only_this_projects_lanes(tmp_path: Path) -> None:
    """A lane of project A is never offered for removal by project B's apply; a lane A no
    longer lists is offered by A's."""
    a = project(tmp_path / "a", extra='[lanes.old]\nqueue = "inbox"\ncommand = ["/bin/cat"]\n')
    b = project(tmp_path / "b").parent / "lanes.toml"
    b.write_text(b.read_text().replace("com.me.app", "com.me.other"))
    assert invoke("apply", "-c", str(a))[0] == 0
    code, out, err = invoke("plan", "-c", str(b))
    assert code == 0, err
    assert "com.me.app" not in out
    project(tmp_path / "a")  # drops lane `old`
    code, out, _ = invoke("plan", "-c", str(a))
    assert code == 0
    assert "old" in out
    assert "lanekit remove old" in out


def test_a_label_whose_project_is_gone_is_taken_over_silently(tmp_path: Path) -> None:
    """When the owning lanes.toml no longer exists nobody can claim the label: apply proceeds."""
    a = project(tmp_path / "a")
    assert invoke("apply", "-c", str(a))[0] == 0
    a.unlink()
    b = project(tmp_path / "b")
    code, _, err = invoke("apply", "-c", str(b))
    assert code == 0, err


@pytest.mark.parametrize(
    ("user", "directory", "prefix"),
    [
        ("alice", "/Users/alice/dev/Note Autolike", "com.alice.note-autolike"),
        ("Bob.Smith", "/tmp/app_v2", "com.bob-smith.app-v2"),
        ("…", "/", "com.user.project"),
        ("x", "/srv/--weird--", "com.x.weird"),
    ],
)
def test_label_prefix_is_the_users_and_the_projects(user: str, directory: str, prefix: str) -> None:
    """init's prefix: com.<user>.<directory name>, lower-case letters, digits and dashes."""
    assert label_prefix_for(user, Path(directory)) == prefix


def test_init_writes_a_prefix_of_its_own_that_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `lanekit init` in differently named directories get different label prefixes, and
    the file validates."""
    monkeypatch.setenv("HOME", str(tmp_path))
    prefixes = []
    for name in ("notes", "reports"):
        directory = tmp_path / name
        directory.mkdir()
        monkeypatch.chdir(directory)
        assert invoke("init")[0] == 0
        line = next(
            text
            for text in (directory / "lanes.toml").read_text().splitlines()
            if text.startswith("label_prefix")
        )
        prefixes.append(line)
        code, _, err = invoke("validate")
        assert code in {0, 1}, err  # the example's commands may be missing here; no usage error
    assert prefixes[0] != prefixes[1]
    assert prefixes[0].endswith('.notes"')
