"""The launchd domain choice as a table: console owner, SSH, sudo, override, root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lanekit.errors import UsageError
from lanekit.service.launchd.domain import (
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
        # no SSH, console not ours (fast user switching, cron, screen)
        (501, 501, {}, 0, "user/501", DomainReason.NOT_AT_CONSOLE),
        (501, 501, {}, None, "user/501", DomainReason.NOT_AT_CONSOLE),
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
