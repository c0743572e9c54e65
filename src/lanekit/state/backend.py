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
