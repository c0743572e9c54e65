"""Checks on the files and directories launchd and the runner need: the stdout/stderr paths
launchd opens before exec (a failure there is the silent exit 78), the working directory, log
growth, and the queue's directories."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from lanekit.doctor import DoctorContext, Problem, Scope, Severity, Target, check
from lanekit.doctor.checks import jobfacts
from lanekit.system.quoting import cmdline

LARGE_LOG_BYTES = 50 * 1024 * 1024
"""launchd never rotates StandardOutPath/StandardErrorPath; past this size we say so."""

_EXIT_78 = "launchd cannot open it, so the job exits 78 without running"


def _missing_dir(path: Path) -> tuple[Path, Path] | None:
    """(the directory the file needs, what is in the way) when the directory is unusable:
    it does not exist (in the way: its nearest existing ancestor), or an ancestor is a file."""
    parent = path.parent
    if parent.is_dir():
        return None
    blocker = jobfacts.nearest_existing(parent)
    return parent, blocker


@check(
    "logs.dir-missing",
    summary="the directory of StandardOutPath/StandardErrorPath does not exist (launchd exit 78)",
)
def logs_dir_missing(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd does not reliably create the log's directory; when it cannot open the file it
    fails the spawn with 78 and nothing is ever written anywhere."""
    if target.definition is None:
        return
    reported: set[Path] = set()
    for key, path in jobfacts.defined_logs(target.definition):
        missing = _missing_dir(path)
        if missing is None or missing[0] in reported:
            continue  # one finding per directory (stdout and stderr usually share one)
        parent, blocker = missing
        reported.add(parent)
        written = str((target.plist or {}).get(key, ""))
        if jobfacts.unexpanded(written):
            real = jobfacts.expand(written, ctx.paths.home)
            yield Problem(
                Severity.ERROR,
                f"{key} {written} names a directory launchd reads literally ({parent}), which "
                f"does not exist: {_EXIT_78}.",
                f"write the absolute path {real} as {key}, and "
                f"`{cmdline('mkdir', '-p', Path(real).parent)}`",
            )
        elif blocker.exists() and not blocker.is_dir():
            yield Problem(
                Severity.ERROR,
                f"{key} {path} cannot be created because {blocker} is a file, not a "
                f"directory: {_EXIT_78}.",
                f"move {blocker} out of the way, or point {key} at a directory that exists",
            )
        else:
            yield Problem(
                Severity.ERROR,
                f"the directory of {key} {path} does not exist: {_EXIT_78}.",
                cmdline("mkdir", "-p", parent),
            )


@check(
    "logs.unwritable",
    summary="StandardOutPath/StandardErrorPath cannot be opened for writing (launchd exit 78)",
)
def logs_unwritable(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A read-only directory, a log file owned by someone else, or a directory where the file
    should be: launchd fails the spawn with 78."""
    if target.definition is None:
        return
    for key, path in jobfacts.defined_logs(target.definition):
        if _missing_dir(path) is not None:
            continue  # logs.dir-missing says it
        try:
            st = path.stat()
        except FileNotFoundError:
            if path.is_symlink():
                yield Problem(
                    Severity.ERROR,
                    f"{key} {path} is a symlink to {path.readlink()}, which cannot be created: "
                    f"{_EXIT_78}.",
                    f"{cmdline('rm', path)}, or create the directory the link points into",
                )
                continue
            st = None
        except OSError as exc:
            yield Problem(
                Severity.ERROR,
                f"{key} {path} cannot be examined ({exc.strerror}).",
                cmdline("ls", "-l", path),
            )
            continue
        if st is not None and stat.S_ISDIR(st.st_mode):
            yield Problem(
                Severity.ERROR,
                f"{key} {path} is a directory, not a file: {_EXIT_78}.",
                f"point {key} at a file, e.g. {path / 'job.log'}",
            )
            continue
        holder = path if st is not None else path.parent
        holder_st = st if st is not None else path.parent.stat()
        if jobfacts.read_only_fs(holder):
            yield Problem(
                Severity.ERROR,
                f"{key} {path} is on a read-only filesystem: {_EXIT_78}.",
                f"point {key} at a writable directory, e.g. under {ctx.paths.home}",
            )
        elif not jobfacts.may_write(holder_st, ctx.uid, ctx.gids):
            what = "the file" if st is not None else "its directory"
            fix = cmdline("chmod", "u+w" if st is not None else "u+rwx", holder)
            if holder_st.st_uid != ctx.uid:
                fix = f"{cmdline('chown', ctx.uid, holder)} && {fix}"
            yield Problem(
                Severity.ERROR,
                f"{key} {path} is not writable ({what} {holder} has mode "
                f"{holder_st.st_mode & 0o7777:04o}, owner uid {holder_st.st_uid}): {_EXIT_78}.",
                fix,
            )


@check("workdir.missing", summary="WorkingDirectory does not exist (launchd cannot chdir into it)")
def workdir_missing(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd cannot chdir: modern launchd fails the spawn (78), older ones run from `/`."""
    if target.definition is None:
        return
    workdir = jobfacts.workdir(target.definition)
    if workdir is None or Path(workdir).is_dir():
        return
    if os.path.lexists(workdir):
        yield Problem(
            Severity.ERROR,
            f"WorkingDirectory {workdir} is not a directory, so launchd cannot start the job "
            "there.",
            f"point WorkingDirectory at a directory (now: {workdir})",
        )
        return
    fix = cmdline("mkdir", "-p", workdir)
    if target.lane is not None:
        apply = cmdline("lanekit", "apply", target.lane.name)
        fix = f"{apply}  (creates the queue directories), or {fix}"
    yield Problem(
        Severity.ERROR,
        f"WorkingDirectory {workdir} does not exist, so launchd cannot start the job there.",
        fix,
    )


@check(
    "workdir.default-root",
    summary="no WorkingDirectory: the job starts in / (read-only on macOS since Catalina)",
)
def workdir_default_root(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Relative paths (and files a script writes next to itself) land in `/`, which is
    read-only: the job fails in ways that depend on where you tested it from."""
    job, defined = target.plist, target.definition
    if job is None or defined is None or jobfacts.workdir(defined) is not None:
        return
    written = jobfacts.arguments(defined)[:1] + [
        value for key in jobfacts.LOG_KEYS if isinstance(value := job.get(key), str)
    ]
    relative = [v for v in written if v and "/" in v and not v.startswith("/")]
    extra = f"; relative paths ({', '.join(relative)}) resolve against it" if relative else ""
    yield Problem(
        Severity.WARNING if relative else Severity.INFO,
        f"no WorkingDirectory, so the job starts in / (read-only on macOS){extra}.",
        f"add <key>WorkingDirectory</key><string>DIR</string> to {target.plist_path}",
    )


@check(
    "logs.large",
    summary="a log file is large: launchd never rotates StandardOutPath/StandardErrorPath",
)
def logs_large(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Output files grow forever under launchd; the lane log itself is rotated by the runner."""
    if target.definition is None:
        return
    for key, path in jobfacts.defined_logs(target.definition):
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size < LARGE_LOG_BYTES:
            continue
        yield Problem(
            Severity.WARNING,
            f"{key} {path} is {size // (1024 * 1024)} MiB and launchd never rotates it.",
            f"{cmdline('mv', path, f'{path}.1')} (the next run starts a new file), and add a "
            "rule for it in "
            "/etc/newsyslog.d/",
        )


def _queue_dirs(target: Target, ctx: DoctorContext) -> list[Path]:
    if target.lane is None:
        return []
    from lanekit.queue import places

    return places(target.lane.queue.dir)


@check(
    "queue.cross-device",
    summary="the queue's directories are not all on one filesystem (claims would not be atomic)",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
)
def queue_cross_device(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A claim is one rename; across filesystems rename fails (EXDEV) or, done by `mv`, becomes
    copy+delete with a window in which two runners both own a job."""
    dirs = _queue_dirs(target, ctx)
    if not dirs:
        return
    try:
        home_dev = dirs[0].stat().st_dev
    except OSError:
        return
    for path in dirs[1:]:
        try:
            dev = path.stat().st_dev
        except OSError:
            continue
        if dev != home_dev:
            yield Problem(
                Severity.ERROR,
                f"{path} is on another filesystem than {dirs[0]}, so claiming a job is not one "
                "atomic rename and the runner refuses the queue (exit 69).",
                f"make {path} a plain directory inside {dirs[0]} (no symlink or mount to "
                "elsewhere)",
            )


@check(
    "queue.permissions",
    summary="a queue directory is not a real directory owned and writable by the lane's user only",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
)
def queue_permissions(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The runner refuses a queue it cannot trust (exit 69, every job waits): a directory that
    is a file or a symlink, owned by someone else, or writable by group or others."""
    name = target.lane.name if target.lane is not None else ""
    dirs = _queue_dirs(target, ctx)
    for path in dirs:
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue  # workdir.missing covers the queue dir; `apply` creates the others
        except OSError as exc:
            yield Problem(
                Severity.ERROR,
                f"{path} cannot be examined ({exc.strerror}).",
                cmdline("ls", "-ld", path),
            )
            continue
        mode = st.st_mode & 0o7777
        refused = "so the runner refuses the queue (exit 69) and every job waits"
        if stat.S_ISLNK(st.st_mode) and path != dirs[0]:
            yield Problem(
                Severity.ERROR,
                f"{path} is a symlink (to {path.readlink()}), {refused}.",
                f"{cmdline('rm', path)} && {cmdline('mkdir', '-m', '700', path)}",
            )
        elif stat.S_ISLNK(st.st_mode):
            continue
        elif not stat.S_ISDIR(st.st_mode):
            yield Problem(
                Severity.ERROR,
                f"{path} is a file, not a directory, {refused}.",
                f"move {path} away, then run `{cmdline('lanekit', 'apply', name)}`",
            )
        elif st.st_uid != ctx.uid:
            yield Problem(
                Severity.ERROR,
                f"{path} is owned by uid {st.st_uid}, not by the lane's user (uid {ctx.uid}), "
                f"{refused}.",
                cmdline("chown", ctx.uid, path),
            )
        elif mode & 0o022:
            yield Problem(
                Severity.ERROR,
                f"{path} is writable by others (mode {mode:04o}), {refused}.",
                cmdline("chmod", "go-w", path),
            )
        elif not jobfacts.may_write(st, ctx.uid, ctx.gids):
            yield Problem(
                Severity.ERROR,
                f"{path} is not writable by its owner (mode {mode:04o}), so the runner cannot "
                "move jobs through it (exit 69).",
                cmdline("chmod", "u+rwx", path),
            )
