"""Which launchd backend lanekit drives: the real one (`launchctl`) or the emulated domain.

Builtin imports only: the lane's entrypoint asks it on every scheduled run (lanekit.state.clock),
and
its start-up is a benchmark figure (lanekit.run.entry).
"""

# ruff: noqa: PTH109, PTH111, PTH117, PTH118
# (os.path on str paths: pathlib is one of the imports the fast paths avoid)
from __future__ import annotations

TYPE_CHECKING = False  # importing typing would cost the runner's start-up a few ms
if TYPE_CHECKING:
    from collections.abc import Mapping

BACKEND_VARIABLE = "LANEKIT_LAUNCHD"


def backend_name(env: Mapping[str, str], platform: str) -> str:
    """`launchctl` on macOS, `emulated` elsewhere; LANEKIT_LAUNCHD overrides."""
    chosen = env.get(BACKEND_VARIABLE, "")
    if chosen in {"emulated", "launchctl"}:
        return chosen
    return "launchctl" if platform == "darwin" else "emulated"


def state_dir(env: Mapping[str, str], platform: str) -> str:
    """lanekit's state directory (lane snapshots, the emulated domain), as a str path:
    $LANEKIT_STATE_DIR, else ~/Library/Application Support/lanekit on macOS, else
    $XDG_STATE_HOME/lanekit (default ~/.local/state/lanekit). Made absolute. Here, with builtin
    imports only, for lanekit.state.paths.Paths and for a single `lanekit enqueue`, which finds
    its lane's snapshot without pathlib (lanekit.jobs.add)."""
    import os

    home = env.get("HOME") or os.path.expanduser("~")
    if "LANEKIT_STATE_DIR" in env:
        state = env["LANEKIT_STATE_DIR"]
    elif platform == "darwin":
        state = os.path.join(home, "Library", "Application Support", "lanekit")
    else:
        base = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
        state = os.path.join(base, "lanekit")
    # Joined as Path.absolute() does (no `..` collapsed: a symlinked parent stays meaningful).
    return state if os.path.isabs(state) else os.path.join(os.getcwd(), state)


MANAGERS = ("launchd", "systemd", "emulated")
"""`[defaults] service_manager` values (lanekit.service.manager.ManagerKind, by value)."""


def user_manager_socket(env: Mapping[str, str], uid: int) -> str:
    """Where a running systemd user manager listens: `$XDG_RUNTIME_DIR/systemd/private`
    (`/run/user/UID` when XDG_RUNTIME_DIR is unset), what `systemctl --user` reaches."""
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{uid}"
    return f"{runtime}/systemd/private"


def manager_choice(
    env: Mapping[str, str], platform: str, configured: str | None = None
) -> tuple[str, str]:
    """(which service manager runs the lanes, why, in words). LANEKIT_LAUNCHD (tests) first,
    then `[defaults] service_manager`, then the platform: launchd on macOS, systemd on Linux
    when a user manager answers (its socket exists: one stat, no `systemctl` started), else
    the emulated domain."""
    chosen = env.get(BACKEND_VARIABLE, "")
    if chosen in {"emulated", "launchctl"}:
        name = "launchd" if chosen == "launchctl" else chosen
        return name, f"{BACKEND_VARIABLE}={chosen} is set"
    if configured in MANAGERS:
        return configured, f'[defaults] service_manager = "{configured}" in lanes.toml'
    if platform == "darwin":
        return "launchd", "macOS runs lanes in launchd"
    import os
    import stat

    socket = user_manager_socket(env, os.geteuid())
    try:
        # os, not pathlib: this module stays builtin-only (the runner's start-up).
        answers = stat.S_ISSOCK(os.stat(socket).st_mode)  # noqa: PTH116
    except OSError:
        answers = False
    if platform.startswith("linux") and answers:
        return "systemd", f"a systemd user manager answers at {socket}"
    if platform.startswith("linux"):
        return "emulated", (
            f"no systemd user manager answers at {socket} (log in, or "
            "`loginctl enable-linger`), so lanes go to the emulated domain, which fires nothing"
            " on a clock"
        )
    return "emulated", f"no service manager lanekit drives on {platform}: the emulated domain"
