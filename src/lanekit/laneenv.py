"""The environment launchd gives a lane's process, wherever that process was started.

launchd builds it from the plist alone (lanekit.launchd.launch.launch_environment: PATH
/usr/bin:/bin:/usr/sbin:/sbin unless EnvironmentVariables names one, the EnvironmentVariables,
XPC_SERVICE_NAME); the emulated domain and `lanekit try` start jobs with that same function.
A lane's run or watchdog pass started by launchd already has it. One started by hand (`lanekit
run LANE`, `lanekit watch` in a terminal) has the terminal's instead, so it builds launchd's
from the same EnvironmentVariables (lanekit.config.lane_environment makes them; the plist
carries them and the lane snapshot keeps them) with that same function, and hands it to its
jobs and channels: a command found only on the terminal's PATH fails by hand as it would under
launchd, and one found on the lane's `path` runs by hand as it does under launchd. Nothing of
the terminal is kept (launchd's own additions, such as HOME, are not promised:
shared/launchd-semantics.md section 3; a lane that needs one sets it in `env`).

Cheap to import (nothing at all): the runner imports it, and lanekit.launchd.launch only
when a run is by hand. A job's command is looked up on the PATH it is given, not on the run's
own (lanekit.watcher.find_program).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Mapping

SERVICE_VARIABLE = "XPC_SERVICE_NAME"
"""launchd sets it to the label of the job it starts (every `launchctl print` capture shows it);
a terminal has none, `0` (Terminal.app) or its own application's name."""
TRY_INFIX = ".try-"
"""`lanekit try` on a Mac runs a lane's plist under `<label>.try-<random>` (lanekit.tryjob)."""


def started_by_launchd(environ: Mapping[str, str], label: str) -> bool:
    """Whether launchd (or the emulated domain, or `lanekit try`) started this process as the
    job labelled `label`: its XPC_SERVICE_NAME is that label, or `try`'s one-shot copy of it."""
    name = environ.get(SERVICE_VARIABLE, "")
    return name == label or name.startswith(label + TRY_INFIX)


def launchd_environment(label: str, variables: Mapping[str, str]) -> dict[str, str]:
    """The complete environment launchd gives the job `label` whose plist has these
    EnvironmentVariables (lanekit.launchd.launch.launch_environment, the one function)."""
    from lanekit.launchd.launch import launch_environment

    return launch_environment({"Label": label, "EnvironmentVariables": dict(variables)})


def lane_process_env(
    environ: Mapping[str, str], label: str, variables: Mapping[str, str] | None
) -> Mapping[str, str]:
    """The environment of lane `label`'s process as launchd gives it: `environ` itself when
    launchd started this process for the lane (it is launchd's, with whatever launchd adds),
    else launchd's built from the lane's EnvironmentVariables. `variables` None (a snapshot
    written before lanekit kept them) leaves `environ` as it is: `lanekit apply` rewrites it."""
    if variables is None or started_by_launchd(environ, label):
        return environ
    return launchd_environment(label, variables)
