"""Hostile files in a queue: symlinks, FIFOs, directories, unreadable and deeply nested files.

Each case is created for real in queue/ (or claimed/) and driven through `lanekit` in a
subprocess with a timeout: no hang, no traceback, the documented exit code, a reason naming the
cause, the lane goes on to the next job, and nothing outside the queue is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lanekit.queue.directory.backend import Queue
from lanekit.queue.directory.recordstore import RecordStore
from lanekit.queue.ids import validate_job_id
from lanekit.queue.records import JobState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.state.snapshot import RunSpec

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]
label_prefix = "test.hostile"

[queues.inbox]
dir = "{queue}"

[lanes.work]
queue = "inbox"
command = ["{python}", "-c", "import sys; sys.exit(0)", "{{job}}"]
schedule = "@daily"
max_attempts = 2
stale_after = "1s"
"""

TIMEOUT = 60
"""Seconds a command may take before the test calls it a hang (a hang is forever)."""


def lanekit(
    *args: str, cwd: Path, input: bytes | None = None, user: int | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m lanekit ARGS` in `cwd` (as uid `user` when given), with a timeout."""
    argv = [sys.executable, "-m", "lanekit", *args]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(
        argv,
        cwd=cwd,
        input=input.decode() if input is not None else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    """Fail if the command printed a Python traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with lanes.toml and its queue (as after apply)."""
    Queue(tmp_path / "inbox").ensure()
    (tmp_path / "lanes.toml").write_text(
        CONFIG.format(queue=tmp_path / "inbox", python=sys.executable)
    )
    return tmp_path


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A file outside the queue that hostile links point at; checked unchanged after."""
    root = tmp_path_factory.mktemp("outside")
    target = root / "secret.json"
    target.write_text('{"not": "yours"}')
    os.utime(target, (1_000_000_000, 1_000_000_000))
    yield target
    assert target.read_text() == '{"not": "yours"}'
    assert target.stat().st_mtime == 1_000_000_000
    assert os.listdir(root) == ["secret.json"]


def inbox(project: Path) -> Queue:
    """The lane's queue."""
    return Queue(project / "inbox")


def failed_reason(queue: Queue, job_id: str) -> str:
    """The .error text next to a failed job."""
    return (queue.failed / f"{job_id}.error").read_text()


def enqueue_good(project: Path) -> str:
    """A job that runs fine, queued behind the hostile one (its id sorts after it)."""
    inbox(project).enqueue({"ok": True}, job_id="zz-good")
    return "zz-good"


def run_lane(project: Path) -> subprocess.CompletedProcess[str]:
    """`lanekit run work -c lanes.toml`."""
    return lanekit("run", "work", "-c", "lanes.toml", cwd=project)


def test_symlink_in_queue_is_not_followed(project: Path, outside: Path) -> None:
    """A symlink dropped into queue/ is never opened, locked or touched through: it goes to
    failed/ as "a symlink, not a regular file", the next job runs, and the target is intact."""
    queue = inbox(project)
    (queue.queue / "aa-link.json").symlink_to(outside)
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr  # a job failed; the run itself went on
    assert "a symlink, not a regular file" in failed_reason(queue, "aa-link")
    assert (queue.failed / "aa-link.json").is_symlink()
    assert queue.store.read(good) is not None
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]
    record = queue.store.read("aa-link")
    assert record is not None
    assert record.state is JobState.FAILED


def test_fifo_in_queue_does_not_hang_the_run(project: Path) -> None:
    """A FIFO named *.json in queue/ is opened without blocking, refused by type and moved to
    failed/; the run ends (no reader waits forever holding the lane lock)."""
    queue = inbox(project)
    os.mkfifo(queue.queue / "aa-fifo.json")
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "a FIFO, not a regular file" in failed_reason(queue, "aa-fifo")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_fifo_in_claimed_does_not_hang_doctor_or_recover(project: Path) -> None:
    """A FIFO in claimed/ (its owner long dead) neither hangs `doctor` nor `recover`; recover
    moves it to failed/ with the reason."""
    queue = inbox(project)
    fifo = queue.claimed / "aa-fifo.00000000-999999-1.json"
    os.mkfifo(fifo)
    os.utime(fifo, (1_000_000_000, 1_000_000_000), follow_symlinks=False)
    doctor = lanekit("doctor", "-c", "lanes.toml", cwd=project)
    no_traceback(doctor)
    proc = lanekit("recover", "-c", "lanes.toml", cwd=project)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert not fifo.exists()
    assert "a FIFO, not a regular file" in failed_reason(queue, "aa-fifo")


def test_socket_in_queue_goes_to_failed_and_the_run_goes_on(project: Path) -> None:
    """A unix socket named *.json in queue/ fails open(2) itself (ENXIO on Linux, EOPNOTSUPP
    on macOS): it goes to failed/ as "a socket, not a regular file" like a FIFO, instead of
    exiting 69 on every run with the jobs sorted after it never run (issue 30 item 6)."""
    import socket

    queue = inbox(project)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(queue.queue / "aa-sock.json"))
        good = enqueue_good(project)
        proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "a socket, not a regular file" in failed_reason(queue, "aa-sock")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]
    again = run_lane(project)
    assert again.returncode == 0, again.stderr


def test_hard_link_in_queue_is_refused_and_its_file_untouched(project: Path, outside: Path) -> None:
    """A hard link dropped into queue/ shares its inode with a file elsewhere: it goes to
    failed/ with the reason, the next job runs, and the other file keeps its contents and
    mtime (the `outside` fixture checks both; issue 30 item 10)."""
    queue = inbox(project)
    os.link(outside, queue.queue / "aa-hard.json")
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "2 hard links" in failed_reason(queue, "aa-hard")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_job_over_the_default_size_limit_goes_to_failed(project: Path) -> None:
    """A file over 1 MiB (the default max_job_bytes) dropped in queue/ goes to failed/ with
    its size and the limit in the reason, and the run goes on (issue 30 item 12)."""
    queue = inbox(project)
    (queue.queue / "aa-big.json").write_bytes(b'{"pad": "' + b"x" * (1 << 20) + b'"}')
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "over the queue's max_job_bytes (1048576)" in failed_reason(queue, "aa-big")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_directory_named_like_a_job_goes_to_failed(project: Path) -> None:
    """A directory `x.json` in queue/ is moved to failed/ ("a directory"), not put back to block
    every later run with exit 69."""
    queue = inbox(project)
    (queue.queue / "aa-dir.json").mkdir()
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "a directory, not a regular file" in failed_reason(queue, "aa-dir")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]
    again = run_lane(project)
    assert again.returncode == 0, again.stderr


def test_record_path_that_is_a_directory_fails_the_job(project: Path) -> None:
    """A job whose records/<id>.json is a directory cannot be guarded: it goes to failed/ with
    a reason naming the record, and the run goes on."""
    queue = inbox(project)
    queue.enqueue({"n": 1}, job_id="aa-rec")
    queue.store.path("aa-rec").unlink()
    queue.store.path("aa-rec").mkdir()
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    reason = failed_reason(queue, "aa-rec")
    assert "records/aa-rec.json" in reason
    assert "a directory, not a regular file" in reason
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_deeply_nested_job_file_goes_to_failed(project: Path) -> None:
    """A job file nested 100,000 deep (dropped in by a producer) goes to failed/ saying it is
    nested too deeply, no RecursionError."""
    queue = inbox(project)
    (queue.queue / "aa-deep.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    good = enqueue_good(project)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "nested too deeply" in failed_reason(queue, "aa-deep")
    assert queue.store.read(good).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_deeply_nested_record_fails_the_job(project: Path) -> None:
    """A record nested 100,000 deep is unreadable (not a traceback): its job goes to failed/."""
    queue = inbox(project)
    queue.enqueue({"n": 1}, job_id="aa-deep")
    queue.store.path("aa-deep").write_text("[" * 100_000 + "]" * 100_000)
    proc = run_lane(project)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    assert "nested too deeply" in failed_reason(queue, "aa-deep")


@pytest.mark.parametrize("shape", ["array", "object"])
def test_enqueue_refuses_deep_nesting_with_exit_2(project: Path, shape: str) -> None:
    """`lanekit enqueue` of a payload nested 100,000 deep: one line, exit 2, nothing queued."""
    inner = "[" * 100_000 + "]" * 100_000 if shape == "array" else '{"a":' * 100_000 + "1"
    payload = '{"x": ' + inner + ("}" * 100_000 if shape == "object" else "") + "}"
    proc = lanekit("enqueue", "work", "-", "-c", "lanes.toml", cwd=project, input=payload.encode())
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "nested too deeply" in proc.stderr.splitlines()[0]
    assert inbox(project).counts().queued == 0


def test_enqueue_accepts_a_5000_digit_integer(project: Path) -> None:
    """A 5,000-digit integer is valid JSON: enqueue takes it and the job runs with it intact."""
    payload = '{"n": ' + "9" * 5000 + "}"
    proc = lanekit("enqueue", "work", "-", "-c", "lanes.toml", cwd=project, input=payload.encode())
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip()
    assert (inbox(project).queue / f"{job_id}.json").read_text() == payload
    run = run_lane(project)
    assert run.returncode == 0, run.stderr


def test_record_with_a_5000_digit_integer_is_refused_in_lanekit_words(tmp_path: Path) -> None:
    """A record whose attempts has 5,000 digits is unreadable with a lanekit-worded reason, not
    a hint about sys.set_int_max_str_digits()."""
    store = RecordStore(tmp_path)
    text = (
        '{"schema_version": 1, "job_id": "j", "state": "queued", "attempts": '
        + "9" * 5000
        + ', "queued_at": "x", "updated_at": "x"}'
    )
    store.path("j").write_text(text)
    with pytest.raises(Exception, match=r"an integer of 5000 digits \(at most 4300\)") as info:
        store.read("j")
    assert "set_int_max_str_digits" not in str(info.value)


@pytest.mark.parametrize("job_id", ["foo.0123abcd-1-2", "a.b.deadbeef-12345-678", "x.00000000-0-0"])
def test_ids_ending_in_an_owner_shape_are_refused(job_id: str) -> None:
    """An id whose last dot-part has a claim owner's shape would read as `<id>.<owner>` in
    done/ and failed/: enqueue refuses it, so every accepted id has one reading."""
    with pytest.raises(Exception, match="the shape lanekit gives a claim's owner"):
        validate_job_id(job_id)


@pytest.mark.parametrize(
    "job_id", ["foo.0123abcd-1", "foo.0123abcd-1-2x", "foo.0123ABCD-1-2", "foo.bar", "v1.2.3"]
)
def test_ids_near_an_owner_shape_are_accepted(job_id: str) -> None:
    """Ids that only resemble an owner tail stay valid."""
    assert validate_job_id(job_id) == job_id


def test_listed_id_is_the_enqueued_id_after_done(project: Path) -> None:
    """Every id enqueue accepts is listed as itself with its attempts once done (the file-name
    grammar has one reading), including dotted ids."""
    queue = inbox(project)
    for job_id in ("foo.0123abcd-1", "a.b.c", "x.1700000000"):
        queue.enqueue({"n": 1}, job_id=job_id)
    assert run_lane(project).returncode == 0
    listing = queue.listing()
    assert {k: v[0] for k, v in listing.items()} == {
        "foo.0123abcd-1": JobState.SUCCEEDED,
        "a.b.c": JobState.SUCCEEDED,
        "x.1700000000": JobState.SUCCEEDED,
    }


def test_producer_file_with_an_owner_tail_is_failed_unambiguously(project: Path) -> None:
    """A producer that drops `foo.0123abcd-1-2.json` into queue/ gets it in failed/ under a
    name that cannot read as job `foo`, with the reason."""
    queue = inbox(project)
    (queue.queue / "foo.0123abcd-1-2.json").write_text("{}")
    proc = run_lane(project)
    no_traceback(proc)
    listing = queue.listing()
    assert "foo" not in listing
    (name,) = [n for n in os.listdir(queue.failed) if n.endswith(".error")]
    assert name.startswith("foo.0123abcd-1-2~")
    assert "shape lanekit gives a claim's owner" in (queue.failed / name).read_text()


@pytest.fixture
def other_user() -> Iterator[tuple[int, Path]]:
    """(uid, directory owned by it) for a second user, where the test runs as root."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as a second user")
    uid = 65534
    root = Path(tempfile.mkdtemp(prefix="lanekit-hostile-"))
    root.chmod(0o755)  # the other user must reach its directory inside
    home = root / "p"
    home.mkdir(mode=0o700)
    os.chown(home, uid, uid)
    try:
        yield uid, home
    finally:
        shutil.rmtree(root)


def test_unreadable_job_file_goes_to_failed(other_user: tuple[int, Path]) -> None:
    """A job file its own user cannot read (mode 000) goes to failed/ saying so, and the run
    goes on to the next job, instead of being put back to block the lane forever."""
    uid, project = other_user
    setup = (
        "import sys; from lanekit.queue.directory.backend import Queue;"
        "q = Queue(sys.argv[1]); q.ensure();"
        "open(sys.argv[1] + '/queue/aa-locked.json', 'w').write('{}');"
        "import os; os.chmod(sys.argv[1] + '/queue/aa-locked.json', 0);"
        "q.enqueue({'ok': True}, job_id='zz-good')"
    )
    subprocess.run(
        [
            *("setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"),
            *(sys.executable, "-c", setup, str(project / "inbox")),
        ],
        check=True,
        timeout=TIMEOUT,
    )
    config = project / "lanes.toml"
    # /bin/true: the job need not be able to reach this checkout's interpreter
    config.write_text(CONFIG.format(queue=project / "inbox", python="/bin/true"))
    os.chown(config, uid, uid)
    proc = lanekit("run", "work", "-c", "lanes.toml", cwd=project, user=uid)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    queue = Queue(project / "inbox")
    assert "Permission denied" in failed_reason(queue, "aa-locked")
    record = queue.store.read("zz-good")
    assert record is not None and record.state is JobState.SUCCEEDED


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs that a test can fill up; skipped where it cannot be mounted."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None or sys.platform != "linux":
        pytest.skip("needs root on Linux to mount a small tmpfs")
    where = tmp_path / "fs"
    where.mkdir()
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


FILL = """
import os, sys
ledger, fill = sys.argv[1], sys.argv[2]
with open(ledger, "a") as f:
    f.write("ran\\n")
fd = os.open(fill, os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError:
    pass
"""


def test_success_without_its_record_is_still_refused(small_fs: Path, tmp_path: Path) -> None:
    """A job succeeds on a filesystem that is full by then, so its final record cannot be
    written: it still goes to done/, and once space is back the same id is refused at enqueue
    and skipped when a producer drops it in again: it never runs a second time.

    A settle appends its line into the record file's block, which needs no free space; so
    the record here has held enough earlier attempts that the success's line must replace the
    file (recordstore.FILE_LIMIT), which does."""
    from lanekit.queue.directory.recordstore import FILE_LIMIT
    from lanekit.queue.model import JobExistsError
    from lanekit.run import runner

    queue_dir = small_fs / "q"
    queue = Queue(queue_dir, durable=False)
    queue.ensure()
    queue.enqueue({"n": 1}, job_id="once")
    queued = queue.store.read("once")
    assert queued is not None
    while queue.store.path("once").stat().st_size + 2 * len(queued.to_bytes()) <= FILE_LIMIT:
        queue.store.settle(queued)  # earlier attempts, each released
    ledger, fill = tmp_path / "ledger", small_fs / "fill"
    spec = _fill_spec(queue_dir, ledger, fill, tmp_path)
    with pytest.raises(Exception, match="cannot record that job once succeeded"):
        runner.run_lane(spec, handle_signals=False)
    # The record still says what the claim's `running` line said, and the claim's running mark
    # stays (the settle removes it only once the record is written), a second name of the file
    # in done/ now, to send the guard to done/.
    assert queue.store.read("once").state is JobState.RUNNING  # type: ignore[union-attr]
    [done] = (queue.dir / "done").glob("*/once*.json")
    assert os.path.samefile(queue.dir / "claimed" / ".once.running", done)
    assert queue.listing()["once"][0] is JobState.SUCCEEDED  # the file is in done/
    fill.unlink()
    with pytest.raises(JobExistsError, match="already succeeded"):
        queue.enqueue({"n": 1}, job_id="once")
    (queue.queue / "once.json").write_text('{"n": 1}')  # a producer, bypassing enqueue
    result = runner.run_lane(spec, handle_signals=False)
    assert (result.skipped, result.done) == (1, 0)
    assert ledger.read_text() == "ran\n"
    assert queue.store.read("once").state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_a_success_on_a_full_filesystem_is_recorded(small_fs: Path, tmp_path: Path) -> None:
    """The settle's record line goes into the record file's own block: a job that fills the
    disk still has its success recorded, its mark removed, and is never run again."""
    from lanekit.run import runner

    queue_dir = small_fs / "q"
    queue = Queue(queue_dir, durable=False)
    queue.ensure()
    queue.enqueue({"n": 1}, job_id="once")
    ledger, fill = tmp_path / "ledger", small_fs / "fill"
    spec = _fill_spec(queue_dir, ledger, fill, tmp_path)
    result = runner.run_lane(spec, handle_signals=False)
    assert result.done == 1
    assert queue.store.read("once").state is JobState.SUCCEEDED  # type: ignore[union-attr]
    assert not (queue.dir / "claimed" / ".once.running").exists()
    fill.unlink()  # room for a producer to drop the same id in again
    (queue.queue / "once.json").write_text('{"n": 1}')
    result = runner.run_lane(spec, handle_signals=False)
    assert (result.skipped, result.done) == (1, 0)
    assert ledger.read_text() == "ran\n"


def _fill_spec(queue_dir: Path, ledger: Path, fill: Path, tmp_path: Path) -> RunSpec:
    """A lane whose job notes that it ran, then fills the filesystem."""
    from lanekit.state.snapshot import RunSpec

    return RunSpec(
        lane="work",
        label="test.work",
        queue_dir=queue_dir,
        command=(sys.executable, "-c", FILL, str(ledger), str(fill)),
        max_jobs=10,
        max_seconds=None,
        max_attempts=3,
        stale_after=3600.0,
        exit_timeout=5,
        log_path=tmp_path / "work.log",
        durable=False,
    )


# --- property: whatever lands in queue/, every run ends and nothing is lost or touched --------

_NAME_CHARS = st.sampled_from(
    [*"abcXYZ019._-", " ", "\n", "\t", "é", "~", "$", "*", "'", '"', "\\", ":"]
)
_KINDS = ("job", "corrupt", "nested", "array", "empty", "symlink", "fifo", "dir", "bigint")


@st.composite
def hostile_entry(draw: st.DrawFn) -> tuple[str, str]:
    """(file name, kind) for one entry dropped into queue/: mostly `*.json`, any characters a
    file name may hold, sometimes too long to carry an owner."""
    stem = draw(st.text(_NAME_CHARS, min_size=1, max_size=30))
    if draw(st.booleans()) and draw(st.booleans()):
        # long enough that the claimed name (id + owner) no longer fits in 255 bytes
        stem = stem * (200 // len(stem) + 1)
        while len(stem.encode()) > 220:
            stem = stem[:-1]
    suffix = draw(st.sampled_from([".json", ".json", ".json", ".tmp", ""]))
    return stem + suffix, draw(st.sampled_from(_KINDS))


def _plant(queue: Queue, name: str, kind: str, outside: Path) -> None:
    path = queue.queue / name
    if kind == "symlink":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
        (path / "inner.json").write_text("{}")
    else:
        path.write_text(
            {
                "job": '{"ok": 1}',
                "corrupt": '{"ok": ',
                "nested": "[" * 100_000 + "]" * 100_000,
                "array": "[1, 2]",
                "empty": "",
                "bigint": '{"n": ' + "7" * 5000 + "}",
            }[kind]
        )


def _snapshot(root: Path) -> dict[str, tuple[int, float, bytes]]:
    found = {}
    for path in sorted(root.rglob("*")):
        st_ = path.lstat()
        found[str(path)] = (st_.st_mode, st_.st_mtime, path.read_bytes() if path.is_file() else b"")
    return found


@pytest.mark.slow
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(entries=st.lists(hostile_entry(), min_size=1, max_size=6, unique_by=lambda e: e[0]))
def test_hostile_queue_entries_never_hang_lose_or_touch(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[str, str]]
) -> None:
    """Hostile names and file types in queue/ (symlinks, FIFOs, directories, corrupt, empty,
    nested 100,000 deep, huge integers, names with spaces, newlines, quotes, too long to
    claim): every run ends without a traceback, every good job enqueued beside them succeeds,
    every `*.json` entry leaves queue/ for done/ or failed/ (none blocks the lane), entries
    that are no job files are left alone, and nothing outside the queue changes."""
    root = tmp_path_factory.mktemp("prop")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('{"not": "yours"}')
    before = _snapshot(outside)
    project = root / "p"
    project.mkdir()
    queue = Queue(project / "inbox")
    queue.ensure()
    (project / "lanes.toml").write_text(
        CONFIG.format(queue=project / "inbox", python=sys.executable)
    )
    good = [queue.enqueue({"good": n}) for n in range(2)]
    for name, kind in entries:
        if not (queue.queue / name).exists() and not os.path.islink(queue.queue / name):
            _plant(queue, name, kind, outside / "secret.json")
    for _ in range(2):  # the second run proves nothing was left to block the lane
        proc = run_lane(project)
        no_traceback(proc)
        assert proc.returncode in {0, 1, 2}, proc.stderr
    for job_id in good:
        record = queue.store.read(job_id)
        assert record is not None
        assert record.state is JobState.SUCCEEDED
    left = os.listdir(queue.queue)
    jobs_left = {n for n in left if n.endswith(".json") and not n.startswith(".")}
    assert jobs_left == set(), f"blocked in queue/: {jobs_left}"
    assert os.listdir(queue.claimed) == []
    assert _snapshot(outside) == before
