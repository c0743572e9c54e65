"""(k) `lanekit status` and `lanekit doctor` at 100 lanes vs at 1 lane (issue 31)."""

from __future__ import annotations

from pathlib import Path

from benchkit.common import LANEKIT, Figure, median, run_cmd, timed
from benchkit.interactive import cli_world

TARGET = 2.0
"""At most twice the 1-lane cost: one observation of the service manager per command, and no
check whose cost grows with the square of the lane count."""


def bench_scale(root: Path, lanes: int, runs: int) -> Figure:
    """(k): each command at `lanes` lanes over its cost at 1 lane, interleaved, in CPU time of
    the process (user + system: the machine is shared, wall time swings with its load)."""
    small, small_env = cli_world(root, 1, "scale-1")
    large, large_env = cli_world(root, lanes, f"scale-{lanes}")
    commands = {
        (verb, size): ([*LANEKIT, verb, "-c", str(config)], env)
        for verb in ("status", "doctor")
        for size, (config, env) in {1: (small, small_env), lanes: (large, large_env)}.items()
    }
    for argv, env in commands.values():  # warm the page cache
        run_cmd(argv, env)
    cpu: dict[tuple[str, int], list[float]] = {key: [] for key in commands}
    wall: dict[tuple[str, int], list[float]] = {key: [] for key in commands}
    for _ in range(runs):
        for key, (argv, env) in commands.items():
            took, used = timed(argv, env)
            wall[key].append(took)
            cpu[key].append(used)

    def ratio(verb: str) -> float:
        return median(cpu[verb, lanes]) / median(cpu[verb, 1])

    def ms(verb: str, size: int) -> str:
        used, took = median(cpu[verb, size]), median(wall[verb, size])
        return f"{used * 1e3:.0f} ms CPU ({took * 1e3:.0f} ms wall)"

    worst = max(ratio("status"), ratio("doctor"))
    return Figure(
        key="k",
        title=f"`lanekit status` and `lanekit doctor` at {lanes} lanes vs 1 lane (the worse)",
        ratio=worst,
        target=f"<= {TARGET:g}x",
        met=worst <= TARGET,
        detail=[
            f"status: {ratio('status'):.2f}x ({ms('status', lanes)} vs {ms('status', 1)})",
            f"doctor: {ratio('doctor'):.2f}x ({ms('doctor', lanes)} vs {ms('doctor', 1)})",
            f"{runs} interleaved rounds, medians of the CPU time (user + system) of each "
            "command; emulated launchd, lanes on one queue, each with a daily schedule",
        ],
        limits="what is per lane by nature: rendering each lane's plist and snapshot to compare "
        "with what is installed (doctor), its schedule's next fire and English (status), and "
        "each lane's own files; the service manager is observed once for all lanes.",
    )
