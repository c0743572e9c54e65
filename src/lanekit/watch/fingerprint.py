"""Fingerprints of what a watchdog pass looked at, so the next pass can tell what moved.

A cached pass result (lanekit.watch.cache) is only as good as its inputs. This module turns
each input into a small JSON-able value that changes whenever the input does:

- a file or directory: its stat (inode, size, mtime in ns, ctime in ns, mode; a symlink's and
  its target's); a directory's
  mtime moves whenever an entry is added, removed or renamed in it, so `queue/`, `claimed/`,
  `failed/` and each PATH directory are watched without listing them; None when missing;
- a done/ day bucket: its stat, and its job file names as `names_print` (count and xor of
  crc32s), so the names a lane's runs added since can be accounted for without keeping them;
- a queue's failed/ and done/: their stat, and their entries as `listing_print`: every run
  renames a probe file through them (lanekit.queue.safety), which moves the stat and not the
  entries;
- a label in the emulated launchd domain: its job entry in the domain's state file, minus
  the fields that move with every scheduled run of a healthy job and that no check reads
  (timer bases, spawn times, tokens). The run count stays in while the last exit is a
  failure (the crash-loop check names it). A label that is running right now is marked
  `running` (the result of a check on a running job may change at any moment: a pass never
  reuses it), except the watchdog itself while this very pass runs (`self`);
- a label on a Mac (launchctl): `launchctl_print`, from the few launchctl calls of
  lanekit.watch.launchdlook, with the same `state` words.

Builtin modules only (os, zlib, json, select): the lean pass (lanekit.watch.entry) computes
these on every run, and the full pass computes the same values with the same functions when it
writes the cache, so the two can never disagree about what "unchanged" means.
"""

# ruff: noqa: PTH116, PTH118, PTH208
# (str paths and os.* on purpose: the lean pass does not import pathlib, lanekit.watch.entry)

from __future__ import annotations

import os
import stat
import zlib

TYPE_CHECKING = False  # typing costs the lean pass's start-up; mypy still reads these
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from lanekit.watch.launchdlook import Look

Print = list[int] | None
"""A path's fingerprint: [inode, size, mtime_ns, ctime_ns, mode] (twice for a symlink: the
link's, then its target's, or -1 when it dangles), or None when missing."""

_RUN_CLOCKWORK = frozenset(
    {
        "pid",
        "token",
        "watcher_pid",
        "watcher_token",
        "status_file",
        "last_spawn_at",
        "last_calendar",
        "interval_base",
        "runs",
        "pending_at",
    }
)
"""Job-entry fields that move on every run of a healthy job and that no alert check reads as
such: `pid` and `pending_at` are folded into the entry's `state`, `runs` is kept while the last
exit failed. A field the emulator adds later is fingerprinted (a change there only costs a
full pass), never silently ignored."""


def stat_print(path: str) -> Print:
    """The fingerprint of one path: its own stat and, for a symlink (a Homebrew command, a
    lanes.toml kept elsewhere), its target's too, so a swapped link and a changed or removed
    target both move it."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    found = [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode]
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            return [*found, -1]
        found += [target.st_ino, target.st_size, target.st_mtime_ns, target.st_ctime_ns]
        found.append(target.st_mode)
    return found


def stat_prints(paths: Iterable[str]) -> list[Print]:
    """The fingerprints of `paths`, in order."""
    return [stat_print(path) for path in paths]


def job_files(directory: str) -> list[str] | None:
    """The job files of a queue directory as lanekit.queue.fileio.job_names finds them
    (`*.json`, not hidden); None when it cannot be listed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    return [name for name in names if name.endswith(".json") and name[0] != "."]


def listing_print(directory: str) -> list[int] | None:
    """names_print of the entries of `directory` that are not hidden (a queue's own probe and
    temp files are: lanekit.queue.layout.TMP_PREFIXES); None when it cannot be listed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    return names_print(name for name in names if name[0] != ".")


def names_print(names: Iterable[str]) -> list[int]:
    """[how many, the xor of their crc32s]: a set of file names, in a form that names added
    to it move predictably (`added`) and anything else moves unpredictably."""
    count, folded = 0, 0
    for name in names:
        count += 1
        folded ^= zlib.crc32(name.encode("utf-8", "surrogateescape"))
    return [count, folded]


def added(before: list[int], names: Iterable[str]) -> list[int]:
    """names_print of a set that was `before` with `names` added (none of them in it)."""
    more = names_print(names)
    return [before[0] + more[0], before[1] ^ more[1]]


def emulated_state(state_dir: str) -> dict[str, Any] | None:
    """The emulated domain's state file, parsed; None when it cannot be read as the version
    this module knows (then nothing about launchd can be reused)."""
    import json

    # O_NONBLOCK|O_NOFOLLOW and the type checked on the descriptor: a FIFO planted at
    # domain.json must not hang the pass (lanekit.system.owned.read_regular, without its imports).
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(os.path.join(state_dir, "domain.json"), flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        data = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("schema") != 1:
        return None
    if not isinstance(data.get("jobs"), dict) or not isinstance(data.get("disabled", {}), dict):
        return None
    return data


def emulated_offset(state: Mapping[str, Any] | None) -> float:
    """The domain clock's offset in its state file
    (lanekit.service.launchd.emulated_state.read_offset reads
    the same key); 0 when there is none."""
    if state is None:
        return 0.0
    offset = state.get("clock_offset")
    if isinstance(offset, int | float) and not isinstance(offset, bool) and offset > 0:
        return float(offset)
    return 0.0


def label_print(state: Mapping[str, Any] | None, label: str, me: int) -> Any:
    """The fingerprint of `label` in the emulated domain `state`; `me` is this process's pid
    (the watchdog's own entry while this pass runs)."""
    if state is None:
        return "unreadable"
    disabled = bool(state.get("disabled", {}).get(label, False))
    job = state["jobs"].get(label)
    if not isinstance(job, dict):
        return {"loaded": False, "disabled": disabled}
    kept = {key: value for key, value in job.items() if key not in _RUN_CLOCKWORK}
    pid = job.get("pid")
    if pid is not None:
        kept["state"] = "self" if pid == me else "running"
    elif job.get("pending_at") is not None:
        kept["state"] = "spawn scheduled"
    else:
        kept["state"] = "not running"
    if job.get("last_exit_code") not in (None, 0) or job.get("last_signal") is not None:
        kept["runs"] = job.get("runs")
    kept["disabled"] = disabled
    return kept


def volatile(print_: Any) -> bool:
    """A label whose checks must be run again on every pass (a job running right now)."""
    return isinstance(print_, dict) and print_.get("state") == "running"


def launchctl_print(look: Look, label: str, me: int, *, service: bool) -> dict[str, Any]:
    """The fingerprint of `label` on the launchctl backend; `me` is this process's pid.

    What doctor's alert checks read of a label there (lanekit.watch.launchdlook lists it),
    and why this value moves whenever one of them would:

    - loaded or not, and in which candidate domain: the row's presence (`domain`);
    - running right now: the row's pid, as `state` (running / self / not running); a running
      label is volatile, so nothing about it is reused anyway;
    - disabled: print-disabled's entry;
    - the last exit status: the row's (`status`). DoctorContext.last_exit prefers `print`'s
      exit code or signal, which is the same fact when the row has a number; a row without one
      (`-`, macOS 26's `(pe)`) is fingerprinted with its `print` too;
    - `runs`, `state` (spawn scheduled), `successive crashes`, `minimum runtime`: only
      launchd.crash-loop reads them, and only when the last exit status is not 0, so a label
      whose status is not 0 is fingerprinted with its whole `print` (`service`: the pass cache
      keeps it for those);
    - the loaded definition (plist.drift): in `print` only. A label with an open drift finding
      keeps its `print` too (a reload that clears it moves it). For a healthy label no cheap
      call shows it: a label booted out and bootstrapped again by hand from another file, its
      row as before, is seen by the next full pass, which lanekit.watch.cache.REVERIFY bounds.

    `service`: also take `launchctl print DOMAIN/LABEL` (loaded labels only)."""
    found = look.row(label)
    disabled = look.disabled(label)
    if found is None:
        return {"loaded": False, "disabled": disabled}
    domain, (pid, status, _) = found
    state = "not running" if pid is None else "self" if pid == me else "running"
    kept: dict[str, Any] = {"domain": domain, "state": state, "status": status}
    kept["disabled"] = disabled
    if service:
        kept["service"] = look.service(domain, label)
    return kept


def needs_service(print_: Any) -> bool:
    """A launchctl fingerprint whose label's `print` must be kept: a loaded label whose last
    exit status is not a plain 0 (see launchctl_print)."""
    return isinstance(print_, dict) and "domain" in print_ and print_.get("status") != 0


def without_service(print_: Any) -> Any:
    """A launchctl fingerprint without its `print` (what the lean pass recomputes when the
    pass cache does not keep it)."""
    if not isinstance(print_, dict) or "service" not in print_:
        return print_
    return {key: value for key, value in print_.items() if key != "service"}
