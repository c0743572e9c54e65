"""(g), (h), (i): the interactive commands (enqueue --jsonl, --version, status)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchkit.common import LANEKIT, PY, REPO, Figure, fresh, median, round_ratios, run_cmd, timed


def cli_world(root: Path, lanes: int, name: str = "cli") -> tuple[Path, dict[str, str]]:
    """A lanes.toml with `lanes` lanes on one queue, applied in an emulated domain under
    `root / name`: (its path, the environment that points lanekit there)."""
    where = fresh(root, name)
    env = {
        **os.environ,
        "LANEKIT_STATE_DIR": str(where / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(where / "state" / "LaunchAgents"),
        "LANEKIT_LAUNCHD": "emulated",
        "NO_COLOR": "1",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    text = f'[defaults]\nlabel_prefix = "local.bench"\n\n[queues.q]\ndir = "{where / "q"}"\n'
    for n in range(lanes):
        text += (
            f'\n[lanes.l{n}]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n'
            f'schedule = "{n % 60} {3 + n // 60} * * *"\n'
        )
    config = where / "lanes.toml"
    config.write_text(text, encoding="utf-8")
    subprocess.run([*LANEKIT, "apply", "-c", str(config)], env=env, check=True, capture_output=True)
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "src" / "lanekit")], check=False)
    return config, env


def bench_enqueue(root: Path, singles: int, lines: int, runs: int) -> Figure:
    """(g): per job, one `lanekit enqueue --jsonl` of `lines` lines vs single enqueues."""
    config, env = cli_world(root, 1)
    job = config.parent / "job.json"
    job.write_text('{"n": 0}\n', encoding="utf-8")
    jsonl = config.parent / "jobs.jsonl"
    jsonl.write_text("".join(f'{{"n": {n}}}\n' for n in range(lines)), encoding="utf-8")
    single = [*LANEKIT, "enqueue", "l0", str(job), "-c", str(config)]
    batch = [*LANEKIT, "enqueue", "l0", "--jsonl", str(jsonl), "-c", str(config)]
    run_cmd(single, env)  # warm the page cache
    one, many = [], []
    for _ in range(runs):
        one += [run_cmd(single, env) for _ in range(singles // runs or 1)]
        many.append(run_cmd(batch, env) / lines)
    ratio = median(one) / median(many)
    return Figure(
        key="g",
        title=f"`lanekit enqueue --jsonl` ({lines:,} lines) vs single `lanekit enqueue` calls, "
        "per job",
        ratio=ratio,
        target=">= 50x",
        met=ratio >= 50,
        detail=[
            f"single enqueue: {median(one) * 1e3:.1f} ms per job ({len(one)} calls, median); "
            f"--jsonl: {median(many) * 1e6:.0f} us per job ({runs} runs of {lines:,} lines, "
            "start-up included, median); the queue is durable (the default: fsyncs per job)",
        ],
        limits="A single enqueue is an interpreter start plus the CLI's imports; --jsonl pays "
        "that once, then per line a JSON check, a tmp file, a no-replace rename and its queued "
        "record, with the durable queue's fsyncs (file and directory) for each.",
    )


def bench_cli_startup(root: Path, runs: int) -> tuple[Figure, Figure]:
    """(h) `lanekit --version` and (i) `lanekit status` on 5 lanes, each vs `python -c "import
    typer"`, interleaved; `--help` and completing a command name are shown beside (g)."""
    config, env = cli_world(root, 5)
    complete = {**env, "_LANEKIT_COMPLETE": "complete_bash", "COMP_WORDS": "lanekit sta"}
    complete["COMP_CWORD"] = "1"
    commands = {
        "version": ([*LANEKIT, "--version"], env),
        "help": ([*LANEKIT, "--help"], env),
        "complete": (LANEKIT, complete),
        "status": ([*LANEKIT, "status", "-c", str(config)], env),
    }
    times: dict[str, list[float]] = {name: [] for name in (*commands, "typer")}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    for argv, cmd_env in commands.values():  # warm the page cache
        run_cmd(argv, cmd_env)
    baseline = ([PY, "-c", "import typer"], env)
    for _ in range(runs):
        for name, (argv, cmd_env) in {"typer": baseline, **commands}.items():
            wall, used = timed(argv, cmd_env)
            times[name].append(wall)
            cpu[name].append(used)
    typer_ms = median(times["typer"])

    def rounds(name: str) -> list[float]:
        """Each round's ratio to the typer run just before it (one sample of each, so a drift
        of the machine across the run moves both sides of a ratio alike)."""
        return [t / base for t, base in zip(times[name], times["typer"], strict=True)]

    def x(name: str) -> float:
        return median(rounds(name))

    def x_cpu(name: str) -> float:
        return median(cpu[name]) / median(cpu["typer"])

    typer_text = f'`python -c "import typer"`: {typer_ms * 1e3:.1f} ms'
    version = Figure(
        key="h",
        title='`lanekit --version` vs `python -c "import typer"`',
        ratio=x("version"),
        target="<= 1.5x",
        met=x("version") <= 1.5,
        rounds=rounds("version"),
        detail=[
            f"`lanekit --version`: {median(times['version']) * 1e3:.1f} ms; {typer_text}; "
            f"{runs} rounds, each ratio against the round's own typer run, median; in CPU time "
            f"(user + system of the process) {x_cpu('version'):.2f}x",
            f"`lanekit --help`: {x('help'):.2f}x; completing `lanekit sta<TAB>`: "
            f"{x('complete'):.2f}x (no command module is imported for either: "
            "tests/cli/test_registry.py)",
        ],
        limits="typer itself: lanekit.cli imports typer, the command registry and the error "
        "types; a command's module (and rich, json, the core) is imported only when that "
        "command runs or its options are completed.",
    )
    status = Figure(
        key="i",
        title='`lanekit status` on 5 lanes vs `python -c "import typer"`',
        ratio=x("status"),
        target="<= 2x",
        met=x("status") <= 2,
        rounds=rounds("status"),
        detail=[
            f"`lanekit status` (5 lanes, emulated launchd): {median(times['status']) * 1e3:.1f} "
            f"ms; {typer_text}; {runs} rounds, each ratio against the round's own typer run, "
            f"median; in CPU time (user + system of the process) {x_cpu('status'):.2f}x",
        ],
        limits="lanekit's own imports (63 modules; most of their cost is creating the 23 "
        "dataclasses they define, ~0.5-1 ms each on Python 3.11: the schedule and config "
        "models, the emulated domain, the queue's counts, the status rows), lanes.toml "
        "(tomllib), and one observation of the emulated domain for all lanes (on a Mac, "
        "`launchctl print` processes, not measured here). Reading lanes.toml builds no "
        "snapshot and looks for no collision, counting a queue reads no record and "
        "classifies no claim, and no pattern of a parser status does not run is compiled "
        "(tests/cli/test_registry.py pins each). Whether a lane is paused is asked of "
        "lanekit.state.paths, beside the marker's path: reconcile (plan, apply, observe, "
        "stopper, kick; 20 modules and 20 dataclasses) is not imported. typer's coercion "
        "does not import pydantic for flag, str and Path parameters (lanekit.cli.coercion), "
        "off a terminal the table is written without rich, the queue package imports its "
        "claim, settle, recovery and enqueue paths only when they are used, the emulated "
        "domain keeps each job's `print` definition from bootstrap (no plist parser on a "
        "read, as launchd parses a plist once), and describing an exit does not load the "
        "launchctl parsers.",
    )
    return version, status


def bench_single_enqueue(root: Path, runs: int) -> Figure:
    """(l): the CPU of one `lanekit enqueue LANE FILE` of an installed lane (from its project's
    directory, the durable default queue) vs `python -c pass`, interleaved."""
    config, env = cli_world(root, 1, "single")
    job = config.parent / "job.json"
    job.write_text('{"n": 0}\n', encoding="utf-8")
    single = [*LANEKIT, "enqueue", "l0", str(job)]
    base = [PY, "-c", "pass"]

    def cpu(argv: list[str]) -> float:
        return timed(argv, env, cwd=config.parent, check=True)[1]

    for _ in range(3):  # warm the page cache
        cpu(single)
        cpu(base)
    ones, bases = [], []
    for _ in range(runs):
        bases.append(cpu(base))
        ones.append(cpu(single))
    # A round is 10 interleaved runs of each side, its ratio the ratio of their medians.
    per_round = round_ratios(ones, bases)
    ratio = median(per_round)
    return Figure(
        key="l",
        title="a single `lanekit enqueue` (installed lane) vs `python -c pass`, CPU",
        ratio=ratio,
        target="<= 1.5x",
        met=ratio <= 1.5,
        rounds=per_round,
        detail=[
            f"single enqueue: {median(ones) * 1e3:.1f} ms CPU (user + system); python -c pass: "
            f"{median(bases) * 1e3:.1f} ms; {runs} runs each, interleaved; the ratio is the "
            f"median of {len(per_round)} rounds' (10 runs each side, ratio of medians)",
        ],
        limits="The interpreter, then 28 small lanekit modules and 5 builtin or tiny ones "
        "(tests/jobs/test_add.py pins the set: no ctypes, no collections), most of the rest: "
        "about 0.35x. Then the installed snapshot and the emulated domain's clock read "
        "without json; the queue's checks (ownership, mode and type of each directory, volume "
        "and mounts from /proc/self/mountinfo, the probe's kept verdict in .queue-check "
        "compared); the durable write: job and record fsynced, each published by link + "
        "unlink, two directory fsyncs. The objects the imports made are frozen out of the "
        "shutdown's garbage collection.",
    )
