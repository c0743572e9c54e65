"""One job into a lane's queue (`lanekit enqueue LANE [FILE|-] [--id ID]`): which queue, the
payload, the add. The typer command (lanekit.cli.queue_cmds.enqueue) and the console script's
fast path (lanekit.__main__) both come through `enqueue_one`.

Agents and scripts enqueue one job at a time, in loops, and each call is a fresh interpreter:
start-up is most of what a single enqueue costs (benchmark figure (l): a single `lanekit
enqueue` vs `python -c pass`, in CPU). So this module and what it imports for an installed lane
and a generated id use builtin modules only: the lane's queue comes from its installed snapshot
(lanekit.state.snapshot_schema.read_snapshot, json-free), the emulated domain's clock from
lanekit.service.emulated.offset, and the job goes through the directory queue's one enqueue
(lanekit.queue.enqueue_into: the same checks, fsyncs and no-replace renames as
`Queue.enqueue`). typer, lanes.toml, pathlib, dataclasses, enum and json are not loaded; the
error classes only when something is refused.

Which queue: the one the installed lane drains (its snapshot, written by `apply`), when the lane
is installed from the lanes.toml this command would read ($LANEKIT_CONFIG, else ./lanes.toml),
or, with no such file here, when exactly one installed project has the lane. Otherwise (a lane
not installed yet, `--config`, `--queue`, a queue kept elsewhere than a directory) lanes.toml
says, through lanekit.config, as every other command reads it.
"""

# ruff: noqa: PTH118, PTH123
# (os.path and open() on str paths: pathlib is one of the imports this path avoids)
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class QueueTarget:
    """Where a job goes: a queue's location (its `dir`), whether it fsyncs, its largest job,
    and its name in lanes.toml when known (for messages). Immutable."""

    __slots__ = ("_durable", "_location", "_max_job_bytes", "_name")

    def __init__(
        self, location: str, *, durable: bool, max_job_bytes: int, name: str | None
    ) -> None:
        self._location = location
        self._durable = durable
        self._max_job_bytes = max_job_bytes
        self._name = name

    @property
    def location(self) -> str:
        """The queue's `dir` (a directory, or `memory:NAME`, or a server's URL)."""
        return self._location

    @property
    def durable(self) -> bool:
        """Whether enqueue fsyncs (the queue's `durable`)."""
        return self._durable

    @property
    def max_job_bytes(self) -> int:
        """The queue's largest job."""
        return self._max_job_bytes

    @property
    def name(self) -> str | None:
        """The queue's name in lanes.toml (None: read from a snapshot, which does not keep it)."""
        return self._name

    def __repr__(self) -> str:
        return f"QueueTarget({self._location!r}, durable={self._durable!r})"


def installed_target(
    lane: str, env: Mapping[str, str] | None = None, platform: str | None = None
) -> QueueTarget | None:
    """The queue the installed lane `lane` drains, from its snapshot; None when the lane is not
    installed from the lanes.toml in use (see the module's docstring), is the watchdog, or is
    installed by several projects and no lanes.toml here says which."""
    from lanekit.jobs.installed import installed_lanes
    from lanekit.state.snapshot_schema import DEFAULT_MAX_JOB_BYTES

    found = installed_lanes(lane, env, platform)
    if len(found) != 1:
        return None
    spec = found[0]
    location, durable = spec["queue_dir"], spec["durable"]
    limit = spec.get("max_job_bytes", DEFAULT_MAX_JOB_BYTES)  # older snapshots lack it
    if not (isinstance(location, str) and isinstance(durable, bool) and isinstance(limit, int)):
        return None
    return QueueTarget(location, durable=durable, max_job_bytes=limit, name=None)


def read_payload(source: str, limit: int, queue: str | None = None) -> bytes:
    """The job payload from the file `source`, or from stdin for `-`: at most `limit` bytes
    are read (one byte more tells a larger job, refused without reading the rest; `queue`:
    the queue's name in lanes.toml, for the refusal)."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(source, "rb") as handle:
                data = handle.read(limit + 1)
    except FileNotFoundError:
        from lanekit.errors import UsageError

        raise UsageError(
            f"{source}: no such file", "give a JSON file, or - to read the job from stdin"
        ) from None
    except OSError as exc:
        from lanekit.errors import UsageError

        raise UsageError(f"{source}: cannot read ({exc.strerror})", "check the path") from None
    if len(data) > limit:
        from lanekit.errors import UsageError
        from lanekit.queue.payload import too_large

        refusal = too_large(None, limit, queue)
        where = "stdin" if source == "-" else source
        raise UsageError(f"{where}: {refusal.message}", refusal.hint)
    return data


def enqueue_one(
    target: QueueTarget,
    source: str,
    job_id: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    at: str | None = None,
    delay: str | None = None,
) -> str:
    """Read the payload from `source` (a file, `-` for stdin) and add it to `target`'s queue as
    one job (id `job_id`, else a generated one); returns the id. With `at` (a TIME) or `delay`
    (a DURATION) it waits until then (lanekit.jobs.when). The time it records and judges by is
    the launchd backend's (lanekit.service.emulated.offset.command_clock)."""
    from lanekit.queue import enqueue_into
    from lanekit.service.emulated.offset import command_clock
    from lanekit.state.backend import state_dir

    env = os.environ if env is None else env
    clock = command_clock(os.path.join(state_dir(env, sys.platform), "emulator"), env)
    when = None
    if at is not None or delay is not None:
        from lanekit.jobs.when import not_before

        when = not_before(at, delay, clock)
    data = read_payload(source, target.max_job_bytes, target.name)
    return enqueue_into(
        target.location,
        data,
        job_id,
        durable=target.durable,
        clock=clock.time,
        max_job_bytes=target.max_job_bytes,
        not_before=when,
    )


def split_args(argv: Sequence[str]) -> tuple[str, str | None, str | None] | None:
    """`LANE [FILE|-] [--id ID]` (`--id=ID` too, in any order) -> (lane, file, id); None for
    anything else: another option, `--help`, a third argument (the typer command parses those,
    and words what is wrong)."""
    positional: list[str] = []
    job_id: str | None = None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--id":
            if i + 1 >= len(args) or job_id is not None:
                return None
            job_id = args[i + 1]
            i += 2
            continue
        if arg.startswith("--id="):
            if job_id is not None:
                return None
            job_id = arg.partition("=")[2]
        elif (arg.startswith("-") and arg != "-") or not arg:
            return None
        else:
            positional.append(arg)
        i += 1
    if not 1 <= len(positional) <= 2:
        return None
    file = positional[1] if len(positional) == 2 else None
    return positional[0], file, job_id


def quick_enqueue(argv: Sequence[str]) -> str | None:
    """`lanekit enqueue LANE [FILE|-] [--id ID]` for an installed lane: the new job's id. None
    when this path cannot vouch for the call (see `split_args`, `installed_target`; no FILE
    and stdin a terminal): the typer command then does the whole thing, from the start, nothing
    having changed. A refusal raises LanekitError, as the command would."""
    parsed = split_args(argv)
    if parsed is None:
        return None
    lane, file, job_id = parsed
    if file is None and sys.stdin.isatty():
        return None  # the command says how to give a job
    target = installed_target(lane)
    if target is None:
        return None
    return enqueue_one(target, file or "-", job_id)
