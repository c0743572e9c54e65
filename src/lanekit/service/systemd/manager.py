"""systemd's user manager as a `ServiceManager` (lanekit.service.manager), through the one
adapter (lanekit.service.systemd.systemctl).

A lane is `<label>.service`, `<label>.timer` when it has a schedule and `<label>.path` when it
starts on enqueue, in the user's unit directory (~/.config/systemd/user). The seam's words, in
systemd's:
- loaded: the timer is active (armed); a lane without a timer, its path unit is active (watching)
  or, without either, its service is loaded;
- load: `daemon-reload` only when a unit of the lane is new or changed on disk (so applying 20
  lanes reloads once), then `enable --now` the timer and the path unit;
- unload: `stop` the timer, the path unit and the service (the runner gets SIGTERM,
  KillMode=mixed), then poll;
- running: the service is activating with a MainPID (the oneshot's runner);
- disable / enable: systemd's `disable --now` of the timer and the path unit keeps them from
  starting at the next login, and lanekit's own marker (under the state dir) keeps `load`
  from arming them: launchd's persisted disable, which systemd has no word for (`mask`
  cannot cover a file in the same directory).
An observation is ONE `systemctl --user show` for every unit of every lane asked about.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lanekit.errors import Refusal, ServiceError
from lanekit.service.exits import describe_exit
from lanekit.service.manager import LaneObservation, ManagerKind, Observation, Stopped
from lanekit.service.systemd.names import (
    PATH_SUFFIX,
    SERVICE_SUFFIX,
    all_unit_names,
    path_name,
    unit_names,
)
from lanekit.service.systemd.systemctl import (
    CLD_DUMPED,
    CLD_EXITED,
    CLD_KILLED,
    LINGER_DIR,
    SETUP_FAILURES,
    SETUP_NAMES,
    Systemctl,
    UnitState,
)

if TYPE_CHECKING:
    from lanekit.config import LaneSpec
    from lanekit.service.artifacts import Artifacts, JobDefinition

POLL_SECONDS = 0.05
DISABLED_DIR = "systemd-disabled"
"""Under lanekit's state dir: one empty file per lane disabled through the seam."""


def unit_dir(env: Mapping[str, str], home: Path) -> Path:
    """Where a user's own units live: `$XDG_CONFIG_HOME/systemd/user` (~/.config/...)."""
    config = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "systemd" / "user"


class SystemdManager:
    """The `ServiceManager` over one systemd user manager."""

    kind = ManagerKind.SYSTEMD

    def __init__(
        self,
        systemctl: Systemctl,
        install_dir: Path,
        state_dir: Path,
        reason: str = "",
        linger_dir: Path = LINGER_DIR,
    ) -> None:
        self.systemctl = systemctl
        """The adapter (systemd-only doctor checks and tests read it)."""
        self.linger_dir = linger_dir
        """logind's linger files (doctor's systemd.linger-off reads them)."""
        self._install_dir = Path(install_dir)
        self._disabled = Path(state_dir) / DISABLED_DIR
        self._reason = reason or "chosen for this machine"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.systemctl!r}, {str(self._install_dir)!r})"

    @property
    def domain(self) -> str:
        """`systemd --user (uid N)`."""
        return f"systemd --user (uid {os.geteuid()})"

    @property
    def domain_reason(self) -> str:
        """Why systemd runs the lanes."""
        return self._reason

    @property
    def install_dir(self) -> Path:
        """The user's unit directory."""
        return self._install_dir

    def artifact_path(self, label: str) -> Path:
        """`<unit dir>/<label>.service`."""
        return self._install_dir / unit_names(label)[0]

    def artifact_paths(self, label: str) -> tuple[Path, ...]:
        """The service, the timer and the path unit."""
        return tuple(self._install_dir / name for name in all_unit_names(label))

    def render(
        self, lane: LaneSpec, *, interpreter: str, snapshot: Path, templates: Path | None = None
    ) -> Artifacts:
        """The lane's service (and timer) in canonical bytes."""
        from lanekit.service.artifacts import Artifacts
        from lanekit.service.systemd.units import rendered_units

        files = rendered_units(
            lane, interpreter=interpreter, snapshot=snapshot, templates=templates
        )
        return Artifacts(self._install_dir, files)

    def installed(self) -> dict[str, Path]:
        """label -> service file, for every *.service in the unit directory."""
        if not self._install_dir.is_dir():
            return {}
        return {
            path.name[: -len(SERVICE_SUFFIX)]: path
            for path in sorted(self._install_dir.glob(f"*{SERVICE_SUFFIX}"))
            if path.is_file()
        }

    def define(self, artifact: bytes) -> JobDefinition:
        """The service's job as systemd reads it, with its timer's schedule (read beside it
        in the unit directory); ValueError (why) when it is no service systemd would run."""
        from lanekit.service.systemd.units import parse_unit, service_definition

        service = parse_unit(artifact)
        label = service.value("Service", "SyslogIdentifier")
        timer = None
        if label:
            path = self._install_dir / unit_names(label.replace("%%", "%"))[1]
            try:
                timer = parse_unit(path.read_bytes())
            except (OSError, ValueError):
                timer = None
        return service_definition(service, timer, artifact.decode("utf-8", "replace"))

    def _units(self, labels: Iterable[str]) -> list[str]:
        """The units to `show` for `labels`: the service and the timer of each, and the path
        unit of a lane that has its file (asking systemd about a unit it does not know costs
        it a search of every unit directory, and most lanes have no path unit)."""
        names = []
        for label in labels:
            service, timer, path = all_unit_names(label)
            names += [service, timer]
            if (self._install_dir / path).exists():
                names.append(path)
        return names

    def observe(
        self, labels: Iterable[str], wanted: Mapping[str, bytes] | None = None
    ) -> Observation:
        """Every lane of `labels` from one `show`."""
        asked = sorted(set(labels))
        states = self.systemctl.show(self._units(asked))
        disabled = self._disabled_labels()
        lanes = {
            label: self._lane(label, states, label in disabled, (wanted or {}).get(label))
            for label in asked
        }
        loaded = frozenset(label for label, lane in lanes.items() if lane.loaded)
        return Observation(lanes, loaded, disabled)

    def _lane(
        self,
        label: str,
        states: Mapping[str, UnitState],
        disabled: bool,
        wanted: bytes | None,
    ) -> LaneObservation:
        service_name, timer_name = unit_names(label)
        service = states.get(service_name, UnitState(service_name))
        timer = states.get(timer_name, UnitState(timer_name))
        path = states.get(path_name(label), UnitState(path_name(label)))
        if timer.loaded:
            loaded = timer.active_state == "active"
        elif path.loaded:
            loaded = path.active_state == "active"
        else:
            loaded = service.loaded
        # A path unit that started the lane too often stops watching (failed, its Result says
        # which limit): the lane no longer starts on enqueue until it is started again.
        failed = path.loaded and path.active_state == "failed"
        watch_failed = (path.result or "failed") if failed else ""
        running = service.active_state in {"activating", "deactivating"} and service.main_pid
        exit_code: int | None = None
        sig: int | None = None
        if service.started_at is not None and not running:
            if service.exec_code == CLD_EXITED:
                exit_code = service.exec_status
            elif service.exec_code in {CLD_KILLED, CLD_DUMPED}:
                sig = service.exec_status
        stale: list[str] = []
        if service.need_reload or timer.need_reload or path.need_reload:
            stale.append("unit files changed on disk since systemd read them")
        if wanted is not None and (service.loaded or timer.loaded):
            try:
                on_disk = self.artifact_path(label).read_bytes()
            except OSError:
                on_disk = None
            if on_disk != wanted:
                stale.append("the service file differs from lanes.toml's")
        return LaneObservation(
            label,
            loaded=loaded or bool(running),
            disabled=disabled,
            pid=service.main_pid if running else None,
            exit_code=exit_code,
            signal=sig,
            runs=None,
            lost=service.result not in {"", "success", "exit-code", "signal", "core-dump"}
            and exit_code is None
            and sig is None,
            not_started=exit_code in SETUP_FAILURES,
            next_fire=timer.next_elapse,
            stale=tuple(stale) if loaded else (),
            watch_failed=watch_failed,
        )

    def observe_lane(self, label: str) -> LaneObservation:
        """The same `show`, for one lane's units."""
        return self.observe([label])[label]

    def loaded(self) -> dict[str, int | None]:
        """label -> pid of every loaded lane installed in the unit directory (one `show`)."""
        labels = list(self.installed())
        seen = self.observe(labels)
        return {label: seen[label].pid for label in labels if seen[label].loaded}

    def load(self, artifact: Path) -> None:
        """Reload the unit files if systemd's copy is missing or older, then arm the timer and
        the path unit (`enable --now`). REFUSED when the lane is disabled; BUSY while it is
        still loaded."""
        label = artifact.name[: -len(SERVICE_SUFFIX)]
        if label in self._disabled_labels():
            raise ServiceError(
                f"{label} is disabled (lanekit pause, or a disable through lanekit)",
                f"`lanekit resume` it, or remove {self._disabled / label}",
            )
        names = all_unit_names(label)
        has_timer = (self._install_dir / names[1]).is_file()
        has_path = (self._install_dir / names[2]).is_file()
        states = self.systemctl.show(names)
        service = states.get(names[0], UnitState(names[0]))
        timer = states.get(names[1], UnitState(names[1]))
        path = states.get(names[2], UnitState(names[2]))
        if (
            service.active_state in {"activating", "deactivating"}
            or (has_timer and timer.active_state == "active")
            or (has_path and path.active_state == "active")
        ):
            how = service.active_state if service.main_pid else "armed"
            error = ServiceError(
                f"{label} is still loaded ({how})",
                "unload it first, then load it again",
            )
            error.reason = Refusal.BUSY
            raise error
        # A timer or path unit the lane no longer has (its schedule, or start on enqueue,
        # went): its file was deleted, so it is stopped, unlinked and forgotten here.
        gone = [name for name, has in ((names[1], has_timer), (names[2], has_path)) if not has]
        running = [
            name
            for name in gone
            if states.get(name, UnitState(name)).active_state not in {"inactive", "failed"}
        ]
        if running:
            self.systemctl.verb("stop", *running)
        self._unlink_wants(gone)
        if (
            not service.loaded
            or service.need_reload
            or (has_timer and (not timer.loaded or timer.need_reload))
            or (has_path and (not path.loaded or path.need_reload))
            or any(states.get(name, UnitState(name)).loaded for name in gone)
        ):
            self.systemctl.daemon_reload()
        armed = [name for name, has in ((names[1], has_timer), (names[2], has_path)) if has]
        if armed:
            # --no-reload: `enable` reloads the whole manager by default, once per lane; the
            # reload above (only when a unit changed) is all this lane needs. A path unit that
            # failed (its trigger limit) is started again by `--now`.
            self.systemctl.verb("enable", *armed, flags=("--now", "--no-reload"))

    def unload(self, label: str, *, grace: float = 0.0) -> bool:
        """Stop the timer, the path unit and the service (a running runner gets SIGTERM and,
        after TimeoutStopSec, the cgroup SIGKILL); poll up to `grace` seconds until none is
        active."""
        names = all_unit_names(label)
        states = self.systemctl.show(names)
        if all(s.active_state in {"inactive", "failed"} for s in states.values()):
            return True
        # Only what systemd has loaded: `stop` of a unit it does not know (a lane without a
        # path unit) fails the whole call.
        loaded = [name for name in names if states.get(name, UnitState(name)).loaded]
        self.systemctl.verb("stop", *loaded, flags=("--no-block",))
        deadline = time.monotonic() + max(grace, 0.0)
        while True:
            states = self.systemctl.show(names)
            if all(s.active_state in {"inactive", "failed"} for s in states.values()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)

    def kick(self, label: str, *, kill: bool = False) -> int | None:
        """`start --no-block` the service (`restart` a running one when `kill`); its pid once
        systemd reports one (up to a second). NOT_LOADED when the lane is not loaded."""
        if not self.observe([label])[label].loaded:
            error = ServiceError(
                f"{label} is not loaded in systemd's user manager",
                "run `lanekit apply` first",
            )
            error.reason = Refusal.NOT_LOADED
            raise error
        service = unit_names(label)[0]
        before = self.systemctl.show([service]).get(service, UnitState(service)).started_at
        self.systemctl.verb("restart" if kill else "start", service, flags=("--no-block",))
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            state = self.systemctl.show([service]).get(service, UnitState(service))
            if state.main_pid:
                return state.main_pid
            if state.started_at != before and state.active_state in {"inactive", "failed"}:
                return state.exec_pid  # it ran and already ended (or could not be set up)
            time.sleep(POLL_SECONDS)
        return None

    def stop(self, label: str, *, kill_after: float | None, grace: float) -> Stopped:
        """`systemctl --user kill --kill-whom=main -s SIGTERM` the service (the runner alone,
        as KillMode=mixed does on a stop, so it puts its job back first), then poll its main
        pid: SIGKILL to the whole cgroup once `kill_after` passed, until `grace`. The timer is
        left armed. NOT_LOADED when the lane is not loaded."""
        if not self.observe([label])[label].loaded:
            error = ServiceError(
                f"{label} is not loaded in systemd's user manager", "run `lanekit apply` first"
            )
            error.reason = Refusal.NOT_LOADED
            raise error
        service = unit_names(label)[0]
        pid = self.systemctl.show([service]).get(service, UnitState(service)).main_pid
        if not pid:
            return Stopped(pid=None, ended=True)
        started = time.monotonic()
        self.systemctl.verb("kill", service, flags=("--kill-whom=main", "--signal=SIGTERM"))
        killed = False
        while self.systemctl.show([service]).get(service, UnitState(service)).main_pid == pid:
            waited = time.monotonic() - started
            if not killed and kill_after is not None and waited >= kill_after:
                self.systemctl.verb("kill", service, flags=("--kill-whom=all", "--signal=SIGKILL"))
                killed = True
            if waited >= grace:
                return Stopped(pid=pid, ended=False, killed=killed)
            time.sleep(POLL_SECONDS)
        return Stopped(pid=pid, ended=True, killed=killed)

    def disable(self, label: str) -> None:
        """Mark it disabled, then `disable --now` its timer and its path unit (it neither fires,
        nor starts on enqueue, nor comes back at the next login)."""
        self._disabled.mkdir(parents=True, exist_ok=True, mode=0o700)
        (self._disabled / label).touch()
        triggers = self._triggers(label)
        if triggers:
            self.systemctl.verb("disable", *triggers, flags=("--now", "--no-reload"))

    def enable(self, label: str) -> None:
        """Clear the mark and `enable` the timer and the path unit again (armed by the next
        `load`)."""
        (self._disabled / label).unlink(missing_ok=True)
        triggers = self._triggers(label)
        if triggers:
            self.systemctl.verb("enable", *triggers, flags=("--no-reload",))

    def _triggers(self, label: str) -> list[str]:
        """The lane's installed units that start its service: the timer, the path unit."""
        return [name for name in all_unit_names(label)[1:] if (self._install_dir / name).is_file()]

    def run_environment(self, unit_env: Mapping[str, str]) -> dict[str, str]:
        """The environment a run of a unit with `unit_env` (its Environment= lines) gets,
        for `lanekit try`: the manager's own block (`show-environment`: what it was started
        with, HOME, USER, LOGNAME and SHELL among it in a login session), then the unit's
        lines. What systemd sets per start (INVOCATION_ID, SYSTEMD_EXEC_PID, MANAGERPID)
        has no value outside a start and is left out; a unit without User= gets no other
        variable (measured on systemd 252: tests/proof/test_try_systemd.py)."""
        env = self.systemctl.environment()
        env.update(unit_env)
        return env

    def linger(self, user: str) -> bool | None:
        """Whether `user`'s manager runs without a login (None: no logind here)."""
        from lanekit.service.systemd.systemctl import linger

        return linger(user, self.linger_dir)

    def forget(self, label: str) -> None:
        """After its files are gone: forget the lane's state (`clean --what=state`, reset a
        failed result) and its disabled mark, and reload so nothing of it stays loaded."""
        (self._disabled / label).unlink(missing_ok=True)
        names = all_unit_names(label)
        self._unlink_wants(names[1:])
        self.systemctl.run("reset-failed", "--", *names, what="reset-failed", check=False)
        self.systemctl.daemon_reload()

    def _unlink_wants(self, names: Iterable[str]) -> None:
        """`enable` linked a timer into timers.target.wants and a path unit into
        paths.target.wants (their [Install] WantedBy); once their files are gone `disable`
        cannot read [Install] any more, so the links go by hand."""
        for name in names:
            target = "paths.target.wants" if name.endswith(PATH_SUFFIX) else "timers.target.wants"
            wants = self._install_dir / target / name
            if wants.is_symlink():
                wants.unlink()

    def _disabled_labels(self) -> frozenset[str]:
        try:
            return frozenset(path.name for path in self._disabled.iterdir())
        except OSError:
            return frozenset()

    def describe_exit(
        self, exit_code: int | None, sig: int | None = None, *, lanekit_runner: bool = True
    ) -> str:
        """systemd's own setup failures by name (`exit code 203/EXEC (systemd could not set
        the run up)`: the program never ran), else lanekit.service.exits' wording."""
        if exit_code is not None and exit_code in SETUP_FAILURES and sig is None:
            name = SETUP_NAMES.get(exit_code, "SETUP")
            return f"exit code {exit_code}/{name} (systemd could not set the run up)"
        return describe_exit(exit_code, sig, lanekit_runner=lanekit_runner)
