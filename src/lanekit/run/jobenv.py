"""The environment a job command runs with: its lane's, as launchd gives it, plus the job's
identity.

One function for every place a job is started, so `lanekit try LANE --job FILE` hands the
command exactly the variables a real run does: the runner (a claimed job) and lanekit.proof.tryrun
(a job file given by hand) both call `job_env`. The variable naming a claimed job's file also
finds the job's copies (lanekit.queue.outcome.job_copies).

The lane's part is what launchd builds from the plist alone (lanekit.service.launchd.launch
.launch_environment: PATH /usr/bin:/bin:/usr/sbin:/sbin unless EnvironmentVariables names
one, the EnvironmentVariables, XPC_SERVICE_NAME); the emulated domain and `lanekit try` start
jobs with that same function. A run or watchdog pass started by launchd already has it; one
started by hand (`lanekit run LANE`, `lanekit watch` in a terminal) builds it from the same
EnvironmentVariables (lanekit.config.lane_environment makes them; the plist carries them and
the snapshot keeps them), so a command found only on the terminal's PATH fails by hand as it
would under launchd (`lane_process_env`). Nothing of the terminal is kept (launchd's own
additions, such as HOME, are not promised: shared/launchd-semantics.md section 3). A job's
command is looked up on the PATH it is given (lanekit.system.processes.find_program).

Builtin modules only (lanekit.service.launchd.launch is imported only by a run by hand): the runner
imports this.
"""

from __future__ import annotations

import os

from lanekit.queue.outcome import JOB_FILE

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Mapping


def job_env(
    base: Mapping[str, str],
    *,
    lane: str,
    job_id: str,
    job_file: str | os.PathLike[str],
    attempt: int,
) -> dict[str, str]:
    """`base` (under launchd: the plist's PATH and lane env) plus the job's identity: its id,
    the file `{job}` names, its lane and which attempt this is (1 for the first)."""
    env = dict(base)
    env["LANEKIT_JOB_ID"] = job_id
    env[JOB_FILE] = os.fspath(job_file)
    env["LANEKIT_LANE"] = lane
    env["LANEKIT_ATTEMPT"] = str(attempt)
    return env


SERVICE_VARIABLE = "XPC_SERVICE_NAME"
"""launchd sets it to the label of the job it starts (every `launchctl print` capture shows it);
a terminal has none, `0` (Terminal.app) or its own application's name."""
TRY_LABEL = "local.lanekit.try"
"""`lanekit try` on a Mac runs a lane's plist under this one label (lanekit.proof.tryjob): one
label for every try of the user, so macOS keeps one Background Items record for it, not one
per run."""


def started_by_launchd(environ: Mapping[str, str], label: str) -> bool:
    """Whether launchd (or the emulated domain, or `lanekit try`) started this process as the
    job labelled `label`: its XPC_SERVICE_NAME is that label, or `try`'s one-shot label (only
    `try` loads a lane's plist under it)."""
    name = environ.get(SERVICE_VARIABLE, "")
    return name in (label, TRY_LABEL)


def launchd_environment(label: str, variables: Mapping[str, str]) -> dict[str, str]:
    """The complete environment launchd gives the job `label` whose plist has these
    EnvironmentVariables (lanekit.service.launchd.launch.launch_environment, the one function)."""
    from lanekit.service.launchd.launch import launch_environment

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
