"""The emulated domain's watch on a job's QueueDirectories: what launchd's kqueue does for a
loaded job with that key. One detached process per such job, started at bootstrap: while any of
the directories is non-empty (or a throttled start is due) it asks the domain to bring itself
up to date, and the domain then starts the job, as launchd does, whenever it is not running
(ThrottleInterval applies). It ends when the job is booted out or loaded again, or when the
domain's state directory is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

POLL_SECONDS = 0.25
"""How often the watch looks at the directories: a job is started within about this long of
a file arriving (launchd reacts to the kernel's event at once)."""


def non_empty(directories: list[str]) -> bool:
    """Whether any directory holds an entry (launchd's test: not empty, whatever the entry)."""
    for directory in directories:
        try:
            with os.scandir(directory) as entries:
                if next(entries, None) is not None:
                    return True
        except OSError:
            continue
    return False


def _entry(state_file: Path, label: str) -> dict[str, object] | None:
    """The job's entry in domain.json, read without the lock (the file is replaced
    atomically); None when the job or the domain is gone. OSError when unreadable."""
    data = json.loads(state_file.read_bytes())
    job = data.get("jobs", {}).get(label)
    return job if isinstance(job, dict) else None


def watch(state_dir: Path, label: str, loaded_at: float, refresh: Callable[[], object]) -> None:
    """Watch the QueueDirectories of `label` as loaded at `loaded_at` (see the module);
    `refresh` is the domain's transaction (EmulatedDomain.reap), which starts the job."""
    state_file = state_dir / "domain.json"
    while True:
        time.sleep(POLL_SECONDS)
        try:
            job = _entry(state_file, label)
        except FileNotFoundError:
            return  # the domain is gone (uninstall --all, a test's directory removed)
        except (OSError, ValueError):
            continue  # mid-replace or briefly unreadable: look again
        if job is None or job.get("loaded_at") != loaded_at or job.get("booted_out"):
            return
        directories = job.get("queue_directories")
        pending = job.get("pending_at")
        due = isinstance(pending, int | float) and time.time() >= pending - 1
        # A run that ended is known once its exit status is written; until a transaction
        # reaps it, domain.json still names its pid.
        status = job.get("status_file")
        idle = job.get("pid") is None or (isinstance(status, str) and Path(status).exists())
        if idle and (
            due or (isinstance(directories, list) and non_empty([str(d) for d in directories]))
        ):
            # A transaction: the domain starts the job if launchd would. A detached watch has
            # nobody to tell of a failure (a state file being reset): it looks again.
            with contextlib.suppress(Exception):
                refresh()
