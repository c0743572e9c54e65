"""Lane logs read from offsets: what a pass needs from the lines appended since the last one.

Three of the alert checks read lane logs: lane.missed-run (run evidence after a fire),
lane.cannot-start (a `requeued reason=cannot-start` not followed by a `done`) and
queue.duplicate-success (a job id with two `done` events in its queue's logs). Their results
are cached with the log's inode and the offset up to which it was read; the next pass folds
only the complete lines after that offset into `Appended` and asks `still_holds` whether each
cached result survives them. A log whose inode changed or that shrank (rotated by lanekit,
truncated by hand) is not folded: the full pass reads it again from its start.

duplicate-success needs to know whether a new `done` id was seen before without listing
done/ or keeping 100,000 ids: each queue keeps a Bloom filter of the ids its lanes logged
`done` for (`Seen`). A filter never forgets an id, so "not in it" is certain and the result
stands; "maybe in it" (a real second success, or a false positive at ~1%) sends the pass to
the full checks, which count for real.

Builtin modules only (os, zlib): the lean pass runs this on every pass.
"""

# ruff: noqa: PTH116, PTH123
# (str paths and os.* on purpose: the lean pass does not import pathlib, lanekit.watch.entry)

from __future__ import annotations

import os
import zlib

from lanekit.run.lanelog import EventName, Reason, parse_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

MISSED_RUN = "lane.missed-run"
CANNOT_START = "lane.cannot-start"
DUPLICATE_SUCCESS = "queue.duplicate-success"
LOG_CHECKS = (MISSED_RUN, CANNOT_START, DUPLICATE_SUCCESS)
"""The alert checks whose results depend on lane-log lines."""

BITS_PER_ID = 10
HASHES = 7
"""~1% false positives at capacity (10 bits and 7 hashes per id)."""
MIN_CAPACITY = 1024
_TELLING = tuple(
    f"event={name}".encode() for name in (EventName.DONE, EventName.REQUEUED, EventName.SKIPPED)
)
"""Lines without one of these are not parsed (most of a long log): `add` ignores them."""
READ_LIMIT = 8 << 20
"""More new bytes than this in one log since the last pass: leave it to the full pass."""


class Appended:
    """What the complete lines appended to one lane log say, as the log checks need it."""

    __slots__ = ("cannot_start", "count", "done", "end", "last_run", "skipped")

    def __init__(self) -> None:
        self.count = 0
        """Events folded."""
        self.done: list[str] = []
        """Job ids of `done` events, in order."""
        self.cannot_start = False
        """A `requeued reason=cannot-start` among them."""
        self.skipped = False
        """A `skipped reason=already-succeeded` among them."""
        self.end = 0
        """The offset just after the last complete line folded."""
        self.last_run: float | None = None
        """Epoch time of the last run-evidence event among them (when `rules` were given)."""

    def add(self, event: Mapping[str, str]) -> None:
        """Fold one parsed event."""
        self.count += 1
        name = event.get("event")
        if name == EventName.DONE and event.get("job"):
            self.done.append(event["job"])
        elif name == EventName.REQUEUED and event.get("reason") == Reason.CANNOT_START:
            self.cannot_start = True
        elif name == EventName.SKIPPED and event.get("reason") == Reason.ALREADY_SUCCEEDED:
            self.skipped = True


def read_appended(
    path: str,
    offset: int,
    size: int,
    *,
    limit: int | None = READ_LIMIT,
    rules: Sequence[Rule] = (),
) -> Appended | None:
    """The complete lines of `path` between `offset` and `size`, folded; None when more than
    `limit` bytes are new. A line still being written (no newline yet) waits for the next
    pass; a line that does not parse is skipped, as lanekit.run.lanelog.read_events skips it.
    With `rules`, the last line they call run evidence sets `last_run`."""
    fold = Appended()
    fold.end = offset
    if limit is not None and size - offset > limit:
        return None
    if size <= offset:
        return fold
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(size - offset)
    last = data.rfind(b"\n")
    if last < 0:
        return fold
    fold.end = offset + last + 1
    lines = data[: last + 1].splitlines()
    if rules:
        fold.last_run = _last_run(lines, rules)
    for raw in lines:
        if not raw.strip():
            continue
        if not any(word in raw for word in _TELLING):
            fold.count += 1  # an event, but none these checks read: counted, not parsed
            continue
        try:
            fields = parse_line(raw.decode("utf-8", "replace"))
        except ValueError:
            fold.count += 1  # torn: read_events skips it; counting it only costs a full pass
            continue
        fold.add(fields)
    return fold


def fold_files(paths: Iterable[str], last: str, size: int) -> tuple[Appended, int]:
    """Fold whole files (rotated copies first), the last one only up to `size`: what the
    full pass records as read. (fold, offset reached in `last`). OSError when one cannot be
    read (a filter missing its ids would vouch for a second success)."""
    total = Appended()
    end = 0
    for path in paths:
        upto = size if path == last else os.stat(path).st_size
        part = read_appended(path, 0, upto, limit=None)
        assert part is not None  # no limit
        total.count += part.count
        total.done.extend(part.done)
        total.cannot_start = total.cannot_start or part.cannot_start
        total.skipped = total.skipped or part.skipped
        if path == last:
            end = part.end
    return total, end


Rule = tuple[str, tuple[tuple[str, str], ...], bool]
"""(event, fields it must have, whether it is run evidence): lanekit.timeline.events' RULES
and RUN_KINDS, as the pass cache hands them to the lean pass (first match wins)."""


def _last_run(lines: Sequence[bytes], rules: Sequence[Rule]) -> float | None:
    """The time of the last line that is run evidence by `rules`, from the end."""
    for raw in reversed(lines):
        try:
            fields = parse_line(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        name = fields.get("event", "")
        for event, when, is_run in rules:
            if event == name and all(fields.get(k) == v for k, v in when):
                if is_run:
                    return ts_epoch(fields.get("ts", ""))
                break
    return None


def ts_epoch(ts: str) -> float | None:
    """A lane-log timestamp (lanekit.run.lanelog.format_ts: `2026-12-01T10:40:00.123Z`) as epoch
    seconds, by arithmetic (time.strptime would import re and locale); None when malformed."""
    if len(ts) != 24 or ts[4] + ts[7] + ts[10] + ts[13] + ts[16] + ts[19] + ts[23] != "--T::.Z":
        return None
    try:
        year, month, day = int(ts[0:4]), int(ts[5:7]), int(ts[8:10])
        hour, minute, second, millis = (
            int(ts[11:13]),
            int(ts[14:16]),
            int(ts[17:19]),
            int(ts[20:23]),
        )
    except ValueError:
        return None
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return days * 86400 + hour * 3600 + minute * 60 + second + millis / 1000


def renewed(renew: Mapping[str, Any], until: float, evidence: float | None) -> float:
    """A healthy lane.missed-run result's expiry after run evidence at `evidence` (see
    lanekit.doctor.checks.lane.missed_run_renewal for the arithmetic); never earlier than
    `until`."""
    if evidence is None:
        return until
    grace = float(renew["grace"])
    if "interval" in renew:
        return max(until, evidence + float(renew["interval"]) + grace - 1)
    if evidence < float(renew["from"]):
        return until  # fires between the evidence and the listed ones are not listed
    later = [fire for fire in renew["fires"] if fire > evidence]
    return max(until, later[0] + grace - 1) if later else until


class Seen:
    """A Bloom filter of job ids (see the module docstring)."""

    __slots__ = ("bits", "capacity", "count", "size")

    def __init__(self, capacity: int, bits: bytearray | None = None, count: int = 0) -> None:
        self.capacity = max(MIN_CAPACITY, capacity)
        self.size = self.capacity * BITS_PER_ID
        self.bits = bits if bits is not None else bytearray((self.size + 7) // 8)
        self.count = count

    def _positions(self, job: str) -> list[int]:
        data = job.encode("utf-8", "surrogateescape")
        one = zlib.crc32(data)
        two = zlib.adler32(data) | 1
        return [(one + i * two) % self.size for i in range(HASHES)]

    def add(self, job: str) -> None:
        """Remember `job`."""
        for pos in self._positions(job):
            self.bits[pos >> 3] |= 1 << (pos & 7)
        self.count += 1

    def maybe_has(self, job: str) -> bool:
        """False: `job` was certainly never added; True: it may have been."""
        return all(self.bits[pos >> 3] & (1 << (pos & 7)) for pos in self._positions(job))

    @property
    def full(self) -> bool:
        """Past capacity: false positives grow; the full pass builds a larger one."""
        return self.count > self.capacity

    def dump(self) -> dict[str, Any]:
        """The filter as the pass cache keeps it."""
        return {"capacity": self.capacity, "count": self.count, "bits": bytes(self.bits)}

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> Seen:
        """The inverse of dump (KeyError/ValueError/TypeError when damaged)."""
        seen = cls(int(data["capacity"]), bytearray(data["bits"]))
        if len(seen.bits) != (seen.size + 7) // 8:
            raise ValueError("bloom filter of the wrong size")
        seen.count = int(data["count"])
        return seen


def still_holds(check: str, found: bool, new: Appended) -> bool:
    """Whether the cached result of the log check `check` (`found`: it had findings) stands
    after the events of `new` were appended to a log it read. The incremental form of each:

    - lane.missed-run: more run evidence never makes a healthy lane miss a run before the
      cached result's own expiry (the next fire it has to explain); an open finding may be
      cleared by any new line, so it is looked at again;
    - lane.cannot-start: healthy stays healthy without a new cannot-start requeue; a finding
      stands until a `done` or another requeue (which would change its time) comes;
    - queue.duplicate-success: judged with the queue's Seen by `new_successes_unique`; here,
      a finding is looked at again whenever its counts may have moved."""
    if not new.count:
        return True
    if check == MISSED_RUN:
        return not found
    if check == CANNOT_START:
        return not new.cannot_start and not (found and new.done)
    if check == DUPLICATE_SUCCESS:
        return not found or not (new.done or new.skipped)
    return False


def new_successes_unique(seen: Seen, done: Iterable[str]) -> bool:
    """True when none of `done` was logged `done` before (by `seen`) nor twice among them;
    the ids are then added to `seen`."""
    batch = list(done)
    if len(set(batch)) != len(batch) or any(seen.maybe_has(job) for job in batch):
        return False
    for job in batch:
        seen.add(job)
    return True
