"""Real crashes for queue tests: work done in a forked process that then dies without any
cleanup (os._exit, as under SIGKILL), so that its owner is dead by the same test the runner's
recovery uses."""

from __future__ import annotations

import os
from collections.abc import Callable

Say = Callable[[str], None]
"""How the dying process tells the test which job it took (call it before dying)."""


def in_dying_process(work: Callable[[Say], object]) -> str:
    """Run `work(say)` in a forked child that exits at once afterwards (or dies inside it);
    what it said (a job id, "" if nothing), once the child is reaped."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child

        def say(text: str) -> None:
            os.write(write, text.encode())

        try:
            work(say)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said
