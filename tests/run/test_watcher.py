"""The job watcher: claim lock held apart from the job, orphans settled by their recorded exit
status, per-job timeout, and the stderr tail in the record and the .error.

Real runners (`python -m lanekit run`), real SIGKILLs, real jobs writing to a ledger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from lanekit.queue import outcome as job_outcome
from lanekit.queue.directory.backend import Queue
from lanekit.queue.records import JobState
from lanekit.run import runner, watcher, watcher_link
from lanekit.run.lanelog import read_events
from lanekit.state.snapshot import RunSpec
from lanekit.system.processes import find_program

PY = sys.executable

JOB = """
import os, sys, time
ledger, gate = sys.argv[1], sys.argv[2]
if os.environ.get("CLOSE_FDS"):
    os.closerange(3, 4096)  # drops every descriptor it inherited, whatever they were
with open(ledger, "a") as f:
    f.write(f"start {os.environ['LANEKIT_ATTEMPT']}\\n")
while not os.path.exists(gate):
    time.sleep(0.02)
sys.stderr.write("something went wrong\\n")
with open(ledger, "a") as f:
    f.write("end\\n")
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""


def make_spec(root: Path, command: Sequence[str], **overrides: object) -> RunSpec:
    """Lane `work` on a queue under `root` (created), no backoff surprises."""
    queue_dir = root / "q"
    Queue(queue_dir).ensure()
    fields: dict[str, object] = {
        "lane": "work",
        "label": "test.work",
        "queue_dir": queue_dir,
        "command": tuple(command),
        "max_jobs": 100,
        "max_seconds": None,
        "max_attempts": 3,
        "stale_after": 3600.0,
        "exit_timeout": 5,
        "log_path": queue_dir / "logs" / "work.log",
        "durable": False,
    }
    fields.update(overrides)
    return RunSpec(**fields)  # type: ignore[arg-type]


def wait_for(check: object, what: str, timeout: float = 30.0) -> None:
    """Poll `check()` until true."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened")
        time.sleep(0.02)


def ledger_lines(path: Path) -> list[str]:
    """The job's ledger (empty when it never ran)."""
    return path.read_text().splitlines() if path.exists() else []


def start_runner(snapshot: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A real `lanekit run work --snapshot ...`."""
    return subprocess.Popen(
        [PY, "-m", "lanekit", "run", "work", "--snapshot", str(snapshot)],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def claim_free(queue: Queue) -> bool:
    """True once nothing holds a lock on any claim (the watcher let go)."""
    return all(not info.owner_alive for info in queue.list_claims()) or not queue.list_claims()


def orphan(tmp_path: Path, env: dict[str, str]) -> tuple[RunSpec, Path, Path, str]:
    """Start a runner on one job, wait until the job runs, SIGKILL the runner. Returns the
    spec, the ledger, the gate file that lets the job finish, and the job's id."""
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    spec = make_spec(tmp_path, [PY, "-c", JOB, str(ledger), str(gate)])
    job_id = Queue(spec.queue_dir).enqueue({"n": 1})
    snapshot = tmp_path / "snap.json"
    spec.write(snapshot)
    proc = start_runner(snapshot, env)
    try:
        wait_for(lambda: ledger_lines(ledger) == ["start 1"], "the job's start")
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return spec, ledger, gate, job_id


def run_again(spec: RunSpec, tmp_path: Path, env: dict[str, str]) -> int:
    """One more real run of the lane; its exit code."""
    return subprocess.run(
        [PY, "-m", "lanekit", "run", "work", "--snapshot", str(tmp_path / "snap.json")],
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
        check=False,
    ).returncode


@pytest.mark.slow
def test_job_finishing_after_its_runner_died_is_settled_not_run_again(tmp_path: Path) -> None:
    """The runner is SIGKILLed mid-job and the job then exits 0: the next run settles it to
    done/ by the status its watcher recorded, without a second execution."""
    spec, ledger, gate, job_id = orphan(tmp_path, {})
    queue = Queue(spec.queue_dir)
    assert run_again(spec, tmp_path, {}) == 0  # the job still runs: its claim is left alone
    assert ledger_lines(ledger) == ["start 1"]
    gate.touch()
    wait_for(lambda: ledger_lines(ledger) == ["start 1", "end"], "the job's end")
    wait_for(lambda: claim_free(queue), "the watcher letting go")
    assert run_again(spec, tmp_path, {}) == 0
    assert ledger_lines(ledger) == ["start 1", "end"]
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.SUCCEEDED, 1)
    assert queue.listing()[job_id][0] is JobState.SUCCEEDED
    recovered = [e for e in read_events(spec.log_path) if e["event"] == "recovered"]
    assert [(e["job"], e["to"], e["exit"]) for e in recovered] == [(job_id, "succeeded", "0")]
    assert os.listdir(queue.claimed) == []  # status removed too


@pytest.mark.slow
def test_orphan_that_fails_is_retried_with_its_stderr(tmp_path: Path) -> None:
    """An orphaned job that exits 1 is settled as a failed attempt: retried after its backoff,
    its record saying `exit 1` and the last line of its stderr; it is not run at once again."""
    spec, ledger, gate, job_id = orphan(tmp_path, {"JOB_EXIT": "1"})
    queue = Queue(spec.queue_dir)
    gate.touch()
    wait_for(lambda: ledger_lines(ledger) == ["start 1", "end"], "the job's end")
    wait_for(lambda: claim_free(queue), "the watcher letting go")
    recovered = queue.recover(stale_after=3600.0, max_attempts=3)
    assert [(r.job_id, r.exit, r.state) for r in recovered] == [(job_id, 1, JobState.QUEUED)]
    assert ledger_lines(ledger) == ["start 1", "end"]
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.QUEUED, 1)
    assert record.error == "exit 1\nsomething went wrong"
    assert len(os.listdir(queue.delayed)) == 1


@pytest.mark.slow
def test_job_closing_its_descriptors_keeps_its_claim(tmp_path: Path) -> None:
    """A job that closes every descriptor it inherited, whose runner is then SIGKILLed, still
    has its claim locked (by its watcher): a second run never starts a second copy beside it."""
    env = {"CLOSE_FDS": "1"}
    spec, ledger, gate, job_id = orphan(tmp_path, env)
    queue = Queue(spec.queue_dir)
    for _ in range(3):
        assert run_again(spec, tmp_path, env) == 0
    assert ledger_lines(ledger) == ["start 1"]
    gate.touch()
    wait_for(lambda: ledger_lines(ledger) == ["start 1", "end"], "the job's end")
    wait_for(lambda: claim_free(queue), "the watcher letting go")
    assert run_again(spec, tmp_path, env) == 0
    assert ledger_lines(ledger) == ["start 1", "end"]
    assert queue.store.read(job_id).state is JobState.SUCCEEDED  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("ignores_term", [False, True])
def test_job_past_its_timeout_is_stopped_and_recorded(tmp_path: Path, ignores_term: bool) -> None:
    """A job that hangs past the lane's timeout gets SIGTERM (and SIGKILL `kill_grace` later
    when it ignores SIGTERM); the attempt counts and the record, the .error and the lane log
    say it timed out."""
    script = tmp_path / "hang.py"
    script.write_text(
        "import signal, sys, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignores_term else "")
        + "sys.stderr.write('still thinking\\n'); sys.stderr.flush()\n"
        + "time.sleep(120)\n"
    )
    spec = make_spec(tmp_path, [PY, str(script)], timeout=1.0, kill_grace=1.0, max_attempts=1)
    queue = Queue(spec.queue_dir)
    job_id = queue.enqueue({"n": 1})
    began = time.monotonic()
    result = runner.run_lane(spec)
    took = time.monotonic() - began
    assert (result.failed, result.done) == (1, 0)
    assert took < 60  # ended by the timeout, not by the job's own 120 s
    record = queue.store.read(job_id)
    assert record is not None
    assert record.state is JobState.FAILED
    assert record.error is not None
    assert record.error == "timed out after 1s; gave up after 1 attempts\nstill thinking"
    assert (queue.failed / f"{job_id}.error").read_text() == record.error + "\n"
    failed = [e for e in read_events(spec.log_path) if e["event"] == "failed"]
    assert [(e["reason"], e["error"]) for e in failed] == [("timeout", "timed out after 1s")]


@pytest.mark.slow
def test_stderr_tail_is_bounded_and_passed_through(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A failing job's stderr still reaches the runner's stderr (the lane's StandardErrorPath)
    in full, and its last 20 lines go into the record and the .error."""
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\nfor i in range(50):\n    print(f'line {i}', file=sys.stderr)\nsys.exit(3)\n"
    )
    spec = make_spec(tmp_path, [PY, str(script)], max_attempts=1)
    queue = Queue(spec.queue_dir)
    job_id = queue.enqueue({"n": 1})
    runner.run_lane(spec)
    err = capfd.readouterr().err
    assert all(f"line {i}\n" in err for i in range(50))
    want = "exit 3; gave up after 1 attempts\n" + "\n".join(f"line {i}" for i in range(30, 50))
    record = queue.store.read(job_id)
    assert record is not None
    assert record.error == want
    assert (queue.failed / f"{job_id}.error").read_text() == want + "\n"


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        (b"a\nb\n", "a\nb"),
        (b"".join(b"%d\n" % i for i in range(100)), "\n".join(str(i) for i in range(80, 100))),
        (b"x" * 10_000, "x" * job_outcome.TAIL_BYTES),
        (b"\xff\xfe bad utf-8\n", "\ufffd\ufffd bad utf-8"),
        (b"", ""),
    ],
)
def test_tail_keeps_the_last_lines_within_bounds(data: bytes, kept: str) -> None:
    """The tail is the last 20 lines, at most 4 KiB, decoded leniently."""
    assert job_outcome.tail(data) == kept


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b'{"v": 2, "exit": 0}',
        b'{"v": 1, "exit": "0"}',
        b'{"v": 1, "exit": true}',
        b'{"v": 1, "exit": 0, "stopped": 1}',
        b'{"v": 1, "exit": 0, "stderr": 5}',
        b'{"v": 1, "exit": 0, "duration": "1"}',
        b"[1]",
    ],
)
def test_a_status_that_is_not_ours_is_no_evidence(data: bytes) -> None:
    """A torn, foreign or wrong-typed status file reads as no status (the job is then treated
    as not finished, and runs again), never as a success."""
    assert job_outcome.Outcome.from_bytes(data) is None


def test_outcome_round_trips() -> None:
    """What a watcher writes reads back the same."""
    outcome = job_outcome.Outcome(-9, True, True, 1.5, "tail\nlines", 30.0)
    assert job_outcome.Outcome.from_bytes(outcome.to_bytes()) == outcome


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (job_outcome.Outcome(3), "exit 3"),
        (job_outcome.Outcome(-9), "killed by signal 9"),
        (job_outcome.Outcome(-15, timed_out=True, limit=1800.0), "timed out after 30m"),
        (job_outcome.Outcome(1, stderr="boom\n"), "exit 1\nboom"),
    ],
)
def test_describe_words_the_failure(outcome: job_outcome.Outcome, text: str) -> None:
    """The record's and .error's reason, from the outcome alone."""
    assert job_outcome.describe(outcome) == text


def test_status_sits_next_to_the_claim_hidden_from_listings() -> None:
    """claimed/<name>.json -> claimed/.<name>.status."""
    assert job_outcome.status_path("/q/claimed/j.abc.json") == "/q/claimed/.j.abc.status"


def test_a_command_that_cannot_start_is_an_oserror(tmp_path: Path) -> None:
    """A missing command is reported by the watcher as the spawn's OSError, no status."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with pytest.raises(FileNotFoundError):
            watcher_link.start(
                ["/nonexistent/command"],
                {},
                lock_fd=fd,
                status=str(tmp_path / ".x.status"),
                tmp_dir=str(queue.tmp),
                timeout=None,
                kill_grace=1.0,
                stop_grace=1.0,
            )
    finally:
        os.close(fd)
    assert not (tmp_path / ".x.status").exists()


def test_stop_reaches_the_job_through_its_watcher(tmp_path: Path) -> None:
    """SIGTERM to the watcher (what the runner forwards) reaches the job, which is recorded as
    stopped; the runner's SIGKILL becomes the watcher's KILL_NOW, never a kill of the watcher."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    ready = tmp_path / "ready"
    script = (
        "import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(120)\n"
    )
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT, 0o600)
    status = str(tmp_path / ".x.status")
    try:
        job = watcher_link.start(
            [PY, "-c", script],
            dict(os.environ),
            lock_fd=fd,
            status=status,
            tmp_dir=str(queue.tmp),
            timeout=None,
            kill_grace=60.0,
            stop_grace=60.0,
        )
        wait_for(ready.exists, "the job's start")
        job.signal_group(signal.SIGTERM)
        time.sleep(0.2)
        job.signal_group(signal.SIGKILL)
        code = job.wait()
    finally:
        os.close(fd)
    outcome = job.outcome()
    assert code == -signal.SIGKILL
    assert outcome is not None
    assert (outcome.exit, outcome.stopped, outcome.timed_out) == (-9, True, False)


def test_a_runner_dead_before_the_start_report_does_not_abandon_the_job(tmp_path: Path) -> None:
    """The runner was SIGKILLed between forking the watcher and reading its start report: the
    report's broken pipe must not end the watcher (which would drop the claim lock while the
    job runs). It sees the job to its end and writes its status."""
    queue = Queue(tmp_path / "q")
    queue.ensure()
    marker, status = tmp_path / "ran", tmp_path / ".x.status"
    code = (
        "import os, sys\n"
        "from lanekit.run import watcher\n"
        "r, w = os.pipe(); os.close(r)  # nobody will read the report\n"
        "lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
        "watcher._watch(['/bin/sh', '-c', 'sleep 0.2; echo ok > \"$0\"', sys.argv[2]], {},\n"
        "    lock_fd=lock, report=w, status=sys.argv[3], tmp_dir=sys.argv[4], timeout=None,\n"
        "    kill_grace=1.0, stop_grace=1.0)\n"
    )
    subprocess.run(
        [PY, "-c", code, str(tmp_path / "lock"), str(marker), str(status), str(queue.tmp)],
        check=True,
        timeout=60,
    )
    assert marker.read_text() == "ok\n"
    outcome = job_outcome.read_outcome(str(status))
    assert outcome is not None
    assert outcome.exit == 0


FD_PROBE = """
import os, sys
lock = os.stat(sys.argv[1])
held = []
for fd in range(3, 256):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    if (st.st_dev, st.st_ino) == (lock.st_dev, lock.st_ino):
        held.append(fd)
with open(sys.argv[2], "a") as out:
    out.write(f"{os.getppid()} {held}\\n")
"""


def _start(
    run: watcher_link.RunWatcher,
    argv: Sequence[str],
    lock: int,
    tmp: Path,
    *,
    env: dict[str, str] | None = None,
    status: Path | None = None,
) -> watcher_link.WatchedJob:
    """`argv` under `run`, with the environment, limits and a fresh status path by default."""
    if status is None:
        status = tmp / f".{len(list(tmp.glob('.*.status')))}.status"
    return run.start(
        argv,
        dict(os.environ) if env is None else env,
        lock_fd=lock,
        status=str(status),
        tmp_dir=str(tmp),
        timeout=None,
        kill_grace=1.0,
        stop_grace=1.0,
    )


def test_one_watcher_watches_a_runs_jobs_one_after_another(tmp_path: Path) -> None:
    """Three jobs, one watcher process (forked once), each job's outcome its own; no job gets
    the claim's descriptor the watcher was handed; close() ends the watcher."""
    lockfile, ledger = tmp_path / "lockfile", tmp_path / "ledger"
    run = watcher_link.RunWatcher()
    pids, codes = [], []
    try:
        for exit_code in (0, 3, 0):
            fd = os.open(lockfile, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                job = _start(
                    run,
                    [PY, "-c", FD_PROBE + f"\nsys.exit({exit_code})", str(lockfile), str(ledger)],
                    fd,
                    tmp_path,
                )
                codes.append(job.wait())
            finally:
                os.close(fd)
            pids.append(job.pid)
    finally:
        run.close()
    assert codes == [0, 3, 0]
    assert len(set(pids)) == 1
    lines = ledger.read_text().splitlines()
    assert lines == [f"{pids[0]} []"] * 3  # the watcher is each job's parent; no lock fd
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)  # reaped by close()


def test_a_watcher_killed_between_jobs_is_replaced(tmp_path: Path) -> None:
    """SIGKILL of the idle watcher: the next job starts under a new one."""
    run = watcher_link.RunWatcher()
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        first = _start(run, ["/bin/true"], fd, tmp_path)
        assert first.wait() == 0
        os.kill(first.pid, signal.SIGKILL)
        wait_for(lambda: _gone(first.pid), "the watcher's death")
        second = _start(run, ["/bin/sh", "-c", "exit 4"], fd, tmp_path)
        assert second.wait() == 4
        assert second.pid != first.pid
    finally:
        os.close(fd)
        run.close()


def _gone(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def test_a_stop_between_jobs_does_not_reach_the_next_job(tmp_path: Path) -> None:
    """A stop the runner sent as its job ended lands in the idle watcher: it is dropped, not
    kept for the next job."""
    run = watcher_link.RunWatcher()
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        first = _start(run, ["/bin/true"], fd, tmp_path)
        assert first.wait() == 0
        os.kill(first.pid, signal.SIGTERM)
        time.sleep(0.2)
        second = _start(run, ["/bin/sh", "-c", "sleep 0.5; exit 0"], fd, tmp_path)
        assert second.wait() == 0
        outcome = second.outcome()
        assert outcome is not None
        assert (outcome.exit, outcome.stopped) == (0, False)
        assert second.pid == first.pid
    finally:
        os.close(fd)
        run.close()


def test_a_request_cut_short_runs_nothing_and_closes_what_came(tmp_path: Path) -> None:
    """A runner that died while sending its request: the watcher closes the descriptors that
    came with it and reads the end of the run."""
    import socket

    ours, theirs = socket.socketpair()
    r, w = os.pipe()
    socket.send_fds(ours, [(100).to_bytes(4, "big") + b'{"argv": '], [w])
    os.close(w)
    ours.close()
    try:
        assert watcher._receive(theirs) is None
        assert os.read(r, 1) == b""  # every copy of the write end is closed
    finally:
        os.close(r)
        theirs.close()


def test_a_request_larger_than_the_sockets_buffer_arrives_whole(tmp_path: Path) -> None:
    """An environment of ~600 KB (beyond a socket buffer here, far beyond macOS's 8 KB) reaches
    the job intact: the request is framed and read to its end."""
    out = tmp_path / "env"
    env = {**os.environ, **{f"BIG{i}": f"{i}" * 60_000 for i in range(10)}}
    script = (
        "import os, sys\n"
        "open(sys.argv[1], 'w').write(str(sum(len(os.environ[f'BIG{i}']) for i in range(10))))\n"
    )
    run = watcher_link.RunWatcher()
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        job = _start(run, [PY, "-c", script, str(out)], fd, tmp_path, env=env)
        assert job.wait() == 0
    finally:
        os.close(fd)
        run.close()
    assert out.read_text() == str(600_000)


def test_closing_the_run_leaves_a_watcher_that_still_watches_a_job(tmp_path: Path) -> None:
    """A run that ends on an error while its job runs does not wait for the job: its watcher
    sees it to the end and writes the status, as for a runner that died."""
    status, gate = tmp_path / ".x.status", tmp_path / "gate"
    run = watcher_link.RunWatcher()
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        gated = ["/bin/sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.05; done', str(gate)]
        _start(run, gated, fd, tmp_path, env={}, status=status)
    finally:
        os.close(fd)

    def hung(signum: int, frame: object) -> None:
        raise AssertionError("close() waited for a job that only the test can end")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, 60.0)  # a guard against a hang, not a timing check
    try:
        run.close()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not status.exists()  # the job still waits for its gate
    gate.touch()
    wait_for(status.exists, "the job's status")
    outcome = job_outcome.read_outcome(str(status))
    assert outcome is not None
    assert outcome.exit == 0


def test_a_child_of_the_runner_does_not_use_the_runners_watcher(tmp_path: Path) -> None:
    """After a fork the child's run watcher is a new one: it never sends to the parent's."""
    fd = os.open(tmp_path / "lockfile", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        job = watcher_link.start(
            ["/bin/true"],
            {},
            lock_fd=fd,
            status=str(tmp_path / ".x.status"),
            tmp_dir=str(tmp_path),
            timeout=None,
            kill_grace=1.0,
            stop_grace=1.0,
        )
        assert job.wait() == 0
        child = os.fork()
        if child == 0:
            os._exit(0 if watcher_link._run_watcher._sock is None else 1)
        _, wait_status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(wait_status) == 0
        assert watcher_link._run_watcher._sock is not None  # the parent's is untouched
    finally:
        os.close(fd)
        watcher_link.stop_watching()


# --- a job outliving its lanekit processes (issue 30, items 1 and 2) -----------------------

ESCAPING_JOB = """
import os, sys, time
ledger, gate = sys.argv[1], sys.argv[2]
def line(text):
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (text + "\\n").encode())
    os.close(fd)
line(f"start {os.environ['LANEKIT_ATTEMPT']}")
if os.fork() == 0:  # the daemon: out of the job's group and session, every descriptor closed
    os.setsid()
    os.closerange(0, 4096)
    while not os.path.exists(gate):
        time.sleep(0.02)
    line("daemon end")
    os._exit(0)
while not os.path.exists(gate):
    time.sleep(0.02)
line("end")
"""


@dataclass
class _Escaping:
    """A real run of one ESCAPING_JOB (one attempt), caught while the job runs."""

    queue: Queue
    job_id: str
    ledger: Path
    gate: Path
    runner: subprocess.Popen[bytes]
    watcher: int
    """The run's job watcher's pid."""


def _dead(pid: int) -> bool:
    """Gone, or a zombie (its descriptors, and so the locks it held, are released): for a
    process that is not our child, which _gone cannot wait for."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _escaping_run(tmp_path: Path) -> _Escaping:
    import psutil

    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    spec = make_spec(tmp_path, [PY, "-c", ESCAPING_JOB, str(ledger), str(gate)], max_attempts=1)
    queue = Queue(spec.queue_dir)
    job_id = queue.enqueue({"n": 1})
    spec.write(tmp_path / "snap.json")
    proc = start_runner(tmp_path / "snap.json", {})
    wait_for(lambda: ledger_lines(ledger) == ["start 1"], "the job's start")
    children = psutil.Process(proc.pid).children()
    assert len(children) == 1, children  # the run's watcher (the job is its child)
    return _Escaping(queue, job_id, ledger, gate, proc, children[0].pid)


@pytest.mark.slow
@pytest.mark.parametrize("protected", [True, False])
def test_a_job_outliving_runner_and_watcher_keeps_its_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protected: bool
) -> None:
    """The runner and its watcher are SIGKILLed together (one `pkill -9 -f 'lanekit run'`)
    while the job, and a daemon it forked out of its session with every descriptor closed,
    still run: recovery leaves the claim (orphaned) until both have ended, then puts the job
    back without spending an attempt. The control (copies not looked for) gives the claim
    back while they run, which is how a second copy started beside them."""
    from lanekit.queue.observed import ClaimState

    monkeypatch.setattr(job_outcome, "COPIES_KEEP_CLAIM", protected)
    run = _escaping_run(tmp_path)
    queue, job_id, ledger, gate = run.queue, run.job_id, run.ledger, run.gate
    proc, watcher_pid = run.runner, run.watcher
    try:
        os.kill(watcher_pid, signal.SIGKILL)
        proc.kill()
        proc.wait(timeout=30)
        wait_for(lambda: _dead(watcher_pid), "the watcher's death")
        recovered = queue.recover(stale_after=3600.0, max_attempts=1)
        if not protected:
            assert [r.job_id for r in recovered] == [job_id]  # back in queue/ while it runs
            return
        assert recovered == []
        assert [view.state for view in queue.claims()] == [ClaimState.ORPHANED]
        gate.touch()
        wait_for(lambda: {"end", "daemon end"} <= set(ledger_lines(ledger)), "the job's end")
        wait_for(lambda: not job_outcome.job_copies(str(queue.list_claims()[0].path)), "no copy")
        recovered = queue.recover(stale_after=3600.0, max_attempts=1)
        assert [(r.job_id, r.state) for r in recovered] == [(job_id, JobState.QUEUED)]
        record = queue.store.read(job_id)
        assert record is not None
        assert (record.state, record.attempts) == (JobState.QUEUED, 0)  # the crash not counted
        assert "before its job's end was recorded" in (record.error or "")
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_a_watcher_killed_alone_is_not_the_jobs_failure(tmp_path: Path) -> None:
    """SIGKILL of the watcher alone while its job runs: the runner, alive and still holding the
    claim, waits until the job (and its daemon) have ended, gives it back unspent and runs it
    again in the same run. Before: the job was settled as `killed by signal 9` at once, its
    one attempt spent (failed/), while it still ran."""
    run = _escaping_run(tmp_path)
    queue, job_id, ledger, gate = run.queue, run.job_id, run.ledger, run.gate
    proc, watcher_pid = run.runner, run.watcher
    try:
        os.kill(watcher_pid, signal.SIGKILL)
        wait_for(lambda: _dead(watcher_pid), "the watcher's death")
        time.sleep(0.5)  # time for a runner that gives the claim back at once to do so
        assert proc.poll() is None
        assert ledger_lines(ledger) == ["start 1"]
        assert queue.counts().claimed == 1
        gate.touch()  # the job, its daemon, then the second attempt all end on the gate
        assert proc.wait(timeout=60) == 1  # a run that requeued a job exits 1 (then it ran)
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
    lines = ledger_lines(ledger)
    assert lines.count("start 1") == 2  # the same attempt again: the crash was not counted
    assert lines.index("start 1", 1) > max(lines.index("end"), lines.index("daemon end"))
    record = queue.store.read(job_id)
    assert record is not None
    assert (record.state, record.attempts) == (JobState.SUCCEEDED, 1)
    log = queue.dir / "logs" / "work.log"
    reasons = [e.get("reason") for e in read_events(log) if e["event"] == "requeued"]
    assert reasons == ["watcher-died"]


def test_a_jobs_program_is_found_on_the_path_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """argv[0] is looked up on the job's PATH (its lane's), never on the watcher's own (a run
    by hand has the terminal's): first executable match wins, a file we may not execute is
    EACCES, none at all ENOENT, a name with a slash is taken as it is."""
    lane_bin, terminal_bin, locked_bin = (tmp_path / d for d in ("lane", "terminal", "locked"))
    for directory in (lane_bin, terminal_bin, locked_bin):
        directory.mkdir()
    for directory, mode in ((lane_bin, 0o755), (terminal_bin, 0o755), (locked_bin, 0o644)):
        (directory / "tool").write_text("#!/bin/sh\n")
        (directory / "tool").chmod(mode)
    monkeypatch.setenv("PATH", str(terminal_bin))
    env = {"PATH": f"{tmp_path / 'missing'}:{lane_bin}:{terminal_bin}"}
    assert find_program("tool", env["PATH"]) == f"{lane_bin}/tool"
    assert find_program("./tool", str(lane_bin)) == "./tool"
    with pytest.raises(FileNotFoundError):
        find_program("tool", str(tmp_path / "missing"))
    with pytest.raises(PermissionError):  # root too: access(X_OK) needs an x bit
        find_program("tool", str(locked_bin))


@pytest.mark.slow
@pytest.mark.parametrize("noted", [True, False])
def test_a_job_whose_environment_cannot_be_read_is_found_by_its_process_group(
    tmp_path: Path, noted: bool
) -> None:
    """macOS withholds the environment of Apple's own binaries (/bin/sh, /bin/sleep) from other
    processes; here a job that exec's with an empty environment stands in for one. Its runner
    and watcher are SIGKILLed together: the process group the watcher noted when it started
    the job (claimed/.<claim>.started) keeps the claim until the job ends. Without the note
    (removed: the control), nothing finds the job and recovery gives its claim back."""
    import psutil

    gate = tmp_path / "gate"
    script = f'while [ ! -e "{gate}" ]; do sleep 0.05; done'
    spec = make_spec(
        tmp_path, ["/bin/sh", "-c", f"exec env -i /bin/sh -c '{script}'"], max_attempts=1
    )
    queue = Queue(spec.queue_dir)
    job_id = queue.enqueue({"n": 1})
    spec.write(tmp_path / "snap.json")
    proc = start_runner(tmp_path / "snap.json", {})
    try:
        wait_for(lambda: len(psutil.Process(proc.pid).children(recursive=True)) >= 2, "the job")
        [claim] = queue.list_claims()
        note = Path(job_outcome.started_path(str(claim.path)))
        wait_for(note.exists, "the watcher's note")
        [watcher_pid] = [p.pid for p in psutil.Process(proc.pid).children()]
        os.kill(watcher_pid, signal.SIGKILL)
        proc.kill()
        proc.wait(timeout=30)
        wait_for(lambda: _dead(watcher_pid), "the watcher's death")
        assert not job_outcome.job_copies(str(claim.path)).pids  # its environment says nothing
        if not noted:
            note.unlink()
            recovered = queue.recover(stale_after=3600.0, max_attempts=1)
            assert [r.job_id for r in recovered] == [job_id]  # given back while it runs
            return
        assert job_outcome.job_copies(str(claim.path)).group is not None
        assert queue.recover(stale_after=3600.0, max_attempts=1) == []
        gate.touch()
        wait_for(lambda: not job_outcome.job_copies(str(claim.path)), "the job's end")
        recovered = queue.recover(stale_after=3600.0, max_attempts=1)
        assert [(r.job_id, r.state) for r in recovered] == [(job_id, JobState.QUEUED)]
        assert not note.exists()  # removed with the claim
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()


TIED_WATCHER = """
import os, signal, sys, time
from lanekit.run.watcher import JobTie
tie = JobTie()
mark = sys.argv[1]
script = 'exec >/dev/null 2>&1; sleep 60 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait'
job = tie.spawn("/bin/sh", ["sh", "-c", script,
                mark], {"PATH": "/bin:/usr/bin"}, [])
while not os.path.exists(mark):
    time.sleep(0.01)
if sys.argv[2] == "untie":
    tie.untie()
print(job, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("told", [True, False], ids=["tied", "untied"])
def test_a_tied_jobs_group_dies_with_its_watcher(tmp_path: Path, told: bool) -> None:
    """A watcher (here a small process standing in for one) starts a job through JobTie and is
    SIGKILLed: the guard kills the job's whole process group within a second, the job's
    child included. Untied first (the guard told the job is over, as after every job), the
    guard kills nothing: the child outlives the watcher (on Linux the kernel's parent-death
    signal still kills the job's leader, which is all it can do)."""
    mark = tmp_path / "child"
    done = subprocess.run(
        [sys.executable, "-c", TIED_WATCHER, str(mark), "keep" if told else "untie"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    job, child = int(done.stdout), int(mark.read_text())
    try:
        assert os.getpgid(child) == job  # the job's child is in the job's group
    except ProcessLookupError:
        assert told  # already killed by the guard
    try:
        killed = time.monotonic()
        while time.monotonic() - killed < 1.0 and not (_dead(job) and _dead(child)):
            time.sleep(0.02)
        assert _dead(child) is told
        assert _dead(job) is (told or sys.platform.startswith("linux"))
    finally:
        for pid in (job, child):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_tied_job_that_cannot_be_executed_says_why(tmp_path: Path) -> None:
    """The exec fails in the forked child: its errno comes back to the watcher as an OSError,
    as posix_spawn's would."""
    program = tmp_path / "garbage"
    program.write_bytes(b"\x7fELF not really\n")
    program.chmod(0o755)
    tie = watcher.JobTie()
    with pytest.raises(OSError, match="Exec format error"):
        tie.spawn(str(program), [str(program)], {}, [])
