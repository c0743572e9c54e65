"""Setting a queue up and refusing one that could break exactly-once: missing, foreign or
group-writable directories, symlinks, mounts inside, network and sync-engine folders, and
volumes that cannot rename without replacing (design.md section 3).

Builtin imports only until something is refused (the error class is imported then): a single
`lanekit enqueue` checks its queue here, and its start-up is a benchmark figure
(lanekit.jobs.add)."""

# ruff: noqa: PTH108, PTH110, PTH115, PTH116, PTH120
# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import errno
import os
import stat
import sys

from lanekit.queue.directory.layout import CHECK_STAMP, MOVED_THROUGH, PUBLISHED_INTO, SUBDIRS
from lanekit.state.schemas import QUEUE_CHECK_SCHEMA
from lanekit.system import fsops, volumes
from lanekit.system.owned import make_private_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.errors import QueueError
    from lanekit.queue.directory.state import QueueState

_NO_EXCL_ERRNOS = frozenset({errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM})
"""What a no-replace rename fails with where the volume has neither RENAME_EXCL nor links."""
_checked_roots: set[str] = set()
"""Queue directories that passed check() in this process (the runner checks on every run)."""


def _refusal(message: str, hint: str) -> QueueError:
    from lanekit.errors import QueueError

    return QueueError(message, hint)


def location_error(root: str | os.PathLike[str]) -> QueueError | None:
    """The refusal for a queue directory inside a sync engine's folder or on a network
    filesystem, where rename is not atomic or not local; None when the place is fine. Works
    before the directory exists (it judges the nearest existing parent), so `validate` and
    `apply` refuse the same queues before anything is created (lanekit.reconcile.preflight)."""
    root = os.fspath(root)
    return _location_error(root, os.path.realpath(root), None)


def _location_error(root: str, real: str, mountinfo: str | None) -> QueueError | None:
    """location_error of `root`, whose real path is `real` (Linux: `mountinfo`, the mount
    table's text, read here unless given)."""
    where = volumes.sync_folder(real)
    if where is not None:
        return _refusal(
            f"{root}: inside {where}; a sync engine moves and re-creates files behind the "
            "queue's back, so claims are not atomic there",
            "put the queue in a local folder outside any synced folder",
        )
    existing = real
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    mode = os.stat(existing).st_mode
    if not stat.S_ISDIR(mode):
        # The queue, or a directory it needs, is a file: apply could create none of them.
        kind = fsops.file_kind(mode)
        what = (
            f"is {kind}, not a directory"
            if existing == real
            else f"is not a directory ({existing} is {kind})"
        )
        return _refusal(
            f"{root}: {what}",
            "point the queue's dir at a directory (or where `lanekit apply` may create one), "
            "or move the file out of the way",
        )
    problem = volumes.mount_problem(existing, mountinfo=mountinfo)
    if problem is not None:
        return _refusal(
            f"{root}: {problem}; rename there is not atomic or not local",
            "put the queue on a local disk",
        )
    return None


def ensure(q: QueueState) -> None:
    """Create the directories that are missing (mode 0700 whatever the umask, parents
    included), then check() them all."""
    try:
        make_private_dirs(q.root)
        for name in SUBDIRS:
            make_private_dirs(f"{q.root}/{name}", parents=False)
    except OSError as exc:
        raise _refusal(
            f"{exc.filename or q.root}: cannot create the queue directory ({exc.strerror})",
            "check that the parent directory exists and is writable",
        ) from None
    _checked_roots.discard(q.root)
    check_root(q.root, fresh=True)


def check(q: QueueState) -> None:
    """check_root(q.root): see there."""
    check_root(q.root)


def check_root(root: str, *, fresh: bool = False) -> None:
    """Refuse (QueueError, exit 69) a queue whose directories could break exactly-once.

    All directories must exist, be real directories (not symlinks), belong to us and not be
    writable by group or others, sit on one local filesystem (same st_dev, and a probe file
    renamed through each of them, linked in claimed/ and linked from tmp/ into each directory
    a new file is published into), and not be inside a network or sync-engine folder.
    A queue that passed is not checked again in the same process.

    The probe's verdict is kept in the queue's CHECK_STAMP, keyed on what decides it (see
    `probe_key`): a process whose key matches the stamp skips the probe (and so loads no
    ctypes: a single `lanekit enqueue` is a benchmark figure); any change, or `fresh` (ensure,
    `apply`), probes again. Everything else above is asked of the disk by every process.
    """
    if root in _checked_roots and not fresh:
        return
    try:
        root_stat = os.stat(root)
    except FileNotFoundError:
        raise _refusal(
            f"{root}: queue directory does not exist",
            "create it with `lanekit apply` (it creates the queue directories), "
            "or fix the queue's dir in lanes.toml",
        ) from None
    except OSError as exc:
        raise _refusal(
            f"{root}: queue directory is unusable ({exc.strerror})",
            "check its permissions",
        ) from None
    if not stat.S_ISDIR(root_stat.st_mode):
        raise _refusal(f"{root}: not a directory", "point the queue's dir at a directory")
    check_access(root, root_stat)
    real = os.path.realpath(root)
    mountinfo = volumes.read_mountinfo() if sys.platform.startswith("linux") else None
    refusal = _location_error(root, real, mountinfo)
    if refusal is not None:
        raise refusal
    identities = [f". {root_stat.st_dev} {root_stat.st_ino}"]
    for name in SUBDIRS:
        path = f"{root}/{name}"
        try:
            sub = os.lstat(path)
        except FileNotFoundError:
            raise _refusal(
                f"{path}: queue directory is missing",
                "create the queue directories with `lanekit apply` (or `Queue.ensure()`)",
            ) from None
        if stat.S_ISLNK(sub.st_mode):
            target = os.readlink(path)
            try:
                elsewhere = os.stat(path).st_dev != root_stat.st_dev
            except OSError:
                elsewhere = False
            why = (
                f"on a different filesystem from {root}; a rename between them is a copy, "
                "not an atomic move"
                if elsewhere
                else f"queue directories must be real directories inside {root}"
            )
            from lanekit.system.quoting import cmdline  # a refusal's hint only

            raise _refusal(
                f"{path}: is a symlink to {target}, {why}",
                "replace the symlink with a directory: "
                f"{cmdline('rm', path)} && {cmdline('mkdir', '-m', '700', path)}",
            )
        if not stat.S_ISDIR(sub.st_mode):
            raise _refusal(
                f"{path}: not a directory", f"move it away and create a directory: {path}"
            )
        check_access(path, sub)
        if sub.st_dev != root_stat.st_dev:
            raise _refusal(
                f"{path}: on a different filesystem from {root}; a rename between them is "
                "a copy, not an atomic move",
                "keep every queue directory on the queue's own filesystem (no mounts inside)",
            )
        identities.append(f"{name} {sub.st_dev} {sub.st_ino}")
    key = probe_key(real, identities, mountinfo)
    if fresh or key is None or read_stamp(root) != key:
        probe_renames(root)
        if key is not None:
            write_stamp(root, key)
    _checked_roots.add(root)


def probe_key(real: str, identities: list[str], mountinfo: str | None) -> str | None:
    """What the probe's verdict depends on, as CHECK_STAMP keeps it; None when it cannot be
    told (the probe then runs every time).

    The probe asks the filesystem whether a file moves and links between the queue's
    directories without replacing. Its answer can change only if one of those directories
    becomes another (its (st_dev, st_ino): a directory replaced, a volume or a mount put in
    its place, the queue restored elsewhere), if the mounts change (Linux: a bind mount of a
    directory onto itself keeps both numbers yet makes renames into it fail; the mount table
    names it, lanekit.system.volumes.linux_mounts_key), or if the probe itself changes
    (lanekit.state.schemas.QUEUE_CHECK_SCHEMA). A reboot gives new mount ids on Linux, hence
    one probe more."""
    mounts = ""
    if sys.platform.startswith("linux"):
        if mountinfo is None:
            return None
        found = volumes.linux_mounts_key(real, mountinfo)
        if found is None:
            return None
        mounts = found
    return "\n".join(
        [
            f"lanekit queue check {QUEUE_CHECK_SCHEMA} {sys.platform}",
            f"mounts {mounts}",
            *identities,
            "",
        ]
    )


def read_stamp(root: str) -> str | None:
    """CHECK_STAMP's text, when it is a regular file of our own that only we may write
    (the queue's directory, checked before, lets nobody else create it); else None."""
    try:
        fd, st = fsops.open_regular_stat(f"{root}/{CHECK_STAMP}")
    except OSError:
        return None
    try:
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        return os.read(fd, STAMP_LIMIT).decode("utf-8", "replace")
    finally:
        os.close(fd)


STAMP_LIMIT = 4096
"""CHECK_STAMP's largest size read (a key is a few hundred bytes)."""


def write_stamp(root: str, key: str) -> None:
    """Keep the probe's verdict for `key` (a passed probe only). Not fsynced: a stamp lost
    with a power cut costs one probe more. Best effort: a stamp that cannot be written leaves
    the next process to probe."""
    try:  # noqa: SIM105 - contextlib would cost a single enqueue's start-up
        fsops.replace_file(
            f"{root}/{CHECK_STAMP}",
            key.encode(),
            tmp=f"{root}/tmp/.probe-stamp-{fsops.tmp_suffix()}",
            durable=False,
        )
    except OSError:
        pass


def probe_renames(root: str) -> None:
    """Rename a probe file through every directory: catches bind mounts st_dev cannot see. In
    claimed/ it is also linked once: every claim's running mark is a hard link there."""
    name = f".probe-{os.getpid()}-{os.urandom(4).hex()}"
    tmp_dir = f"{root}/tmp"
    here = f"{tmp_dir}/{name}"
    try:
        fsops.write_new(here, b"", durable=False)
    except OSError as exc:
        raise _refusal(
            f"{tmp_dir}: cannot create a file ({exc.strerror})",
            f"check that {tmp_dir} is writable",
        ) from None
    try:
        for target in (*MOVED_THROUGH[1:], "tmp"):
            there = f"{root}/{target}/{name}"
            try:
                # The rename claims rely on (no-replace), not plain rename(2): exFAT/FAT
                # volumes pass a plain rename but have neither RENAME_EXCL nor hard links,
                # so every claim would fail later with a misleading error.
                fsops.rename_noreplace(here, there)
            except OSError as exc:
                if exc.errno in _NO_EXCL_ERRNOS:
                    raise _refusal(
                        f"{root}: this volume cannot rename without replacing "
                        f"({exc.strerror}): no RENAME_EXCL and no hard links, as on exFAT "
                        "or FAT, so no job could be claimed safely",
                        "put the queue on an APFS or HFS+ volume (`lanekit doctor` reports "
                        "volume.no-rename-excl)",
                    ) from None
                raise _refusal(
                    f"{os.path.dirname(there)}: a rename from {os.path.dirname(here)} fails "
                    f"({exc.strerror})",
                    "keep every queue directory on one local filesystem, writable by you",
                ) from None
            here = there
            if target == "claimed":
                probe_link(there)
        for target in PUBLISHED_INTO:
            probe_publish(here, f"{root}/{target}/{name}")
    finally:
        try:  # noqa: SIM105 - contextlib would cost a single enqueue's start-up
            os.unlink(here)
        except OSError:
            pass


def probe_link(path: str) -> None:
    """Hard-link the probe at `path` and remove the link again; QueueError if the volume has
    no hard links (the running mark, lanekit.queue.directory.mark), naming the cause rather than
    leaving every claim to fail."""
    link = f"{path}.link"
    try:
        os.link(path, link)  # link(2), as the mark is made (lanekit.queue.directory.mark.take)
    except OSError as exc:
        raise _refusal(
            f"{os.path.dirname(path)}: this volume has no hard links ({exc.strerror}), and "
            "each claim's running mark is one, so no job could be claimed",
            "put the queue on an APFS or HFS+ volume (`lanekit doctor` reports "
            "volume.no-rename-excl for exFAT and FAT)",
        ) from None
    os.unlink(link)


def probe_publish(here: str, there: str) -> None:
    """Link the probe at `here` (in tmp/) to `there` and remove the link again; QueueError
    if that fails: a new job or record is given its name by link(2) from tmp/
    (lanekit.system.fsops.publish_new)."""
    try:
        os.link(here, there)
    except OSError as exc:
        raise _refusal(
            f"{os.path.dirname(there)}: a hard link from {os.path.dirname(here)} fails "
            f"({exc.strerror}), and each new job and record is given its name by one, so no "
            "job could be enqueued",
            "keep every queue directory on one local filesystem with hard links (APFS, HFS+, "
            "ext4...)",
        ) from None
    os.unlink(there)


def check_access(path: str, st: os.stat_result) -> None:
    """Refuse a queue directory someone else owns or may write to."""
    uid = os.geteuid()
    if st.st_uid != uid:
        raise _refusal(
            f"{path}: owned by uid {st.st_uid}, not by you (uid {uid}); its owner could "
            "take or replace jobs",
            "point the queue's `dir` at a directory of your own (taking over another "
            "user's directory is never the fix)",
        )
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable:
        from lanekit.system.quoting import cmdline  # a refusal's hint only

        who = (
            "group and others"
            if writable == stat.S_IWGRP | stat.S_IWOTH
            else ("its group" if writable == stat.S_IWGRP else "others")
        )
        raise _refusal(
            f"{path}: writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}); someone else "
            "could add, take or replace jobs",
            cmdline("chmod", "go-w", path),
        )
