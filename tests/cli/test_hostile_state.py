"""Hostile state through the real CLI: umask 000, another user's files, FIFOs, symlinks, corrupt
snapshots and 40 concurrent applies. Each case runs `python -m lanekit` as launchd or a user
would, with a timeout, and asserts the exit code, one clear line, no traceback and that no file
outside lanekit's own was touched."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lanekit.cli import main as cli_main  # imported here, so forked children start at once
from lanekit.queue.directory.backend import Queue
from neighbours import SECOND_UID, THIRD_UID, SecondUser

OTHER_UID = 65534  # nobody; the tests run as root, so os.chown hands a file to another user
TIMEOUT = 60
LANES = """\
[defaults]
label_prefix = "com.example.h"
[queues.q]
dir = "~/q"
[lanes.alpha]
queue = "q"
command = ["/bin/true", "{job}"]
every = "15m"
"""
LABEL = "com.example.h.alpha"


@dataclass(frozen=True)
class World:
    """One user's lanekit world under tmp_path, and a file of theirs lanekit must never touch."""

    root: Path
    env: dict[str, str]

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def agents(self) -> Path:
        return self.state / "emulator" / "LaunchAgents"

    @property
    def plist(self) -> Path:
        return self.agents / f"{LABEL}.plist"

    @property
    def snapshot(self) -> Path:
        return self.state / "lanes" / f"{LABEL}.json"

    @property
    def queue_dir(self) -> Path:
        return self.root / "home" / "q"

    @property
    def victim(self) -> Path:
        return self.root / "victim.txt"

    def lanekit(self, *args: str, umask: int | None = None) -> subprocess.CompletedProcess[str]:
        """Run `python -m lanekit ARGS` in this world; fails the test if it hangs."""
        old = os.umask(umask) if umask is not None else None
        try:
            return subprocess.run(
                [sys.executable, "-m", "lanekit", *args],
                cwd=self.root,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        finally:
            if old is not None:
                os.umask(old)

    def apply(self, *extra: str, umask: int | None = None) -> subprocess.CompletedProcess[str]:
        return self.lanekit("apply", "-c", "lanes.toml", *extra, umask=umask)

    def run(self) -> subprocess.CompletedProcess[str]:
        return self.lanekit("run", "alpha", "--snapshot", str(self.snapshot))

    def kick(self) -> subprocess.CompletedProcess[str]:
        return self.lanekit("kick", "alpha", "-c", "lanes.toml")


def _fingerprint(path: Path) -> tuple[bytes, int, int, int]:
    info = path.lstat()
    return path.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns, info.st_uid


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """lanes.toml with one lane, HOME and state under tmp_path, and a victim file whose bytes,
    mode and mtime must come out unchanged."""
    (tmp_path / "home").mkdir()
    (tmp_path / "lanes.toml").write_text(LANES, encoding="utf-8")
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "LANEKIT_STATE_DIR": str(tmp_path / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(tmp_path / "state" / "emulator" / "LaunchAgents"),
        "LANEKIT_LAUNCHD": "emulated",
    }
    env.pop("LANEKIT_CONFIG", None)
    w = World(tmp_path, env)
    w.victim.write_bytes(b"the user's own file\n")
    w.victim.chmod(0o640)
    before = _fingerprint(w.victim)
    yield w
    assert _fingerprint(w.victim) == before, "a file outside lanekit's own was touched"


def _refused(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], result.stderr


def _ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr


# -- item 1: 0700 directories and 0600 files whatever the umask ------------------------------


def test_apply_under_umask_000_makes_every_directory_0700_and_file_0600(world: World) -> None:
    """Under umask 000, apply creates the state dir, snapshots, the emulated domain and
    LaunchAgents, the queue and its log dir 0700 and the plist, snapshot and domain state 0600."""
    _ok(world.apply(umask=0))
    for top in (world.state, world.queue_dir):
        for path in [top, *top.rglob("*")]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if path.is_dir():
                assert mode == 0o700, path
            else:
                assert mode == 0o600, path
    assert world.plist.is_file()
    assert world.snapshot.is_file()


# -- item 1: another user's snapshot, plist or state dir is refused --------------------------


@pytest.mark.parametrize("what", ["snapshot", "snapshots dir", "state dir"])
def test_another_users_snapshot_or_state_dir_is_refused_at_run_apply_and_kick(
    world: World, what: str
) -> None:
    """A snapshot or state directory chowned to another uid: run (empty queue fast path and
    with a job queued), apply and kick exit 69 naming it with a quoted fix; the job does not
    run and stays queued."""
    _ok(world.apply())
    target = {
        "snapshot": world.snapshot,
        "snapshots dir": world.snapshot.parent,
        "state dir": world.state,
    }[what]
    os.chown(target, OTHER_UID, -1)
    if what != "state dir":  # run reads only the snapshot and its directory
        _refused(world.run(), 69, str(target), f"owned by uid {OTHER_UID}")
        job = Queue(world.queue_dir).enqueue({"n": 1})
        _refused(world.run(), 69, str(target))
        assert (world.queue_dir / "queue" / f"{job}.json").exists()
    for result in (world.apply(), world.kick(), world.lanekit("plan", "-c", "lanes.toml")):
        _refused(result, 69, str(target), f"owned by uid {OTHER_UID}")
        assert f"hint: inspect it, then move it aside: mv -- {target} " in result.stderr


def test_another_users_plist_is_refused_at_apply_and_kick(world: World) -> None:
    """The lane's plist chowned to another uid: apply and kick refuse (69) naming it."""
    _ok(world.apply())
    os.chown(world.plist, OTHER_UID, -1)
    before = _fingerprint(world.plist)
    _refused(world.apply(), 69, str(world.plist), "plist is owned by uid 65534")
    _refused(world.kick(), 69, str(world.plist), "plist is owned by uid 65534")
    assert _fingerprint(world.plist) == before


def test_a_world_writable_snapshot_is_refused_at_run_and_repaired_by_apply(world: World) -> None:
    """A snapshot made 0666 (ours) is refused by run with a chmod fix; apply rewrites it 0600
    and run works again."""
    _ok(world.apply())
    world.snapshot.chmod(0o666)
    result = world.run()
    _refused(result, 69, str(world.snapshot), "writable by group and others")
    assert f"hint: chmod 600 {world.snapshot}" in result.stderr
    applied = world.apply()
    _ok(applied)
    assert "mode 0666, not 0600" in applied.stdout
    assert stat.S_IMODE(world.snapshot.stat().st_mode) == 0o600
    _ok(world.run())


# -- item 5: a drifted plist mode is repaired ----------------------------------------------


def test_a_0666_plist_is_repaired_not_nothing_to_do(world: World) -> None:
    """apply rewrites an installed plist whose mode drifted to 0666 (same bytes) to 0600
    without a reload, and only then says nothing to do."""
    _ok(world.apply())
    data = world.plist.read_bytes()
    world.plist.chmod(0o666)
    result = world.apply()
    _ok(result)
    assert "nothing to do" not in result.stdout
    assert "plist mode 0666, not 0600" in result.stdout
    assert "no reload needed" in result.stdout
    assert stat.S_IMODE(world.plist.stat().st_mode) == 0o600
    assert world.plist.read_bytes() == data
    again = world.apply()
    _ok(again)
    assert "nothing to do" in again.stdout


# -- item 2: symlinks at temp names and at the lane log ----------------------------------------


def test_a_symlinked_or_fifo_lane_log_is_refused_and_its_target_untouched(world: World) -> None:
    """A symlink planted at the lane log (pointing at the user's file) and then a FIFO there:
    run ends, warns once naming the log, and never writes the target."""
    _ok(world.apply())
    log = Path(json.loads(world.snapshot.read_text())["log_path"])
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    log.symlink_to(world.victim)
    result = world.run()
    _ok(result)
    assert f"warning: cannot write lane log {log}: it is a symbolic link" in result.stderr
    log.unlink()
    os.mkfifo(log)
    result = world.run()
    _ok(result)
    assert f"warning: cannot write lane log {log}: it is a FIFO" in result.stderr


def test_symlinks_planted_at_old_temp_names_are_not_followed(world: World) -> None:
    """Symlinks at `.<name>.<pid>.tmp` for a range of pids next to the plist and snapshot (the
    old predictable names) point at the user's file: apply writes both, the target is intact."""
    _ok(world.apply())
    world.plist.unlink()
    world.snapshot.unlink()
    for directory, name in (
        (world.agents, world.plist.name),
        (world.snapshot.parent, world.snapshot.name),
    ):
        base = os.getpid()
        for pid in range(base, base + 200):
            (directory / f".{name}.{pid}.tmp").symlink_to(world.victim)
    _ok(world.apply())
    assert world.plist.is_file()
    assert not world.plist.is_symlink()
    assert world.snapshot.is_file()


# -- item 6 (LaunchAgents): a FIFO named *.plist ---------------------------------------------


def test_a_fifo_plist_in_launch_agents_ends_apply_plan_and_doctor(world: World) -> None:
    """A FIFO named x.plist in LaunchAgents: apply and plan end at once with one error naming
    it (69); doctor --all ends and reports it; nothing hangs (each has a timeout)."""
    _ok(world.apply())
    fifo = world.agents / "x.plist"
    os.mkfifo(fifo)
    for result in (world.apply(), world.lanekit("plan", "-c", "lanes.toml")):
        _refused(result, 69, str(fifo), "is a FIFO, not a regular file")
    doctor = world.lanekit("doctor", "--all", "-c", "lanes.toml")
    assert "Traceback" not in doctor.stderr
    assert "is a FIFO" in doctor.stdout + doctor.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# -- item 12: corrupt snapshots --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["string", "null", "max_jobs ten", "deep"])
def test_a_corrupt_snapshot_is_a_clear_error_at_run_and_apply_repairs_it(
    world: World, kind: str
) -> None:
    """`"x"`, `null`, `"max_jobs": "ten"` and 100,000-deep nesting: run exits 2 with one line
    naming the snapshot and the problem (fast path and with a job queued); apply overwrites
    it; run then works."""
    _ok(world.apply())
    good = json.loads(world.snapshot.read_text())
    text = {
        "string": '"x"',
        "null": "null",
        "max_jobs ten": json.dumps({**good, "max_jobs": "ten"}),
        "deep": "[" * 100_000,
    }[kind]
    world.snapshot.write_text(text)
    reason = {
        "string": "holds str, not a JSON object",
        "null": "holds null, not a JSON object",
        "max_jobs ten": "max_jobs must be an integer, not 'ten'",
        "deep": "not valid JSON",
    }[kind]
    _refused(world.run(), 2, str(world.snapshot), reason)
    Queue(world.queue_dir).enqueue({"n": 1})
    _refused(world.run(), 2, str(world.snapshot), reason)
    applied = world.apply()
    _ok(applied)
    assert "snapshot" in applied.stdout
    assert json.loads(world.snapshot.read_text()) == good
    _ok(world.run())


# -- item 10: concurrent applies queue up ----------------------------------------------------


def test_forty_concurrent_applies_all_succeed_and_each_says_once_that_it_waits(
    world: World,
) -> None:
    """With the apply lock held (as a running apply holds it), 40 `lanekit apply` processes
    started at once all wait, each printing exactly one line naming the holder's pid;
    released, all exit 0, the lane is installed once and the rest have nothing to do.

    The 40 are forked from this process and run the CLI's entry point there: real processes
    contending for the real flock, without 40 interpreter start-ups on a shared machine."""
    world.state.mkdir(mode=0o700)
    lock = os.open(world.state / "apply.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.write(lock, f"{os.getpid()}\n".encode())
    outputs = [world.root / f"apply-{n}" for n in range(40)]
    try:
        pids = [_fork_cli(world, ["apply", "-c", "lanes.toml"], out, lock) for out in outputs]
        deadline = time.monotonic() + TIMEOUT
        # Each apply says it waits before it blocks: poll until all 40 are blocked on the lock.
        while time.monotonic() < deadline and _waiters(world) < 40:
            time.sleep(0.1)
        blocked = _waiters(world)
    finally:
        os.close(lock)
    codes = _wait_all(pids, time.monotonic() + 5 * TIMEOUT)
    texts = [
        (out.with_suffix(".out").read_text(), out.with_suffix(".err").read_text())
        for out in outputs
    ]
    assert blocked == 40, texts
    assert codes == [0] * 40, texts
    waiting = f"apply: waiting for another `lanekit apply` (pid {os.getpid()}) to finish"
    for _out, err in texts:
        assert "Traceback" not in err
        assert err.count(waiting) == 1, err
        assert err.count("\n") == 1, err
    assert sum("installed and loaded" in out for out, _ in texts) == 1
    assert sum("nothing to do" in out for out, _ in texts) == 39


def _fork_cli(world: World, argv: list[str], out: Path, inherited: int) -> int:
    """Fork a process that runs `lanekit ARGV` in `world`, stdout/stderr to out.out/out.err.
    `inherited` is this process's lock descriptor: the child closes its copy at once (a fork
    shares the open file, and with it the lock, until every copy is closed)."""
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        os.close(inherited)
        os.chdir(world.root)
        os.environ.clear()
        os.environ.update(world.env)
        sys.stdout = out.with_suffix(".out").open("w", encoding="utf-8")
        sys.stderr = out.with_suffix(".err").open("w", encoding="utf-8")
        try:
            cli_main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait_all(pids: list[int], deadline: float) -> list[int]:
    codes: dict[int, int] = {}
    while len(codes) < len(pids) and time.monotonic() < deadline:
        for pid in pids:
            if pid not in codes:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes[pid] = os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    for pid in pids:
        if pid not in codes:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            codes[pid] = -9
    return [codes[pid] for pid in pids]


def _waiters(world: World) -> int:
    """How many processes wait on the apply lock (blocked flock requests, from /proc/locks)."""
    inode = (world.state / "apply.lock").stat().st_ino
    text = Path("/proc/locks").read_text()
    return sum(1 for line in text.splitlines() if "->" in line and f":{inode} " in line)


# -- issue 30 item 8: a FIFO at the emulated domain's state file ------------------------------


def test_a_fifo_at_the_emulated_domain_state_ends_every_command(world: World) -> None:
    """A FIFO planted at the emulated domain's domain.json: status, kick, plan and apply end
    at once with one error naming it and the fix (69), doctor ends and says the same, and the
    FIFO is left for inspection (before, each of them waited forever for a writer)."""
    _ok(world.apply())
    state = world.state / "emulator" / "domain.json"
    state.unlink()
    os.mkfifo(state)
    for args in (
        ("status", "-c", "lanes.toml"),
        ("kick", "alpha", "-c", "lanes.toml"),
        ("plan", "-c", "lanes.toml"),
        ("apply", "-c", "lanes.toml"),
    ):
        result = world.lanekit(*args)
        _refused(result, 69, f"{state}: emulated launchd state is a FIFO, not a regular file")
        assert "hint: inspect it, then move it aside: mv -- " in result.stderr, args
    doctor = world.lanekit("doctor", "-c", "lanes.toml")
    assert "Traceback" not in doctor.stderr
    assert f"{state}: emulated launchd state is a FIFO" in doctor.stderr
    assert "move it aside" in doctor.stderr
    assert stat.S_ISFIFO(state.lstat().st_mode)


# -- issue 30 item 4: a lanes.toml others may write ------------------------------------------


@pytest.mark.parametrize("part", ["lanes.toml", "its directory"])
def test_a_lanes_toml_others_may_write_is_refused_by_every_command(world: World, part: str) -> None:
    """lanes.toml (or the directory it is in) writable by group and others: validate, plan,
    apply, status and kick exit 69 with one error naming it and the chmod that fixes it,
    before anything is read or installed."""
    project = world.root / "project"
    project.mkdir()
    config = project / "lanes.toml"
    config.write_text(LANES, encoding="utf-8")
    _ok(world.lanekit("apply", "-c", str(config)))
    target = config if part == "lanes.toml" else project
    target.chmod(0o777 if target.is_dir() else 0o666)
    for args in (
        ("validate", "-c", str(config)),
        ("plan", "-c", str(config)),
        ("apply", "-c", str(config)),
        ("status", "-c", str(config)),
        ("kick", "alpha", "-c", str(config)),
    ):
        result = world.lanekit(*args)
        _refused(result, 69, "project/lanes.toml: configuration ", "writable by group and others")
        assert f"hint: chmod go-w {target}" in result.stderr, args
        assert len(result.stderr.splitlines()) == 2, result.stderr
    target.chmod(0o755 if target.is_dir() else 0o644)
    _ok(world.lanekit("apply", "-c", str(config)))


# -- issue 30 item 5: apply never creates a queue inside another user's directory -----------


def _queue_in(world: World, directory: Path) -> None:
    (world.root / "lanes.toml").write_text(
        LANES.replace('dir = "~/q"', f'dir = "{directory}"'), encoding="utf-8"
    )


@pytest.mark.parametrize("how", ["its root", "inside", "through a symlink"])
def test_apply_refuses_a_queue_in_another_users_directory_before_creating_anything(
    world: World, second_user: SecondUser, how: str
) -> None:
    """A queue dir that is, or lies inside, a directory of another user (directly or through
    a symlink of ours): apply and validate refuse it (apply 69) with one error naming that
    directory and a place of your own, never `chown` of theirs, and nothing is created in it
    (before, apply made the queue's directories there, then exited 1 suggesting `chown 0`)."""
    theirs = second_user.mkdir("theirs")
    before = sorted(theirs.rglob("*"))
    if how == "through a symlink":
        (world.root / "home" / "linked").symlink_to(theirs)
        queue = world.root / "home" / "linked" / "jobs"
    else:
        queue = theirs if how == "its root" else theirs / "jobs"
    _queue_in(world, queue)
    for result in (world.apply(), world.apply("--dry-run")):
        _refused(result, 69, f"{queue}: queue directory ", f"owned by uid {SECOND_UID} (nobody)")
        assert "hint: point [queues.q] dir at a directory of your own, e.g. " in result.stderr
        assert "chown" not in result.stderr
        assert len(result.stderr.splitlines()) == 2, result.stderr
    checked = world.lanekit("validate", "-c", "lanes.toml")
    assert checked.returncode == 1
    assert f"lanes.toml: queues.q.dir: {queue}: queue directory " in checked.stderr
    assert sorted(theirs.rglob("*")) == before
    assert not world.plist.exists()
    assert not world.snapshot.exists()


AS_NOBODY = """
import sys
# The interpreter the plist names: this venv's may live where nobody cannot look (/root).
sys.executable = sys.argv[2]
from lanekit.cli import main
# --force: that python3 cannot import lanekit, which apply otherwise refuses (issue 32); the
# queue directories are judged before that either way.
main(["apply", "--force", "-c", sys.argv[1]])
"""
PLIST_PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


def test_apply_as_a_second_user_refuses_a_third_users_open_directory(
    second_user: SecondUser,
) -> None:
    """Run as an unprivileged user (nobody): a queue inside a world-writable directory of a
    third user, or reached through a symlink in nobody's home, is refused (69) and nothing is
    created there; a queue in nobody's own home is applied (before, apply created the queue
    inside the third user's directory and exited 0: its owner could take or swap the jobs)."""
    owner = second_user.mkdir("nobody", mode=0o700)
    home = owner / "home"
    home.mkdir(mode=0o700)
    os.chown(home, second_user.uid, second_user.uid)
    open_dir = second_user.mkdir("open", mode=0o777, uid=THIRD_UID)
    (home / "shared").symlink_to(open_dir)
    os.lchown(home / "shared", second_user.uid, second_user.uid)
    env = {
        "HOME": str(home),
        "LANEKIT_STATE_DIR": str(owner / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(owner / "state" / "emulator" / "LaunchAgents"),
        "LANEKIT_LAUNCHD": "emulated",
    }
    config = owner / "lanes.toml"
    for queue in (open_dir / "q", home / "shared" / "q", home / "q"):
        config.write_text(LANES.replace('dir = "~/q"', f'dir = "{queue}"'), encoding="utf-8")
        os.chown(config, second_user.uid, second_user.uid)
        argv = [sys.executable, "-c", AS_NOBODY, str(config), PLIST_PYTHON]
        result = second_user.run(argv, env=env, cwd=owner)
        if queue == home / "q":
            _ok(result)
            assert (home / "q" / "queue").is_dir()
            continue
        _refused(result, 69, f"{queue}: queue directory ", f"through {open_dir}, which")
        assert f"owned by uid {THIRD_UID}, not by you (uid {SECOND_UID} (nobody))" in (
            result.stderr
        )
        assert f"e.g. {home}/lanekit/q" in result.stderr
        assert list(open_dir.iterdir()) == []


# -- issue 30 item 11: a corrupt snapshot found without --snapshot ----------------------------


def test_a_corrupt_snapshot_is_named_when_run_looks_for_it(world: World) -> None:
    """`lanekit run LANE` without --snapshot (by hand) finds the lane's snapshot damaged: one
    error naming the file and what is wrong (2), not "no installed lane snapshot"."""
    _ok(world.apply())
    world.snapshot.write_text('{"lane": ')
    result = world.lanekit("run", "alpha")
    _refused(result, 2, f"{world.snapshot}: lane snapshot is unreadable (not valid JSON")
    assert "hint: run `lanekit apply` to write it again" in result.stderr
