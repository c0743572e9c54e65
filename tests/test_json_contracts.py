"""Every `--json` document equals its contract in docs/json.md, key for key.

The doc is parsed: each `## `lanekit CMD --json`` section has a `| key | type | meaning |` table
whose keys are paths (`lanes[].queue.queued`: key `queued` of the object `queue` of each item of
`lanes`; a trailing `?` marks a key present only sometimes) and whose types are JSON types joined
by " or ". Each command is run for real (CliRunner on `lanekit.cli.app`, HOME and the state dir
in tmp_path, emulated launchd), and every object in its output must have exactly the documented
keys, every value a documented type, and across the scenarios every documented key must appear.
The examples in the doc are held to the same shape, so doc, examples and output cannot drift.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.queue.directory.backend import Queue

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "json.md"

_HEADING_RE = re.compile(r"^## `lanekit (.+?) --json`$", re.MULTILINE)
_JSON_BLOCK_RE = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_KEY_RE = re.compile(r"`([^`?]+)(\??)`")

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "array of strings": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    "array of objects": lambda v: isinstance(v, list) and all(isinstance(i, dict) for i in v),
}

CONFIG = """\
[defaults]
label_prefix = "com.example"

[queues.notes]
dir = "~/queues/notes"

# Not on any PATH: doctor reports path.command-missing.
[lanes.funnel]
queue = "notes"
command = ["lanekit-contract-missing-tool", "{job}"]
schedule = ["40 10 * * *", "40 16 * * *"]

[lanes.trickle]
queue = "notes"
command = ["/bin/cat", "{job}"]
every = "15m"

# Shares 10:40 on Mondays with funnel: validate warns about the collision.
[lanes.mondays]
queue = "notes"
command = ["/bin/cat", "{job}"]
schedule = "40 10 * * mon"
"""

BAD_CONFIG = """\
[queues.notes]
dir = "~/queues/notes"

[lanes.nightly]
queue = "notes"
command = ["/usr/local/bin/tool", "{job}"]
schedule = { Hour = 3 }
max_job = 5
"""


@dataclass(frozen=True, slots=True)
class Field:
    """One documented key: its path, whether it may be absent, and its JSON types."""

    path: str
    optional: bool
    types: tuple[str, ...]

    @property
    def container(self) -> str:
        """The path of the object holding this key ("" for the top level)."""
        return self.path.rpartition(".")[0]

    @property
    def key(self) -> str:
        """The key itself."""
        return self.path.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class Contract:
    """The documented shape of one command's `--json` document, and its examples."""

    command: str
    fields: dict[str, Field]
    examples: tuple[Any, ...]
    schema: int = 1
    """The version the table's `schema` row states (its meaning cell starts with it)."""

    def keys_of(self, container: str) -> tuple[set[str], set[str]]:
        """(required, optional) keys of the objects at `container`."""
        inside = [f for f in self.fields.values() if f.container == container]
        return {f.key for f in inside if not f.optional}, {f.key for f in inside if f.optional}


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _contract(command: str, text: str) -> Contract:
    fields: dict[str, Field] = {}
    lines = text.splitlines()
    start = lines.index("| key | type | meaning |")
    for row in lines[start + 2 :]:
        if not row.startswith("|"):
            break
        key_cell, type_cell, _ = _cells(row)
        found = _KEY_RE.fullmatch(key_cell)
        assert found, f"{command}: key cell {key_cell!r} is not one `path`"
        types = tuple(part.strip() for part in type_cell.split(" or "))
        unknown = [t for t in types if t not in _TYPES]
        assert not unknown, f"{command}: {found[1]} has unknown type(s) {unknown}"
        assert found[1] not in fields, f"{command}: {found[1]} documented twice"
        fields[found[1]] = Field(found[1], bool(found[2]), types)
    examples = tuple(json.loads(body) for body in _JSON_BLOCK_RE.findall(text))
    schema_row = next(row for row in lines[start + 2 :] if row.startswith("| `schema` |"))
    version = re.match(r"\d+", _cells(schema_row)[2])
    assert version, f"{command}: the schema row does not start with its version"
    return Contract(command, fields, examples, int(version.group()))


def contracts() -> dict[str, Contract]:
    """Every `## `lanekit CMD --json`` section of docs/json.md, keyed by CMD."""
    text = DOC.read_text(encoding="utf-8")
    headings = list(_HEADING_RE.finditer(text))
    found: dict[str, Contract] = {}
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        found[heading[1]] = _contract(heading[1], text[heading.end() : end])
    return found


def _walk(value: Any, prefix: str, objects: dict[str, list[dict[str, Any]]], values: Any) -> None:
    if isinstance(value, dict):
        objects.setdefault(prefix, []).append(value)
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            values.setdefault(path, []).append(item)
            _walk(item, path, objects, values)
    elif isinstance(value, list):
        for item in value:
            _walk(item, f"{prefix}[]", objects, values)


def problems(contract: Contract, document: Any) -> tuple[list[str], set[str]]:
    """(every way `document` departs from `contract`, the documented paths it contains)."""
    objects: dict[str, list[dict[str, Any]]] = {}
    values: dict[str, list[Any]] = {}
    _walk(document, "", objects, values)
    found: list[str] = []
    if not isinstance(document, dict) or document.get("schema") != contract.schema:
        found.append(f'top level: "schema" is not {contract.schema}')
    for container, instances in objects.items():
        required, optional = contract.keys_of(container)
        where = container or "top level"
        for instance in instances:
            missing = required - instance.keys()
            extra = instance.keys() - required - optional
            if missing:
                found.append(f"{where}: documented but missing: {sorted(missing)}")
            if extra:
                found.append(f"{where}: not documented: {sorted(extra)}")
    for path, seen in values.items():
        field = contract.fields.get(path)
        if field is None:
            continue  # reported above as not documented
        for value in seen:
            if not any(_TYPES[t](value) for t in field.types):
                found.append(f"{path}: {value!r} is not {' or '.join(field.types)}")
    return found, set(values) & set(contract.fields)


def _check_all(
    command: str, documents: Sequence[Any], elsewhere: frozenset[str] = frozenset()
) -> None:
    """Each document has exactly the documented shape; together they show every key (but
    those `elsewhere`: keys a scenario of another test produces, on a real server)."""
    contract = contracts()[command]
    seen: set[str] = set()
    for document in documents:
        found, paths = problems(contract, document)
        assert not found, f"`lanekit {command} --json` departs from docs/json.md: {found}"
        seen |= paths
    unseen = set(contract.fields) - seen - elsewhere
    assert not unseen, f"documented keys no scenario produced (extend the scenarios): {unseen}"


# -- the sandbox ----------------------------------------------------------------------------


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and the working directory in tmp_path (the state dir and the emulated launchd
    domain are already there: tests/conftest.py), with lanes.toml and bad.toml written."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lanes.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "bad.toml").write_text(BAD_CONFIG, encoding="utf-8")
    ok = CONFIG.replace("lanekit-contract-missing-tool", "/bin/cat")
    (tmp_path / "ok.toml").write_text(ok, encoding="utf-8")
    return tmp_path


def _json(*args: str, exit_code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == exit_code, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def _queue(sandbox: Path) -> Queue:
    queue = Queue(sandbox / "home" / "queues" / "notes")
    queue.ensure()
    return queue


def _jobs(sandbox: Path, count: int) -> list[str]:
    queue = _queue(sandbox)
    return [queue.enqueue({"note": f"note {n}"}) for n in range(count)]


def _unreadable_record(sandbox: Path, job_id: str) -> None:
    """A record with a duplicate key: the store must refuse it, never pick one."""
    path = _queue(sandbox).store.path(job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"state": "queued", "state": "succeeded"}\n', encoding="utf-8")


# -- the doc itself -------------------------------------------------------------------------

COMMANDS = (
    "schedule",
    "validate",
    "apply",
    "status",
    "doctor",
    "doctor --list-checks",
    "jobs",
    "job",
    "timeline",
    "selftest",
    "retry",
    "requeue",
    "cancel",
    "pause",
    "resume",
    "purge",
    "watch",
    "watch --test",
)


def test_doc_has_a_section_per_json_command() -> None:
    """docs/json.md has one contract per command with --json, each with an example."""
    found = contracts()
    assert set(found) == set(COMMANDS)
    for contract in found.values():
        assert "schema" in contract.fields
        assert contract.examples, f"{contract.command}: no example"


def _json_commands() -> set[str]:
    import typer

    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="lanekit")
    names: set[str] = set()
    for name in root.list_commands(ctx):  # type: ignore[attr-defined]
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        if any("--json" in getattr(p, "opts", ()) for p in command.params):
            names.add(name)
    return names


def test_every_command_with_json_is_documented() -> None:
    """Each registered command that takes --json has its section (so a new --json is noticed)."""
    documented = {command.split()[0] for command in COMMANDS}
    assert _json_commands() <= documented


@pytest.mark.parametrize("command", COMMANDS)
def test_doc_examples_have_the_documented_shape(command: str) -> None:
    """The example documents in docs/json.md have exactly the documented keys and types."""
    contract = contracts()[command]
    for example in contract.examples:
        found, _ = problems(contract, example)
        assert not found, f"docs/json.md example for `{command}`: {found}"


def test_checker_catches_drift() -> None:
    """The shape check fails on a missing key, an extra key, a wrong type and a wrong schema
    (a contract test that cannot fail would pin nothing)."""
    contract = contracts()["schedule"]
    good = {"schema": 1, "entries": [{"Minute": 0}], "description": "x", "next": [], "warnings": []}
    assert problems(contract, good)[0] == []
    for bad in (
        {k: v for k, v in good.items() if k != "description"},
        {**good, "extra": 1},
        {**good, "entries": [{"Minute": "0"}]},
        {**good, "entries": [{"Second": 0}]},
        {**good, "schema": 2},
    ):
        assert problems(contract, bad)[0], bad


# -- the commands, run for real ---------------------------------------------------------------

AFTER = ("--after", "2026-11-30T12:00", "--next", "2")


def test_schedule_json_matches_doc(sandbox: Path) -> None:
    """`schedule --json` for a cron with every field set, for every=, and with the lanes of
    lanes.toml to collide with (one collision, none), is as documented."""
    _check_all(
        "schedule",
        [
            _json("schedule", "5 4 3 2 1", "--json", *AFTER),
            _json("schedule", "40 10,16 * * *", "--json", *AFTER),
            _json("schedule", "every=15m", "--json", *AFTER),
            _json("schedule", "40 10 * * *", "--lane", "trickle", "--json", *AFTER),
            _json("schedule", "0 3 * * 1-5", "-c", "lanes.toml", "--json", *AFTER),
        ],
    )


def test_validate_json_matches_doc(sandbox: Path) -> None:
    """`validate --json` with a warning, and with errors (exit 1: a missing job command, a bad
    key), is as documented."""
    _check_all(
        "validate",
        [
            _json("validate", "--json", "-c", "ok.toml"),
            _json("validate", "--json", exit_code=1),  # funnel's command is missing
            _json("validate", "--json", "-c", "bad.toml", exit_code=1),
        ],
    )


def test_apply_json_matches_doc(sandbox: Path) -> None:
    """`apply --json`: a dry run, a first apply, and a change that waits for a running lane
    (exit 3, listed in `pending`) are as documented."""
    from lanekit.config import load_config
    from lanekit.run.lanelock import LaneLock, lane_lock_path
    from lanekit.state.paths import Paths

    # Every command resolvable: a missing one is refused by apply (lanekit.reconcile.preflight).
    runnable = CONFIG.replace("lanekit-contract-missing-tool", "/bin/cat")
    lanes_toml = sandbox / "lanes.toml"
    lanes_toml.write_text(runnable, encoding="utf-8")
    planned = _json("apply", "--dry-run", "--json")
    first = _json("apply", "--json")
    lanes_toml.write_text(runnable.replace('every = "15m"', 'every = "20m"'), encoding="utf-8")
    trickle = load_config(lanes_toml, Paths.from_env()).lanes["trickle"]
    lock = LaneLock(lane_lock_path(trickle.queue.dir, "trickle"))
    assert lock.acquire()
    try:
        waiting = _json("apply", "--json", exit_code=3)
    finally:
        lock.release()
    assert waiting["pending"] == ["trickle"]
    assert planned["dry_run"] and not first["dry_run"]
    _check_all("apply", [planned, first, waiting])


STATUS_LEASE_KEYS = frozenset(
    f"lanes[].queue.leases[].{key}" for key in ("host", "running", "expired")
)
"""A postgres queue's leases by host: shown by tests/cli/test_postgres_verbs.py on a real
server (a directory queue has none: `leases` is null here)."""


def test_status_json_matches_doc(sandbox: Path) -> None:
    """`status --json` before apply (queue missing: counts null, error set) and after apply
    with jobs waiting is as documented."""
    before = _json("status", "--json")
    CliRunner().invoke(app, ["apply"])
    _jobs(sandbox, 2)
    _check_all(
        "status",
        [before, _json("status", "--json"), _json("status", "trickle", "--json")],
        elsewhere=STATUS_LEASE_KEYS,
    )


def test_doctor_json_matches_doc(sandbox: Path) -> None:
    """`doctor --json` with an error finding (exit 1) is as documented."""
    CliRunner().invoke(app, ["apply"])
    document = _json("doctor", "--json", exit_code=1)
    assert any(f["id"] == "path.command-missing" for f in document["findings"])
    _check_all("doctor", [document])


@pytest.mark.slow
def test_selftest_json_matches_doc(sandbox: Path) -> None:
    """`selftest --json` on the emulated domain is as documented."""
    _check_all("selftest", [_json("selftest", "--json")])


def test_doctor_list_checks_json_matches_doc(sandbox: Path) -> None:
    """`doctor --list-checks --json` is as documented."""
    _check_all("doctor --list-checks", [_json("doctor", "--list-checks", "--json")])


def test_jobs_json_matches_doc(sandbox: Path) -> None:
    """`jobs LANE --json`: a middle page (prev and next set), the last page, a page of jobs
    for later, and a page with an unreadable record are as documented."""
    ids = _jobs(sandbox, 5)
    documents = [
        _json("jobs", "funnel", "--json", "--per-page", "2", "--page", "2"),
        _json("jobs", "funnel", "--json", "--per-page", "2", "--page", "9"),
        _json("jobs", "funnel", "--json", "--state", "queued"),
    ]
    _queue(sandbox).enqueue({"note": "later"}, not_before=time.time() + 3600)
    documents.append(_json("jobs", "funnel", "--json", "--state", "delayed"))
    assert documents[-1]["delayed"], "the job for later is listed with its time"
    _unreadable_record(sandbox, ids[-1])
    documents.append(_json("jobs", "funnel", "--json"))
    assert documents[-1]["unreadable"], "the damaged record is listed as unreadable"
    _check_all("jobs", documents)


def test_job_json_matches_doc(sandbox: Path) -> None:
    """`job LANE ID --json` for a queued job is as documented."""
    (job_id,) = _jobs(sandbox, 1)
    document = _json("job", "funnel", job_id, "--json")
    _check_all("job", [document])


TIMELINE_AWAY_KEYS = frozenset(
    [
        *(
            f"lanes[].away[].{key}"
            for key in ("host", "lane", "job", "attempt", "pid", "start", "end", "outcome")
        ),
        *(
            f"job.attempt_history[].{key}"
            for key in ("attempt", "host", "pid", "outcome", "started_at", "ended_at")
        ),
    ]
)
"""The jobs other hosts ran from a postgres queue, and a job's attempts by host: shown by
tests/timeline/test_away.py on a real server (a directory queue has none: both are empty)."""


def test_timeline_json_matches_doc(sandbox: Path) -> None:
    """`timeline --json` over a real run of two lanes of one queue (a burst, a missed fire,
    an unknown event), and with --job for that job, is as documented."""
    from lanekit.config import load_config
    from lanekit.run.lanelog import LaneLog
    from lanekit.run.runner import run_lane
    from lanekit.state.paths import Paths
    from lanekit.state.snapshot import RunSpec

    CliRunner().invoke(app, ["apply", "--force"])  # funnel's command is missing on purpose
    (job_id,) = _jobs(sandbox, 1)
    paths = Paths.from_env()
    config = load_config(sandbox / "lanes.toml", paths)
    spec = RunSpec.load(paths.snapshot_for(config.lanes["trickle"].label))
    run_lane(spec, handle_signals=False)
    logs = {name: config.lanes[name].log_path for name in ("funnel", "trickle", "mondays")}
    # A second lane of the queue "running" at the same moment, and an event from a later
    # version: both appended the way runners append.
    trickle = logs["trickle"].read_text(encoding="utf-8").splitlines()
    start_ts = next(text for text in trickle if " event=start " in text).split()[0]
    with logs["mondays"].open("a", encoding="utf-8") as handle:
        handle.write(f"{start_ts} lane=mondays event=start pid=1\n")
    LaneLog(logs["mondays"], "mondays").event("finish", exit=0, reason="empty")
    LaneLog(logs["mondays"], "mondays").event("paused", by="pause")
    documents = [
        _json("timeline", "--json"),
        _json("timeline", "--json", "--job", job_id),
        _json("timeline", "funnel", "--json", "--day", "2026-11-30"),
    ]
    assert documents[0]["bursts"], "trickle and mondays overlapped"
    _check_all("timeline", documents, elsewhere=TIMELINE_AWAY_KEYS)


def test_job_verbs_json_matches_doc(sandbox: Path) -> None:
    """`cancel`, `retry` and `requeue --json` (real moves, and a dry run) are as documented."""
    queue = _queue(sandbox)
    job_id = queue.enqueue({"note": "n"})
    _check_all("cancel", [_json("cancel", job_id, "--json")])
    _check_all(
        "retry", [_json("retry", job_id, "--json", "--dry-run"), _json("retry", job_id, "--json")]
    )
    claim = queue.claimer().claim()
    assert claim is not None
    queue.release(claim, max_attempts=3, error="exit 1")
    _check_all("requeue", [_json("requeue", job_id, "--json")])


def test_pause_and_resume_json_match_doc(sandbox: Path) -> None:
    """`pause` and `resume --json` on an installed lane are as documented."""
    CliRunner().invoke(app, ["apply", "trickle"])
    _check_all("pause", [_json("pause", "trickle", "--json")])
    _check_all(
        "resume",
        [_json("resume", "trickle", "--json", "--dry-run"), _json("resume", "trickle", "--json")],
    )


def test_purge_json_matches_doc(sandbox: Path) -> None:
    """`purge --json` with a failed job old enough to go is as documented."""
    queue = _queue(sandbox)
    job_id = queue.enqueue({"note": "n"})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "exit 1")
    document = _json("purge", "--older-than", "1h", "--json", "--dry-run")
    _check_all("purge", [document, _json("purge", "--json")])
    assert job_id


def test_watch_json_matches_doc(sandbox: Path) -> None:
    """`watch --json`: a dry run, a pass with a failed job, a digest and a webhook that
    refuses (exit 1), and the next pass retrying it, are as documented."""
    text = CONFIG.replace("lanekit-contract-missing-tool", "/bin/cat") + (
        '[watch]\ndigest = "00:00"\nnotify = []\n'
        f'command = ["/bin/sh", "-c", "cat >> {sandbox / "sent.jsonl"}"]\n'
        # Nothing listens on port 9 of 127.0.0.1: the webhook fails at once.
        'webhook = "http://127.0.0.1:9/hook?token=secret"\n'
        'heartbeat = "http://127.0.0.1:9/ping/secret-key"\n'
    )
    (sandbox / "watch.toml").write_text(text, encoding="utf-8")
    CliRunner().invoke(app, ["apply", "-c", "watch.toml"])
    queue = _queue(sandbox)
    queue.enqueue({"note": "n"})
    claim = queue.claimer().claim()
    assert claim is not None
    queue.fail(claim, "exit 1")
    documents = [
        _json("watch", "-c", "watch.toml", "--json", "--dry-run"),
        _json("watch", "-c", "watch.toml", "--json", exit_code=1),
        _json("watch", "-c", "watch.toml", "--json", exit_code=1),
    ]
    assert documents[2]["retried"], "the webhook's refused notices are retried"
    assert "secret" not in json.dumps(documents[1])
    assert documents[1]["heartbeat"]["ok"] is False  # nothing listens on port 9
    _check_all("watch", documents)


def test_watch_test_json_matches_doc(sandbox: Path) -> None:
    """`watch --test --json`: a channel that took the test notice (never confirmed, then
    confirmed) and one that refused it, as documented."""
    from datetime import datetime

    from lanekit.state.paths import Paths
    from lanekit.watch.testnotice import record_answer

    text = CONFIG.replace("lanekit-contract-missing-tool", "/bin/cat") + (
        "[watch]\nnotify = []\n"
        f'command = ["/bin/sh", "-c", "cat >> {sandbox / "sent.jsonl"}"]\n'
        'webhook = "http://127.0.0.1:9/hook?token=secret"\n'
    )
    (sandbox / "watch.toml").write_text(text, encoding="utf-8")
    CliRunner().invoke(app, ["apply", "-c", "watch.toml"])
    first = _json("watch", "--test", "-c", "watch.toml", "--json", exit_code=1)
    record_answer(Paths.from_env(), "command", True, datetime.now())
    second = _json("watch", "--test", "-c", "watch.toml", "--json", exit_code=1)
    assert [c["confirmed"] for c in second["channels"]] == [True, None]
    assert "secret" not in json.dumps(first)
    _check_all("watch --test", [first, second])
