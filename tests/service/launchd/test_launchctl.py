"""LaunchctlDomain against a scripted fake launchctl: exact argv, parsing, errors, timeouts.

The fake (tests/launchd/fake_launchctl.py) records each call's arguments and replies from a
JSON script; LANEKIT_LAUNCHCTL (or the `launchctl=` argument) points at a small wrapper that
runs it with this interpreter.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from lanekit.errors import UsageError
from lanekit.service.launchd import LaunchctlError, Launchd, ListEntry, open_launchd
from lanekit.service.launchd.domain import Caller, console_owner
from lanekit.service.launchd.launchctl import (
    DEFAULT_LAUNCHCTL,
    DEFAULT_TIMEOUT,
    LaunchctlDomain,
)
from lanekit.state.paths import Paths

FAKE = Path(__file__).resolve().parent / "fake_launchctl.py"
SAMPLES = Path(__file__).resolve().parent / "samples"

Script = Mapping[str, Mapping[str, object]]
ME_AT_CONSOLE = Caller(uid=501, euid=501, console_uid=501)


def capture(name: str) -> str:
    """A sample capture's output (after its `# ---` line)."""
    return (SAMPLES / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


class Fake:
    """The fake launchctl's wrapper path, its script file and its call log."""

    def __init__(self, root: Path) -> None:
        self.log = root / "calls.jsonl"
        self.script_file = root / "script.json"
        self.path = root / "launchctl"
        self.path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.script({})

    def script(self, replies: Script) -> None:
        """Set the replies (see fake_launchctl.py) for the next calls."""
        self.script_file.write_text(json.dumps(replies), encoding="utf-8")

    def calls(self) -> list[list[str]]:
        """Every call's arguments, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def domain(
        self, domain: str = "gui/501", *, timeout: float = DEFAULT_TIMEOUT
    ) -> LaunchctlDomain:
        """A LaunchctlDomain driving this fake."""
        return LaunchctlDomain(domain, launchctl=self.path, timeout=timeout)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    """A fresh fake launchctl whose calls are logged under tmp_path."""
    made = Fake(tmp_path)
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", str(made.log))
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", str(made.script_file))
    return made


def test_fake_is_an_executable_script() -> None:
    """fake_launchctl.py can also be run directly (shebang and executable bit)."""
    assert FAKE.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(FAKE, os.X_OK)


def test_launchctl_domain_is_a_launchd() -> None:
    """LaunchctlDomain satisfies the Launchd protocol (checked by mypy through this binding)."""
    backend: Launchd = LaunchctlDomain("gui/501")
    assert backend.domain == "gui/501"


# ----------------------------------------------------------------------------- argv


def _other(domain: str) -> str:
    """The other candidate domain of the same uid (`gui/501` -> `user/501`)."""
    kind, uid = domain.split("/")
    return f"{'user' if kind == 'gui' else 'gui'}/{uid}"


Argv = Callable[[str], list[list[str]]]

COMMANDS: list[tuple[str, Callable[[LaunchctlDomain], object], Argv]] = [
    ("list", lambda d: d.list(), lambda dom: [["print", dom], ["print", _other(dom)]]),
    ("print", lambda d: d.print("com.lane.a"), lambda dom: [["print", f"{dom}/com.lane.a"]]),
    ("services", lambda d: d.services(), lambda dom: [["print", dom]]),
    (
        "bootstrap",
        lambda d: d.bootstrap(Path("/Users/me/Library/LaunchAgents/com.lane.a.plist")),
        lambda dom: [["bootstrap", dom, "/Users/me/Library/LaunchAgents/com.lane.a.plist"]],
    ),
    (
        "bootout",
        lambda d: d.bootout("com.lane.a"),
        lambda dom: [["bootout", f"{dom}/com.lane.a"], ["bootout", f"{_other(dom)}/com.lane.a"]],
    ),
    (
        "kickstart",
        lambda d: d.kickstart("com.lane.a"),
        lambda dom: [["print", f"{dom}/com.lane.a"], ["kickstart", "-p", f"{dom}/com.lane.a"]],
    ),
    (
        "kickstart -k",
        lambda d: d.kickstart("com.lane.a", kill=True),
        lambda dom: [
            ["print", f"{dom}/com.lane.a"],
            ["kickstart", "-k", "-p", f"{dom}/com.lane.a"],
        ],
    ),
    ("enable", lambda d: d.enable("com.lane.a"), lambda dom: [["enable", f"{dom}/com.lane.a"]]),
    (
        "disable",
        lambda d: d.disable("com.lane.a"),
        lambda dom: [["disable", f"{dom}/com.lane.a"]],
    ),
    ("print-disabled", lambda d: d.print_disabled(), lambda dom: [["print-disabled", dom]]),
]


@pytest.mark.parametrize("domain", ["gui/501", "user/501"])
@pytest.mark.parametrize(("name", "call", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_command_runs_the_exact_argv(
    fake: Fake,
    domain: str,
    name: str,
    call: Callable[[LaunchctlDomain], object],
    argv: Argv,
) -> None:
    """Every protocol method runs exactly the documented launchctl calls, in the gui or the
    user domain: reads name the domain (`print DOMAIN`, never the caller-session `list`),
    and list/bootout cover both candidate domains of the uid."""
    call(fake.domain(domain))
    assert fake.calls() == argv(domain)


# ---------------------------------------------------------------------------- replies


def test_list_reads_the_domain_rows_not_the_caller_session(fake: Fake) -> None:
    """list() reads `print gui/501` rows (a real capture) and skips a candidate domain that
    does not exist here (`print user/501` failing 112), never calling legacy `list`."""
    fake.script(
        {
            "print gui/501": {"stdout": capture("print-domain-01")},
            "print user/501": {"stderr": "Could not find domain for user/501\n", "exit": 112},
            "list": {"stdout": capture("list-02")},
        }
    )
    entries = fake.domain().list()
    assert entries == [
        ListEntry(887, None, "net.jwpconsulting.postgresql"),
        ListEntry(866, None, "com.apple.syncdefaultsd"),
    ]
    assert ["list"] not in fake.calls()


def test_list_merges_candidates_with_the_chosen_domain_first(fake: Fake) -> None:
    """A lane loaded from the other kind of session (gui while lanekit chose user) is seen,
    and a label in both keeps the chosen domain's row."""
    fake.script(
        {
            "print user/501": {"stdout": "services = {\n\t0\t-\tcom.lane.a\n}\n"},
            "print gui/501": {
                "stdout": "services = {\n\t77\t-\tcom.lane.a\n\t88\t-\tcom.lane.b\n}\n"
            },
        }
    )
    assert fake.domain("user/501").list() == [
        ListEntry(None, None, "com.lane.a"),
        ListEntry(88, None, "com.lane.b"),
    ]


def test_list_of_a_missing_chosen_domain_is_an_error(fake: Fake) -> None:
    """When the chosen domain itself cannot be printed, list() raises (nothing is guessed)."""
    fake.script({"print gui/501": {"stderr": capture("errors-13"), "exit": 125}})
    with pytest.raises(LaunchctlError) as caught:
        fake.domain().list()
    assert caught.value.code == 125


def test_print_falls_back_to_the_other_candidate_domain(fake: Fake) -> None:
    """print() of a job loaded only in gui/501, asked from user/501, finds it there."""
    fake.script(
        {
            "print user/501/com.lane.a": {"stderr": "Could not find service\n", "exit": 113},
            "print gui/501/com.lane.a": {"stdout": capture("print-05")},
        }
    )
    domain = fake.domain("user/501")
    assert domain.print("com.lane.a").runs == 1
    assert domain.where("com.lane.a") == "gui/501"


def test_kickstart_and_bootout_act_where_the_job_is_loaded(fake: Fake) -> None:
    """kickstart targets the candidate domain that has the job; bootout removes it from every
    candidate domain that has it and ignores those that do not (113/3)."""
    fake.script(
        {
            "print user/501/com.lane.a": {"stderr": "Could not find service\n", "exit": 113},
            "print gui/501/com.lane.a": {"stdout": capture("print-05")},
            "bootout user/501": {"stderr": "Boot-out failed: 3: No such process\n", "exit": 3},
            "kickstart": {"stdout": "4242\n"},
        }
    )
    domain = fake.domain("user/501")
    assert domain.kickstart("com.lane.a") == 4242
    domain.bootout("com.lane.a")
    assert fake.calls()[2:] == [
        ["kickstart", "-p", "gui/501/com.lane.a"],
        ["bootout", "user/501/com.lane.a"],
        ["bootout", "gui/501/com.lane.a"],
    ]


def test_print_parses_the_service(fake: Fake) -> None:
    """print() returns the ServiceInfo of the printed job."""
    fake.script({"print": {"stdout": capture("print-05")}})
    info = fake.domain().print("com.lane.a")
    assert (info.state, info.last_exit_code, info.runs) == ("not running", 2, 1)


def test_print_of_a_job_not_loaded_is_error_113(fake: Fake) -> None:
    """print() of an unknown label raises LaunchctlError 113 with launchctl's line."""
    fake.script(
        {
            "print": {
                "stderr": 'Bad request.\nCould not find service "com.lane.a" in domain for '
                "user gui: 501\n",
                "exit": 113,
            }
        }
    )
    with pytest.raises(LaunchctlError) as caught:
        fake.domain().print("com.lane.a")
    assert caught.value.code == 113
    assert caught.value.message == (
        'launchctl print gui/501/com.lane.a: Could not find service "com.lane.a" in domain '
        "for user gui: 501"
    )
    assert "launchctl bootstrap gui/501" in caught.value.hint


def test_kickstart_returns_the_printed_pid(fake: Fake) -> None:
    """kickstart -p prints the new pid; kickstart() returns it (None when nothing printed)."""
    fake.script({"kickstart -k": {"stdout": "4242\n"}, "kickstart": {"stdout": ""}})
    domain = fake.domain()
    assert domain.kickstart("com.lane.a", kill=True) == 4242
    assert domain.kickstart("com.lane.a") is None


def test_print_disabled_parses_overrides(fake: Fake) -> None:
    """print_disabled() maps labels to True when disabled."""
    fake.script({"print-disabled": {"stdout": capture("print-disabled-01")}})
    disabled = fake.domain().print_disabled()
    assert disabled["com.apple.Siri.agent"] is True
    assert disabled["com.docker.helper"] is False


def test_services_parses_the_domain_rows(fake: Fake) -> None:
    """services() reads the `services` rows of `print <domain>`."""
    fake.script({"print gui/501": {"stdout": capture("print-domain-01")}})
    assert fake.domain().services()[0] == ListEntry(887, None, "net.jwpconsulting.postgresql")


# ----------------------------------------------------------------------------- errors


def test_bootstrap_exit_5_maps_to_a_launchctl_error(fake: Fake) -> None:
    """bootstrap exiting 5 with launchctl's stderr raises code 5 with meaning and a hint that
    names the exact command to re-run for the real reason."""
    fake.script({"bootstrap": {"stderr": capture("errors-01"), "exit": 5}})
    plist = Path("/Users/me/Library/LaunchAgents/com.lane.a.plist")
    with pytest.raises(LaunchctlError) as caught:
        fake.domain().bootstrap(plist)
    error = caught.value
    assert error.code == 5
    assert error.message == (
        f"launchctl bootstrap gui/501 {plist}: Bootstrap failed: 5: Input/output error"
    )
    assert "already loaded" in error.meaning
    assert f"sudo launchctl bootstrap gui/501 {plist}" in error.hint
    assert error.exit_code == 1


def test_bootstrap_failure_text_with_exit_0_is_a_failure(fake: Fake) -> None:
    """launchctl printing a failure but exiting 0 (legacy style) still raises."""
    fake.script({"bootstrap": {"stderr": "/x/com.lane.a.plist: Invalid property list\n"}})
    with pytest.raises(LaunchctlError) as caught:
        fake.domain().bootstrap(Path("/x/com.lane.a.plist"))
    assert caught.value.code == 109
    assert "plutil -lint /x/com.lane.a.plist" in caught.value.hint


def test_harmless_stderr_with_exit_0_is_not_a_failure(fake: Fake) -> None:
    """A warning alone on stderr with exit 0 does not fail the call."""
    fake.script(
        {
            "bootout": {
                "stderr": "Warning: Expecting a LaunchDaemons path since the command was ran "
                "as root. Got LaunchAgents instead.\n"
            }
        }
    )
    fake.domain().bootout("com.lane.a")
    assert fake.calls() == [["bootout", "gui/501/com.lane.a"], ["bootout", "user/501/com.lane.a"]]


@pytest.mark.parametrize(
    ("sample", "status", "code"),
    [("errors-05", 36, 36), ("errors-11", 119, 119), ("errors-13", 125, 125)],
)
def test_real_exit_statuses_map_through_parse_error(
    fake: Fake, sample: str, status: int, code: int
) -> None:
    """The fake replays real captures with their exit status; the error carries that code."""
    fake.script({"*": {"stderr": capture(sample), "exit": status}})
    with pytest.raises(LaunchctlError) as caught:
        fake.domain().bootout("com.lane.a")
    assert caught.value.code == code
    assert caught.value.message.startswith("launchctl bootout gui/501/com.lane.a: ")


def test_bootout_of_a_job_not_loaded_is_error_3(fake: Fake) -> None:
    """bootout of a label that is not loaded raises code 3 and says nothing is left to do."""
    fake.script({"bootout": {"stderr": "Boot-out failed: 3: No such process\n", "exit": 3}})
    with pytest.raises(LaunchctlError) as caught:
        fake.domain("user/501").bootout("com.lane.a")
    assert caught.value.code == 3
    assert "launchctl print user/501/com.lane.a" in caught.value.hint


def test_a_hanging_launchctl_times_out(fake: Fake) -> None:
    """A call that does not finish within the timeout raises a clear LaunchctlError."""
    fake.script({"bootout": {"sleep": 30}})
    with pytest.raises(LaunchctlError) as caught:
        fake.domain(timeout=0.5).bootout("com.lane.a")
    assert caught.value.code == 60
    assert caught.value.message == (
        "launchctl bootout gui/501/com.lane.a did not finish within 0.5 s"
    )
    assert "LANEKIT_LAUNCHCTL_TIMEOUT" in caught.value.hint


def test_a_missing_launchctl_is_explained(tmp_path: Path) -> None:
    """A launchctl path that does not exist raises LaunchctlError naming the setting to fix."""
    domain = LaunchctlDomain("gui/501", launchctl=tmp_path / "nope")
    with pytest.raises(LaunchctlError) as caught:
        domain.list()
    assert f"cannot run launchctl at {tmp_path / 'nope'}" in caught.value.message
    assert "LANEKIT_LAUNCHCTL" in caught.value.hint


# ------------------------------------------------------------------------- the domain


def test_from_env_reads_binary_domain_and_timeout(fake: Fake) -> None:
    """from_env takes LANEKIT_LAUNCHCTL, LANEKIT_LAUNCHD_DOMAIN and LANEKIT_LAUNCHCTL_TIMEOUT."""
    domain = LaunchctlDomain.from_env(
        {
            "LANEKIT_LAUNCHCTL": str(fake.path),
            "LANEKIT_LAUNCHD_DOMAIN": "user",
            "LANEKIT_LAUNCHCTL_TIMEOUT": "3",
        },
        ME_AT_CONSOLE,
    )
    assert domain.domain == "user/501"
    assert domain.domain_reason == "LANEKIT_LAUNCHD_DOMAIN chooses it"
    assert domain.timeout == 3.0
    domain.enable("com.lane.a")
    assert fake.calls() == [["enable", "user/501/com.lane.a"]]


def test_from_env_defaults() -> None:
    """Without settings: /bin/launchctl, a 15 s timeout, and a gui or user domain of ours."""
    domain = LaunchctlDomain.from_env({}, ME_AT_CONSOLE)
    assert (domain.launchctl, domain.timeout) == (DEFAULT_LAUNCHCTL, 15.0)
    assert domain.domain == "gui/501"


def test_from_env_rejects_a_bad_timeout() -> None:
    """A non-positive or non-numeric LANEKIT_LAUNCHCTL_TIMEOUT is a usage error."""
    for raw in ("0", "-1", "soon"):
        with pytest.raises(UsageError):
            LaunchctlDomain.from_env({"LANEKIT_LAUNCHCTL_TIMEOUT": raw}, ME_AT_CONSOLE)


def test_console_owner_reads_dev_console() -> None:
    """console_owner is the uid owning /dev/console, or None where there is none."""
    expected = Path("/dev/console").stat().st_uid if Path("/dev/console").exists() else None
    assert console_owner() == expected


def test_from_env_refuses_root() -> None:
    """On the launchctl backend root (sudo) is refused before any launchctl call."""
    with pytest.raises(UsageError) as caught:
        LaunchctlDomain.from_env({}, Caller(0, 0, 501))
    assert "sudo" in caught.value.message
    assert caught.value.exit_code == 2


def test_open_launchd_picks_launchctl_when_asked(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LANEKIT_LAUNCHD=launchctl makes open_launchd return the real backend, using our binary."""
    monkeypatch.setattr(Caller, "current", classmethod(lambda cls: ME_AT_CONSOLE))
    backend = open_launchd(
        Paths.under(tmp_path),
        {"LANEKIT_LAUNCHD": "launchctl", "LANEKIT_LAUNCHCTL": str(fake.path)},
    )
    assert isinstance(backend, LaunchctlDomain)
    backend.list()
    assert fake.calls() == [["print", "gui/501"], ["print", "user/501"]]
