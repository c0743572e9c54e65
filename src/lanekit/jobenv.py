"""The environment a job command runs with: its lane's, plus the job's identity.

One function for every place a job is started, so `lanekit try LANE --job FILE` hands the
command exactly the variables a real run does: the runner (a claimed job) and lanekit.tryrun
(a job file given by hand) both call `job_env`. The variable naming a claimed job's file also
finds the job's copies (lanekit.watcher.job_copies). Builtin modules only: the runner imports this.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Mapping

JOB_FILE = "LANEKIT_JOB_FILE"
"""The variable naming the job's file: for a claimed job, its claim (claimed/<id>.<owner>.json),
which no other claim ever names, so it also marks every process of that attempt: its copies
(lanekit.watcher.job_copies)."""


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
