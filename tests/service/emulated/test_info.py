"""The emulated domain's `print`: the definition worked out once at bootstrap says exactly what
working it out from the plist on every read says, and an entry without one still reads."""

from __future__ import annotations

import json
import plistlib
import subprocess
import sys
from pathlib import Path

import pytest

from lanekit.service.emulated.emulator import EmulatedDomain
from lanekit.service.emulated.info import definition_of, kept_definition
from lanekit.state.schemas import EMULATED_DEFINITION_VERSION

PLISTS: dict[str, dict[str, object]] = {
    "minimal": {"ProgramArguments": ["/bin/true"]},
    "full": {
        "Program": "/bin/sh",
        "ProgramArguments": ["sh", "-c", 'echo "$X" \'q\' \\ "; do shell script "\nline2'],
        "EnvironmentVariables": {"PATH": "/opt/homebrew/bin:/usr/bin:/bin", "X": "é ü"},
        "StandardOutPath": "/tmp/out.log",
        "StandardErrorPath": "/tmp/err.log",
        "WorkingDirectory": "/tmp",
        "ExitTimeOut": 7,
        "ThrottleInterval": 3,
        "Nice": 10,
        "ProcessType": "Background",
        "StartCalendarInterval": [{"Hour": 3, "Minute": 0}, {"Weekday": 0, "Minute": 30}],
    },
    "interval, no PATH": {"ProgramArguments": ["/bin/true", "{job}"], "StartInterval": 300},
    "odd values": {
        "ProgramArguments": ["/bin/true"],
        "StartInterval": 0,
        "ThrottleInterval": -1,
        "ExitTimeOut": True,
        "StartCalendarInterval": {"Minute": -5, "Month": 0},
    },
}


def _domain(tmp_path: Path) -> EmulatedDomain:
    return EmulatedDomain(tmp_path / "state", launch_agents=tmp_path / "agents")


def _install(tmp_path: Path, label: str, keys: dict[str, object]) -> Path:
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    path = agents / f"{label}.plist"
    path.write_bytes(plistlib.dumps({"Label": label, **keys}))
    path.chmod(0o644)
    return path


def _drop_kept_definitions(tmp_path: Path, version: object = None) -> None:
    """Rewrite domain.json as an earlier version left it: no definition (or another version)."""
    state_file = tmp_path / "state" / "domain.json"
    data = json.loads(state_file.read_bytes())
    for job in data["jobs"].values():
        if version is None:
            del job["definition"]
        else:
            job["definition"]["version"] = version
    state_file.write_text(json.dumps(data))


@pytest.mark.parametrize("name", sorted(PLISTS))
def test_a_kept_definition_prints_what_the_plist_says(tmp_path: Path, name: str) -> None:
    """For each plist (hostile text, arrays, odd values launchd tolerates), `print` from the
    definition kept at bootstrap equals `print` worked out from the plist itself (an entry left
    by an earlier version, or one of another EMULATED_DEFINITION_VERSION)."""
    domain = _domain(tmp_path)
    domain.bootstrap(_install(tmp_path, "t.job", PLISTS[name]))
    kept = domain.print("t.job")
    assert kept.arguments, "the definition is filled in"
    _drop_kept_definitions(tmp_path)
    assert _domain(tmp_path).print("t.job") == kept
    domain.bootout("t.job")
    domain.bootstrap(_install(tmp_path, "t.job", PLISTS[name]))
    _drop_kept_definitions(tmp_path, version=EMULATED_DEFINITION_VERSION + 1)
    assert _domain(tmp_path).print("t.job") == kept


def test_the_definition_is_kept_as_plain_json_of_this_version(tmp_path: Path) -> None:
    """The entry holds the definition as JSON values that read back as the same definition;
    one of another version (or not an object) is not taken."""
    _domain(tmp_path).bootstrap(_install(tmp_path, "t.job", PLISTS["full"]))
    stored = json.loads((tmp_path / "state" / "domain.json").read_bytes())
    definition = stored["jobs"]["t.job"]["definition"]
    plist = plistlib.loads((tmp_path / "agents" / "t.job.plist").read_bytes())
    assert definition == json.loads(json.dumps(definition_of(plist)))
    assert kept_definition(definition) == definition
    assert kept_definition({**definition, "version": EMULATED_DEFINITION_VERSION + 1}) is None
    assert kept_definition({k: v for k, v in definition.items() if k != "calendar"}) is None
    assert kept_definition({**definition, "extra_key": 1}) is None
    assert kept_definition(None) is None
    assert kept_definition([definition]) is None


def test_reading_an_idle_domain_loads_no_plist_parser_or_spawning_code(tmp_path: Path) -> None:
    """`print` and `list` of a loaded, idle job import neither plistlib nor the spawning code
    (lanekit.service.launchd.environ, .definition): a read of the domain is a JSON read."""
    _domain(tmp_path).bootstrap(_install(tmp_path, "t.job", PLISTS["full"]))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lanekit.service.emulated.emulator import EmulatedDomain\n"
        f"d = EmulatedDomain(Path({str(tmp_path / 'state')!r}), "
        f"launch_agents=Path({str(tmp_path / 'agents')!r}))\n"
        "assert d.print('t.job').arguments\n"
        "d.list()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(done.stdout.split())
    assert "lanekit.service.emulated.emulator" in modules
    assert {
        "plistlib",
        "lanekit.service.launchd.environ",
        "lanekit.service.launchd.definition",
    } & modules == set()
