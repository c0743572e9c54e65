"""snapshot: the run snapshot is refused, with the reason, unless it is ours and well typed."""

from __future__ import annotations

import json
import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from lanekit.errors import ExitCode, LanekitError, UnsafeStateError, UsageError
from lanekit.state.snapshot import RunSpec, WatchChannels
from lanekit.state.snapshot_schema import FIELDS, read_snapshot
from neighbours import SECOND_UID, SecondUser

GOOD = RunSpec(
    lane="l",
    label="com.example.l",
    queue_dir=Path("/q"),
    command=("true",),
    max_jobs=3,
    max_seconds=None,
    max_attempts=2,
    stale_after=60.0,
    exit_timeout=5,
    log_path=Path("/q/logs/l.log"),
)


def declined(path: Path) -> bool:
    """Whether the one snapshot reader, which the empty-run fast path uses too, refuses
    `path` (the fast path then hands the run to the full one, which explains)."""
    try:
        read_snapshot(str(path))
    except LanekitError:
        return True
    return False


def _with(**changes: Any) -> str:
    data = json.loads(GOOD.to_json())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('"x"', "holds str, not a JSON object"),
        ("null", "holds null, not a JSON object"),
        ("[1]", "holds list, not a JSON object"),
        (_with(max_jobs="ten"), "max_jobs must be an integer, not 'ten'"),
        (_with(max_jobs=True), "max_jobs must be an integer, not True"),
        (_with(command="true"), "command must be a non-empty list of strings"),
        (_with(command=[]), "command must be a non-empty list of strings"),
        (_with(queue_dir=None), "queue_dir must be a non-empty string, not null"),
        (_with(max_seconds="1h"), "max_seconds must be a number or null"),
        (_with(durable="yes"), "durable must be true or false"),
        (_with(schema=2), "schema 2 is not 1"),
        (_with(extra=1), "unknown key extra"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_bad_snapshots_are_refused_with_the_reason(text: str, reason: str) -> None:
    """Non-object JSON, wrong-typed or unknown fields and deep nesting: one UsageError (exit 2)
    naming the file and what is wrong, never a TypeError/AttributeError/RecursionError."""
    with pytest.raises(UsageError) as caught:
        RunSpec.from_json(text, Path("/s/l.json"))
    assert caught.value.message.startswith("/s/l.json: lane snapshot is unreadable (")
    assert reason in caught.value.message
    assert "lanekit apply" in caught.value.hint


@pytest.mark.parametrize("text", ['"x"', "null", _with(max_jobs="ten"), _with(log_keep=None)])
def test_the_fast_path_hands_bad_snapshots_to_the_full_run(tmp_path: Path, text: str) -> None:
    """lanekit.run.entry reads with the same field table: a bad snapshot is never run from the
    fast path (None: the full run explains it)."""
    path = tmp_path / "l.json"
    path.write_text(text)
    assert declined(path)


def test_field_table_matches_runspec() -> None:
    """One table for both readers, and it covers exactly RunSpec's fields plus the schema."""
    assert set(FIELDS) == {f.name for f in fields(RunSpec)} | {"schema"}
    assert RunSpec.from_json(GOOD.to_json(), Path("/s")) == GOOD


def test_load_refuses_a_snapshot_others_could_have_written(tmp_path: Path) -> None:
    """Another user's snapshot, a group-writable one, one in a world-writable directory, and a
    symlink: UnsafeStateError (exit 69) naming the file; the fast path declines them too."""
    snapshots = tmp_path / "lanes"
    snapshots.mkdir(mode=0o700)
    path = snapshots / "l.json"
    GOOD.write(path)
    assert RunSpec.load(path) == GOOD
    assert not declined(path)
    os.chown(path, 65534, -1)
    with pytest.raises(UnsafeStateError) as caught:
        RunSpec.load(path)
    assert caught.value.exit_code is ExitCode.UNAVAILABLE
    assert f"{path}: lane snapshot is owned by uid 65534" in caught.value.message
    assert declined(path)
    os.chown(path, os.geteuid(), -1)
    path.chmod(0o620)
    with pytest.raises(UnsafeStateError, match="writable by group"):
        RunSpec.load(path)
    assert declined(path)
    path.chmod(0o600)
    snapshots.chmod(0o777)
    with pytest.raises(UnsafeStateError, match="lane snapshot directory is writable"):
        RunSpec.load(path)
    assert declined(path)
    snapshots.chmod(0o700)
    link = snapshots / "link.json"
    link.symlink_to(path)
    with pytest.raises(UnsafeStateError, match="is a symbolic link"):
        RunSpec.load(link)
    assert declined(link)


def test_written_snapshots_are_0600(tmp_path: Path) -> None:
    """write() leaves a 0600 file whatever the umask."""
    old = os.umask(0)
    try:
        GOOD.write(tmp_path / "s" / "l.json")
    finally:
        os.umask(old)
    assert (tmp_path / "s" / "l.json").stat().st_mode & 0o777 == 0o600


def test_load_refuses_a_snapshot_reached_through_a_directory_others_may_write(
    tmp_path: Path, second_user: SecondUser
) -> None:
    """The directories above the snapshot's own, up to your home, count too (issue 30 item
    4): a state directory others may write, or another user's, could swap the whole
    snapshots directory for theirs."""
    state = tmp_path / "state"
    snapshots = state / "lanes"
    snapshots.mkdir(parents=True, mode=0o700)
    path = snapshots / "l.json"
    GOOD.write(path)
    state.chmod(0o777)
    with pytest.raises(UnsafeStateError) as caught:
        RunSpec.load(path)
    assert caught.value.exit_code is ExitCode.UNAVAILABLE
    assert caught.value.message.startswith(
        f"{snapshots}: lane snapshot directory is reached through {state}, which is writable "
        "by group and others (mode 0777)"
    )
    assert caught.value.hint == f"chmod go-w {state}"
    state.chmod(0o700)
    assert RunSpec.load(path) == GOOD
    theirs = second_user.mkdir("state", mode=0o711)
    (theirs / "lanes").mkdir(mode=0o700)
    GOOD.write(theirs / "lanes" / "l.json")
    with pytest.raises(UnsafeStateError, match=f"owned by uid {SECOND_UID}"):
        RunSpec.load(theirs / "lanes" / "l.json")


def test_only_the_watchdogs_snapshot_records_channels() -> None:
    """The watchdog's channels (what its passes run) round-trip; any other lane's snapshot
    has no `watch` key at all."""
    assert "watch" not in json.loads(GOOD.to_json())
    channels = WatchChannels(notify=("macos",), command=("/bin/notify", "x"))
    spec = replace(GOOD, watch=channels)
    assert json.loads(spec.to_json())["watch"] == {
        "notify": ["macos"],
        "command": ["/bin/notify", "x"],
        "webhook_sha256": None,
    }
    assert RunSpec.from_json(spec.to_json(), Path("/s")) == spec
    hooked = replace(GOOD, watch=replace(channels, webhook_sha256="ab" * 32))
    assert RunSpec.from_json(hooked.to_json(), Path("/s")) == hooked
    with pytest.raises(UsageError, match="webhook_sha256"):
        RunSpec.from_json(
            _with(watch={"notify": [], "command": None, "webhook_sha256": "https://x"}),
            Path("/s"),
        )
    with pytest.raises(UsageError, match="watch must be null or an object"):
        RunSpec.from_json(_with(watch={"command": "sh"}), Path("/s"))
