"""What launchd runs for the watchdog, and its fast path: a pass whose looking can be reused.

launchd starts `lanekit watch --config X` every `every` (5 minutes). Most passes find what the
last one found, so they should cost what a scheduled run of an idle lane costs, interpreter
included (benchmark figure (j): <= 3x an empty `lanekit run`). The full pass loads lanes.toml,
builds doctor's registry and runs its checks on every lane and queue; this one reads the pass
cache the last full pass wrote (lanekit.watch.cache) and checks that every input of every
cached (check, subject) result is where that pass left it:

1. the cache is this lanes.toml's, written by this interpreter with the same PATH (doctor words
   a fix by the caller's PATH), and no repeat or digest is due by the domain's clock
   (lanekit.state.clock: the emulated domain's time; it never goes back);
2. every fingerprinted path (lanekit.watch.fingerprint) has the same stat, but for a queue's
   claimed/ or queue/ whose readers were healthy, which may have moved if they
   hold no job file now, and its failed/ and done/, which may have moved if their entries
   did not (lanekit.doctor.checks.queue.READS: a lane ran, and ran its jobs); the emulated
   domain's state file either has the same stat or, parsed, the same entry for every label;
   on a Mac (launchctl), the domain is chosen from the same inputs and every label has the
   same launchctl fingerprint (lanekit.watch.fingerprint.launchctl_print, which says why it
   moves whenever a fact a cached result read moves): one `launchctl print DOMAIN` and one
   `launchctl print-disabled DOMAIN` for 20 healthy lanes, plus one `print DOMAIN/LABEL` per
   label whose last exit was not 0 or whose plist drifted, and the next candidate domain's
   rows only when a label is not in the chosen one's (lanekit.watch.launchdlook);
3. no result has reached the time until which it holds (a fire to account for, a claim or a
   queued job whose verdict moves with time); a healthy lane.missed-run result is moved on by
   the run evidence in its log's new lines first (lanekit.watch.logfold.renewed);
4. each lane log only grew, and its new complete lines leave every cached log-check result
   standing (lanekit.watch.logfold: read from the recorded offset, never from the start);
   each done/ bucket that moved gained exactly the files of its queue's new `done` events
   (_buckets_hold), whose ids are new to the queue's Seen filter (logged ids and done/ ids).

Then nothing a full pass would send has changed (its diff against the memory is empty), so
the pass only records itself exactly as a full one does, holding the watchdog lane's lock:
`start` and `finish` in the watchdog's lane log (the dead man's switch, `watch.not-running` and
`lanekit status` read them), `completed_at` in the memory file (the one field that moves), and
the cache with its new log offsets; then it prints the full pass's summary line. Anything
else (a missing or foreign cache, a moved input, the lock held by another pass, an error of
any kind before the first write) returns None and the full pass runs from the start, having
changed nothing.

On launchctl a full pass is also due an hour after the last one (lanekit.watch.cache
.REVERIFY): the loaded definition of a healthy label is the one launchd fact no cheap call
shows.

Builtin modules only (os, sys, time, marshal, zlib, fcntl; json only when the domain's state
file moved; select on launchctl), like lanekit.run.entry: typer, rich, jinja2, dataclasses and
pathlib would each cost a sizeable part of the budget. The cache is a marshal document for
the same reason (a cache of another interpreter is refused before it is read).
"""

# ruff: noqa: PTH100, PTH111, PTH116, PTH118
# (str paths and os.* on purpose: pathlib's import is a sizeable part of this path's budget)

from __future__ import annotations

import marshal
import os
import sys
import time
import zlib

from lanekit.run.lanelock import try_lock
from lanekit.run.lanelog import LaneLog
from lanekit.state.backend import backend_name
from lanekit.state.clock import job_offset
from lanekit.system.fsops import replace_file
from lanekit.system.owned import read_regular, unsafe_reason
from lanekit.watch import fingerprint
from lanekit.watch.logfold import (
    DUPLICATE_SUCCESS,
    Appended,
    Rule,
    Seen,
    new_successes_unique,
    read_appended,
    renewed,
    still_holds,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

CACHE_SCHEMA = 1
"""Version of the pass cache (private to lanekit; another version is a full pass)."""
CACHE_DIR = ".passes"
"""Under `<state>/watch/`, beside the watchdogs' own directories."""
_COMPLETED = b'\n "completed_at": '


class _Full(Exception):  # noqa: N818 - control flow, never an error anyone sees
    """The fast path cannot vouch for this pass: the full pass runs instead."""


def watch_config_arg(argv: Sequence[str]) -> str | None:
    """The lanes.toml of `watch --config X` (what launchd runs), else None: any other
    option (--dry-run, --json, --help, --debug) goes to the full CLI."""
    if len(argv) == 3 and argv[0] == "watch" and argv[1] in ("--config", "-c") and argv[2]:
        return argv[2]
    return None


def state_dir(env: Mapping[str, str], platform: str) -> str:
    """lanekit's state directory, as lanekit.state.paths.Paths.from_env finds it (a test pins the
    two together; Paths itself costs dataclasses and pathlib to import)."""
    home = env.get("HOME") or os.path.expanduser("~")
    if "LANEKIT_STATE_DIR" in env:
        state = env["LANEKIT_STATE_DIR"]
    elif platform == "darwin":
        state = os.path.join(home, "Library", "Application Support", "lanekit")
    else:
        state = os.path.join(env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state"))
        state = os.path.join(state, "lanekit")
    return os.path.abspath(state)


def absolute(config: str) -> str:
    """The lanes.toml path a cache is kept under (absolute, normalised: `watch -c ../x` and
    `watch -c /abs/x` share one)."""
    return os.path.abspath(config)


def cache_path(state: str, config: str) -> str:
    """Where the pass cache of the lanes.toml at absolute path `config` is kept."""
    key = zlib.crc32(os.fsencode(config))
    return os.path.join(state, "watch", CACHE_DIR, f"{key:08x}.cache")


def cache_header() -> tuple[int, str, str]:
    """What a cache must say about its writer to be read: schema, interpreter, version."""
    return (CACHE_SCHEMA, sys.executable, sys.version)


def main(argv: Sequence[str]) -> int | None:
    """The cheap pass for `watch --config X`: its exit code (0), or None when the full pass
    must run (see the module docstring)."""
    config = watch_config_arg(argv)
    if config is None:
        return None
    env = os.environ
    try:
        path = cache_path(state_dir(env, sys.platform), absolute(config))
        cache = _load(path, absolute(config))
        if cache["backend"] != backend_name(env, sys.platform):
            return None
        lock = try_lock(cache["lock"])
    except (_Full, OSError, KeyError, TypeError, ValueError, EOFError):
        return None
    if lock is None:
        return None  # another pass runs: the full pass waits for it, as it always has
    try:
        try:
            clock, folds = _unchanged(cache)
        except (_Full, OSError, KeyError, TypeError, ValueError, IndexError):
            return None
        try:
            _record(cache, path, clock, folds)
        except OSError:
            return None  # the full pass reports what is wrong with the files, its own way
    finally:
        os.close(lock)
    return 0


def _load(path: str, config: str) -> dict[str, Any]:
    read = read_regular(path, "watch pass cache")
    if read is None or unsafe_reason(read[1]) is not None:
        raise _Full
    # Our own 0600 file (unsafe_reason refused anything else), of this very interpreter.
    header, cache = marshal.loads(read[0])  # noqa: S302
    if tuple(header) != cache_header() or not isinstance(cache, dict):
        raise _Full
    if cache["config"] != config:
        raise _Full  # another lanes.toml with the same crc32
    if cache["caller_path"] != os.environ.get("PATH"):
        raise _Full  # run from elsewhere (a terminal): doctor words some fixes by the caller's PATH
    return cache


class _Clock:
    """The pass's clock: the domain's, at least as far on as the last pass saw it."""

    __slots__ = ("offset",)

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def __call__(self) -> float:
        return time.time() + self.offset


def _unchanged(cache: dict[str, Any]) -> tuple[_Clock, dict[str, Appended]]:
    """Steps 1-4 of the module docstring; raises _Full at the first input that moved."""
    prints = cache["prints"]
    empty_ok, listed = set(cache["empty_ok"]), cache["listed"]
    for key, group in cache["sets"].items():
        now_prints = fingerprint.stat_prints(group)
        if now_prints == prints[key]:
            continue
        if key in listed:
            if [fingerprint.listing_print(path) for path in group] != listed[key]:
                raise _Full
        elif key not in empty_ok or not _no_job_files(group, now_prints):
            raise _Full
        prints[key] = now_prints  # what its readers read did not move (checks.queue.READS)
    if fingerprint.stat_print(cache["memory"]) != cache["memory_print"]:
        raise _Full  # another pass (a full one, by hand) changed what is remembered
    if cache["backend"] == "launchctl":
        _launchctl_unchanged(cache["launchctl"], cache["labels"])
        offset = 0.0  # the real clock (lanekit.service.launchd.clock_for)
    else:
        offset = _emulated_unchanged(cache)
    # The full pass's clock (lanekit.service.launchd.clock_for): the domain's offset, or the one
    # this
    # process was started with if larger.
    clock = _Clock(max(offset, job_offset()))
    now = clock()
    if now >= cache["due"]:
        raise _Full
    folds = _fold_logs(cache["logs"], cache["rules"])
    for queue, lanes in cache["drains"].items():
        new = [job for lane in lanes for job in folds[lane].done]
        _buckets_hold(cache["buckets"][queue], new)
    _still_valid(cache, folds, now)
    return clock, folds


def _no_job_files(group: Sequence[str], prints: Sequence[fingerprint.Print]) -> bool:
    """Every directory of `group` is there and holds no job file (listed after its stat)."""
    return all(
        print_ is not None and fingerprint.job_files(path) == []
        for path, print_ in zip(group, prints, strict=True)
    )


def _buckets_hold(buckets: dict[str, Any], new: Sequence[str]) -> None:
    """queue.duplicate-success's incremental form (lanekit.doctor.checks.queue.READS) on one queue's
    done/ buckets: each file added to a bucket since the last pass is `<id>.json` of one of
    `new` (its lanes' new `done` events), and none went; else _Full. The buckets' prints move
    on; that the ids are new to the queue is _still_valid's (Seen). A `done` without a file
    (moved away since) adds no copy: the check counts it as one success, as before."""
    files = {f"{job}.json" for job in new}
    for path, known in buckets.items():
        now = fingerprint.stat_print(path)
        if now == known["print"]:
            continue
        names = fingerprint.job_files(path) if now is not None else None
        if names is None:
            raise _Full  # a bucket removed or unreadable
        mine = [name for name in names if name in files]
        listed = fingerprint.names_print(names)
        if listed != fingerprint.added(known["names"], mine):
            raise _Full  # a file no `done` explains (a skipped copy, a move by hand), or one gone
        known["print"], known["names"] = now, listed


def _emulated_unchanged(cache: dict[str, Any]) -> float:
    """The emulated domain's part of step 2; the domain clock's offset."""
    domain = cache["domain"]
    offset: float = cache["offset"]
    now_print = fingerprint.stat_print(domain["path"])
    if now_print != domain["print"]:
        state = fingerprint.emulated_state(domain["dir"])
        me = os.getpid()
        for label, known in cache["labels"].items():
            if fingerprint.label_print(state, label, me) != known:
                raise _Full
        offset = fingerprint.emulated_offset(state)
        if offset < cache["offset"]:
            raise _Full  # the domain's clock never goes back: not the domain the cache knows
        cache["offset"], domain["print"] = offset, now_print
    return offset


def _launchctl_unchanged(how: Mapping[str, Any], labels: Mapping[str, Any]) -> None:
    """launchctl's part of step 2: the same domain choice, the same fingerprint per label
    (the first that moved ends the look: no more launchctl calls)."""
    from lanekit.watch.launchdlook import Look, Unanswered, choice_inputs

    if choice_inputs(os.environ) != how["choice"]:
        raise _Full  # another domain, binary or timeout than the cache's
    look = Look(how["launchctl"], how["timeout"], how["candidates"])
    me = os.getpid()
    try:
        for label, known in labels.items():
            service = isinstance(known, dict) and "service" in known
            if fingerprint.launchctl_print(look, label, me, service=service) != known:
                raise _Full
    except Unanswered:
        raise _Full from None


def _still_valid(cache: dict[str, Any], folds: Mapping[str, Appended], now: float) -> None:
    """Steps 3 and 4: no result has expired, and every log check's survives its log's new
    lines (duplicate-success's Seen filters take the new ids, for the cache to keep)."""
    seen: dict[str, Seen] = {}
    for unit in cache["units"]:
        if unit["renew"] is not None:
            for lane in unit["logs"]:
                unit["until"] = renewed(unit["renew"], unit["until"], folds[lane].last_run)
        if now >= unit["until"]:
            raise _Full
        for lane in unit["logs"]:
            new = folds[lane]
            if not still_holds(unit["check"], unit["found"], new):
                raise _Full
            if unit["check"] == DUPLICATE_SUCCESS and new.done:
                queue = unit["seen"]
                if queue not in seen:
                    seen[queue] = Seen.load(cache["seen"][queue])
                if not new_successes_unique(seen[queue], new.done):
                    raise _Full
    for queue, bloom in seen.items():
        if bloom.full:
            raise _Full
        cache["seen"][queue] = bloom.dump()


def _fold_logs(logs: Mapping[str, Any], rules: Sequence[Rule]) -> dict[str, Appended]:
    """Each lane log's new complete lines; _Full when one was rotated, truncated or replaced."""
    folds: dict[str, Appended] = {}
    for lane, known in logs.items():
        try:
            info = os.stat(known["path"])
        except FileNotFoundError:
            if known["inode"] is not None:
                raise _Full from None
            folds[lane] = Appended()
            continue
        if info.st_ino != known["inode"] or info.st_size < known["offset"]:
            raise _Full
        fold = read_appended(known["path"], known["offset"], info.st_size, rules=rules)
        if fold is None:
            raise _Full
        folds[lane] = fold
    return folds


def _record(cache: dict[str, Any], path: str, clock: _Clock, folds: Mapping[str, Appended]) -> None:
    """Log the pass, move the memory's `completed_at` on, keep the new offsets (lock held)."""
    log = LaneLog(cache["log"], cache["lane"], clock=clock)
    log.event("start", pid=os.getpid())
    _complete_memory(cache["memory"], clock())
    for lane, fold in folds.items():
        cache["logs"][lane]["offset"] = fold.end
    cache["memory_print"] = fingerprint.stat_print(cache["memory"])
    write_private(path, marshal.dumps((cache_header(), cache)), durable=False)
    log.event("finish", exit=0, open=cache["open"], sent=0)
    # The summary line `lanekit watch` prints for a pass that sent nothing (lanekit.cli.render
    # .watch.result; a test holds the two to the same words): launchd keeps it in the
    # watchdog's StandardOutPath.
    sys.stdout.write(f"{cache['open']} open, 0 notices sent ({cache['channels']})\n")


def _complete_memory(memory: str, completed_at: float) -> None:
    """Set the memory file's `completed_at` (lanekit.watch.memory writes it with json.dumps,
    indent 1, sorted keys: its top-level keys are the only lines with one space of indent, and
    a JSON string never holds a raw newline, so the line is found exactly), atomically."""
    read = read_regular(memory, "watch memory")
    if read is None or unsafe_reason(read[1]) is not None:
        raise OSError(f"{memory}: not the watch memory the cache knows")
    data = read[0]
    start = data.find(_COMPLETED)
    if start < 0 or data.find(_COMPLETED, start + 1) >= 0:
        raise OSError(f"{memory}: no completed_at line")
    value = start + len(_COMPLETED)
    end = data.find(b"\n", value)
    comma = b"," if data[end - 1 : end] == b"," else b""
    line = repr(float(completed_at)).encode() + comma
    write_private(memory, data[:value] + line + data[end:], durable=True)


def write_private(path: str, data: bytes, *, durable: bool) -> None:
    """Replace `path` atomically with a 0600 file through a fresh random temp name beside it
    (lanekit.system.atomic's scheme, on str paths: lanekit.system.fsops.replace_file)."""
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{os.urandom(6).hex()}.tmp")
    replace_file(path, data, tmp=tmp, durable=durable)
