"""What a lane installs (`Artifacts`) and the job an artifact defines (`JobDefinition`), in no
service manager's words: the facts of `ServiceManager.render` and `.define`
(lanekit.service.manager), kept apart so that observing lanes (`lanekit status`) creates
neither class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True, slots=True)
class JobDefinition:
    """A lane's job as its manager will run it, in no manager's words (doctor's `Target`
    carries it beside the manager's own artifact, the plist)."""

    label: str
    argv: tuple[str, ...] = ()
    program: str | None = None
    """What is executed: argv[0], unless the manager names the program apart."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The variables the definition sets (not those the manager adds)."""
    cwd: str | None = None
    """The working directory it sets; None: the manager's default."""
    stdout: str | None = None
    stderr: str | None = None
    calendar: tuple[Mapping[str, int], ...] = ()
    """Calendar fires, one mapping of Minute/Hour/Day/Weekday/Month per entry."""
    interval: int | None = None
    """Seconds between timer fires."""
    exit_timeout: int | None = None
    """Seconds from SIGTERM to SIGKILL when stopped; None: the manager's default."""
    throttle: int | None = None
    """Least seconds between two starts; None: the manager's default."""
    text: str = ""
    """The artifact as written."""


@dataclass(frozen=True, slots=True)
class Artifacts:
    """What a lane installs: file name -> bytes, into `install_dir`."""

    install_dir: Path
    files: Mapping[str, bytes] = field(default_factory=dict)
    parsed: Mapping[str, Any] | None = field(default=None, compare=False)
    """The main artifact as its manager parsed it while rendering (the manager's own form,
    e.g. the plist's dictionary), so comparing it with what is loaded parses nothing again."""
