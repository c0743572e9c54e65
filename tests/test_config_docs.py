"""docs/configuration.md cannot drift from config.py, lanekit.schedule, plist.py and the snapshot.

The doc's tables are parsed: per section (`[defaults]`, `[queues.NAME]`, `[lanes.NAME]`) the
first column lists the keys, the `default` column gives literal defaults in backticks, and the
lane table's `becomes` column names plist keys (`plist X`) and snapshot fields (`snapshot y`).
Fenced ```toml blocks whose first line starts with `# lanes.toml` are complete files.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from lanekit import config as config_module
from lanekit.config import Config, load_config, run_spec
from lanekit.config.watch import WATCH_KEYS
from lanekit.errors import ConfigError
from lanekit.schedule import ScheduleError, parse_cron
from lanekit.service.launchd.plist import lane_plist
from lanekit.state.paths import Paths

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "configuration.md"

SECTIONS = {
    "defaults": ("[defaults]", config_module.DEFAULTS_KEYS),
    "queues": ("[queues.NAME]", config_module.QUEUE_KEYS),
    "lanes": ("[lanes.NAME]", config_module.LANE_KEYS),
    "watch": ("[watch]", WATCH_KEYS),
}

_FENCE_RE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_REJECTED_RE = re.compile(r"^# lanes\.toml \(rejected: (.*)\)$")
_BECOMES_RE = re.compile(r"\b(plist|snapshot) `([^`]+)`")
_SPAN_RE = re.compile(r"`([^`]+)`")

BASE = """\
[queues.q]
dir = "~/q"

[lanes.a]
queue = "q"
command = ["/bin/echo", "{job}"]
"""

# One value per optional lane key, each different from its default, so that dropping the key
# must change the plist key or snapshot field the doc says it becomes. `every` cannot share a
# lane with `schedule`, so it is probed on its own.
SAMPLE = {
    "schedule": '"40 10 * * *"',
    "env": '{ EXTRA = "1" }',
    "path": '["/usr/bin", "/bin"]',
    "label": '"com.example.sample"',
    "stdout_log": '"~/out.log"',
    "stderr_log": '"~/err.log"',
    "log": '"~/events.log"',
    "max_jobs": "7",
    "max_seconds": '"10m"',
    "max_attempts": "5",
    "stale_after": '"2h"',
    "timeout": '"30m"',
    "kill_grace": "3",
    "nice": "5",
    "low_priority_io": "true",
    "process_type": '"Background"',
    "session_type": '"Background"',
    "throttle_interval": "30",
    "exit_timeout": "20",
    "run_at_load": "true",
    "working_directory": '"~/work"',
    "start": '["schedule", "enqueue"]',
}
ALONE = {"every": '"15m"'}


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(heading: str) -> str:
    """The text of the `## `heading`` section, up to the next `## ` heading."""
    found = re.search(rf"^## `{re.escape(heading)}`\n(.*?)(?=^## |\Z)", _doc(), re.M | re.S)
    assert found, f"docs/configuration.md has no section ## `{heading}`"
    return found[1]


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _table(text: str) -> list[dict[str, str]]:
    """The first table whose first header is `key`, as one dict per row."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("| key |"):
            header = _cells(line)
            rows = []
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, _cells(row), strict=True)))
            return rows
    raise AssertionError("no `| key |` table in the section")


def _rows(section: str) -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for row in _table(_section(SECTIONS[section][0])):
        key = _SPAN_RE.fullmatch(row["key"])
        assert key, f"[{section}] key cell {row['key']!r} is not one `key`"
        assert key[1] not in rows, f"[{section}] documents {key[1]} twice"
        rows[key[1]] = row
    return rows


def _write(tmp_path: Path, text: str, name: str = "lanes.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _with_key(section: str, key: str, literal: str) -> str:
    """BASE with `key = literal` added to the given table."""
    line = f"{key} = {literal}\n"
    if section == "defaults":
        return f"[defaults]\n{line}\n{BASE}"
    if section == "queues":
        return BASE.replace('dir = "~/q"\n', f'dir = "~/q"\n{line}')
    if section == "watch":
        return f"{BASE}[watch]\n{line}"
    return BASE + line


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_each_section_documents_exactly_the_accepted_keys(section: str) -> None:
    """The keys of each section's table equal the keys config.py accepts for that table:
    nothing accepted is undocumented, nothing documented is unknown to config.py."""
    documented = set(_rows(section))
    accepted = set(SECTIONS[section][1])
    assert documented - accepted == set(), "documented but refused by config.py"
    assert accepted - documented == set(), "accepted by config.py but not documented"


def test_every_top_level_table_has_a_section() -> None:
    """Each top-level table config.py accepts has its section (and there are no others)."""
    assert set(config_module.TOP_KEYS) == set(SECTIONS)
    for heading, _ in SECTIONS.values():
        _section(heading)


def test_unknown_keys_are_refused_as_the_doc_says(paths: Paths, tmp_path: Path) -> None:
    """A key outside the documented set is an error with a did-you-mean, in every section."""
    for section, rows in ((s, _rows(s)) for s in SECTIONS):
        near = sorted(rows)[0] + "x"
        with pytest.raises(ConfigError, match=f'unknown key; did you mean "{sorted(rows)[0]}"'):
            load_config(_write(tmp_path, _with_key(section, near, "1")), paths)


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_literal_defaults_are_the_real_defaults(section: str, paths: Paths, tmp_path: Path) -> None:
    """Writing a key with the default the doc gives (a single `literal` in the default column)
    loads to exactly the same Config as leaving it out."""
    # The watchdog lane runs `watch --config <this file>`: compare files of one name.
    base, name = (f"{BASE}[watch]\n", "lanes.toml") if section == "watch" else (BASE, "base.toml")
    baseline = load_config(_write(tmp_path, base, name), paths)
    checked = []
    for key, row in _rows(section).items():
        literal = _SPAN_RE.fullmatch(row["default"])
        if literal is None or "<" in literal[1]:
            continue  # prose ("required", "none ...") or a computed path like <queue dir>/...
        toml = _with_key(section, key, literal[1])
        assert _loaded(load_config(_write(tmp_path, toml), paths)) == _loaded(baseline), (
            f"[{section}] {key}: the documented default {literal[1]} is not the default"
        )
        checked.append(key)
    assert checked, f"[{section}] documents no literal default at all"


def _loaded(config: Config) -> tuple[Any, ...]:
    return (
        config.label_prefix,
        dict(config.queues),
        dict(config.lanes),
        config.templates,
        config.watch,
    )


def _artefacts(paths: Paths, tmp_path: Path, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plist model, snapshot JSON) of lane `a` in `text`."""
    lane = load_config(_write(tmp_path, text), paths).lanes["a"]
    plist = lane_plist(lane, interpreter="/usr/bin/python3", snapshot=paths.snapshot_for("x"))
    snapshot: dict[str, Any] = json.loads(run_spec(lane).to_json())
    return plist, snapshot


def _lookup(data: Mapping[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return KeyError(dotted)
        value = value[part]
    return value


def test_becomes_column_names_the_plist_keys_and_snapshot_fields(
    paths: Paths, tmp_path: Path
) -> None:
    """Each `plist X` / `snapshot y` in the lane table exists when the key is set, and dropping
    the key (back to its default) changes it: the doc says where each value really goes."""
    rows = _rows("lanes")
    missing = {k for k, r in rows.items() if _BECOMES_RE.search(r["becomes"])} - {
        *SAMPLE,
        *ALONE,
        "queue",
        "command",
    }
    assert not missing, f"give SAMPLE a value for {sorted(missing)}"
    full = BASE + "".join(f"{k} = {v}\n" for k, v in SAMPLE.items())
    for key, row in rows.items():
        targets = _BECOMES_RE.findall(row["becomes"])
        if not targets:
            continue
        sample = {**SAMPLE, **ALONE}.get(key)
        with_key = BASE + f"{key} = {sample}\n" if key in ALONE else full
        plist, snapshot = _artefacts(paths, tmp_path, with_key)
        without = None
        if sample is not None:
            without = _artefacts(paths, tmp_path, with_key.replace(f"{key} = {sample}\n", ""))
        for kind, name in targets:
            index = 0 if kind == "plist" else 1
            value = _lookup((plist, snapshot)[index], name)
            assert not isinstance(value, KeyError), f"{key}: {kind} has no {name}"
            if without is not None:
                assert _lookup(without[index], name) != value, (
                    f"{key}: dropping it does not change {kind} {name}"
                )


def test_every_plist_key_lanekit_writes_is_named(paths: Paths, tmp_path: Path) -> None:
    """Every key of a fully specified lane's plist (and of an `every` lane's) is named in the
    doc, so a key added to the plist model needs a line here."""
    text = _doc()
    full = BASE + "".join(f"{k} = {v}\n" for k, v in SAMPLE.items())
    keys = set(_artefacts(paths, tmp_path, full)[0])
    keys |= set(_artefacts(paths, tmp_path, BASE + 'every = "15m"\n')[0])
    unnamed = {key for key in keys if f"`{key}" not in text}
    assert not unnamed


def _toml_blocks() -> list[str]:
    return [body for lang, body in _FENCE_RE.findall(_doc()) if lang == "toml"]


def test_every_toml_block_is_toml() -> None:
    """Every ```toml block parses as TOML, fragments included."""
    blocks = _toml_blocks()
    assert blocks
    for body in blocks:
        tomllib.loads(body)


def _complete_files() -> list[str]:
    return [body for body in _toml_blocks() if body.startswith("# lanes.toml")]


@pytest.mark.parametrize("body", _complete_files(), ids=lambda b: b.splitlines()[0][:60])
def test_complete_examples_load_or_fail_as_shown(body: str, paths: Paths, tmp_path: Path) -> None:
    """A complete example loads with load_config; one marked `(rejected: MESSAGE)` fails with
    a ConfigError whose message contains MESSAGE."""
    path = _write(tmp_path, body)
    rejected = _REJECTED_RE.match(body.splitlines()[0])
    if rejected is None:
        config = load_config(path, paths)
        assert config.lanes, "a complete example defines at least one lane"
        return
    with pytest.raises(ConfigError) as caught:
        load_config(path, paths)
    assert rejected[1] in caught.value.message


def test_there_are_loading_and_rejected_examples() -> None:
    """The doc keeps both kinds of complete example (the parametrised test above would pass
    vacuously without them)."""
    firsts = [body.splitlines()[0] for body in _complete_files()]
    assert any(_REJECTED_RE.match(first) for first in firsts)
    assert any(not _REJECTED_RE.match(first) for first in firsts)


def test_rejected_cron_table_is_rejected() -> None:
    """Each cron in the doc's `| cron | why |` table is refused by parse_cron."""
    text = _doc()
    start = text.index("| cron | why |")
    crons = []
    for row in text[start:].splitlines()[2:]:
        if not row.startswith("|"):
            break
        crons += _SPAN_RE.findall(_cells(row)[0])
    assert len(crons) >= 5
    for cron in crons:
        with pytest.raises(ScheduleError):
            parse_cron(cron)
