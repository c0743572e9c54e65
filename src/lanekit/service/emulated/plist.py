"""Reading a plist the way launchd does when it loads one: the refusals bootstrap makes (with
launchctl's words for each) and StartCalendarInterval as launchd reads it, for the emulated
domain (lanekit.service.emulated.emulator)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from lanekit.schedule import CalendarEntry, ScheduleError, parse_table
from lanekit.service.launchd.codes import LaunchctlCode
from lanekit.service.launchd.model import PlistError, load_plist

EMULATED_SESSION = "Aqua"
"""The emulated domain is gui/<uid>, a login session of type Aqua (launchctl(1))."""


class RefusalError(Exception):
    """A plist launchd will not load: the code and the line launchctl prints for it."""

    def __init__(self, code: int, line: str) -> None:
        super().__init__(line)
        self.code = code
        self.line = line


def read_plist(path: Path) -> dict[str, object]:
    """The checks launchd makes before it loads a plist, with launchctl's words for each."""
    import plistlib

    try:
        info = path.stat()
        owners = {os.geteuid(), 0}
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o022 or info.st_uid not in owners:
            # Checked before reading: a FIFO named *.plist must be refused, not read (it blocks).
            raise RefusalError(
                LaunchctlCode.IO_ERROR, f"{path}: Path had bad ownership/permissions"
            )
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RefusalError(
            LaunchctlCode.NO_SUCH_FILE, "Bootstrap failed: 2: No such file or directory"
        ) from None
    except OSError as exc:
        raise RefusalError(LaunchctlCode.IO_ERROR, f"{path}: {exc.strerror or exc}") from None
    try:
        data = load_plist(raw)
    except PlistError:
        data = None
    if not isinstance(data, dict):
        raise RefusalError(LaunchctlCode.IO_ERROR, f"{path}: Invalid property list")
    label = data.get("Label")
    if not isinstance(label, str) or not label or any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise RefusalError(
            LaunchctlCode.IO_ERROR, f"{path}: Label is missing, empty or not a plain string"
        )
    arguments = data.get("ProgramArguments")
    has_args = (
        isinstance(arguments, list)
        and bool(arguments)
        and all(isinstance(a, str) for a in arguments)
    )
    if not has_args and not isinstance(data.get("Program"), str):
        raise RefusalError(
            LaunchctlCode.IO_ERROR, f"{path}: Neither Program nor ProgramArguments was specified"
        )
    try:
        plistlib.dumps(data)
    except (TypeError, OverflowError, ValueError):
        raise RefusalError(LaunchctlCode.IO_ERROR, f"{path}: Invalid property list") from None
    return data


def calendar_entries(value: object) -> tuple[CalendarEntry, ...]:
    """StartCalendarInterval (a dict or an array of dicts) read the way launchd reads it.

    Negative values (and Month 0) only draw a warning from launchd and act as wildcards; a dict
    with another out-of-range value is dropped while the job still loads; unknown keys are
    ignored.
    """
    tables = value if isinstance(value, list) else [value]
    entries: list[CalendarEntry] = []
    for table in tables:
        if not isinstance(table, Mapping):
            continue
        kept = {
            key: number
            for key, number in table.items()
            if key in {"Minute", "Hour", "Day", "Weekday", "Month"}
            and not (isinstance(number, int) and (number < 0 or (key == "Month" and number == 0)))
        }
        with contextlib.suppress(ScheduleError):
            entries.append(parse_table(kept, strict=False))
    return tuple(entries)
