"""The domain-level apply lock: concurrent `lanekit apply` runs queue up instead of racing.

Two applies at once each observe the domain, then both bootout/bootstrap the same labels, and
one of them meets "already loaded" or a label that is still draining. So `apply` holds an
exclusive flock on `<state>/apply.lock` from before it observes until it has carried out its
plan; a second apply waits for it, after saying once who holds it. `plan` never takes it (it
changes nothing). The kernel drops the lock when its holder dies, however it dies, so a stale
lock file never blocks anyone; the pid written into it is only for the waiting message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from lanekit.system.owned import PRIVATE_FILE, make_private_dirs

LOCK_NAME = "apply.lock"

OnWait = Callable[[int | None], None]
"""Told the holder's pid (None when unknown) once, when an apply has to wait for another."""


@contextlib.contextmanager
def apply_lock(state: Path, on_wait: OnWait | None = None) -> Iterator[None]:
    """Hold the apply lock of the domain whose state lives in `state`, waiting for it."""
    make_private_dirs(state)
    fd = os.open(
        state / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE
    )
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(holder(fd))
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def holder(fd: int) -> int | None:
    """The pid the current holder wrote into the lock file, if it is readable yet."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
