"""What other modules ask of a loaded config: the lanes named, the watchdog as a lane, a
lane's run spec (what its snapshot says), and the config's warnings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lanekit.config.model import (
    DEFAULT_PATH,
    DEFAULT_SESSION_TYPES,
    Config,
    LaneSpec,
    QueueSpec,
    StartOn,
)
from lanekit.config.provenance import MARKER
from lanekit.config.text import did_you_mean, quoted
from lanekit.config.watch import (
    WATCH_COMMAND,
    WATCH_LANE,
    WatchSpec,
    heartbeat_path,
    watch_dir,
)
from lanekit.errors import UsageError
from lanekit.schedule import Schedule
from lanekit.state.paths import Paths
from lanekit.state.snapshot_schema import DEFAULT_EXIT_TIMEOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.state.snapshot import RunSpec


def config_warnings(config: Config) -> list[str]:
    """Problems that do not stop a config from loading: schedule collisions, no lanes."""
    from lanekit.schedule import find_collisions  # here: reading lanes.toml needs none

    if not config.lanes:
        return ["no lanes defined: add a [lanes.NAME] table"]
    return [str(collision) for collision in find_collisions(list(config.lanes.values()))]


def select_lanes(config: Config, names: Sequence[str]) -> list[LaneSpec]:
    """The named lanes in the order given (all lanes when `names` is empty).

    An unknown name is a UsageError with a did-you-mean.
    """
    if not names:
        return list(config.lanes.values())
    chosen: list[LaneSpec] = []
    for name in dict.fromkeys(names):
        lane = config.lanes.get(name)
        if lane is None:
            known = ", ".join(config.lanes) or "(none)"
            suggestion = did_you_mean(name, config.lanes)
            raise UsageError(
                f"no lane named {quoted(name)} in {config.path.name}{suggestion}",
                f"lanes: {known}",
            )
        chosen.append(lane)
    return chosen


def watchdog_lane(
    watch: WatchSpec,
    *,
    config_path: Path,
    prefix: str,
    paths: Paths,
    path: tuple[str, ...] = DEFAULT_PATH,
    session_type: tuple[str, ...] = DEFAULT_SESSION_TYPES,
) -> LaneSpec:
    """The watchdog as a lane: `<prefix>.watch`, StartInterval `every`, running `lanekit
    watch --config <lanes.toml>` with the same interpreter as every lane. Its directory (an
    empty queue, its logs, its alert memory) is under the state dir; its environment names
    that state dir and LaunchAgents dir, which launchd's bare environment would not give it."""
    # Imported here: only a lanes.toml with [watch] builds the watchdog (lanekit status of
    # one without pays nothing for the guard's module).
    from lanekit.system.interpreter import SH, guard_path

    label = f"{prefix}.{WATCH_LANE}"
    directory = watch_dir(paths.state, label)
    logs = directory / "logs"
    project = config_path.resolve()
    return LaneSpec(
        name=WATCH_LANE,
        label=label,
        queue=QueueSpec(name=WATCH_LANE, dir=directory),
        command=WATCH_COMMAND,
        schedule=Schedule(interval=watch.every),
        stdout_path=logs / f"{WATCH_LANE}.out.log",
        stderr_path=logs / f"{WATCH_LANE}.err.log",
        log_path=logs / f"{WATCH_LANE}.log",
        env={
            "HOME": str(paths.home),
            "LANEKIT_STATE_DIR": str(paths.state),
            "LANEKIT_LAUNCH_AGENTS": str(paths.launch_agents),
        },
        path=path,
        max_jobs=1,
        session_type=session_type,
        project=project,
        entrypoint=(WATCH_LANE, "--config", str(project)),
        guard=(SH, str(guard_path(paths.state)), str(heartbeat_path(directory)), label),
        watch=watch,
    )


def is_watchdog(lane: LaneSpec | None) -> bool:
    """The watchdog lane `[watch]` adds (watchdog_lane; a user's lane may be named `watch`
    without it). Here, beside the lane it recognises, so `lanekit status` asks it without
    importing the dead man's switch for every lane (benchmark (i))."""
    return lane is not None and lane.name == WATCH_LANE and lane.entrypoint is not None


def lane_environment(lane: LaneSpec) -> dict[str, str]:
    """The lane's EnvironmentVariables: its env, an explicit PATH (its `path`) and the
    LANEKIT_LANE marker. The plist carries them (lanekit.service.launchd.plist) and the snapshot
    keeps them
    (run_spec), so a run launchd did not start gives its jobs what launchd would
    (lanekit.run.jobenv.lane_process_env)."""
    return {**lane.env, "PATH": ":".join(lane.path), MARKER: lane.name}


def run_spec(lane: LaneSpec) -> RunSpec:
    """What `lanekit run` needs for this lane (written as the lane snapshot by apply)."""
    # Imported here: reading lanes.toml (`lanekit status`) builds no snapshot, and RunSpec is
    # a dataclass created at import (benchmark (i)).
    from lanekit.config.watch import webhook_digest
    from lanekit.state.snapshot import RunSpec, WatchChannels

    watch = lane.watch
    channels = (
        None
        if watch is None
        else WatchChannels(
            notify=watch.notify,
            command=watch.command,
            webhook_sha256=None if watch.webhook is None else webhook_digest(watch.webhook),
            heartbeat_sha256=None if watch.heartbeat is None else webhook_digest(watch.heartbeat),
        )
    )
    return RunSpec(
        lane=lane.name,
        label=lane.label,
        queue_dir=lane.queue.dir,
        command=lane.command,
        max_jobs=lane.max_jobs,
        max_seconds=None if lane.max_seconds is None else float(lane.max_seconds),
        max_attempts=lane.max_attempts,
        stale_after=float(lane.stale_after),
        timeout=None if lane.timeout is None else float(lane.timeout),
        kill_grace=float(lane.kill_grace),
        exit_timeout=DEFAULT_EXIT_TIMEOUT if lane.exit_timeout is None else lane.exit_timeout,
        log_path=lane.log_path,
        durable=lane.queue.durable,
        stdout_path=lane.stdout_path,
        stderr_path=lane.stderr_path,
        keep_done=lane.queue.keep_done,
        max_job_bytes=lane.queue.max_job_bytes,
        keep_failed=lane.queue.keep_failed,
        project=lane.project,
        environment=lane_environment(lane),
        watch=channels,
        plain=lane.plain,
        retry_on_crash=lane.retry_on_crash,
        start_on_enqueue=StartOn.ENQUEUE in lane.start,
    )
