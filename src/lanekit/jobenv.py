"""The environment a job command runs with: its lane's, plus the job's identity.

One function for every place a job is started, so `lanekit try LANE --job FILE` hands the
command exactly the variables a real run does: the runner (a claimed job) and lanekit.tryrun
(a job file given by hand) both call `job_env`. The variable naming a claimed job's file also
finds the job's copies (`job_copies`). Builtin modules only: the runner imports this.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Mapping

JOB_FILE = "LANEKIT_JOB_FILE"
"""The variable naming the job's file: for a claimed job, its claim (claimed/<id>.<owner>.json),
which no other claim ever names, so it also marks every process of that attempt: its copies
(job_copies)."""


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


COPIES_KEEP_CLAIM = True
"""Whether a live copy of a job keeps its claim. The chaos run's control (scripts/chaos.py
--unprotected) switches it off to show the overlaps it prevents; nothing else changes it."""


def job_copies(claim_path: str) -> list[int]:
    """The pids of the processes still running the job of the claim at `claim_path`: every
    process of this user whose environment names that claim (JOB_FILE). A job runs in a
    process group and session of its own and never holds the claim's lock, so once its runner
    and watcher are both dead (one `pkill -9 -f 'lanekit run'` kills both) this is how its
    copies are found: the variable survives setsid, closed descriptors and a forked daemon.
    Only a process that exec'd with a new environment escapes it (docs/queue.md)."""
    if not COPIES_KEEP_CLAIM:
        return []
    from lanekit.procinfo import env_carriers

    return env_carriers(JOB_FILE, claim_path)
