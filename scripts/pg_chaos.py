#!/usr/bin/env python3
"""Chaos across hosts on one postgres queue: several "hosts" (each its own HOME and lanekit
state directory, its own lanes.toml) reach one PostgreSQL server, each through a TCP proxy of
its own on a loopback address (127.0.0.2, .3, ...) that this script controls as toxiproxy
would: it cuts every connection, or black-holes them for 1-6 s (stops forwarding and keeps
the sockets open, as a partition looks to a client). Meanwhile real `lanekit run` processes,
started again and again as launchd would (several lanes per host drain the queue), are
SIGKILLed at random, runners and job watchers alike, and both at once (a double kill: nothing
renews or self-fences the job any more, so it must die with its watcher). Checks: no job lost,
no two executions of one job overlapping in time, every attempt with an outcome, and
succeeded <=> exactly one succeeded attempt.

    PGPASSFILE=~/.pgpass scripts/pg_chaos.py --server 127.0.0.1:5432 --user lk --db lk \\
        --jobs 60 --seconds 20 --seed 1
    ... --unfenced       # the control: the watchers' self-fence off; must show overlaps
    ... --untied         # the control: jobs outlive a killed watcher; must show overlaps
                         # (with --kinds double and jobs longer than the lease)

Each job takes a per-job flock before it writes `start` to the ledger and `busy` when another
live copy holds it (a killed copy's lock dies with it), so an overlap is counted by the jobs
themselves, whatever lanekit's bookkeeping says. Traffic stays on loopback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LANE = "chaos"
JOB = """
import fcntl, json, os, sys, time
jid = os.environ["LANEKIT_JOB_ID"]
work = json.load(open(sys.argv[1]))["work_ms"] / 1000
def line(kind):
    fd = os.open(os.environ["LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"{kind} {jid} {os.getpid()} {time.time():.3f}\\n".encode())
    os.close(fd)
lock = os.open(os.path.join(os.environ["LOCKS"], jid), os.O_RDWR | os.O_CREAT, 0o600)
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    line("busy")
    fcntl.flock(lock, fcntl.LOCK_EX)
line("start")
time.sleep(work)
line("end")
"""

CONTROL = (
    "import sys, lanekit.run.leasekeeper as keeper, lanekit.run.watcher as watcher; "
    "keeper.FENCE = {fence}; watcher.TIE = {tie}; "
    "from lanekit.__main__ import main; main(sys.argv[1:])"
)
"""A control's runner: the watchers' self-fence off (lanekit.run.leasekeeper.FENCE), or jobs
not tied to their watcher's life (lanekit.run.watcher.TIE)."""


class Proxy:
    """A TCP proxy on `host`:random port to the server, which the chaos cuts or black-holes."""

    def __init__(self, host: str, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server((host, 0))
        self.port = int(self.listener.getsockname()[1])
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        self.holes_until = 0.0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.append((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                while time.monotonic() < self.holes_until and not self.closed:
                    time.sleep(0.02)  # held, not forwarded: a partition, sockets open
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def cut(self) -> None:
        """Close every connection through the proxy (each side sees a reset or EOF)."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def blackhole(self, seconds: float) -> None:
        """Stop forwarding for `seconds`, every connection left open."""
        self.holes_until = time.monotonic() + seconds

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut()


@dataclass
class Host:
    """One "host": its directory (HOME, state), proxy and lanekit environment."""

    name: str
    root: Path
    proxy: Proxy
    env: dict[str, str]
    runners: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    """The run of each lane now (a lane runs once at a time: its lane lock)."""
    next_start: dict[str, float] = field(default_factory=dict)
    """No new run of a lane before this (monotonic): launchd's ThrottleInterval, in small."""


@dataclass
class PgChaosResult:
    jobs: int
    succeeded: int
    failed: int
    lost: int
    executions: int
    """`start` lines in the ledger: every execution of every job."""
    overlaps: int
    """`busy` lines: a copy started while another live copy of the job held its lock."""
    attempts_without_outcome: int
    """Claims (tokens handed out, bar a job's running one) without an attempt row that has an
    outcome: an attempt nobody recorded."""
    success_mismatches: int
    """Jobs where `succeeded` and `exactly one succeeded attempt` disagree."""
    strikes: dict[str, int]
    runs: int
    fenced: int
    lease_lost: int
    recovered: int
    seconds: float
    fenced_on: bool
    tied_on: bool

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.overlaps == 0
            and self.attempts_without_outcome == 0
            and self.success_mismatches == 0
        )


def _admin_queue(dsn: str, schema: str) -> object:
    from lanekit.queue.postgres.backend import PostgresQueue
    from lanekit.queue.postgres.location import PgLocation

    return PostgresQueue(PgLocation(LANE, dsn, schema=schema))


def run_pg_chaos(
    *,
    server: tuple[str, int],
    user: str,
    db: str,
    passfile: Path,
    schema: str,
    root: Path,
    jobs: int = 60,
    seconds: float = 20.0,
    hosts: int = 3,
    lanes: int = 2,
    lease: int = 5,
    work_ms: tuple[int, int] = (200, 2500),
    hole_s: tuple[float, float] = (1.0, 6.0),
    strike_every: float = 0.4,
    kinds: tuple[str, ...] = ("runner", "watcher", "double", "cut", "blackhole"),
    fence: bool = True,
    tie: bool = True,
    seed: int = 1,
    drain_timeout: float = 90.0,
    respawn_every: float = 0.5,
    max_jobs: int = 4,
) -> PgChaosResult:
    """The chaos run (see the module docstring); the figures, checked by the caller."""
    from lanekit.queue.postgres.backend import PostgresQueue

    rng = random.Random(seed)
    admin_dsn = f"host={server[0]} port={server[1]} user={user} dbname={db}"
    queue = _admin_queue(admin_dsn, schema)
    assert isinstance(queue, PostgresQueue)
    queue.migrate()
    ledger, locks = root / "ledger", root / "locks"
    locks.mkdir(parents=True)
    script = root / "job.py"
    script.write_text(JOB)
    ids = [f"job-{n:04d}" for n in range(jobs)]
    for job_id in ids:
        queue.enqueue({"work_ms": rng.randint(*work_ms)}, job_id=job_id)
    every: list[Host] = []
    for number in range(hosts):
        name = f"h{number}"
        proxy = Proxy(f"127.0.0.{number + 2}", server)
        home = root / name / "home"
        state = root / name / "state"
        home.mkdir(parents=True)
        env = {
            **os.environ,
            "HOME": str(home),
            "LANEKIT_STATE_DIR": str(state),
            "LANEKIT_LAUNCHD": "emulated",
            "PGPASSFILE": str(passfile),
        }
        env.pop("LANEKIT_LAUNCH_AGENTS", None)
        config = root / name / "lanes.toml"
        config.write_text(
            f'[defaults]\npath = ["/usr/bin", "/bin"]\nlabel_prefix = "chaos.{name}"\n\n'
            f'[queues.{LANE}]\nbackend = "postgres"\n'
            f'dsn = "host=127.0.0.{number + 2} port={proxy.port} user={user} dbname={db}"\n'
            f'schema = "{schema}"\nlease = "{lease}s"\n\n'
            + "".join(
                f'[lanes.{LANE}{n}]\nqueue = "{LANE}"\n'
                f'command = ["{sys.executable}", "{script}", "{{job}}"]\n'
                f'every = "1m"\nmax_jobs = {max_jobs}\nmax_attempts = 50\n'
                f'env = {{ LEDGER = "{ledger}", LOCKS = "{locks}" }}\n\n'
                for n in range(lanes)
            )
        )
        applied = subprocess.run(
            [sys.executable, "-m", "lanekit", "apply", "-c", str(config)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if applied.returncode != 0:
            raise RuntimeError(f"apply on {name}: {applied.stderr}")
        every.append(Host(name, root / name, proxy, env))
    runner_argv = (
        [sys.executable, "-m", "lanekit", "run"]
        if fence and tie
        else [sys.executable, "-c", CONTROL.format(fence=fence, tie=tie), "run"]
    )
    strikes = dict.fromkeys(kinds, 0)
    runs = 0
    started = time.monotonic()
    next_strike = started + strike_every
    chaos_until = started + seconds
    try:
        while True:
            now = time.monotonic()
            runs += _start_runs(every, lanes, runner_argv, now, respawn_every)
            if now < chaos_until and now >= next_strike:
                next_strike = now + strike_every
                kind = rng.choice(kinds)
                host = rng.choice(every)
                if _strike(kind, host, rng, hole_s):
                    strikes[kind] += 1
            if now >= chaos_until and _settled(queue):
                break
            if now >= chaos_until + drain_timeout:
                break
            time.sleep(0.05)
    finally:
        for host in every:
            for runner in host.runners.values():
                with contextlib.suppress(ProcessLookupError):
                    runner.send_signal(signal.SIGTERM)
            for runner in host.runners.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    runner.wait(timeout=15)
            host.proxy.close()
    elapsed = time.monotonic() - started
    return _check(queue, ids, ledger, every, strikes, runs, elapsed, (fence, tie))


def _start_runs(hosts: list[Host], lanes: int, argv: list[str], now: float, every: float) -> int:
    """A run of each idle lane on each host, as launchd would start it (at most one a lane
    per `every` seconds); how many were started."""
    started = 0
    for host in hosts:
        for n in range(lanes):
            lane = f"{LANE}{n}"
            running = host.runners.get(lane)
            if running is not None and running.poll() is None:
                continue
            if now < host.next_start.get(lane, 0.0):
                continue
            host.next_start[lane] = now + every
            host.runners[lane] = subprocess.Popen(
                [*argv, lane], env=host.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            started += 1
    return started


def _strike(kind: str, host: Host, rng: random.Random, hole_s: tuple[float, float]) -> bool:
    """One strike on `host`; False when there was nothing to strike."""
    if kind == "cut":
        host.proxy.cut()
        return True
    if kind == "blackhole":
        host.proxy.blackhole(rng.uniform(*hole_s))
        return True
    live = [r for r in host.runners.values() if r.poll() is None]
    if not live:
        return False
    runner = rng.choice(live)
    if kind == "runner":
        with contextlib.suppress(ProcessLookupError):
            runner.send_signal(signal.SIGKILL)
        return True
    import psutil

    try:
        children = psutil.Process(runner.pid).children()
    except psutil.Error:
        return False
    watchers = [child for child in children if child.name().startswith("python")]
    if not watchers:
        return False
    if kind == "double":  # runner and watcher at once, as `pkill -9 -f 'lanekit run'` does
        with contextlib.suppress(ProcessLookupError):
            runner.send_signal(signal.SIGKILL)
    with contextlib.suppress(psutil.Error):
        rng.choice(watchers).kill()
    return True


def _settled(queue: object) -> bool:
    from lanekit.queue.postgres.backend import PostgresQueue

    assert isinstance(queue, PostgresQueue)
    counts = queue.counts()
    return counts.queued == counts.delayed == counts.claimed == 0


def _check(
    queue: object,
    ids: list[str],
    ledger: Path,
    hosts: list[Host],
    strikes: dict[str, int],
    runs: int,
    elapsed: float,
    protection: tuple[bool, bool],
) -> PgChaosResult:
    """The figures; `protection`: (the self-fence on, jobs tied to their watcher)."""
    from lanekit.queue.postgres.backend import PostgresQueue
    from lanekit.queue.records import JobState
    from lanekit.run.lanelog import read_events

    assert isinstance(queue, PostgresQueue)
    schema = queue.location.schema
    states = dict(
        queue.session.rows(f'SELECT id, state FROM "{schema}".jobs WHERE queue = %s', (LANE,))
    )
    succeeded = sum(1 for job_id in ids if states.get(job_id) == JobState.SUCCEEDED)
    failed = sum(1 for job_id in ids if states.get(job_id) == JobState.FAILED)
    # Every claim handed out (tokens 1..token, never given back) must have its attempt's row
    # with an outcome once it ended: one missing is an attempt nobody recorded.
    [(open_attempts,)] = queue.session.rows(
        f'SELECT count(*) FROM "{schema}".jobs j, '
        "generate_series(1, j.token - (j.state = 'running')::int) AS t(token) "
        f'WHERE j.queue = %s AND NOT EXISTS (SELECT 1 FROM "{schema}".attempts a '
        "WHERE a.queue = j.queue AND a.job_id = j.id AND a.token = t.token "
        "AND a.outcome IS NOT NULL)",
        (LANE,),
    )
    wins = dict(
        queue.session.rows(
            f'SELECT job_id, count(*) FROM "{schema}".attempts '
            "WHERE queue = %s AND outcome = 'succeeded' GROUP BY job_id",
            (LANE,),
        )
    )
    mismatches = sum(
        1 for job_id in ids if (states.get(job_id) == JobState.SUCCEEDED) != (wins.get(job_id) == 1)
    )
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    kinds = [line.split(" ", 1)[0] for line in lines]
    fenced = lease_lost = recovered = 0
    for host in hosts:
        for log in (host.root / "state" / "queues" / LANE / "logs").glob(f"{LANE}*.log*"):
            for event in read_events(log):
                fenced += event.get("event") == "fenced"
                lease_lost += event.get("reason") == "lease-lost"
                recovered += event.get("event") == "recovered"
    return PgChaosResult(
        jobs=len(ids),
        succeeded=succeeded,
        failed=failed,
        lost=len(ids) - succeeded - failed,
        executions=kinds.count("start"),
        overlaps=kinds.count("busy"),
        attempts_without_outcome=int(open_attempts),
        success_mismatches=mismatches,
        strikes=strikes,
        runs=runs,
        fenced=fenced,
        lease_lost=lease_lost,
        recovered=recovered,
        seconds=round(elapsed, 1),
        fenced_on=protection[0],
        tied_on=protection[1],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT of the PostgreSQL server")
    parser.add_argument("--user", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--schema", default=f"chaos_{os.getpid()}")
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=2, help="lanes per host on the queue")
    parser.add_argument("--lease", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unfenced", action="store_true", help="the control: self-fence off")
    parser.add_argument(
        "--untied", action="store_true", help="the control: jobs outlive a killed watcher"
    )
    parser.add_argument("--kinds", default="runner,watcher,double,cut,blackhole")
    parser.add_argument("--work-ms", default="200,2500", help="a job's length: MIN,MAX")
    parser.add_argument("--strike-every", type=float, default=0.4)
    args = parser.parse_args(argv)
    host, _, port = args.server.rpartition(":")
    passfile = Path(os.environ.get("PGPASSFILE") or Path.home() / ".pgpass")
    with tempfile.TemporaryDirectory(prefix="lanekit-pg-chaos-") as root:
        result = run_pg_chaos(
            server=(host, int(port)),
            user=args.user,
            db=args.db,
            passfile=passfile,
            schema=args.schema,
            root=Path(root),
            jobs=args.jobs,
            seconds=args.seconds,
            hosts=args.hosts,
            lanes=args.lanes,
            lease=args.lease,
            fence=not args.unfenced,
            tie=not args.untied,
            seed=args.seed,
            kinds=tuple(args.kinds.split(",")),
            work_ms=(int(args.work_ms.split(",")[0]), int(args.work_ms.split(",")[1])),
            strike_every=args.strike_every,
        )
    print(json.dumps(asdict(result), indent=2))
    return 0 if result.ok or args.unfenced or args.untied else 1


if __name__ == "__main__":
    sys.exit(main())
