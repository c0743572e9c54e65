"""`lanekit adopt` on the seed's plist and a corpus of real-world plists (tests/reconcile/plists,
sources in SOURCES.md): the adopted lane's plist means what the original meant (same program,
arguments, schedule, environment, logs and launchd options) plus lanekit's additions (explicit
PATH, its logs, the LANEKIT_LANE marker); keys no lane key expresses are refused, or carried
through the template with --keep-unknown; lanes.toml keeps its comments."""

from __future__ import annotations

import os
import plistlib
import sys
from pathlib import Path
from typing import Any

import pytest

from lanekit.config import expand_home, load_config, run_spec
from lanekit.errors import UsageError
from lanekit.reconcile.adopt import SAME_AS_LANEKIT, adopt, lane_name, translate
from lanekit.service.launchd.plist import rendered_lane
from lanekit.state.paths import Paths

CORPUS = Path(__file__).parent / "plists"
PLISTS = sorted(CORPUS.glob("*.plist"))
SEED = CORPUS / "com.lily.codex-note-funnel.plist"
LANES_TOML = """\
# lanes.toml of a test project: this comment must survive adopt
[defaults]
label_prefix = "com.example.adopt"   # and this one

[queues.notes]
dir = "{queue}"  # a queue, so --queue has one
"""
OPTIONS = ("Nice", "LowPriorityIO", "ProcessType", "ExitTimeOut", "ThrottleInterval")


def _project(paths: Paths) -> Path:
    config = paths.cwd / "lanes.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(LANES_TOML.format(queue=paths.home / "q"), encoding="utf-8")
    return config


def _job(plist: Path) -> dict[str, Any]:
    job: dict[str, Any] = plistlib.loads(plist.read_bytes())
    return job


def _calendar(value: Any) -> list[dict[str, int]]:
    return [] if value is None else [value] if isinstance(value, dict) else list(value)


def test_the_corpus_holds_the_seed_and_ten_real_plists() -> None:
    """The seed's plist and at least ten others, each with its source in SOURCES.md."""
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    assert SEED in PLISTS
    assert len(PLISTS) >= 11
    for plist in PLISTS:
        assert f"| `{plist.name}` |" in sources


@pytest.mark.parametrize("plist", PLISTS, ids=[p.stem for p in PLISTS])
def test_round_trip_means_the_same_plus_lanekit_additions(plist: Path, paths: Paths) -> None:
    """Adopted (with --keep-unknown), loaded and rendered: the same program and arguments (a
    leading ~ expanded), schedule, environment, logs, working directory and options; every
    kept key as it was; PATH, logs and the marker added; the comments of lanes.toml kept."""
    config_path = _project(paths)
    result = adopt(load_config(config_path, paths), paths, [plist], keep_unknown=True)
    [item] = result.adopted
    text = config_path.read_text(encoding="utf-8")
    assert "# lanes.toml of a test project: this comment must survive adopt" in text
    assert "# and this one" in text
    assert f"# adopted from {plist}" in text
    config = load_config(config_path, paths)
    lane = config.lanes[item.lane]
    original = _job(plist)
    assert lane.replaces == original["Label"]
    rendered = rendered_lane(
        lane,
        interpreter=sys.executable,
        snapshot=paths.snapshot_for(lane.label),
        templates=config.templates,
    )[1]

    def home(text: str) -> str:
        return expand_home(text, paths.home)

    program = original.get("Program")
    arguments = original.get("ProgramArguments") or [program]
    command = [program, *arguments[1:]] if program else arguments
    assert list(run_spec(lane).command) == [home(part) for part in command]
    assert _calendar(rendered.get("StartCalendarInterval")) == _calendar(
        original.get("StartCalendarInterval")
    )
    assert rendered.get("StartInterval") == original.get("StartInterval")
    env = dict(rendered["EnvironmentVariables"])
    assert env.pop("LANEKIT_LANE") == lane.name  # lanekit's marker
    path = env.pop("PATH")  # always explicit
    given = dict(original.get("EnvironmentVariables") or {})
    if "PATH" in given:
        assert path == given.pop("PATH")
    assert env == {name: home(value) for name, value in given.items()}
    for key in ("StandardOutPath", "StandardErrorPath", "WorkingDirectory"):
        if key in original:
            assert rendered[key] == home(original[key])
        else:
            assert rendered[key]  # lanekit's own logs (and the queue dir to start in)
    for key in OPTIONS:
        assert rendered.get(key) == original.get(key)
    assert rendered["RunAtLoad"] == original.get("RunAtLoad", False)
    sessions = original.get("LimitLoadToSessionType")
    if sessions is not None:
        agent = [s for s in sessions if s != "System"]
        assert rendered["LimitLoadToSessionType"] == (agent if len(agent) > 1 else agent[0])
    for unknown in item.translation.unknown:
        assert rendered[unknown.key] == original[unknown.key]
    for key, same in SAME_AS_LANEKIT.items():
        if original.get(key) == same:
            assert key not in rendered


def test_unknown_keys_are_reported_and_refused_without_keep_unknown(paths: Paths) -> None:
    """Redis's KeepAlive and UserName are named, with their values and why; lanes.toml is
    left as it was."""
    config_path = _project(paths)
    before = config_path.read_bytes()
    with pytest.raises(UsageError) as caught:
        adopt(load_config(config_path, paths), paths, [CORPUS / "homebrew.mxcl.redis.plist"])
    message = caught.value.message
    assert "2 keys no lane key expresses" in message
    assert "KeepAlive = true: no lane key expresses it" in message
    assert "UserName = 'tshimogaisho': no lane key expresses it" in message
    assert "--keep-unknown" in caught.value.hint
    assert config_path.read_bytes() == before


def test_the_seed_plist_becomes_a_plain_lane_with_its_schedule(paths: Paths) -> None:
    """The seed's plist: a plain lane `codex-note-funnel` at 10:40 and 16:40, nothing unknown,
    its ~ paths expanded (noted), replacing com.lily.codex-note-funnel."""
    translation = translate(_job(SEED))
    assert translation.unknown == ()
    assert translation.table["schedule"] == [
        {"Hour": 10, "Minute": 40},
        {"Hour": 16, "Minute": 40},
    ]
    assert any("leading ~" in note for note in translation.notes)
    config_path = _project(paths)
    adopt(load_config(config_path, paths), paths, [SEED])
    lane = load_config(config_path, paths).lanes["codex-note-funnel"]
    assert lane.plain and lane.replaces == "com.lily.codex-note-funnel"
    assert [(e.hour, e.minute) for e in lane.schedule.calendar] == [(10, 40), (16, 40)]


def test_queue_lane_name_and_refusals(paths: Paths) -> None:
    """--queue makes a queue lane; --lane names it; a name already taken, --lane with two
    plists and an unknown queue are refused with what to do; dry-run writes nothing."""
    config_path = _project(paths)
    config = load_config(config_path, paths)
    before = config_path.read_bytes()
    dry = adopt(config, paths, [SEED], lane="funnel", queue="notes", dry_run=True)
    assert dry.dry_run and config_path.read_bytes() == before
    assert "boot out com.lily.codex-note-funnel (only when it is not running)" in dry.apply_steps[0]
    adopt(config, paths, [SEED], lane="funnel", queue="notes")
    lane = load_config(config_path, paths).lanes["funnel"]
    assert not lane.plain and lane.queue.name == "notes"
    with pytest.raises(UsageError, match="lane 'funnel' already exists"):
        adopt(load_config(config_path, paths), paths, [SEED], lane="funnel")
    with pytest.raises(UsageError, match="--lane names one lane"):
        adopt(config, paths, PLISTS[:2], lane="x")
    with pytest.raises(UsageError, match="no queue named 'nope'"):
        adopt(config, paths, [SEED], queue="nope")


@pytest.mark.parametrize(
    ("label", "name"),
    [("com.lily.codex-note-funnel", "codex-note-funnel"), ("homebrew.mxcl.postgresql@14",
     "postgresql-14"), ("launchd.runScript", "runScript"), ("x.", "x")],
)  # fmt: skip
def test_lane_names_from_labels(label: str, name: str) -> None:
    """The label's last part, made a safe lane name."""
    assert lane_name(label) == name


def test_a_lanekit_plist_is_not_adopted(paths: Paths, tmp_path: Path) -> None:
    """A plist with lanekit's LANEKIT_LANE marker is a lane already: refused, naming it."""
    job = {**_job(SEED), "EnvironmentVariables": {"LANEKIT_LANE": "funnel"}}
    plist = tmp_path / "lane.plist"
    plist.write_bytes(plistlib.dumps(job))
    config_path = _project(paths)
    with pytest.raises(UsageError, match="is the plist of lanekit lane 'funnel'"):
        adopt(load_config(config_path, paths), paths, [plist])


def test_a_plist_others_may_write_or_a_fifo_is_not_read(paths: Paths, tmp_path: Path) -> None:
    """Its program becomes a lane's command run as you: a plist a neighbour could rewrite is
    refused (69) before it is read, and a FIFO named like a plist is refused, not waited on."""
    from lanekit.errors import UnsafeStateError

    config_path = _project(paths)
    shared = tmp_path / "shared.plist"
    shared.write_bytes(SEED.read_bytes())
    shared.chmod(0o666)
    with pytest.raises(UnsafeStateError, match=r"shared\.plist"):
        adopt(load_config(config_path, paths), paths, [shared])
    fifo = tmp_path / "fifo.plist"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(UnsafeStateError, match=r"fifo\.plist"):
        adopt(load_config(config_path, paths), paths, [fifo])
