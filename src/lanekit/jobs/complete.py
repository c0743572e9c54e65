"""Shell completion of lane names and job ids, from the installed snapshots and listings of
their queues (lanekit.jobs.installed, lanekit.queue.job_ids).

Completion runs on every TAB, in a fresh interpreter, inside the command being completed
(lanekit.cli.options has the callbacks): it must stay instant, so it imports neither lanes.toml
nor the queue machinery nor the core of the command, only builtin modules and these lean
readers. Lanes come from what `apply` installed for the project here (or every project, away
from one); a lane only in lanes.toml is not offered until it is applied.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def lane_names(prefix: str = "") -> list[str]:
    """The installed lanes' names starting with `prefix`, sorted, each once."""
    from lanekit.jobs.installed import installed_lanes

    names = {spec["lane"] for spec in installed_lanes()}
    return sorted(n for n in names if isinstance(n, str) and n.startswith(prefix))


def job_ids(lanes: Iterable[str], states: tuple[str, ...], prefix: str = "") -> list[str]:
    """The ids starting with `prefix` of the jobs in `states` (lanekit.queue.job_ids) in the
    queues of `lanes` (every installed lane's when none is named), sorted, each once."""
    from lanekit.jobs.installed import installed_lanes
    from lanekit.queue import job_ids as listed

    wanted = set(lanes)
    queues = {
        spec["queue_dir"]
        for spec in installed_lanes()
        if isinstance(spec["queue_dir"], str) and (not wanted or spec["lane"] in wanted)
    }
    return sorted({job_id for queue in queues for job_id in listed(queue, states, prefix)})
