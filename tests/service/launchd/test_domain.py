"""The launchd domain choice as a table: console owner, SSH, sudo, override, root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lanekit.errors import UsageError
from lanekit.service.launchd.domain import (
    REASON_TEXT,
    Caller,
    DomainReason,
    candidate_domains,
    choose_domain,
    console_owner,
)

SSH = {"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "SSH_TTY": "/dev/ttys003"}


@pytest.mark.parametrize(
    ("uid", "euid", "env", "console", "domain", "reason"),
    [
        # at the screen
        (501, 501, {}, 501, "gui/501", DomainReason.CONSOLE),
        # over SSH as the user who is also at the screen (homebrew-services #638)
        (501, 501, SSH, 501, "gui/501", DomainReason.SSH_CONSOLE_USER),
        (501, 501, {"SSH_TTY": "/dev/ttys003"}, 501, "gui/501", DomainReason.SSH_CONSOLE_USER),
        # over SSH while someone else, or the login window (root), owns the console
        (501, 501, SSH, 502, "user/501", DomainReason.SSH),
        (501, 501, SSH, 0, "user/501", DomainReason.SSH),
        (501, 501, SSH, None, "user/501", DomainReason.SSH),
        # no SSH, console not ours (fast user switching, cron, screen): Homebrew's
        # domain_target keeps gui/<uid>, probed (112/125 falls back to user/<uid>)
        (501, 501, {}, 0, "gui/501", DomainReason.NOT_AT_CONSOLE),
        (501, 501, {}, 502, "gui/501", DomainReason.NOT_AT_CONSOLE),
        (501, 501, {}, None, "gui/501", DomainReason.NOT_AT_CONSOLE),
        # sudo -u other: that user has no GUI session here
        (502, 502, {"SUDO_USER": "me"}, 501, "user/502", DomainReason.SUDO),
        (501, 502, {}, 501, "user/502", DomainReason.SUDO),
        # sudo -u me from my own console session keeps my GUI domain
        (501, 501, {"SUDO_USER": "me"}, 501, "gui/501", DomainReason.CONSOLE),
        # the override wins over every detection
        (501, 501, {"LANEKIT_LAUNCHD_DOMAIN": "user"}, 501, "user/501", DomainReason.OVERRIDE),
        (501, 501, {"LANEKIT_LAUNCHD_DOMAIN": "gui", **SSH}, 0, "gui/501", DomainReason.OVERRIDE),
        (501, 501, {"LANEKIT_LAUNCHD_DOMAIN": "gui/502"}, 501, "gui/502", DomainReason.OVERRIDE),
    ],
)
def test_domain_choice_table(
    uid: int,
    euid: int,
    env: dict[str, str],
    console: int | None,
    domain: str,
    reason: DomainReason,
) -> None:
    """gui/<uid> whenever this uid owns the console, over SSH too; user/<uid> over SSH or
    sudo when it does not, or when nobody of ours is at the screen; the override wins."""
    choice = choose_domain(uid, euid, env, console)
    assert (choice.domain, choice.reason) == (domain, reason)
    assert choice.why


@pytest.mark.parametrize("env", [{}, SSH, {"LANEKIT_LAUNCHD_DOMAIN": "gui"}])
def test_root_is_refused(env: dict[str, str]) -> None:
    """euid 0 (sudo lanekit ...) is a usage error naming the fix, whatever else is set."""
    with pytest.raises(UsageError) as caught:
        choose_domain(0, 0, env, 501)
    assert "sudo" in caught.value.message
    assert "without sudo" in caught.value.hint


def test_unknown_override_is_refused() -> None:
    """An unknown LANEKIT_LAUNCHD_DOMAIN is a usage error naming the accepted values."""
    with pytest.raises(UsageError) as caught:
        choose_domain(501, 501, {"LANEKIT_LAUNCHD_DOMAIN": "system"}, 501)
    assert "LANEKIT_LAUNCHD_DOMAIN" in caught.value.message
    assert "`gui`" in caught.value.hint


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("gui/501", ("gui/501", "user/501")),
        ("user/501", ("user/501", "gui/501")),
    ],
)
def test_candidate_domains_follow_homebrews_order(domain: str, expected: tuple[str, ...]) -> None:
    """Lookups try the chosen domain, then user/<uid>, then gui/<uid>, each once."""
    assert candidate_domains(domain) == expected
    assert choose_domain(501, 501, {"LANEKIT_LAUNCHD_DOMAIN": domain}, 501).candidates == expected


def test_console_owner_reads_the_file_it_is_given(tmp_path: Path) -> None:
    """console_owner is the owner uid of the console device file, None when it is missing."""
    console = tmp_path / "console"
    console.write_text("")
    assert console_owner(console) == os.stat(console).st_uid
    assert console_owner(tmp_path / "missing") is None


def test_caller_current_reads_this_process() -> None:
    """Caller.current() is this process's uid, euid and /dev/console's owner."""
    me = Caller.current()
    assert (me.uid, me.euid, me.console_uid) == (os.getuid(), os.geteuid(), console_owner())


def _launchctl(tmp_path: Path, script: dict[str, object]) -> dict[str, str]:
    """An environment whose LANEKIT_LAUNCHCTL is the scripted fake, logging its calls."""
    import json
    import sys

    from places import FAKE_LAUNCHCTL

    wrapper = tmp_path / "launchctl"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_LAUNCHCTL}" "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "script.json").write_text(json.dumps(script))
    return {
        "LANEKIT_LAUNCHCTL": str(wrapper),
        "FAKE_LAUNCHCTL_SCRIPT": str(tmp_path / "script.json"),
        "FAKE_LAUNCHCTL_LOG": str(tmp_path / "calls.log"),
    }


def _capture(name: str) -> str:
    from places import SAMPLES

    return (SAMPLES / f"{name}.txt").read_text(encoding="utf-8").partition("# ---\n")[2]


@pytest.mark.parametrize(
    ("answer", "domain", "reason"),
    [
        # launchd has the GUI domain (someone else at the screen: fast user switching)
        ({"stdout": "gui/501 = {\n}\n"}, "gui/501", DomainReason.NOT_AT_CONSOLE),
        # the real answers for a gui domain that does not exist: 125 (errors-13), 112
        ({"stderr": _capture("errors-13"), "exit": 125}, "user/501", DomainReason.NO_GUI_DOMAIN),
        ({"stderr": _capture("errors-15"), "exit": 112}, "user/501", DomainReason.NO_GUI_DOMAIN),
        # any other refusal is not a reason to move the lanes
        ({"stderr": "Could not print: 1: Operation not permitted", "exit": 1}, "gui/501", None),
    ],
)
def test_gui_domain_falls_back_only_on_112_or_125(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: dict[str, object],
    domain: str,
    reason: DomainReason | None,
) -> None:
    """Not at the console and not over SSH/sudo: gui/<uid>, as Homebrew; launchd is asked
    once, and only 112/125 for gui/<uid> moves the lanes to user/<uid>."""
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    env = _launchctl(tmp_path, {"print gui/501": answer})
    monkeypatch.setenv("FAKE_LAUNCHCTL_SCRIPT", env["FAKE_LAUNCHCTL_SCRIPT"])
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", env["FAKE_LAUNCHCTL_LOG"])
    launchd = LaunchctlDomain.from_env(env, Caller(501, 501, 502))
    assert launchd.domain == domain
    if reason is not None:
        assert launchd.domain_reason == REASON_TEXT[reason]
    assert (tmp_path / "calls.log").read_text().splitlines() == ['["print", "gui/501"]']


def test_console_owner_is_not_probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the screen, over SSH without the console, or under sudo the choice needs no
    launchctl call."""
    from lanekit.service.launchd.launchctl import LaunchctlDomain

    env = _launchctl(tmp_path, {})
    monkeypatch.setenv("FAKE_LAUNCHCTL_LOG", env["FAKE_LAUNCHCTL_LOG"])
    assert LaunchctlDomain.from_env(env, Caller(501, 501, 501)).domain == "gui/501"
    assert LaunchctlDomain.from_env({**env, **SSH}, Caller(501, 501, 0)).domain == "user/501"
    assert not (tmp_path / "calls.log").exists()
