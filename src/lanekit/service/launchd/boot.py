"""What a Mac does at boot that decides when a user's lanes come back: FileVault and
automatic login, parsed from `fdesetup status` and `defaults read ... autoLoginUser`.

launchd loads a user's agents only once that user logs in. With automatic login the Mac logs
its user in at boot; with FileVault on it cannot (the boot stops at the FileVault unlock
screen, and macOS turns automatic login off), so lanes in `user/<uid>` wait for a person.
Real captures: tests/launchd/samples/macos-tools/ (fdesetup-status-*, defaults-autologin-*).
"""

from __future__ import annotations

from enum import StrEnum


class FileVault(StrEnum):
    """FileVault's state as `fdesetup status` words it."""

    ON = "on"
    OFF = "off"
    PENDING = "on after the next restart"
    UNKNOWN = "unknown"

    @property
    def blocks_auto_login(self) -> bool:
        """On now, or from the next boot on: no automatic login at that boot."""
        return self in {FileVault.ON, FileVault.PENDING}


def parse_fdesetup_status(text: str | None) -> FileVault:
    """The first line of `fdesetup status`: `FileVault is On.` (perhaps `..., but needs to be
    restarted to finish.`, or a progress line after it), `FileVault is Off.`, or `FileVault is
    Off, but will be enabled after the next restart.`; anything else is UNKNOWN."""
    if not text:
        return FileVault.UNKNOWN
    first = text.strip().partition("\n")[0].strip()
    if first.startswith("FileVault is On"):
        return FileVault.ON
    if first.startswith("FileVault is Off, but will be enabled"):
        return FileVault.PENDING
    if first.startswith("FileVault is Off"):
        return FileVault.OFF
    return FileVault.UNKNOWN


def parse_auto_login_user(text: str | None) -> str | None:
    """The user `defaults read ... autoLoginUser` printed (None: the key is unset, which
    `defaults` reports on stderr with exit 1, or the output is not a user name)."""
    if not text:
        return None
    lines = text.strip().splitlines()
    if len(lines) != 1:
        return None
    name = lines[0].strip()
    return name if name and " " not in name else None
