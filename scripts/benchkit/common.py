"""What every figure shares: the Figure, the statistics, progress, and the lane and
queue helpers (scripts/bench.py)."""

from __future__ import annotations

import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lanekit.queue.directory.backend import Queue
from lanekit.state.snapshot import RunSpec

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "scripts" / "bench.py"
"""The entry point: the drain figure starts its workers as `bench.py _worker KIND ...`."""

PY = sys.executable
LANE = "bench"


@dataclass
class Figure:
    """One benchmark figure: a ratio with its target and how it was measured."""

    key: str
    title: str
    ratio: float
    target: str
    met: bool
    detail: list[str] = field(default_factory=list)
    limits: str = ""
    rounds: list[float] = field(default_factory=list)
    """The ratio of each round (the two sides interleaved within it); `ratio` is their median
    where there are several."""

    def spread(self) -> str:
        """The p10-p90 of the round ratios, as shown beside the ratio ('' under 3 rounds)."""
        if len(self.rounds) < 3:
            return ""
        low, high = percentile(self.rounds, 0.1), percentile(self.rounds, 0.9)
        if self.key in "ef":
            return f"{low * 100:.1f}-{high * 100:.1f}%"
        return p10_p90(self.rounds)


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sample."""
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    """A simple nearest-rank percentile, for the spread of a sample."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def p10_p90(ratios: Sequence[float]) -> str:
    """`1.81-3.24x`: the p10 and p90 of a sample of ratios, as every figure shows them."""
    return f"{percentile(ratios, 0.1):.2f}-{percentile(ratios, 0.9):.2f}x"


def say(text: str) -> None:
    """Progress on stderr (stdout carries the summary)."""
    print(text, file=sys.stderr, flush=True)


TRASH = ".trash"
"""Where fresh() puts what an earlier round left, under the bench root; empty_trash() deletes
it once every figure is measured."""


def fresh(root: Path, name: str) -> Path:
    """An empty directory under the bench root. What an earlier round left there is renamed
    into the trash, not deleted: ext4 without a journal (this machine's) skips every inode freed
    in the last 60-360 s when it allocates one, so deleting a round's 40,000 files would make
    each file created in the next minutes cost ~25x (docs/benchmarks.md), charged to whichever
    contender creates files, which is the bench's doing, not the contender's."""
    path = root / name
    if path.exists():
        trash = root / TRASH
        trash.mkdir(exist_ok=True)
        # A directory of its own in the trash: unique whatever an earlier process left there
        # (a bench interrupted before empty_trash, with --dir).
        aside = tempfile.mkdtemp(prefix=f"{name.replace('/', '_')}.", dir=trash)
        path.rename(Path(aside) / "tree")
    path.mkdir(parents=True)
    return path


def empty_trash(root: Path) -> None:
    """Delete what fresh() set aside under `root` (after the last figure: nothing is timed)."""
    shutil.rmtree(root / TRASH, ignore_errors=True)


def fill(queue: Queue, count: int) -> list[str]:
    """Enqueue `count` small jobs (not timed)."""
    return [queue.enqueue({"n": n}) for n in range(count)]


def lane_spec(
    queue_dir: Path, command: Sequence[str], *, max_jobs: int, lane: str = LANE
) -> RunSpec:
    """A lane snapshot for `lanekit run` on `queue_dir`."""
    return RunSpec(
        lane=lane,
        label=f"local.bench.{lane}",
        queue_dir=queue_dir,
        command=tuple(command),
        max_jobs=max_jobs,
        max_seconds=None,
        max_attempts=3,
        stale_after=3600.0,
        exit_timeout=5,
        log_path=queue_dir / "logs" / f"{lane}.log",
        durable=False,
        log_max_bytes=0,
    )


def timed(
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    *,
    cwd: Path | None = None,
    check: bool = False,
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one process run to completion (output
    discarded; `check`: a failed run raises)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check, env=env, cwd=cwd
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def run_cmd(argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one process run to completion (output discarded)."""
    return timed(argv, env)[0]


ROUND = 10
"""Interleaved runs of each side in one round of a startup figure."""


def round_ratios(side: Sequence[float], base: Sequence[float]) -> list[float]:
    """Each round's ratio: the median of ROUND runs of `side` over the median of the ROUND
    runs of `base` interleaved with them."""
    return [
        median(side[at : at + ROUND]) / median(base[at : at + ROUND])
        for at in range(0, len(side), ROUND)
    ]


LANEKIT = (
    [str(Path(PY).parent / "lanekit")]
    if (Path(PY).parent / "lanekit").exists()
    else [
        PY,
        "-m",
        "lanekit",
    ]
)
"""The console script users run (python -m lanekit when it is not installed beside PY)."""
