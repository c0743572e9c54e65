"""Which launchd backend lanekit drives: the real one (`launchctl`) or the emulated domain.

Builtin imports only: the lane's entrypoint asks it on every scheduled run (lanekit.state.clock),
and
its start-up is a benchmark figure (lanekit.run.entry).
"""

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
