"""launchd's ServiceManager over the real adapter and a scripted fake launchctl: an observation
of every lane is one `print DOMAIN` and one `print-disabled` (plus launchd's one `print` per
loaded lane asked about), never a listing per lane; and the seam's facts come from launchctl's
words (tests/service/test_service_contract.py runs the whole contract on the in-memory fake)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from lanekit.service.launchd.launchctl import LaunchctlDomain
from lanekit.service.launchd.manager import LaunchdManager, plist_definition
from lanekit.service.manager import Ending, ManagerKind

FAKE = Path(__file__).resolve().parent / "fake_launchctl.py"
DOMAIN = "gui/501"


def _manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labels: list[str]) -> LaunchdManager:
    """A manager whose launchctl lists `labels` (the first running as pid 4242, the second
    last killed by SIGKILL) and prints each as launchd 14+ does."""
    rows = [f"\t\t4242\t-\t{labels[0]}", f"\t\t0\t-9\t{labels[1]}"]
    rows += [f"\t\t0\t0\t{label}" for label in labels[2:]]
    script: dict[str, dict[str, object]] = {
        f"print {DOMAIN}": {
            "stdout": f"{DOMAIN} = {{\n\tservices = {{\n" + "\n".join(rows) + "\n\t}\n}\n"
        },
        f"print-disabled {DOMAIN}": {
            "stdout": f'disabled services = {{\n\t"{labels[2]}" => disabled\n}}\n'
        },
        "print": {"stdout": "", "stderr": "Could not find service", "exit": 113},
    }
    for label in labels:
        # The first two never exited as far as print tells: list()'s status column is used.
        last = "(never exited)" if label in labels[:2] else "0"
        script[f"print {DOMAIN}/{label}"] = {
            "stdout": f"{DOMAIN}/{label} = {{\n\tstate = not running\n\truns = 3\n"
            f"\tlast exit code = {last}\n}}\n"
        }
    (tmp_path / "script.json").write_text(json.dumps(script), encoding="utf-8")
    wrapper = tmp_path / "launchctl"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(tmp_path / "script.json"))
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", str(tmp_path / "calls.jsonl"))
    return LaunchdManager(LaunchctlDomain(DOMAIN, launchctl=wrapper), tmp_path / "LaunchAgents")


def _calls(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_observing_lanes_lists_the_domain_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five lanes: one `print DOMAIN` (its candidate domains), one `print-disabled`, and one
    `print` per loaded lane asked about; a label not loaded costs nothing."""
    labels = [f"com.example.l{n}" for n in range(5)]
    manager = _manager(tmp_path, monkeypatch, labels)
    seen = manager.observe([*labels, "com.example.absent"])
    calls = _calls(tmp_path)
    listings = [
        call for call in calls if call[0] == "print" and "/" not in call[1].split("/", 1)[1]
    ]
    assert [call[0] for call in calls].count("print-disabled") == 1
    assert listings[0] == ["print", DOMAIN]
    assert len(listings) <= 3  # the chosen domain, then user/ and gui/ of the same uid at most
    assert sorted(call[1] for call in calls if call[1].count("/") == 2) == sorted(
        f"{DOMAIN}/{label}" for label in labels
    )
    assert not seen["com.example.absent"].loaded


def test_the_seam_speaks_launchctls_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pid, the signal of the last end, disabled and runs come through as neutral facts."""
    labels = [f"com.example.l{n}" for n in range(3)]
    manager = _manager(tmp_path, monkeypatch, labels)
    assert manager.kind is ManagerKind.LAUNCHD
    seen = manager.observe(labels)
    assert seen[labels[0]].pid == 4242
    assert seen[labels[0]].running
    assert seen[labels[1]].ended is Ending.SIGNALLED
    assert seen[labels[1]].last_exit == -9
    assert seen[labels[2]].disabled
    assert seen[labels[2]].ended is Ending.EXITED
    assert seen[labels[2]].runs == 3
    assert manager.loaded() == {labels[0]: 4242, labels[1]: None, labels[2]: None}


def test_a_plist_reads_as_launchd_reads_it() -> None:
    """Program wins over argv[0] as what runs; non-string variables and wrong-typed timers are
    left out; a calendar table and a list of them read alike."""
    defined = plist_definition(
        {
            "Label": "x",
            "Program": "/bin/sh",
            "ProgramArguments": ["sh", "-c", "true"],
            "EnvironmentVariables": {"A": "1", "B": 2},
            "StartCalendarInterval": {"Hour": 3, "Minute": 0},
            "StartInterval": "60",
            "ExitTimeOut": 0,
        },
        "raw",
    )
    assert defined.program == "/bin/sh"
    assert defined.argv == ("sh", "-c", "true")
    assert defined.env == {"A": "1"}
    assert defined.calendar == ({"Hour": 3, "Minute": 0},)
    assert defined.interval is None
    assert defined.exit_timeout == 0
    assert defined.text == "raw"
