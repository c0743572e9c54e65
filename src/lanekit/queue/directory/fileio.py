"""The few file operations every part of the directory queue shares: listing a directory,
reading a whole descriptor, the no-replace rename into a bucket that may have been cleaned
away, and turning OSErrors into one QueueError (exit 69, no traceback)."""

# ruff: noqa: PTH103, PTH120, PTH208
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import contextlib
import os

from lanekit.errors import QueueError
from lanekit.system import fsops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


def rename_into(src: str, target: str) -> None:
    """rename_noreplace, re-creating the target's directory if someone cleaned it away (a
    done/ day bucket) while the source is still there."""
    try:
        fsops.rename_noreplace(src, target)
    except FileNotFoundError:
        if not os.path.lexists(src):
            raise
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        fsops.rename_noreplace(src, target)


@contextlib.contextmanager
def io_errors(action: str) -> Iterator[None]:
    """OSErrors (disk full, permissions) become QueueError naming the file: exit 69, no trace."""
    try:
        yield
    except OSError as exc:
        raise queue_error(exc, action) from exc


def queue_error(exc: OSError, action: str) -> QueueError:
    """The QueueError for an OSError while trying to `action` (see `io_errors`)."""
    return QueueError(
        f"{exc.filename or 'queue'}: cannot {action} ({exc.strerror or exc})",
        "check free space and permissions in the queue directory (`lanekit doctor`)",
    )


def listdir(directory: str) -> list[str]:
    """The names in `directory`; none when it is gone."""
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def job_names(directory: str) -> list[str]:
    """The job files (`*.json`, not hidden) in `directory`."""
    return [n for n in listdir(directory) if n.endswith(".json") and n[0] != "."]
