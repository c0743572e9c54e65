#!/usr/bin/env python3
"""Chaos run: many `lanekit run` processes, started again and again as launchd would, while a
random one (or its job watcher, or both together, as one `pkill -9 -f 'lanekit run'` does) is
SIGKILLed, or SIGSTOPped and continued, every few milliseconds. Checks that no job is lost,
none succeeds twice, no two copies of one job ever run at once, and no job fails because a
process of lanekit's died.

    scripts/chaos.py --jobs 20000 --runners 8 --kill-every-ms 200 --seed 1
    scripts/chaos.py --hostile --kinds runner,watcher,both,stop --jobs 2000 --work-ms 100
    scripts/chaos.py --hostile --kinds both --unprotected ...   # the control: must fail

Each job's command appends `start <id>` to a ledger, works a little (so most kills land while
a job runs), then appends `end <id>` (each line one O_APPEND write), so executions and their
overlaps are counted independently of lanekit's own bookkeeping. With --hostile the jobs are
the ones that defeat a lock held by descriptor or process group: by job number they close
every descriptor, leave their session (setsid), fork a daemon that does the work, ignore
SIGTERM, or do none of that; the worker takes a per-job flock before its `start` line and
writes `busy <id>` when another live copy holds it, and every line carries the monotonic time.
--unprotected runs the runners with lanekit.queue.outcome.COPIES_KEEP_CLAIM off: the control,
which must show overlaps, or this run proves nothing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.recordstore import RecordStore
from lanekit.run.lanelog import read_events
from lanekit.state.snapshot import RunSpec

LANE = "chaos"
# The job: "start <id>", some work, "end <id>", each line one write (printf, O_APPEND).
JOB_SCRIPT = (
    'printf "start %s\\n" "$LANEKIT_JOB_ID" >> "$1"; {work}'
    'printf "end %s\\n" "$LANEKIT_JOB_ID" >> "$1"'
)


def job_script(work_ms: int) -> str:
    """The job, working `work_ms` between its two ledger lines (0: no sleep process at all)."""
    return JOB_SCRIPT.format(work=f"sleep {work_ms / 1000:.3f}; " if work_ms > 0 else "")


HOSTILE_MODES = ("plain", "closefds", "setsid", "daemon", "ignoreterm")
HOSTILE_JOB = """
import fcntl, os, signal, sys, time
ledger, locks, work = sys.argv[1], sys.argv[2], float(sys.argv[3])
jid = os.environ["LANEKIT_JOB_ID"]
mode = int(jid.rsplit("-", 1)[1]) % 5
def line(kind, extra=""):
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND)
    os.write(fd, f"{kind} {jid} {time.monotonic():.6f}{extra}\\n".encode())
    os.close(fd)
def work_once():
    fd = os.open(f"{locks}/{jid}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        line("busy")  # another copy of this job is alive and working
        fcntl.flock(fd, fcntl.LOCK_EX)
    line("start")
    # A SIGTERM during the work is taken by sigtimedwait to note who sent it (`term <id> <t>
    # <sender pid>`), then acted on as before: death by SIGTERM, or ignored in mode 4.
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    end = time.monotonic() + work
    while (left := end - time.monotonic()) > 0:
        got = signal.sigtimedwait([signal.SIGTERM], left)
        if got is None:
            continue
        line("term", f" {got.si_pid}")
        if mode != 4:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    line("end")
if mode == 1:  # closes every descriptor it was given
    os.closerange(0, 65536)
    work_once()
elif mode == 2:  # the work leaves the job's process group and session
    child = os.fork()
    if child == 0:
        os.setsid()
        work_once()
        os._exit(0)
    os.waitpid(child, 0)
elif mode == 3:  # a daemon (double fork, setsid, descriptors closed) does the work
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(0, r)
            os.closerange(r + 1, w)
            os.closerange(w + 1, 65536)
            os.close(r)
            work_once()
            os._exit(0)
        os._exit(0)
    os.close(w)
    while os.read(r, 1):  # EOF once the daemon has exited
        pass
elif mode == 4:  # ignores SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    work_once()
else:
    work_once()
"""
"""The hostile job (mode by the job's id, which ends in the enqueue serial)."""


@dataclass(frozen=True, slots=True)
class ChaosResult:
    """What a chaos run observed."""

    jobs: int
    runners: int
    kill_every_ms: int
    seed: int
    runs_started: int
    kills: int
    seconds: float
    done: int
    failed: int
    lost: int
    succeeded_twice: int
    done_without_record: int
    done_without_execution: int
    executions: int
    executions_beyond_one: int
    recovered_events: int
    lanes_that_finished_jobs: int
    """How many of the runner lanes settled jobs: the drain was shared, not serialised."""
    overlapping: int = 0
    """Jobs seen running twice at the same time (a `start` while an earlier one had no `end`)."""
    settled_by_status: int = 0
    """Recoveries that settled a job by the exit status its watcher recorded."""
    kills_by_kind: dict[str, int] = field(default_factory=dict)
    """How many times each kind of kill struck (runner, watcher, both, stop)."""
    protected: bool = True
    """False for the control run (lanekit.queue.outcome.COPIES_KEEP_CLAIM off)."""

    @property
    def reexecution_ratio(self) -> float:
        """Executions beyond the first, per kill (the target is at most 5%)."""
        return self.executions_beyond_one / self.kills if self.kills else 0.0

    @property
    def ok(self) -> bool:
        """No loss, no double success, nothing reported done that never ran."""
        return (
            self.lost == 0
            and self.succeeded_twice == 0
            and self.done_without_execution == 0
            and self.done_without_record == 0
            and self.failed == 0
            and self.overlapping == 0
        )


def make_spec(
    root: Path,
    *,
    lane: str,
    max_jobs: int,
    stale_after: float,
    work_ms: int = 20,
    hostile: bool = False,
) -> RunSpec:
    """One of the lanes that drain the chaos queue (a snapshot file, as `apply` would write).

    Every runner slot is its own lane on the one queue, as in the seed's five lanes: each has
    its own lane lock, so the runners really claim side by side (runners of ONE lane would
    take turns on its lock and never race)."""
    ledger = root / "ledger.txt"
    if hostile:
        command: tuple[str, ...] = (
            sys.executable,
            "-I",
            "-S",
            "-c",
            HOSTILE_JOB,
            str(ledger),
            str(root / "locks"),
            f"{work_ms / 1000:.3f}",
        )
    else:
        command = ("/bin/sh", "-c", job_script(work_ms), "chaos-job", str(ledger))
    return RunSpec(
        lane=lane,
        label=f"local.chaos.{lane}",
        queue_dir=root / "queue",
        command=command,
        max_jobs=max_jobs,
        max_seconds=None,
        # One attempt: a job's only failure would be a crash of lanekit's counted as its own
        # (nothing else fails these jobs), and it would land in failed/, which the verdict
        # counts.
        max_attempts=1,
        stale_after=stale_after,
        exit_timeout=5,
        log_path=root / "queue" / "logs" / f"{lane}.log",
        durable=False,
        log_max_bytes=0,  # keep one log: the checker reads every `done` event
    )


def _done_ids(queue: Queue) -> collections.Counter[str]:
    """Job ids in done/ (bucketed by day), counted: a count above 1 is a double success."""
    found: collections.Counter[str] = collections.Counter()
    for path in queue.done.rglob("*.json"):
        found[path.name.split(".", 1)[0]] += 1
    return found


def _failed_ids(queue: Queue) -> set[str]:
    return {path.name.split(".", 1)[0] for path in queue.failed.rglob("*.json")}


def read_ledger(text: str) -> tuple[collections.Counter[str], set[str]]:
    """(executions per job, jobs that had two copies running at once) from the ledger's
    `start <id>` / `end <id>` lines (a monotonic time may follow the id), in the order they
    were appended, and `busy <id>`: a copy found another one holding the job's lock."""
    starts: collections.Counter[str] = collections.Counter()
    running: collections.Counter[str] = collections.Counter()
    overlapping: set[str] = set()
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        job = rest.split(" ", 1)[0]
        if kind == "start":
            if running[job]:
                overlapping.add(job)
            running[job] += 1
            starts[job] += 1
        elif kind == "end" and running[job]:
            running[job] -= 1
        elif kind == "busy":
            overlapping.add(job)
    return starts, overlapping


def _queue_empty(queue: Queue) -> bool:
    counts = queue.counts()
    return counts.queued == 0 and counts.claimed == 0 and counts.delayed == 0


@dataclass
class _Tally:
    """What the lane logs say happened (counted per job where it matters)."""

    done: collections.Counter[str] = field(default_factory=collections.Counter)
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)
    """`skipped reason=already-succeeded`: a copy the re-execution guard refused to run."""
    lanes_done: set[str] = field(default_factory=set)
    recovered: int = 0
    settled_by_status: int = 0
    """Recoveries that settled a claim by its watcher's recorded exit status."""


def _tally(events: Iterable[Mapping[str, str]]) -> _Tally:
    tally = _Tally()
    for event in events:
        kind = event.get("event")
        if kind == "done":
            tally.done[event["job"]] += 1
            tally.lanes_done.add(event.get("lane", ""))
        elif kind == "skipped" and event.get("reason") == "already-succeeded":
            tally.skipped[event["job"]] += 1
        elif kind == "recovered":
            tally.recovered += 1
            tally.settled_by_status += "exit" in event
    return tally


def run_chaos(
    *,
    jobs: int,
    runners: int,
    kill_every_ms: int,
    seed: int,
    root: Path,
    max_jobs: int = 50,
    timeout: float = 3600.0,
    progress: bool = False,
    work_ms: int = 20,
    kinds: tuple[str, ...] = ("runner",),
    hostile: bool = False,
    protect: bool = True,
) -> ChaosResult:
    """Enqueue `jobs`, keep `runners` `lanekit run` processes going, strike a random one every
    `kill_every_ms` with one of `kinds` (KILL_KINDS), until the queue is empty and no copy of
    a job is left; then compare done/, records and the ledger. `hostile`: HOSTILE_JOB instead
    of the shell job; `protect=False`: the control (COPIES_KEEP_CLAIM off in the runners)."""
    unknown = set(kinds) - set(KILL_KINDS)
    if unknown:
        raise ValueError(f"unknown kill kinds {sorted(unknown)}: use {', '.join(KILL_KINDS)}")
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "locks").mkdir(exist_ok=True)
    specs = [
        make_spec(
            root,
            lane=f"{LANE}{i}",
            max_jobs=max_jobs,
            stale_after=2.0,
            work_ms=work_ms,
            hostile=hostile,
        )
        for i in range(runners)
    ]
    argvs = []
    for spec in specs:
        snapshot = root / f"{spec.label}.json"
        spec.write(snapshot)
        args = ["run", spec.lane, "--snapshot", str(snapshot)]
        if protect:
            argvs.append([sys.executable, "-m", "lanekit", *args])
        else:
            argvs.append([sys.executable, "-c", UNPROTECTED, *args])
    queue = Queue(specs[0].queue_dir, durable=False)
    queue.ensure()
    ids = [queue.enqueue({"n": n}, job_id=f"chaos-{n:07d}") for n in range(jobs)]
    ledger = root / "ledger.txt"
    ledger.touch()

    started = time.monotonic()
    runs_started, by_kind = _drive(
        queue,
        argvs,
        rng=rng,
        kinds=kinds,
        kill_every_ms=kill_every_ms,
        log=root / "runners.log",
        timeout=timeout,
        progress=progress,
    )
    kills = by_kind.total()
    # The loop ends only once claimed/ is empty, so every job has ended (a job whose runner was
    # killed keeps its claim, through its watcher, until it has).
    seconds = time.monotonic() - started

    done = _done_ids(queue)
    failed = _failed_ids(queue)
    ledger_counts, overlapping = read_ledger(ledger.read_text())
    tally = _tally(event for spec in specs for event in read_events(spec.log_path))
    done_events, skipped_events, lanes_done = tally.done, tally.skipped, tally.lanes_done
    succeeded = RecordStore(queue.records).succeeded_ids()
    lost = [job for job in ids if job not in done and job not in failed]
    # A copy parked in done/ by the already-succeeded guard is not a second success.
    twice = {job for job, n in done.items() if n - skipped_events[job] > 1}
    twice |= {job for job, n in done_events.items() if n > 1}
    unrecorded = [job for job in done if job not in succeeded]
    unexecuted = [job for job in done if ledger_counts[job] == 0]
    beyond = sum(n - 1 for n in ledger_counts.values() if n > 1)
    return ChaosResult(
        jobs=jobs,
        runners=runners,
        kill_every_ms=kill_every_ms,
        seed=seed,
        runs_started=runs_started,
        kills=kills,
        seconds=round(seconds, 1),
        done=sum(done.values()),
        failed=len(failed),
        lost=len(lost),
        succeeded_twice=len(twice),
        done_without_record=len(unrecorded),
        done_without_execution=len(unexecuted),
        executions=sum(ledger_counts.values()),
        executions_beyond_one=beyond,
        recovered_events=tally.recovered,
        lanes_that_finished_jobs=len(lanes_done),
        overlapping=len(overlapping),
        settled_by_status=tally.settled_by_status,
        kills_by_kind=dict(sorted(by_kind.items())),
        protected=protect,
    )


def _drive(
    queue: Queue,
    argvs: list[list[str]],
    *,
    rng: random.Random,
    kinds: tuple[str, ...],
    kill_every_ms: int,
    log: Path,
    timeout: float,
    progress: bool,
) -> tuple[int, collections.Counter[str]]:
    """Keep one runner per argv going and strike them until the queue is empty and no copy
    of a job is left: (runs started, strikes by kind)."""
    out = log.open("ab")
    slots: list[subprocess.Popen[bytes] | None] = [None] * len(argvs)
    stopped: dict[int, float] = {}
    """Processes SIGSTOPped by the run: pid -> when they get SIGCONT."""
    by_kind: collections.Counter[str] = collections.Counter()
    runs_started = 0
    started = time.monotonic()
    next_kill = started + kill_every_ms / 1000
    last_report = started
    try:
        while True:
            now = time.monotonic()
            if now - started > timeout:
                raise SystemExit(f"chaos: gave up after {timeout:.0f}s with work left")
            _resume_due(stopped, now)
            slots = [None if p is None or p.poll() is not None else p for p in slots]
            if not any(slots) and not stopped and _queue_empty(queue):
                if not _job_copies_alive():
                    break  # no runner, no claim, no copy of a job left anywhere
                time.sleep(0.05)  # an orphaned copy works on; its claim was settled
                continue
            if not _queue_empty(queue):
                for i, slot in enumerate(slots):
                    if slot is None:
                        # launchd starts the lane again on its next fire; here: at once
                        slots[i] = subprocess.Popen(argvs[i], stdout=out, stderr=out)
                        runs_started += 1
            if kill_every_ms > 0 and now >= next_kill:
                next_kill = now + kill_every_ms / 1000
                live = [p for p in slots if p is not None and p.poll() is None]
                if live:
                    kind = rng.choice(kinds)
                    if _strike(kind, rng.choice(live).pid, rng, stopped, now):
                        by_kind[kind] += 1
            if progress and now - last_report > 5:
                last_report = now
                counts = queue.counts()
                print(
                    f"  {now - started:6.1f}s queued={counts.queued} claimed={counts.claimed}"
                    f" delayed={counts.delayed} done={counts.done} kills={by_kind.total()}",
                    file=sys.stderr,
                )
            time.sleep(0.01)
    finally:
        for pid in stopped:
            _signal(pid, signal.SIGCONT)
        for proc in slots:
            if proc is not None and proc.poll() is None:
                proc.wait()
        out.close()
    return runs_started, by_kind


KILL_KINDS = ("runner", "watcher", "both", "stop")
"""runner: SIGKILL the runner; watcher: SIGKILL its job watcher alone; both: the two at once
(one `pkill -9 -f 'lanekit run'`); stop: SIGSTOP the runner and its watcher, SIGCONT 50-500 ms
later."""
UNPROTECTED = (
    "import sys; import lanekit.queue.outcome as job_outcome; "
    "job_outcome.COPIES_KEEP_CLAIM = False; "
    "from lanekit.__main__ import main; main(sys.argv[1:])"
)
"""`python -m lanekit` with the protection under test switched off (the control run)."""


def _resume_due(stopped: dict[int, float], now: float) -> None:
    """SIGCONT to each stopped process whose time has come."""
    for pid, until in list(stopped.items()):
        if now >= until:
            _signal(pid, signal.SIGCONT)
            del stopped[pid]


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _watcher_of(runner: int) -> int | None:
    """The runner's job watcher: its one child that is no job (a fork of the runner, with the
    runner's command line), or None between watchers."""
    import psutil

    try:
        parent = psutil.Process(runner)
        command = parent.cmdline()
        for child in parent.children():
            if child.cmdline() == command:
                return child.pid
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    return None


def _strike(
    kind: str, runner: int, rng: random.Random, stopped: dict[int, float], now: float
) -> bool:
    """Strike the runner `runner` (and/or its watcher) with `kind`; False when the watcher
    `kind` needs is not there (between jobs: nothing struck)."""
    watcher = _watcher_of(runner) if kind != "runner" else None
    if kind in {"watcher", "both"} and watcher is None:
        return False
    if kind == "runner":
        _signal(runner, signal.SIGKILL)
    elif kind == "watcher":
        assert watcher is not None
        _signal(watcher, signal.SIGKILL)
    elif kind == "both":
        assert watcher is not None
        _signal(watcher, signal.SIGKILL)
        _signal(runner, signal.SIGKILL)
    else:
        until = now + rng.uniform(0.05, 0.5)
        for pid in (runner, watcher):
            if pid is not None and pid not in stopped:
                _signal(pid, signal.SIGSTOP)
                stopped[pid] = until
    return True


def _job_copies_alive() -> bool:
    """Whether any process still runs a chaos job (its environment names a lane of ours)."""
    import psutil

    for process in psutil.process_iter():
        try:
            ours = process.environ().get("LANEKIT_LANE", "").startswith(LANE)
            if ours and process.status() != psutil.STATUS_ZOMBIE:
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return False


def main(argv: list[str] | None = None) -> int:
    """Command line: run once, print the figures, exit 1 on any loss or double success."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000, help="jobs to enqueue")
    parser.add_argument("--runners", type=int, default=8, help="concurrent `lanekit run`s")
    parser.add_argument("--kill-every-ms", type=int, default=200, help="SIGKILL cadence")
    parser.add_argument("--seed", type=int, default=1, help="random seed (victim choice)")
    parser.add_argument("--dir", type=Path, default=None, help="work dir (default: a temp dir)")
    parser.add_argument("--max-jobs", type=int, default=50, help="max_jobs per run")
    parser.add_argument(
        "--work-ms", type=int, default=20, help="each job's work between start and end"
    )
    parser.add_argument(
        "--kinds",
        default="runner",
        help=f"comma-separated kill kinds among {','.join(KILL_KINDS)} (default: runner)",
    )
    parser.add_argument("--hostile", action="store_true", help="jobs that escape (see above)")
    parser.add_argument(
        "--unprotected", action="store_true", help="the control: job copies not looked for"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lanekit-chaos-") as tmp:
        root = args.dir if args.dir is not None else Path(tmp)
        result = run_chaos(
            jobs=args.jobs,
            runners=args.runners,
            kill_every_ms=args.kill_every_ms,
            seed=args.seed,
            root=root,
            max_jobs=args.max_jobs,
            progress=not args.json,
            work_ms=args.work_ms,
            kinds=tuple(args.kinds.split(",")),
            hostile=args.hostile,
            protect=not args.unprotected,
        )
    if args.json:
        document = {"schema": 1, **asdict(result), "ok": result.ok}
        document["reexecution_ratio"] = round(result.reexecution_ratio, 4)
        print(json.dumps(document, indent=2))
    else:
        for key, value in asdict(result).items():
            print(f"{key.replace('_', '-'):24} {value}")
        print(f"{'reexecutions-per-kill':24} {result.reexecution_ratio:.1%}")
        print(f"{'result':24} {'OK' if result.ok else 'FAILED'}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
