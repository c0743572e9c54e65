"""Install the broken example and plant the problems that live in run state, for real.

    python examples/broken/plant.py            # then:
    lanekit doctor -c examples/broken/lanes.toml --all

lanes.toml and plists/ carry the problems that are written down (a command missing from a
lane's PATH, colliding schedules, `~` in a hand-written plist...). This script adds the ones
that happen: it applies the lanes (emulated launchd off macOS), queues a burst, leaves a job
claimed by a runner that died, fails a job, records a job done twice, deletes a log directory
and kicks that lane (launchd: exit 78), backdates one lane's install so its last fire was
missed, and copies the hand-written plists into the LaunchAgents directory (one of them 0666).

`plant()` returns what doctor must report: (check id, subject) pairs. tests/test_doctor.py runs
it against a temporary home and checks that every one is found, with its fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lanekit.config import find_config, load_config
from lanekit.run.lanelog import LaneLog
from lanekit.service.launchd import open_launchd
from lanekit.state.paths import Paths
from lanekit.queue import open_queue
from lanekit.reconcile import apply

HERE = Path(__file__).resolve().parent
BURST = 30
"""Jobs queued for the background lane (seed 001 had 57 after an outage)."""

PLANTED_LANES = (
    ("path.command-missing", "notify"),
    ("lane.missed-run", "notify"),
    ("schedule.collision", "funnel"),
    ("schedule.collision", "funnel-pm"),
    ("queue.duplicate-success", "notes"),
    ("env.unexpanded", "bulk"),
    ("priority.background-burst", "bulk"),
    ("logs.dir-missing", "reports"),
    ("launchd.exit-78", "reports"),
    ("queue.stale-claim", "reports"),
    ("queue.failed-jobs", "reports"),
)
"""Problems of the lanes in lanes.toml, and of the queues they drain (`queue.*` ids: the
subject is the queue, reported once however many lanes drain it)."""

PLANTED_PLISTS = (
    ("program.missing", "com.example.codex-note-funnel.plist"),
    ("env.unexpanded", "com.example.codex-note-funnel.plist"),
    ("env.path-unset", "com.example.codex-note-funnel.plist"),
    ("logs.dir-missing", "com.example.codex-note-funnel.plist"),
    ("workdir.default-root", "com.example.codex-note-funnel.plist"),
    ("schedule.every-minute", "com.example.nightly-report.plist"),
    ("schedule.out-of-range", "com.example.nightly-report.plist"),
    ("schedule.interval-below-throttle", "com.example.nightly-report.plist"),
    ("plist.label-mismatch", "cleanup-job.plist"),
    ("plist.permissions", "cleanup-job.plist"),
)
"""Problems of the hand-written plists in plists/ (the subject is the installed file)."""

_DIE_HOLDING_A_JOB = """
import os, sys
from lanekit.queue import open_queue
claim = open_queue(sys.argv[1]).claimer(lane="reports").claim()
os._exit(0 if claim is not None else 3)  # no settle, no release: as if killed mid-job
"""


def plant(config_path: Path, paths: Paths) -> list[tuple[str, str]]:
    """Apply the example and plant its run-state problems; the (id, subject) pairs to expect."""
    config = load_config(config_path, paths)
    launchd = open_launchd(paths)
    apply(config, paths, launchd, install_anyway=True)  # its missing commands are planted too
    lanes = config.lanes

    # lane.missed-run: installed two days ago (as far as launchd's fires are concerned).
    notify = paths.plist_for(lanes["notify"].label)
    two_days_ago = time.time() - 2 * 86400
    os.utime(notify, (two_days_ago, two_days_ago))

    # priority.background-burst: a burst waits for a Nice 10, low-priority lane.
    bulk = open_queue(lanes["bulk"].queue.dir)
    for n in range(BURST):
        bulk.enqueue({"note": n})

    # queue.stale-claim: a process claims a job and dies without settling it.
    reports = open_queue(lanes["reports"].queue.dir)
    reports.enqueue({"report": "weekly"}, job_id="weekly-report")
    subprocess.run(
        [sys.executable, "-c", _DIE_HOLDING_A_JOB, str(lanes["reports"].queue.dir)], check=True, timeout=60
    )
    # queue.failed-jobs: a job that ran out of attempts.
    reports.enqueue({"report": "broken"}, job_id="broken-report")
    claim = reports.claimer(lane="reports").claim()
    assert claim is not None
    reports.fail(claim, "exit 1: report template not found")

    # queue.duplicate-success: one note done by two lanes (the seed's double processing).
    for name in ("funnel", "funnel-pm"):
        LaneLog(lanes[name].log_path, name).event("done", job="note-0917", exit=0)

    # logs.dir-missing + launchd.exit-78: launchd cannot open the lane's log files.
    shutil.rmtree(lanes["reports"].stdout_path.parent)
    launchd.kickstart(lanes["reports"].label)

    # Hand-written plists, as another tool (or a person) would leave them.
    paths.launch_agents.mkdir(parents=True, exist_ok=True)
    installed: dict[str, Path] = {}
    for source in sorted((HERE / "plists").glob("*.plist")):
        target = paths.launch_agents / source.name
        shutil.copyfile(source, target)
        target.chmod(0o666 if source.name == "cleanup-job.plist" else 0o644)
        installed[source.name] = target

    return [*PLANTED_LANES, *((i, str(installed[name])) for i, name in PLANTED_PLISTS)]


def main() -> None:
    """`python examples/broken/plant.py [lanes.toml]`: plant, then say what to run."""
    paths = Paths.from_env()
    option = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "lanes.toml"
    config_path = find_config(option, os.environ, paths.cwd)
    planted = plant(config_path, paths)
    for check_id, subject in planted:
        sys.stdout.write(f"planted {check_id:<34} {subject}\n")
    sys.stdout.write(f"now run: lanekit doctor -c {config_path} --all\n")


if __name__ == "__main__":
    main()
