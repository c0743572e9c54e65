"""The platform seam: no-replace rename (both branches), durable writes, regular-file opens and
flock probes."""

from __future__ import annotations

import ast
import errno
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from lanekit.system import fdio, fsops
from lanekit.system.fsops import NoReplaceRename

STRATEGIES = [
    pytest.param(lambda: fsops.select_rename(sys.platform), id="native"),
    pytest.param(lambda: NoReplaceRename("link", None), id="link-unlink"),
]


@pytest.fixture(params=STRATEGIES)
def rename(request: pytest.FixtureRequest) -> NoReplaceRename:
    """Each no-replace strategy this platform can run: the native call and the fallback."""
    make: Callable[[], NoReplaceRename] = request.param
    return make()


def test_native_strategy_is_used_on_linux() -> None:
    """On Linux the seam picks renameat2, not the fallback (the fallback is for old kernels)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux-only")
    assert fsops.select_rename("linux").name == "renameat2"


def test_unknown_platform_falls_back_to_link() -> None:
    """A platform without a known no-replace call gets link + unlink."""
    assert fsops.select_rename("sunos5").name == "link"


def test_rename_moves_the_file(rename: NoReplaceRename, tmp_path: Path) -> None:
    """The file arrives under the new name with its bytes, and the old name is gone."""
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"job")
    rename(str(src), str(dst))
    assert not src.exists()
    assert dst.read_bytes() == b"job"


def test_collision_never_overwrites(rename: NoReplaceRename, tmp_path: Path) -> None:
    """A taken destination raises FileExistsError and both files keep their bytes."""
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"new")
    dst.write_bytes(b"old")
    with pytest.raises(FileExistsError):
        rename(str(src), str(dst))
    assert src.read_bytes() == b"new"
    assert dst.read_bytes() == b"old"


def test_missing_source_is_a_lost_race(rename: NoReplaceRename, tmp_path: Path) -> None:
    """A source someone else already moved raises FileNotFoundError and creates nothing."""
    with pytest.raises(FileNotFoundError):
        rename(str(tmp_path / "gone"), str(tmp_path / "b"))
    assert list(tmp_path.iterdir()) == []


def test_racing_renames_have_exactly_one_winner(rename: NoReplaceRename, tmp_path: Path) -> None:
    """Threads racing to move one file to different names: one wins, the rest see ENOENT, and
    exactly one copy exists afterwards (link + unlink undoes the losers' links)."""
    for round_ in range(30):
        src = tmp_path / f"job{round_}"
        src.write_bytes(b"x")
        outcomes = _race(rename, src, 6)
        winners = [n for n, won in outcomes.items() if won]
        assert len(winners) == 1
        copies = sorted(p.name for p in tmp_path.glob(f"job{round_}*"))
        assert copies == [f"job{round_}.{winners[0]}"]


def _race(rename: NoReplaceRename, src: Path, racers: int) -> dict[int, bool]:
    """Start `racers` threads at once, each moving `src` to `<src>.<n>`; who won."""
    outcomes: dict[int, bool] = {}
    start = threading.Barrier(racers)

    def race(n: int) -> None:
        start.wait()
        try:
            rename(str(src), f"{src}.{n}")
        except FileNotFoundError:
            outcomes[n] = False
        else:
            outcomes[n] = True

    threads = [threading.Thread(target=race, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == racers
    return outcomes


def test_unsupported_native_call_falls_back_to_link(tmp_path: Path) -> None:
    """When the filesystem answers EINVAL (no RENAME_NOREPLACE support) the move still happens,
    through link + unlink, and still refuses to overwrite."""
    calls: list[bytes] = []

    def unsupported(src: bytes, dst: bytes) -> int:
        calls.append(src)
        return errno.EINVAL

    rename = NoReplaceRename("fake", unsupported)
    (tmp_path / "a").write_bytes(b"1")
    rename(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == b"1"
    (tmp_path / "c").write_bytes(b"2")
    with pytest.raises(FileExistsError):
        rename(str(tmp_path / "c"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == b"1"
    assert len(calls) == 2


def test_missing_syscall_switches_to_link_for_good(tmp_path: Path) -> None:
    """ENOSYS means the kernel lacks the call: it is not asked again."""
    calls: list[bytes] = []

    def missing(src: bytes, dst: bytes) -> int:
        calls.append(src)
        return errno.ENOSYS

    rename = NoReplaceRename("fake", missing)
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(b"x")
        rename(str(tmp_path / name), str(tmp_path / f"{name}2"))
    assert len(calls) == 1
    assert rename.name == "link"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a2", "b2"]


def test_other_native_errors_are_raised(tmp_path: Path) -> None:
    """Errors that are not "unsupported" (here EXDEV) surface as OSError with that errno."""
    rename = NoReplaceRename("fake", lambda src, dst: errno.EXDEV)
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(OSError) as info:
        rename(str(tmp_path / "a"), str(tmp_path / "b"))
    assert info.value.errno == errno.EXDEV
    assert (tmp_path / "a").exists()


def test_cross_device_move_is_refused_not_copied(rename: NoReplaceRename, tmp_path: Path) -> None:
    """Across filesystems neither strategy copies: the move fails with EXDEV."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on a filesystem other than the work dir")
    src = tmp_path / "a"
    src.write_bytes(b"x")
    dst = shm / f"lanekit-test-{os.getpid()}"
    try:
        with pytest.raises(OSError) as info:
            rename(str(src), str(dst))
        assert info.value.errno == errno.EXDEV
        assert src.exists() and not dst.exists()
    finally:
        dst.unlink(missing_ok=True)


def test_publish_new_names_a_new_file_and_never_replaces(tmp_path: Path) -> None:
    """publish_new gives a temp file its final name (one name left, the temp one gone); onto
    a taken name it is FileExistsError, the file there untouched and the temp file kept (its
    creator removes it). No ctypes is needed for it."""
    tmp, dst = tmp_path / "tmp", tmp_path / "dst"
    tmp.mkdir()
    dst.mkdir()
    fsops.write_new(str(tmp / "a"), b"new", durable=False)
    fsops.publish_new(str(tmp / "a"), str(dst / "job.json"))
    assert (dst / "job.json").read_bytes() == b"new"
    assert (dst / "job.json").stat().st_nlink == 1
    assert list(tmp.iterdir()) == []
    fsops.write_new(str(tmp / "b"), b"other", durable=False)
    with pytest.raises(FileExistsError):
        fsops.publish_new(str(tmp / "b"), str(dst / "job.json"))
    assert (dst / "job.json").read_bytes() == b"new"
    assert (tmp / "b").read_bytes() == b"other"
    code = (
        "import sys; from lanekit.system import fsops; "
        f"fsops.publish_new({str(tmp / 'b')!r}, {str(dst / 'c')!r}); "
        "print('ctypes' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


def test_write_new_refuses_an_existing_file(tmp_path: Path) -> None:
    """write_new creates exclusively: an existing file is neither truncated nor replaced."""
    target = tmp_path / "f"
    fsops.write_new(str(target), b"first", durable=True)
    with pytest.raises(FileExistsError):
        fsops.write_new(str(target), b"second", durable=False)
    assert target.read_bytes() == b"first"
    assert (target.stat().st_mode & 0o777) == 0o600


def test_replace_file_swaps_content_and_leaves_no_temp(tmp_path: Path) -> None:
    """replace_file replaces the bytes through the temp name, which is gone afterwards."""
    target, tmp = tmp_path / "r.json", tmp_path / ".r.tmp"
    target.write_bytes(b"old")
    fsops.replace_file(str(target), b"new", tmp=str(tmp), durable=True)
    assert target.read_bytes() == b"new"
    assert not tmp.exists()


def test_replace_file_keeps_the_old_file_when_the_temp_name_is_taken(tmp_path: Path) -> None:
    """A stale temp file makes the write fail before anything is replaced."""
    target, tmp = tmp_path / "r.json", tmp_path / ".r.tmp"
    target.write_bytes(b"old")
    tmp.write_bytes(b"stale")
    with pytest.raises(FileExistsError):
        fsops.replace_file(str(target), b"new", tmp=str(tmp), durable=False)
    assert target.read_bytes() == b"old"


def test_fsync_dir_needs_a_directory(tmp_path: Path) -> None:
    """fsync_dir opens the directory itself; a missing one is an error, not a silent no-op."""
    fsops.fsync_dir(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        fsops.fsync_dir(str(tmp_path / "missing"))


def test_flock_held_probe(tmp_path: Path) -> None:
    """The shared probe sees another holder's exclusive lock, leaves none of its own behind,
    and says None for a missing file."""
    import fcntl

    from lanekit.system.fsops import flock_held

    path = tmp_path / "lock"
    assert flock_held(path) is None
    path.touch()
    assert flock_held(path) is False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert flock_held(path) is True
    finally:
        os.close(fd)
    assert flock_held(path) is False
    other = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the probe kept no lock
    finally:
        os.close(other)


# -- append_line: the settle's record write (no inode created) ---------------------------------


def test_append_line_adds_to_a_file_that_ends_in_a_line(tmp_path: Path) -> None:
    """The line goes at the end of the same file (same inode); the result says so."""
    path = tmp_path / "r"
    path.write_bytes(b"one\n")
    inode = path.stat().st_ino
    assert fsops.append_line(str(path), b"two\n", limit=4096, durable=True) is True
    assert path.read_bytes() == b"one\ntwo\n"
    assert path.stat().st_ino == inode


@pytest.mark.parametrize(
    ("content", "limit"),
    [
        (b"", 4096),  # empty: nothing to append to
        (b"one", 4096),  # the last line was cut short
        (b"one\n", 7),  # would pass the limit
    ],
)
def test_append_line_refuses_and_writes_nothing(tmp_path: Path, content: bytes, limit: int) -> None:
    """Where appending would not leave whole lines within the limit, nothing is written."""
    path = tmp_path / "r"
    path.write_bytes(content)
    assert fsops.append_line(str(path), b"two\n", limit=limit, durable=False) is False
    assert path.read_bytes() == content


def test_append_line_never_follows_a_symlink_or_waits_on_a_fifo(tmp_path: Path) -> None:
    """A symlink is not followed to its target; a FIFO is neither waited on nor written;
    a missing file is not created."""
    target = tmp_path / "target"
    target.write_bytes(b"one\n")
    (tmp_path / "link").symlink_to(target)
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo", "missing"):
        assert fsops.append_line(str(tmp_path / name), b"x\n", limit=99, durable=False) is False
    assert target.read_bytes() == b"one\n"
    assert not (tmp_path / "missing").exists()


def test_temp_names_differ_in_a_forked_child() -> None:
    """tmp_suffix: a fork's child continues the parent's serial but not its names (its own pid,
    its own random part), and names never repeat within a process."""
    ours = [fsops.tmp_suffix() for _ in range(1000)]
    assert len(set(ours)) == len(ours)
    assert {name.split(".")[0] for name in ours} == {str(os.getpid())}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, " ".join(fsops.tmp_suffix() for _ in range(50)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode().split()
    os.waitpid(pid, 0)
    after = [fsops.tmp_suffix() for _ in range(50)]
    assert {name.split(".")[0] for name in child} == {str(pid)}
    assert {name.split(".")[2] for name in child}.isdisjoint(name.split(".")[2] for name in after)


def test_open_regular_refuses_a_socket_by_its_kind(tmp_path: Path) -> None:
    """A unix socket fails open(2) itself (ENXIO here): it is still NotRegularFileError
    naming its kind, like a FIFO refused on its descriptor, not an error of the directory."""
    import socket

    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(fsops.NotRegularFileError) as caught:
            fsops.open_regular(str(path))
    assert caught.value.kind == "a socket"
    assert "a socket, not a regular file" in str(caught.value)


def test_read_all_reads_to_the_end_sized_or_not(tmp_path: Path) -> None:
    """A file read with its fstat size in one read, one that grew past it, an empty one, and a
    pipe until its writer closes: each comes back whole."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100_000)
    for size in (100_000, 10, 0):
        fd = os.open(path, os.O_RDONLY)
        try:
            assert fdio.read_all(fd, size) == b"x" * 100_000
        finally:
            os.close(fd)
    (tmp_path / "empty").write_bytes(b"")
    fd = os.open(tmp_path / "empty", os.O_RDONLY)
    try:
        assert fdio.read_all(fd, 0) == b""
    finally:
        os.close(fd)
    read_end, write_end = os.pipe()

    def write() -> None:
        fdio.write_all(write_end, b"y" * 200_000)
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert fdio.read_all(read_end) == b"y" * 200_000
    finally:
        writer.join()
        os.close(read_end)


def _read_loops(source: str) -> list[int]:
    """Lines of hand-written read-to-end loops: `while x := os.read(...)`, or a function that
    calls os.read and joins what it read (draining a wake-up pipe, `while os.read(...): pass`,
    keeps nothing and is not one)."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.While)
            and isinstance(node.test, ast.NamedExpr)
            and "os.read(" in ast.unparse(node.test)
        ):
            found.append(node.lineno)
        elif isinstance(node, ast.FunctionDef):
            text = ast.unparse(node)
            if "os.read(" in text and 'b"".join(' in text.replace("b''", 'b""'):
                found.append(node.lineno)
    return sorted(set(found))


def test_read_all_is_the_only_read_to_end_loop() -> None:
    """No module but lanekit.system.fdio reads a descriptor to its end itself."""
    src = Path(__file__).resolve().parents[2] / "src" / "lanekit"
    exempt: set[str] = set()
    offenders = {}
    for path in sorted(src.rglob("*.py")):
        relative = str(path.relative_to(src))
        if relative in exempt or relative == "system/fdio.py":
            continue
        found = _read_loops(path.read_text(encoding="utf-8"))
        if found:
            offenders[relative] = found
    assert offenders == {}
    assert all((src / relative).exists() for relative in exempt), "drop the stale exemption"
    assert _read_loops("while c := os.read(fd, 9):\n    x.append(c)") == [1]
    assert _read_loops("def f(fd):\n    a = [os.read(fd, 1)]\n    return b''.join(a)") == [1]
    assert _read_loops("def f(fd):\n    return os.read(fd, 64)") == []
