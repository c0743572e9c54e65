"""The emulated domain's clock as a command the user runs sees it: the offset kept in the
domain's state file (`clock_offset` in domain.json), or the one this process was started with
if larger (lanekit.state.clock says why the larger is the fresher).

Builtin imports only: a single `lanekit enqueue` stamps its job's record by this clock, and its
start-up is a benchmark figure (lanekit.jobs.add). So domain.json is decoded by the snapshot
reader's json-free decoder (lanekit.state.snapshot_schema.parse_json) and only its offset is
looked at; the domain itself (lanekit.service.emulated.state) reads the same key through
`offset_of`.
"""

# ruff: noqa: PTH118
# (os.path on str paths: pathlib is one of the imports the fast path avoids)
from __future__ import annotations

import os
import sys

from lanekit.state.backend import BACKEND_VARIABLE, backend_name
from lanekit.state.clock import OFFSET_VARIABLE, REAL, Clock, format_offset, job_offset

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from lanekit.service.launchd.launch import JobLaunch

STATE_FILE = "domain.json"
"""The domain's state file, in its state directory."""


def offset_of(data: object) -> float:
    """The clock offset a decoded domain.json holds: its `clock_offset` when that is a number
    above 0, else 0 (absent, damaged: the real clock)."""
    offset = data.get("clock_offset") if isinstance(data, dict) else None
    valid = isinstance(offset, int | float) and not isinstance(offset, bool) and offset > 0
    return float(offset) if valid else 0.0  # type: ignore[arg-type]  # valid: a number


def read_offset(state_dir: str | os.PathLike[str]) -> float:
    """The clock offset in the domain's state file, read without the domain lock (the file is
    replaced atomically) and without reaping anything: 0 when there is no domain yet, or its
    state cannot be read (the next domain operation reports that)."""
    from lanekit.state.snapshot_schema import parse_json
    from lanekit.system.owned import read_regular

    path = os.path.join(os.fspath(state_dir), STATE_FILE)
    try:
        # Never blocking on a FIFO planted there (lanekit.system.owned.read_regular).
        read = read_regular(path, "emulated launchd state")
    except Exception:  # an OSError or a refusal (lanekit.errors: not imported to name it)
        return 0.0
    if read is None or not read[0]:
        return 0.0
    try:
        return offset_of(parse_json(read[0].decode("utf-8")))
    except (ValueError, RecursionError):
        return 0.0


def command_clock(
    state_dir: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Clock:
    """The clock of a lanekit command (lanekit.state.clock): real on the launchctl backend; on
    the emulated one the domain's clock (its state file under `state_dir`, the domain's
    directory, or the offset this process was started with if larger)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if backend_name(env, platform) != "emulated":
        return REAL
    offset = max(read_offset(state_dir), job_offset(env, platform))
    return REAL if offset == 0 else Clock(offset)


def by_hand_clock(
    state_dir: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Clock | None:
    """The domain's clock for a lanekit process the user started by hand on the emulated
    domain (a `lanekit run` in a terminal, `purge`, `retry`...): no domain handed it an offset,
    so without this it would stamp and judge by the real time while every other command uses
    the domain's. None on the launchctl backend, and for a process the domain started (its
    environment carries the offset, which the process reads itself)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if OFFSET_VARIABLE in env or backend_name(env, platform) != "emulated":
        return None
    return command_clock(state_dir, env, platform)


def with_clock(launch: JobLaunch, offset: float) -> JobLaunch:
    """The job's environment plus what a lanekit process needs to read the domain's clock
    (lanekit.state.clock): the one thing the emulated domain adds to what launchd would pass,
    at each spawn, and `lanekit try` on the emulated domain too."""
    from dataclasses import replace

    env = {**launch.env, BACKEND_VARIABLE: "emulated", OFFSET_VARIABLE: format_offset(offset)}
    return replace(launch, env=env)
