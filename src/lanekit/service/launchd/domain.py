"""Which launchd domain lanekit's lanes live in, and why: one pure choice, explained.

The rules follow Homebrew's `services/system.rb` (`domain_target`, `candidate_domain_targets`):
`user/<uid>` only over SSH without the console, through sudo, or when uid and euid differ;
otherwise `gui/<uid>`. A user at the Mac's screen owns `/dev/console` and has a `gui/<uid>`
domain; over SSH that same user still has it (homebrew-services #638). A local user who is not
at the screen (fast user switching: someone else owns the console) still gets `gui/<uid>`, so
the lanes do not move between domains with whoever sits in front; only when launchd answers
112 (no such domain) or 125 (domain does not support it) for `gui/<uid>` does lanekit fall back
to `user/<uid>` (`fall_back`, probed by the launchctl adapter). Lookups and bootout try the
candidates in Homebrew's order (the chosen domain, then `user/<uid>`, then `gui/<uid>`), so a
lane loaded from the other kind of session is still found.

Root is refused: `sudo lanekit apply` would load into `user/0` and leave root-owned plists,
snapshots and queue directories in the user's home that the user's own runner then refuses. A
system-domain mode (LaunchDaemons) is out of scope.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from lanekit.errors import UsageError

DOMAIN_VARIABLE = "LANEKIT_LAUNCHD_DOMAIN"
CONSOLE = Path("/dev/console")


class DomainReason(StrEnum):
    """Why a domain was chosen (shown by `lanekit status`, and in its JSON as `domain_reason`)."""

    OVERRIDE = "override"
    CONSOLE = "console"
    SSH_CONSOLE_USER = "ssh-console-user"
    SSH = "ssh"
    NOT_AT_CONSOLE = "not-at-console"
    NO_GUI_DOMAIN = "no-gui-domain"
    SUDO = "sudo"


REASON_TEXT: Mapping[DomainReason, str] = {
    DomainReason.OVERRIDE: f"{DOMAIN_VARIABLE} chooses it",
    DomainReason.CONSOLE: "you are logged in at the Mac's screen (you own /dev/console)",
    DomainReason.SSH_CONSOLE_USER: "over SSH, and you are also logged in at the Mac's screen",
    DomainReason.SSH: "over SSH, and you are not logged in at the Mac's screen",
    DomainReason.NOT_AT_CONSOLE: "not over SSH or sudo: your login's GUI domain, as Homebrew "
    "chooses it (someone else, or no one, is at the Mac's screen now)",
    DomainReason.NO_GUI_DOMAIN: "launchd has no GUI domain of yours here (it answered 112/125 "
    "for gui/<uid>: no GUI login)",
    DomainReason.SUDO: "run through sudo as another user: that user has no GUI session here",
}


@dataclass(frozen=True, slots=True)
class DomainChoice:
    """The domain lanes are loaded into, and the reason, in words a user can check."""

    domain: str
    reason: DomainReason

    @property
    def why(self) -> str:
        """The reason in words."""
        return REASON_TEXT[self.reason]

    @property
    def candidates(self) -> tuple[str, ...]:
        """Where lookups and bootout look, in order: the chosen domain, `user/`, `gui/`."""
        return candidate_domains(self.domain)

    @property
    def needs_probe(self) -> bool:
        """True when the choice is `gui/<uid>` without proof that the GUI domain exists (no
        console of ours): launchd is asked, and 112/125 means `fall_back`."""
        return self.reason is DomainReason.NOT_AT_CONSOLE

    def fall_back(self, code: int) -> DomainChoice:
        """The choice once launchd answered `code` for the chosen gui domain: `user/<uid>` for
        112 (no such domain) and 125 (domain does not support it), else unchanged."""
        from lanekit.service.launchd.codes import NO_GUI

        if code not in NO_GUI or not self.domain.startswith("gui/"):
            return self
        return DomainChoice(f"user/{self.domain.rsplit('/', 1)[-1]}", DomainReason.NO_GUI_DOMAIN)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who runs lanekit: the facts the domain choice reads (tests build their own)."""

    uid: int
    euid: int
    console_uid: int | None
    """The owner of /dev/console: the user logged in at the Mac's screen (None: unknown)."""

    @classmethod
    def current(cls) -> Caller:
        """This process's real and effective uid and the console's owner."""
        return cls(os.getuid(), os.geteuid(), console_owner())


def candidate_domains(domain: str) -> tuple[str, ...]:
    """The chosen domain first, then `user/<uid>` and `gui/<uid>` of the same uid."""
    uid = domain.rsplit("/", 1)[-1]
    ordered = [domain, f"user/{uid}", f"gui/{uid}"]
    return tuple(dict.fromkeys(ordered))


def is_ssh(env: Mapping[str, str]) -> bool:
    """True when this process runs in an SSH session."""
    return bool(env.get("SSH_CONNECTION") or env.get("SSH_TTY") or env.get("SSH_CLIENT"))


def choose_domain(
    uid: int, euid: int, env: Mapping[str, str], console_uid: int | None
) -> DomainChoice:
    """The launchd domain of this caller (pure: the caller passes ids and /dev/console's owner).

    `LANEKIT_LAUNCHD_DOMAIN=gui|user` (or a full `gui/<uid>` / `user/<uid>`) overrides the
    detection. Without it, as Homebrew's `domain_target`: `user/<uid>` over SSH when this uid
    does not own the console, through sudo, or when uid and euid differ; otherwise `gui/<uid>`
    (`needs_probe` when this uid does not own the console). Root (euid 0) is refused with a
    UsageError.
    """
    if euid == 0:
        raise UsageError(
            "lanekit manages per-user LaunchAgents and does not run as root (sudo): it would "
            "load lanes into user/0 and leave root-owned files in your home",
            "run it as your own user, without sudo (e.g. `lanekit apply`)",
        )
    choice = env.get(DOMAIN_VARIABLE, "").strip()
    if choice in {"gui", "user"}:
        return DomainChoice(f"{choice}/{uid}", DomainReason.OVERRIDE)
    if re.fullmatch(r"(?:gui|user)/\d+", choice):
        return DomainChoice(choice, DomainReason.OVERRIDE)
    if choice:
        raise UsageError(
            f"{DOMAIN_VARIABLE}={choice!r} is not a launchd domain lanekit can use",
            "set it to `gui` (logged in at the screen) or `user` (SSH, headless), or unset it",
        )
    at_console = console_uid is not None and console_uid == uid
    if uid != euid or (env.get("SUDO_USER") and not at_console):
        return DomainChoice(f"user/{euid}", DomainReason.SUDO)
    if is_ssh(env):
        if at_console:
            return DomainChoice(f"gui/{uid}", DomainReason.SSH_CONSOLE_USER)
        return DomainChoice(f"user/{uid}", DomainReason.SSH)
    if at_console:
        return DomainChoice(f"gui/{uid}", DomainReason.CONSOLE)
    return DomainChoice(f"gui/{uid}", DomainReason.NOT_AT_CONSOLE)


def domain_notes(domain: str) -> tuple[str, ...]:
    """What `apply` says about the domain lanes are loaded into."""
    if not domain.startswith("user/"):
        return ()
    return (
        f"lanes are loaded into {domain} (no GUI login of yours): after a reboot launchd "
        "loads them again only once you log in (at the screen or over SSH); turn on automatic "
        "login, or log in after each reboot, to keep them running",
    )


def console_owner(console: Path = CONSOLE) -> int | None:
    """The uid owning /dev/console (the user at the Mac's screen), None when unknown.

    Homebrew reads the same fact (`File.stat("/dev/console").uid`); on macOS loginwindow hands
    /dev/console to the user who logs in at the screen, and back to root at logout.
    """
    try:
        return console.stat().st_uid
    except OSError:
        return None
