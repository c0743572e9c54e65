"""The watchdog's memory: what is open, what still has to be delivered, and when the last pass
completed; one JSON file under the state dir (spec.memory_path), written with lanekit.system.atomic.

A pass holds the watchdog lane's lane lock (the flock every run of a lane holds) from reading
the memory to writing it, so two passes at once (launchd's and a manual one) run one after the
other: the second reads what the first sent and sends nothing twice. Holding the lane lock also
makes `apply` treat a pass like any running lane (it is not booted out mid-pass).

A memory file that is not ours, or that someone else may write, is refused (exit 69), as lane
snapshots are: it decides what is sent where.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lanekit.doctor import Severity, SubjectKind
from lanekit.errors import EnvironmentUnusableError
from lanekit.state.schemas import MEMORY_SCHEMA
from lanekit.system.atomic import write_atomic
from lanekit.system.owned import make_private_dirs, read_regular, unsafe_error, unsafe_reason
from lanekit.system.quoting import cmdline
from lanekit.watch.alerts import Alert, Notice, Remembered

HISTORY_SECONDS = 3 * 86400
"""How long opened/resolved events are kept for the digest (it reports yesterday)."""
LOCK_POLL = 0.05


@dataclass(frozen=True, slots=True)
class Pending:
    """A notice some channels have not taken yet: retried on the next pass."""

    notice: Notice
    channels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Happened:
    """An alert opened or resolved, for the digest."""

    at: float
    """Epoch seconds."""
    kind: str
    """`new` or `resolved`."""
    key: str
    lanes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Memory:
    """Everything one pass hands to the next."""

    alerts: Mapping[str, Remembered] = field(default_factory=dict)
    outbox: tuple[Pending, ...] = ()
    failed: Mapping[str, int] = field(default_factory=dict)
    """Each open alert's tally at the last pass, by alert key (lanekit.doctor.registry.Tally:
    jobs in failed/ for queue.failed-jobs): more now sends the alert again. Kept under the
    `failed` key of the file, which the only tallied check gave its name."""
    completed_at: float | None = None
    """Epoch seconds at which the last pass completed (the dead man's switch reads it)."""
    digest_day: str | None = None
    """The local date (YYYY-MM-DD) the last digest was sent on."""
    history: tuple[Happened, ...] = ()


def load(path: Path) -> Memory:
    """The memory at `path`; an empty one when there is none yet."""
    read = read_regular(path, "watch memory")
    if read is None:
        return Memory()
    data, info = read
    reason = unsafe_reason(info)
    if reason is not None:
        raise unsafe_error(path, reason, "watch memory", info)
    try:
        return _from_json(json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise EnvironmentUnusableError(
            f"{path}: the watch memory is unreadable ({type(exc).__name__}: {exc})",
            f"move it aside (`{cmdline('mv', str(path), str(path) + '.broken')}`): the next "
            "pass starts afresh and sends every open alert once",
        ) from None


def save(path: Path, memory: Memory) -> None:
    """Write `memory` atomically (temp file, fsync, rename), 0600 in a 0700 directory."""
    write_atomic(path, (json.dumps(_to_json(memory), indent=1, sort_keys=True) + "\n").encode())


def _alert_json(item: Remembered) -> dict[str, Any]:
    alert = item.alert
    return {
        "check": alert.check,
        "severity": str(alert.severity),
        "subject": alert.subject,
        "kind": str(alert.kind),
        "lanes": list(alert.lanes),
        "message": alert.message,
        "fix": alert.fix,
        "first_seen": item.first_seen.timestamp(),
        "last_sent": item.last_sent.timestamp(),
    }


def _alert_from(data: Mapping[str, Any]) -> Remembered:
    alert = Alert(
        check=str(data["check"]),
        severity=Severity(data["severity"]),
        subject=str(data["subject"]),
        kind=SubjectKind(data["kind"]),
        lanes=tuple(str(name) for name in data["lanes"]),
        message=str(data["message"]),
        fix=str(data["fix"]),
    )
    return Remembered(
        alert,
        datetime.fromtimestamp(float(data["first_seen"])),
        datetime.fromtimestamp(float(data["last_sent"])),
    )


def _to_json(memory: Memory) -> dict[str, Any]:
    return {
        "schema": MEMORY_SCHEMA,
        "alerts": {key: _alert_json(item) for key, item in memory.alerts.items()},
        "outbox": [
            {"notice": p.notice.to_json(), "channels": list(p.channels)} for p in memory.outbox
        ],
        "failed": dict(memory.failed),
        "completed_at": memory.completed_at,
        "digest_day": memory.digest_day,
        "history": [
            {"at": h.at, "kind": h.kind, "key": h.key, "lanes": list(h.lanes)}
            for h in memory.history
        ],
    }


def _from_json(data: Any) -> Memory:
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    if data.get("schema") != MEMORY_SCHEMA:
        raise ValueError(f"schema {data.get('schema')!r}, this lanekit reads {MEMORY_SCHEMA}")
    completed = data["completed_at"]
    return Memory(
        alerts={str(key): _alert_from(value) for key, value in data["alerts"].items()},
        outbox=tuple(
            Pending(Notice.from_json(item["notice"]), tuple(map(str, item["channels"])))
            for item in data["outbox"]
        ),
        failed={str(key): int(value) for key, value in data["failed"].items()},
        completed_at=None if completed is None else float(completed),
        digest_day=None if data["digest_day"] is None else str(data["digest_day"]),
        history=tuple(
            Happened(float(h["at"]), str(h["kind"]), str(h["key"]), tuple(map(str, h["lanes"])))
            for h in data["history"]
        ),
    )


def record_history(
    history: Sequence[Happened], notices: Sequence[Notice], now: datetime
) -> tuple[Happened, ...]:
    """`history` plus the alerts `notices` opened or resolved, minus what the digest no
    longer needs."""
    from lanekit.watch.alerts import NoticeKind, alert_key

    stamp = now.timestamp()
    added = [
        Happened(stamp, str(n.kind), alert_key(n.check, n.subject_kind, n.subject), n.lanes)
        for n in notices
        if n.kind in (NoticeKind.NEW, NoticeKind.RESOLVED)
    ]
    return tuple(h for h in (*history, *added) if h.at >= stamp - HISTORY_SECONDS)


class PassLock:
    """The watchdog lane's lane lock, waited for: a pass that finds another one running waits
    for it (the other is at most a few seconds from done), up to `wait` seconds."""

    def __init__(
        self, path: Path, *, wait: float, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        from lanekit.run.lanelock import LaneLock

        self._lock = LaneLock(path)
        self._wait = wait
        self._sleep = sleep

    def acquire(self) -> bool:
        """True once held; False when another pass still holds it after `wait` seconds."""
        make_private_dirs(self._lock.path.parent)
        deadline = time.monotonic() + self._wait
        while not self._lock.acquire():
            if time.monotonic() >= deadline:
                return False
            self._sleep(LOCK_POLL)
        return True

    def release(self) -> None:
        """Let the next pass in."""
        self._lock.release()
