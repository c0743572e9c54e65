"""The only code that runs `systemctl --user`, `systemd-analyze` and `loginctl`: typed facts
out, errors explained (a bus that cannot be reached becomes one line with the fix).

`show` asks for every unit of every lane in ONE call and parses the blocks it prints
(`parse_show`, pure). It runs with TZ=UTC so the timestamps systemctl formats itself
(NextElapseUSecRealtime) read back without guessing a zone, and with `--timestamp=unix` where it
can (`@SECONDS`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lanekit.errors import EnvironmentUnusableError, Refusal, ServiceError

PROPERTIES = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "ExecMainPID",
    "ExecMainCode",
    "ExecMainStatus",
    "ExecMainStartTimestamp",
    "NextElapseUSecRealtime",
    "LastTriggerUSec",
    "NeedDaemonReload",
    "UnitFileState",
)
"""What one observation asks of each unit."""

CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3
"""ExecMainCode: how the main process ended (waitid(2)'s si_code)."""

SETUP_FAILURES = range(200, 250)
"""Exit statuses systemd itself gives a process it could not set up (systemd.exec(5),
"Process Exit Codes": 200/CHDIR, 203/EXEC, 209/STDOUT...): the program never ran, launchd's 78."""

SETUP_NAMES = {
    200: "CHDIR",
    201: "NICE",
    202: "FDS",
    203: "EXEC",
    204: "MEMORY",
    205: "LIMITS",
    206: "OOM_ADJUST",
    207: "SIGNAL_MASK",
    208: "STDIN",
    209: "STDOUT",
    210: "CHROOT",
    211: "IOPRIO",
    212: "TIMERSLACK",
    213: "SECUREBITS",
    214: "SETSCHEDULER",
    215: "CPUAFFINITY",
    216: "GROUP",
    217: "USER",
    218: "CAPABILITIES",
    219: "CGROUP",
    220: "SETSID",
    226: "NAMESPACE",
}

BUS_HINT = (
    "run it in your own login session, or give it your user manager: "
    "`export XDG_RUNTIME_DIR=/run/user/$(id -u)` (over sudo: `sudo -u USER XDG_RUNTIME_DIR=...`"
    " or `machinectl shell USER@`); `loginctl enable-linger $USER` keeps a manager running"
    " without a login"
)


@dataclass(frozen=True, slots=True)
class UnitState:
    """One unit as `systemctl --user show` describes it."""

    id: str
    load_state: str = "not-found"
    active_state: str = "inactive"
    sub_state: str = ""
    result: str = ""
    main_pid: int | None = None
    """The running main process (None: not running)."""
    exec_pid: int | None = None
    """The last main process started, running or not."""
    exec_code: int = 0
    exec_status: int = 0
    started_at: float | None = None
    """When its main process last started (None: never)."""
    next_elapse: datetime | None = None
    """A timer's next fire (aware, UTC); None when it will not elapse or is no timer."""
    last_trigger: datetime | None = None
    need_reload: bool = False
    unit_file_state: str = ""

    @property
    def loaded(self) -> bool:
        """The manager has read the unit's file."""
        return self.load_state == "loaded"


def parse_show(text: str) -> list[dict[str, str]]:
    """`systemctl show` output: one dict per unit, in the order asked (blocks are separated
    by blank lines)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key] = value
    if current:
        blocks.append(current)
    return blocks


def unit_state(block: Mapping[str, str]) -> UnitState:
    """A block of `parse_show` as typed facts."""
    pid = _int(block.get("MainPID"))
    return UnitState(
        id=block.get("Id", ""),
        load_state=block.get("LoadState", "not-found"),
        active_state=block.get("ActiveState", "inactive"),
        sub_state=block.get("SubState", ""),
        result=block.get("Result", ""),
        main_pid=pid or None,
        exec_pid=_int(block.get("ExecMainPID")) or None,
        exec_code=_int(block.get("ExecMainCode")) or 0,
        exec_status=_int(block.get("ExecMainStatus")) or 0,
        started_at=_unix(block.get("ExecMainStartTimestamp")),
        next_elapse=parse_timestamp(block.get("NextElapseUSecRealtime", "")),
        last_trigger=parse_timestamp(block.get("LastTriggerUSec", "")),
        need_reload=block.get("NeedDaemonReload") == "yes",
        unit_file_state=block.get("UnitFileState", ""),
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _unix(value: str | None) -> float | None:
    if value and value.startswith("@"):
        try:
            return float(value[1:])
        except ValueError:
            return None
    return None


def parse_timestamp(value: str) -> datetime | None:
    """`Sat 2026-12-05 16:02:24 UTC` (systemctl's own format under TZ=UTC) or `@SECONDS` ->
    an aware UTC datetime; None for an empty or unknown value (`n/a`)."""
    value = value.strip()
    if not value or value == "n/a":
        return None
    seconds = _unix(value)
    if seconds is not None:
        return datetime.fromtimestamp(seconds, UTC)
    try:
        return datetime.strptime(value, "%a %Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
    except ValueError:
        return None


def explain(stderr: str, what: str) -> ServiceError:
    """systemctl's failure as one line with the fix: an unreachable bus (`Failed to connect to
    bus: No medium found` over sudo or ssh without a session) says how to reach the user
    manager; a missing unit is NOT_LOADED."""
    text = " ".join(stderr.split()) or "no message"
    if "Failed to connect to bus" in text or "Failed to connect to user scope bus" in text:
        error = ServiceError(
            f"{what}: systemd's user manager cannot be reached ({text})",
            BUS_HINT,
        )
        return error
    error = ServiceError(f"{what}: {text}", "see `systemctl --user status` for the unit")
    if "not found" in text or "does not exist" in text or "not loaded" in text:
        error.reason = Refusal.NOT_LOADED
    return error


class Systemctl:
    """`systemctl --user` for one user manager (the caller's environment names it:
    XDG_RUNTIME_DIR, or the D-Bus session bus)."""

    def __init__(self, env: Mapping[str, str] | None = None, tool: str = "systemctl") -> None:
        base = dict(os.environ if env is None else env)
        self.env = {**base, "TZ": "UTC", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"}
        self.tool = tool
        self.calls: list[tuple[str, ...]] = []
        """Every command run, in order (daemon-reloads are counted from it)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(XDG_RUNTIME_DIR={self.env.get('XDG_RUNTIME_DIR')!r})"

    def run(self, *args: str, what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`systemctl --user ARGS`; ServiceError (explained) when it fails and `check`."""
        command = (self.tool, "--user", *args)
        self.calls.append(command)
        try:
            done = subprocess.run(
                command, env=self.env, capture_output=True, text=True, check=False, timeout=120
            )
        except FileNotFoundError:
            raise EnvironmentUnusableError(
                f"{what}: {self.tool} is not installed",
                "install systemd (apt-get install systemd), or set "
                '`service_manager = "emulated"` in [defaults]',
            ) from None
        if check and done.returncode != 0:
            raise explain(done.stderr, what)
        return done

    def show(self, units: Sequence[str]) -> dict[str, UnitState]:
        """Every unit of `units` in ONE `systemctl --user show` (unknown units come back
        not-found, never an error)."""
        if not units:
            return {}
        done = self.run(
            "show",
            "--timestamp=unix",
            "--property=" + ",".join(PROPERTIES),
            "--",
            *units,
            what="systemctl --user show",
        )
        states = [unit_state(block) for block in parse_show(done.stdout)]
        return {state.id: state for state in states if state.id}

    def answers(self) -> bool:
        """The user manager replies (`systemctl --user show-environment`)."""
        return self.run("show-environment", what="systemctl --user", check=False).returncode == 0

    def environment(self) -> dict[str, str]:
        """The user manager's own environment block (`show-environment`), which every unit
        it starts inherits before its Environment= lines; a value systemd prints C-quoted
        (`$'...'`) is read back."""
        done = self.run("show-environment", what="systemctl --user show-environment")
        found: dict[str, str] = {}
        for line in done.stdout.splitlines():
            name, sep, value = line.partition("=")
            if not sep:
                continue
            if value.startswith("$'") and value.endswith("'"):
                value = value[2:-1].encode("utf-8").decode("unicode_escape")
            found[name] = value
        return found

    def daemon_reload(self) -> None:
        """Reread every unit file (after apply wrote some)."""
        self.run("daemon-reload", what="systemctl --user daemon-reload")

    def verb(self, verb: str, *units: str, flags: Iterable[str] = ()) -> None:
        """`systemctl --user VERB [FLAGS] UNITS` (start, stop, enable, disable, clean...)."""
        self.run(verb, *flags, "--", *units, what=f"systemctl --user {verb} {' '.join(units)}")


@dataclass(frozen=True, slots=True)
class Verified:
    """What `systemd-analyze --user verify` said of some unit files."""

    returncode: int
    stderr: str

    @property
    def clean(self) -> bool:
        """rc 0 and nothing said (warnings are rc 0 but not clean)."""
        return self.returncode == 0 and not self.stderr.strip()


def verify(files: Sequence[str], env: Mapping[str, str] | None = None) -> Verified:
    """`systemd-analyze --user verify FILES`: systemd's own reading of the units (it needs a
    runtime directory, not a running manager)."""
    done = subprocess.run(
        ("systemd-analyze", "--user", "verify", *files),
        env=dict(os.environ if env is None else env),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return Verified(done.returncode, done.stderr)


def calendar_fires(
    expressions: Sequence[str], *, base: datetime, iterations: int, tz: str
) -> list[datetime]:
    """`systemd-analyze calendar --iterations=N --base-time=...`: systemd's next elapses of
    each expression after `base` in zone `tz`, as aware UTC datetimes, merged and sorted."""
    fires: set[datetime] = set()
    stamp = "@" + str(int(base.timestamp()))
    for expression in expressions:
        done = subprocess.run(
            (
                "systemd-analyze",
                "calendar",
                f"--iterations={iterations}",
                f"--base-time={stamp}",
                expression,
            ),
            env={**os.environ, "TZ": tz},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        for line in done.stdout.splitlines():
            # "Next elapse:", "Iter. #N:" in the zone asked, and "(in UTC):" when that is not
            # UTC: every value written in UTC is one fire.
            found = _analyze_time(line.strip().partition(": ")[2])
            if found is not None:
                fires.add(found)
    return sorted(fires)


def _analyze_time(value: str) -> datetime | None:
    try:
        return datetime.strptime(value.strip(), "%a %Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC)
    except ValueError:
        return None


LINGER_DIR = Path("/var/lib/systemd/linger")
"""Where logind keeps one empty file per user with linger on (`loginctl enable-linger`)."""


def linger(user: str, base: Path = LINGER_DIR) -> bool | None:
    """Whether linger is on for `user` (its file under `base`, what logind itself reads);
    None when there is no logind state at all (no logind on this machine)."""
    if not base.is_dir():
        return None
    return (base / user).exists()
