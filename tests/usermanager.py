"""A real systemd user manager for tests, on a machine whose PID 1 is not systemd (from
shared/recipes/systemd-user-manager.sh).

`systemd --user` refuses to start unless /run/systemd/system exists, so it runs in a private
mount namespace with a tmpfs over /run/systemd; it needs a cgroup2 directory it may write, so
it is moved into a fresh one. `systemctl --user` reaches it from outside through
`$XDG_RUNTIME_DIR/systemd/private`. HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR are the test's
own temporary directories. It is stopped by the manager's pid: `unshare --fork` ignores SIGTERM.

Needs root, unshare, /lib/systemd/systemd and a writable cgroup2 hierarchy; without them the
tests skip saying why, except under CI=true as root, where they must run (fail instead).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SYSTEMD = Path("/lib/systemd/systemd")
START_SECONDS = 10.0

_SCRIPT = """
mount --make-rprivate /
mount -t tmpfs tmpfs /run/systemd 2>/dev/null \\
  || { mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/systemd/system
echo $$ > "$LANEKIT_TEST_CGROUP/cgroup.procs"
echo $$ > "$LANEKIT_TEST_BASE/manager.pid"
exec /lib/systemd/systemd --user
"""


@dataclass(frozen=True)
class UserManager:
    """A running user manager: the environment that reaches it and where its units live."""

    base: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    cgroup: Path

    @property
    def unit_dir(self) -> Path:
        """$XDG_CONFIG_HOME/systemd/user: where the manager reads the user's units."""
        return Path(self.env["XDG_CONFIG_HOME"]) / "systemd" / "user"

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`systemctl --user ARGS` against this manager."""
        return subprocess.run(
            ["systemctl", "--user", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def reset(self) -> None:
        """Stop every unit the user left, delete the user's units and reload: the next test
        starts from an empty manager."""
        ours = sorted(
            path.name
            for path in self.unit_dir.glob("*")
            if path.suffix in {".service", ".timer", ".path"}
        )
        if ours:
            self.systemctl("stop", "--", *ours)
        for path in self.unit_dir.glob("*"):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        # Persistent= timers' last-trigger stamps: a later test's lane of the same label must
        # not inherit a catch-up run.
        stamps = Path(self.env["HOME"]) / ".local" / "share" / "systemd" / "timers"
        for stamp in stamps.glob("stamp-*"):
            stamp.unlink()
        self.systemctl("daemon-reload")
        self.systemctl("reset-failed")

    def stop(self) -> None:
        """SIGTERM to the manager itself (not to unshare), then its cgroup removed."""
        pid_file = self.base / "manager.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for directory in sorted(self.cgroup.rglob("*"), key=lambda p: -len(p.parts)):
            if directory.is_dir():
                with contextlib.suppress(OSError):
                    directory.rmdir()
        with contextlib.suppress(OSError):
            self.cgroup.rmdir()
        shutil.rmtree(self.base, ignore_errors=True)


def missing() -> list[str]:
    """What this machine lacks to run a user manager (empty: nothing)."""
    found = []
    if os.geteuid() != 0:
        found.append("root (a mount namespace and a cgroup of its own)")
    for tool in ("unshare", "systemctl", "systemd-analyze"):
        if shutil.which(tool) is None:
            found.append(tool)
    if not SYSTEMD.is_file():
        found.append(str(SYSTEMD))
    if _cgroup_root() is None:
        found.append("a writable cgroup2 hierarchy")
    return found


def skip_or_fail(reason: str) -> None:
    """Skip saying why; under CI=true as root, fail: there these tests must run."""
    if os.environ.get("CI") == "true" and os.geteuid() == 0:
        pytest.fail(f"{reason}; CI as root must run the systemd tests (.ci/run installs systemd)")
    pytest.skip(reason)


def _cgroup_root() -> Path | None:
    for candidate in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (candidate / "cgroup.procs").exists() and os.access(candidate, os.W_OK):
            return candidate
    return None


def start() -> UserManager:
    """Start a user manager in fresh temporary directories; ready when its socket exists."""
    lacking = missing()
    if lacking:
        skip_or_fail(f"a systemd user manager needs {', '.join(lacking)}")
    root = _cgroup_root()
    assert root is not None
    base = Path(tempfile.mkdtemp(prefix="lanekit-systemd-"))
    base.chmod(0o755)
    home = base / "home"
    runtime = base / "run"
    (home / ".config" / "systemd" / "user").mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    cgroup = root / f"lanekit-test-{os.getpid()}-{base.name[-8:]}"
    cgroup.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_RUNTIME_DIR": str(runtime),
        "LANEKIT_TEST_CGROUP": str(cgroup),
        "LANEKIT_TEST_BASE": str(base),
    }
    process = subprocess.Popen(
        ["unshare", "--mount", "--fork", "bash", "-c", _SCRIPT],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    manager = UserManager(base, env, process, cgroup)
    socket = runtime / "systemd" / "private"
    deadline = time.monotonic() + START_SECONDS
    while not socket.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            manager.stop()
            skip_or_fail("systemd --user did not start (shared/recipes/systemd-user-manager.sh)")
        time.sleep(0.05)
    return manager
