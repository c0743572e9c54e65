#!/usr/bin/env python3
"""Benchmarks of the queue and the lane entrypoint (issue 3); ratios measured in one run.

    scripts/bench.py                  # the full run (several minutes)
    scripts/bench.py --quick          # a small smoke run
    scripts/bench.py --write-docs     # the full run, then rewrite docs/benchmarks.md
    scripts/bench.py --only de --repeat 5   # 5x the interleaved rounds: median and p10-p90

(a) claim+complete through the library vs the protocol's minimum in a tight loop (the floor);
(b) 8 processes draining 20,000 jobs: lanekit library vs dirq QueueSimple vs litequeue (SQLite)
    (+ persist-queue SQLiteAckQueue, which duplicates across processes), and 8 `lanekit run`
    processes end to end vs a bash worker in the style of the seeds (mv per job, spawn per job);
    lost and duplicated jobs are counted for every contender;
(c) `lanekit run` on an empty queue vs `python -c pass` (same interpreter, median of many);
(d) one run of 20 jobs at a backlog of 100 vs 100,000;
(e) `lanekit jobs` page 1 over 100,000 records vs reading every record;
(f) `lanekit timeline --day`: one day of a busy lane's log out of many vs reading it all;
(g) `lanekit enqueue LANE --jsonl FILE` per job vs a loop of single `lanekit enqueue` calls;
(h) `lanekit --version` vs `python -c "import typer"` (with `--help` and completion beside it);
(i) `lanekit status` on 5 lanes vs `python -c "import typer"`;
(j) one `lanekit watch` pass over 20 lanes vs `lanekit doctor` over the same lanes, and a pass
    over 100 lanes in CPU as a share of one CPU at the default `every` (5 min);
(k) `lanekit status` and `lanekit doctor` at 100 lanes vs at 1 lane;
(l) a single `lanekit enqueue` of an installed lane vs `python -c pass`, in CPU.
(p, q, r, t) the postgres queue, on the server `--pg CONNINFO` names (password from
    PGPASSFILE): claim+settle jobs/s at 1/2/4/8 workers vs a procrastinate-style and a
    pg-boss-style claim, a run at a backlog of 100 vs 100,000, an empty run's CPU vs
    `python -c pass`, `jobs` page 1 over 100,000 finished jobs vs reading them all
    (scripts/benchkit/postgres.py; `--only pqrt --pg "host=... user=... dbname=..."`).
(s) `lanekit status` on 5 systemd lanes vs `python -c "import typer"`, on a real user manager
    (root: tests/usermanager.py), with the daemon-reloads of applying 20 lanes.

Timings only; nothing here is a test (tests never assert timings). Needs the `bench` extra
(dirq, litequeue, persist-queue) for (b).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from benchkit.common import Figure, empty_trash, say
from benchkit.cycle import bench_cycle
from benchkit.drain import bench_drain, worker_main
from benchkit.interactive import bench_cli_startup, bench_enqueue, bench_single_enqueue
from benchkit.report import DOCS, GROUPS, machine_info, render, write_docs
from benchkit.scale import bench_scale
from benchkit.startup import bench_backlog, bench_paging, bench_startup
from benchkit.systemd import bench_systemd
from benchkit.timeline import bench_timeline
from benchkit.watchpass import bench_watch


def parse_options(args_list: list[str]) -> argparse.Namespace:
    """The command line (a count of rounds below 1 is refused)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/benchmarks.md")
    parser.add_argument("--dir", type=Path, default=None, help="work dir (default: temp dir)")
    parser.add_argument("--only", default="abcdefghijkl", help="which figures, e.g. --only ce")
    parser.add_argument("--workers", type=int, default=8, help="processes for (b)")
    parser.add_argument(
        "--pg",
        default=None,
        metavar="CONNINFO",
        help="the PostgreSQL server for (p), (q), (r): a conninfo without a password",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="N times the interleaved rounds of (a), (c), (d), (e), (f) and of (b)'s lanekit vs "
        "dirq drain; each figure reports the median of its rounds' ratios and their p10-p90",
    )
    args = parser.parse_args(args_list)
    if args.repeat < 1:
        parser.error("--repeat takes a count of at least 1")
    return args


def sizes_for(*, quick: bool, repeat: int) -> dict[str, int]:
    """Each figure's sizes and rounds: the full run's, or a smoke run's (--quick)."""
    return {
        "cycle": 2_000 if quick else 20_000,
        "rounds": (3 if quick else 5) * repeat,
        "drain": 2_000 if quick else 20_000,
        "e2e": 400 if quick else 20_000,
        "startup": (10 if quick else 60) * repeat,
        "backlog": 10_000 if quick else 100_000,
        "backlog_runs": (3 if quick else 5) * repeat,
        "paging": 10_000 if quick else 100_000,
        "paging_runs": 3 * repeat,
        "timeline_days": 10 if quick else 60,
        "timeline_per_day": 2_000 if quick else 2_880,
        "timeline_runs": 3 * repeat,
        "singles": 6 if quick else 20,
        "jsonl": 200 if quick else 1_000,
        "jsonl_runs": 3 if quick else 5,
        "cli_runs": 5 if quick else 20,
        "watch_records": 2_000 if quick else 20_000,
        "watch_log_lines": 200 if quick else 2_000,
        "watch_runs": 3 if quick else 5,
        "share_lanes": 20 if quick else 100,
        "share_records": 2_000 if quick else 50_000,
        "share_log_lines": 200 if quick else 2_000,
        "scale_lanes": 100,
        "scale_runs": 3 if quick else 7,
        "single_runs": (10 if quick else 60) * repeat,
        "pg_claims": 2_000 if quick else 10_000,
        "pg_backlog": 10_000 if quick else 100_000,
        "pg_backlog_runs": 3 if quick else 5,
        "pg_startup": 10 if quick else 30,
    }


def measure(
    root: Path, args: argparse.Namespace, sizes: dict[str, int]
) -> tuple[list[Figure], list[str]]:
    """The figures `--only` asks for, in order, and (b)'s table."""
    repeat = args.repeat
    figures: list[Figure] = []
    table: list[str] = []
    if "a" in args.only:
        say("(a) claim+complete vs floor")
        figures.append(bench_cycle(root, sizes["cycle"], sizes["rounds"]))
    if "b" in args.only:
        say("(b) draining")
        fig, table = bench_drain(root, sizes["drain"], sizes["e2e"], args.workers, repeat)
        figures.append(fig)
    if "c" in args.only:
        say("(c) start-up")
        figures.append(bench_startup(root, sizes["startup"]))
    if "d" in args.only:
        say("(d) backlog")
        figures.append(bench_backlog(root, 100, sizes["backlog"], sizes["backlog_runs"]))
    if "e" in args.only:
        say("(e) paging")
        figures.append(bench_paging(root, sizes["paging"], sizes["paging_runs"]))
    if "f" in args.only:
        say("(f) timeline day")
        figures.append(
            bench_timeline(
                root, sizes["timeline_days"], sizes["timeline_per_day"], sizes["timeline_runs"]
            )
        )
    if "g" in args.only:
        say("(g) enqueue --jsonl")
        figures.append(bench_enqueue(root, sizes["singles"], sizes["jsonl"], sizes["jsonl_runs"]))
    if "h" in args.only or "i" in args.only:
        say("(h, i) CLI start-up")
        version, status = bench_cli_startup(root, sizes["cli_runs"])
        figures += [fig for fig in (version, status) if fig.key in args.only]
    if "j" in args.only:
        say("(j) watch pass")
        figures.append(
            bench_watch(
                root,
                sizes["watch_records"],
                sizes["watch_log_lines"],
                sizes["watch_runs"],
                (sizes["share_lanes"], sizes["share_records"], sizes["share_log_lines"]),
            )
        )
    if "k" in args.only:
        say("(k) status and doctor at scale")
        figures.append(bench_scale(root, sizes["scale_lanes"], sizes["scale_runs"]))
    if "l" in args.only:
        say("(l) a single enqueue")
        figures.append(bench_single_enqueue(root, sizes["single_runs"]))
    if set("pqrt") & set(args.only):
        figures += _postgres(root, args, sizes)
    if "s" in args.only:
        say("(s) status on systemd lanes")
        figures.append(bench_systemd(root, sizes["cli_runs"]))
    return figures, table


def _postgres(root: Path, args: argparse.Namespace, sizes: dict[str, int]) -> list[Figure]:
    """(p), (q), (r), (t): the postgres queue's figures (they need --pg)."""
    from benchkit.postgres import (
        bench_pg_backlog,
        bench_pg_claims,
        bench_pg_paging,
        bench_pg_startup,
    )

    if args.pg is None:
        say("(p, q, r, t) need --pg CONNINFO (a PostgreSQL server): skipped")
        return []
    figures = []
    if "p" in args.only:
        say("(p) postgres claim+settle")
        figures.append(bench_pg_claims(root, args.pg, sizes["pg_claims"]))
    if "q" in args.only:
        say("(q) postgres backlog")
        figures.append(
            bench_pg_backlog(root, args.pg, 100, sizes["pg_backlog"], sizes["pg_backlog_runs"])
        )
    if "r" in args.only:
        say("(r) postgres empty run")
        figures.append(bench_pg_startup(root, args.pg, sizes["pg_startup"]))
    if "t" in args.only:
        say("(t) postgres jobs pages")
        figures.append(bench_pg_paging(root, args.pg, sizes["pg_backlog"], sizes["paging_runs"]))
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print (and optionally write) the report."""
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["_worker"]:
        return worker_main(*args_list[1:4])
    args = parse_options(args_list)
    sizes = sizes_for(quick=args.quick, repeat=args.repeat)
    quick = args.quick
    command = " ".join(["scripts/bench.py", *args_list])
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="lanekit-bench-") as tmp:
        root = args.dir if args.dir is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        figures, table = measure(root, args, sizes)
        info = machine_info(root)
        load_after = os.getloadavg()  # before the trees are deleted (not measured)
        empty_trash(root)
    info.append(
        f"- load average (1/5/15 min) before: {load_before[0]:.2f}/{load_before[1]:.2f}/"
        f"{load_before[2]:.2f}, after: {load_after[0]:.2f}/{load_after[1]:.2f}/"
        f"{load_after[2]:.2f}"
    )
    whole = [keys for keys in GROUPS if set(keys) <= set(args.only)]
    for keys, group in GROUPS.items():
        chosen = [fig for fig in figures if fig.key in keys]
        if not chosen:
            continue
        section = render(chosen, table, info, command, group)
        print(section)
        if args.write_docs and keys in whole and not quick:
            write_docs(section, group)
            say(f"wrote {DOCS} ({group[2].lower()})")
    if args.write_docs and (quick or not whole):
        say("--write-docs needs whole groups (abcdef, ghi) without --quick; docs left alone")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
