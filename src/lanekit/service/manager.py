"""THE SERVICE-MANAGER SEAM: what reconcile, status, doctor, timeline, kick, pause, try and
selftest ask of the thing that runs lanes, in facts that name no backend.

A manager renders a lane to its artifacts (file name -> bytes, and the directory they install
into), observes every lane it is asked about in ONE call (loaded, running pid, last exit and how
the run ended, disabled, the definition it has loaded and whether that is older than the
artifact), and loads, unloads (with a grace period), starts now, stops a run (leaving the lane
loaded), disables and enables. Three implement it: launchd through `launchctl`
(lanekit.service.launchd.manager), the emulated domain (lanekit.service.emulated.manager) and
systemd's user manager (lanekit.service.systemd.manager); `lanekit.service.open_manager` picks
one.
The contract every implementation passes is tests/service/test_service_contract.py.

Builtin and typing imports only at the top: `lanekit status` imports this on every call (what
a lane installs and the job it defines, which status never asks, are lanekit.service.artifacts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from lanekit.config import LaneSpec
    from lanekit.service.artifacts import Artifacts, JobDefinition
    from lanekit.service.launchd.model import ServiceInfo


class ManagerKind(StrEnum):
    """Which service manager runs the lanes (doctor's checks say which ones they apply to)."""

    LAUNCHD = "launchd"
    EMULATED = "emulated"
    SYSTEMD = "systemd"


EVERY_MANAGER = frozenset(ManagerKind)
LAUNCHD_ONLY = frozenset({ManagerKind.LAUNCHD})
LAUNCHD_LIKE = frozenset({ManagerKind.LAUNCHD, ManagerKind.EMULATED})
"""For doctor checks that read a plist (the emulated domain loads plists too)."""
SYSTEMD_ONLY = frozenset({ManagerKind.SYSTEMD})
"""For doctor checks about the real launchd's world (sessions, Background Items, logins)."""


class Ending(StrEnum):
    """How a lane's last run ended, as its manager reports it."""

    NEVER = "never"
    """No run ended since the lane was loaded (or it is not loaded)."""
    EXITED = "exited"
    """The process exited with a code (0 or not)."""
    SIGNALLED = "signalled"
    """A signal ended it."""
    NOT_STARTED = "not-started"
    """The manager could not set it up, the program never ran (launchd's EX_CONFIG, 78)."""
    LOST = "lost"
    """It went away without a recorded status (its watcher killed, a reboot)."""


NOT_STARTED_CODE = 78
"""What launchd (and the emulated domain) record when a job could not be set up; lanekit's
runner never exits with it (docs/exit-codes.md), so 78 means the manager's refusal."""


@dataclass(frozen=True, slots=True)
class LaneObservation:
    """One lane as its manager sees it now."""

    label: str
    loaded: bool = False
    disabled: bool = False
    pid: int | None = None
    """The running process, None when idle."""
    exit_code: int | None = None
    signal: int | None = None
    runs: int | None = None
    """Starts since the lane was loaded, when the manager counts them."""
    lost: bool = False
    """The last run went away without a recorded status."""
    definition: ServiceInfo | None = None
    """What the manager has loaded for the lane (its own copy, not the file)."""
    stale: tuple[str, ...] = ()
    """Why the loaded definition is older than the artifact it was compared with (`Nice 10 ->
    11`); empty when current, not loaded, or not compared."""
    not_started: bool = False
    """The manager could not set the last run up (systemd's 200-249 statuses: 203/EXEC,
    200/CHDIR), whatever the number; launchd says so with 78 alone."""
    next_fire: datetime | None = None
    """When the manager itself will next start the lane (systemd's timer; aware), None when
    it does not say (launchd) or never."""
    watch_failed: str = ""
    """Why the manager stopped starting the lane when work arrives (systemd's path unit
    failed: `trigger-limit-hit`, `unit-start-limit-hit`); empty when it did not, or the
    manager does not say."""

    @property
    def running(self) -> bool:
        """A process of the lane is alive."""
        return self.pid is not None

    @property
    def last_exit(self) -> int | None:
        """The last exit in one number: the exit code, or minus the signal (None: none)."""
        return -self.signal if self.signal is not None else self.exit_code

    @property
    def ended(self) -> Ending:
        """How the last run ended."""
        if self.signal is not None:
            return Ending.SIGNALLED
        if self.not_started or self.exit_code == NOT_STARTED_CODE:
            return Ending.NOT_STARTED
        if self.exit_code is not None:
            return Ending.EXITED
        return Ending.LOST if self.lost else Ending.NEVER

    @property
    def needs_reload(self) -> bool:
        """The loaded definition is older than the artifact: only a reload makes it current."""
        return bool(self.stale)


@dataclass(frozen=True, slots=True)
class Observation:
    """Every lane asked about, from one observation of the manager."""

    lanes: Mapping[str, LaneObservation]
    loaded: frozenset[str] = frozenset()
    """Every label the manager has loaded, asked about or not."""
    disabled: frozenset[str] = frozenset()
    """Every label the manager has disabled, asked about or not."""

    def __getitem__(self, label: str) -> LaneObservation:
        """The lane, or what an unknown label looks like (not loaded)."""
        found = self.lanes.get(label)
        if found is not None:
            return found
        return LaneObservation(label, loaded=label in self.loaded, disabled=label in self.disabled)


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """A manager's own words for what plan, apply and pause say they do: a lane on systemd is
    never said to have a plist, nor to be booted out of launchd."""

    manager: str
    """Who runs the lanes (`disabled in launchd`)."""
    artifact: str
    """What a lane is installed as (`plist changed`, `write units`)."""
    unload: str
    """Taking a loaded lane down before a reload."""
    load: str
    """Loading (arming) the lane."""
    unloaded: str
    """`unload` done (`booted out and written`)."""


LAUNCHD_WORDS = Vocabulary("launchd", "plist", "bootout", "bootstrap", "booted out")
VOCABULARY = {
    ManagerKind.LAUNCHD: LAUNCHD_WORDS,
    ManagerKind.EMULATED: LAUNCHD_WORDS,
    ManagerKind.SYSTEMD: Vocabulary("systemd", "units", "stop", "start", "stopped"),
}
"""Each manager's words (the emulated domain is launchd's)."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """What `ServiceManager.stop` did to a lane's running instance."""

    pid: int | None
    """The process signalled (None: nothing was running, so nothing was sent)."""
    ended: bool
    """It ended within the grace asked (True too when nothing ran)."""
    killed: bool = False
    """It outlived its exit timeout and was sent SIGKILL."""


class ServiceManager(Protocol):
    """What runs lanes: render, observe all at once, load, unload, start, disable, enable."""

    @property
    def kind(self) -> ManagerKind:
        """Which manager this is."""
        ...

    @property
    def domain(self) -> str:
        """Where lanes are loaded (`gui/501`), for fix commands and `status`."""
        ...

    @property
    def domain_reason(self) -> str:
        """Why lanes live there, in words."""
        ...

    @property
    def install_dir(self) -> Path:
        """The directory lanes' artifacts install into."""
        ...

    def artifact_path(self, label: str) -> Path:
        """Where the lane's main artifact (the one `load` takes) installs."""
        ...

    def artifact_paths(self, label: str) -> tuple[Path, ...]:
        """Every file the lane may install (the main one first): what `remove` deletes and
        `apply` compares (launchd: the plist; systemd: the service and the timer)."""
        ...

    def render(
        self, lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
    ) -> Artifacts:
        """The lane's artifacts, byte for byte as `apply` installs them; the main one is
        named `artifact_path(lane.label).name`."""
        ...

    def installed(self) -> dict[str, Path]:
        """label -> the main artifact of every lane installed in `install_dir` (any owner)."""
        ...

    def define(self, artifact: bytes) -> JobDefinition:
        """The job an artifact defines, as this manager reads it; ValueError (why) when it
        defines none this manager would run."""
        ...

    def observe(
        self, labels: Iterable[str], wanted: Mapping[str, bytes] | None = None
    ) -> Observation:
        """Every lane of `labels` in ONE observation (not one per lane); `wanted` (label ->
        main artifact bytes) fills each loaded lane's `stale`."""
        ...

    def observe_lane(self, label: str) -> LaneObservation:
        """One lane in the manager's cheapest look, for a caller polling the one job it
        started (`try`): launchd answers with one `print`. `disabled` and `stale` are not
        asked (False, empty); `observe` is the whole picture."""
        ...

    def loaded(self) -> dict[str, int | None]:
        """label -> pid (None when idle) of every loaded lane: the cheapest look, for polling
        while a lane stops or starts (`observe` is the whole picture)."""
        ...

    def load(self, artifact: Path) -> None:
        """Load a lane from its installed artifact (ServiceError BUSY: its last one drains)."""
        ...

    def unload(self, label: str, *, grace: float = 0.0) -> bool:
        """Unload (a running process is stopped: SIGTERM, SIGKILL after its exit timeout) and
        wait up to `grace` seconds for the label to be gone; True once it is known gone (at
        once when it was not loaded), False while it is still on its way out."""
        ...

    def kick(self, label: str, *, kill: bool = False) -> int | None:
        """Start the lane now (restart a running one when `kill`); its pid when known.
        ServiceError NOT_LOADED when it is not loaded."""
        ...

    def stop(self, label: str, *, kill_after: float | None, grace: float) -> Stopped:
        """Stop the lane's running instance the way unloading it would (SIGTERM; SIGKILL once
        `kill_after` seconds passed without it ending, None: never), but leave the lane
        loaded; wait up to `grace` seconds for it to end. ServiceError NOT_LOADED when it is
        not loaded."""
        ...

    def disable(self, label: str) -> None:
        """Keep the lane from being loaded or started (persisted)."""
        ...

    def enable(self, label: str) -> None:
        """Clear `disable`."""
        ...

    def forget(self, label: str) -> None:
        """After the lane's artifacts were deleted: drop what the manager keeps of it
        (systemd: its result, its disabled mark, the loaded units; launchd keeps nothing once
        booted out)."""
        ...

    def describe_exit(
        self, exit_code: int | None, sig: int | None = None, *, lanekit_runner: bool = True
    ) -> str:
        """A last exit in words (`exit code 127 (command not found)`, `killed by SIGTERM`)."""
        ...
