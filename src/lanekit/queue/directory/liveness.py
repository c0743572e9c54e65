"""The one answer to "is this claim's owner still there?": its runner's liveness (pid and
start token, lanekit.system.procinfo), the claim's flock (held by the runner and its watcher) and,
once both are gone, whether a copy of the job still runs (lanekit.queue.outcome.job_copies).
recover() acts on it; observe (and so doctor and status) reports it.
"""

from __future__ import annotations

import fcntl
import os

from lanekit.queue.observed import ClaimState, RecoverReason
from lanekit.queue.outcome import job_copies
from lanekit.system import fsops, procinfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.queue.ids import Owner


def classify_claim(runner: procinfo.Liveness | None, locked: bool) -> ClaimState:
    """What a claim amounts to; `runner` is None when its owner cannot be checked from here
    (another host, or unnamed). The one answer recover() acts on and doctor reports."""
    if runner is None:
        return ClaimState.UNKNOWN
    if runner in {procinfo.Liveness.ALIVE, procinfo.Liveness.UNKNOWN}:
        return ClaimState.LIVE
    return ClaimState.ORPHANED if locked else ClaimState.STRANDED


def claim_locked(path: Path) -> bool | None:
    """True while some process holds the claim's flock (its runner, or the job that inherited
    it), False when none does, None when the file is gone (settled meanwhile)."""
    try:
        return fsops.flock_held(path)
    except OSError:
        return False


def owner_alive(path: str, owner: Owner) -> bool | None:
    """Whether the claim at `path` has a live owner: its flock is held, or its owner on this
    host still runs (None: the file is gone)."""
    try:
        fd = fsops.open_regular(path)
    except FileNotFoundError:
        return None
    except (fsops.NotRegularFileError, PermissionError):
        # Nothing can lock such a file: only the owner's process says whether it is alive.
        return _runs(owner)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return _runs(owner) or bool(job_copies(path))
    finally:
        os.close(fd)


def _runs(owner: Owner) -> bool:
    liveness = procinfo.liveness(owner.pid, owner.token)
    return classify_claim(liveness, locked=False) is ClaimState.LIVE


def local_owner_gone(owner: Owner, claim_path: str) -> RecoverReason | None:
    """Why the owner on this host of the claim at `claim_path`, whose lock nobody holds, is
    gone (dead, or its pid reused), or None while it may still be alive (alive, or not
    knowable: never recover on a guess) or a copy of its job still runs (the claim is then
    orphaned, and stays until the job has ended)."""
    alive = procinfo.liveness(owner.pid, owner.token)
    if classify_claim(alive, locked=False) is not ClaimState.STRANDED:
        return None
    if job_copies(claim_path):
        return None
    return RecoverReason.OWNER_DEAD if alive is procinfo.Liveness.DEAD else RecoverReason.PID_REUSED
