"""The queue's records/ directory: job records read strictly and written atomically, and the
re-execution guard beyond purged records.

Every writer replaces a record file atomically with a single line, except the two lines each
claim adds: its `running` line (`RecordStore.mark_running`: the attempt it starts, on the
descriptor the claim read the record through) and its settle's (`RecordStore.settle`:
complete, fail, release; on that same descriptor, kept open by the claim, while the record's
name still is that file). Both are appended, because creating a file is what a job's record
write cost (the inode: ~35 us on this machine's ext4, up to ~900 us in the minutes after many
deletions, docs/benchmarks.md; an append into the file's one block allocates nothing).
Neither appends to a file that would outgrow one block (FILE_LIMIT) or whose last line was cut
short: the file is replaced then (atomically: the `running` line stays until the outcome
replaces it), so a file holds at most a few attempts' lines. How the lines read is
lanekit.queue.records'.

Purging (`lanekit purge`, retention) removes old records, but not the guard: the ids of the
succeeded jobs whose records it removes go into a compact index, records/.guard/<UTC day>.ids
(one id per line, one file per day of purging), which `RecordStore.succeeded` consults when a
job has no record. Index files are dropped only once they are older than the queue's
`keep_done`, so a succeeded id stays refused for at least twice `keep_done` after it finished.
"""

# ruff: noqa: PTH108, PTH208
# (str paths and os.* on purpose: records are read and written on the claim path)
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from lanekit.errors import UsageError
from lanekit.queue.records import JobState, Record, RecordError
from lanekit.system import fdio, fsops
from lanekit.system.fsops import tmp_suffix

FILE_LIMIT = 4096
"""A settle appends its line only while the record file stays within this many bytes (one
block on APFS and ext4): past it, the file is replaced by the one line."""


GUARD_DIR = ".guard"
"""records/.guard/: the purge index of the re-execution guard (see the module docstring)."""


class IdCaseCollisionError(UsageError):
    """Two job ids that differ only in case name one file on a case-insensitive volume."""


@dataclass(slots=True)
class OpenRecord:
    """A record file a claim keeps open from its read until its settle (RecordStore.read_open):
    the descriptor (-1: no file, or one it may not write), the file's size, whether what was
    read ends in a whole line (an append may follow), and its inode (which file the name held:
    the settle appends through the descriptor only while the name still is that file)."""

    fd: int
    size: int
    whole: bool
    ino: int = 0

    def append(self, line: bytes, *, durable: bool) -> bool:
        """Append `line` on the descriptor if what it holds ends in a whole line and stays
        within FILE_LIMIT with it (fsynced if `durable`: the append is its own commit point);
        False, with nothing written, otherwise (no descriptor, a line cut short, too long)."""
        if self.fd < 0 or not self.whole or self.size + len(line) > FILE_LIMIT:
            return False
        fdio.write_all(self.fd, line)
        if durable:
            fsops.full_fsync(self.fd)
        self.size += len(line)
        return True

    def close(self) -> None:
        """Close the descriptor (once; later calls do nothing)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


RecordIdentity = tuple[int, int, int, int]
"""A record file's inode, size, mtime and ctime (ns): RecordStore.identity. The size is what
tells an append apart: ext4 takes file times from a clock that ticks every few milliseconds."""


class RecordStore:
    """records/<id>.json: read strictly, written atomically (durably unless `durable=False`).

    `tmp_dir` holds the temporary files of atomic writes (the queue passes its tmp/, on the same
    filesystem); by default they are dot-files in the records directory itself.

    `write` replaces a record; `stage` + `create` put one in place only where none exists, for
    writers that must never undo a newer state (enqueue: the record of an id that is running,
    or has succeeded, belongs to that run).
    """

    def __init__(self, dir: Path, *, durable: bool = True, tmp_dir: Path | None = None) -> None:
        self.dir = Path(dir)
        self.durable = durable
        self._dir = str(self.dir)
        self._tmp = str(tmp_dir) if tmp_dir is not None else self._dir

    @property
    def dir_path(self) -> str:
        """The records directory as a str (what fsops takes)."""
        return self._dir

    def path(self, job_id: str) -> Path:
        """Where the record of `job_id` lives."""
        return self.dir / f"{job_id}.json"

    def read(self, job_id: str) -> Record | None:
        """The record of `job_id`, or None if there is none. RecordError if it is unreadable."""
        return self.read_identified(job_id)[0]

    def identity(self, job_id: str) -> RecordIdentity | None:
        """Which file is the record of `job_id` now, and how long (None: there is none). Every
        write puts a new file in place or appends to it, so an unchanged identity means an
        unchanged record."""
        try:
            st = os.lstat(f"{self._dir}/{job_id}.json")
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read_identified(self, job_id: str) -> tuple[Record | None, RecordIdentity | None]:
        """read() and the identity of the file it read (see identity), from one fstat."""
        record, seen, held = self._read(job_id, append=False)
        held.close()
        return record, seen

    def read_open(self, job_id: str) -> tuple[Record | None, RecordIdentity | None, OpenRecord]:
        """read_identified(), with the file kept open for appending (a claim's: it adds its
        `running` line with `mark_running`, on the descriptor it read through). Close it."""
        return self._read(job_id, append=True)

    def _read(
        self, job_id: str, *, append: bool
    ) -> tuple[Record | None, RecordIdentity | None, OpenRecord]:
        path = f"{self._dir}/{job_id}.json"
        try:
            fd, st = fsops.open_regular_stat(path, append=append)
        except FileNotFoundError:
            return None, None, OpenRecord(-1, 0, whole=False)
        except fsops.NotRegularFileError as exc:
            raise RecordError(
                f"{path}: the record {exc.strerror}",
                f"move {path} out of the queue's records/ directory",
            ) from None
        except OSError as exc:
            if append:
                # Not writable (someone's chmod), a directory (EISDIR)...: read it as any
                # reader does, which says what it is; a `running` line then replaces it.
                record, seen, _ = self._read(job_id, append=False)
                return record, seen, OpenRecord(-1, 0, whole=False)
            raise RecordError(
                f"{path}: cannot read the record ({exc.strerror})",
                "check the permissions of the queue's records/ directory",
            ) from None
        held = OpenRecord(fd, st.st_size, whole=False, ino=st.st_ino)
        try:
            data = fdio.read_all(fd, st.st_size)
            record = self._parsed(Record.from_file(data, path), job_id, path)
        except OSError as exc:
            held.close()
            raise RecordError(
                f"{path}: cannot read the record ({exc.strerror})",
                "check the queue's filesystem (`lanekit doctor`)",
            ) from None
        except BaseException:
            held.close()
            raise
        held.whole = len(data) == st.st_size and data[-1:] == b"\n"
        return record, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), held

    @staticmethod
    def _parsed(record: Record, job_id: str, path: str) -> Record:
        """`record`, read from `path` for `job_id`, if it is that job's."""
        if record.job_id != job_id and record.job_id.casefold() == job_id.casefold():
            # A case-insensitive volume (the default APFS) opened the other id's file.
            raise IdCaseCollisionError(
                f"job id {job_id!r} differs from job {record.job_id!r} only in case, and this "
                f"volume ignores case: both are {path}",
                "give the new job an id that differs in more than case",
            )
        if record.job_id != job_id:
            raise RecordError(
                f"{path}: record belongs to job {record.job_id!r}, not {job_id!r}",
                "remove or repair the record file",
            )
        return record

    def mark_running(self, held: OpenRecord, record: Record) -> None:
        """Add a claim's `running` record (the attempt it starts, its lane): one line appended
        on the descriptor `read_open` read the file through, whose identity the claim has
        checked since (nobody else writes the record of a marked id); else, where there was no
        record, or the line would not fit in FILE_LIMIT or follow a whole line, the file is
        replaced. Not fsynced even on a durable queue: a power cut then only loses the count of
        the attempt it cut short (lanekit.queue.directory.mark)."""
        if held.append(record.to_bytes(), durable=False):
            return
        held.close()  # the file it read is replaced: the settle goes by the name
        self.write(record, durable=False)

    def write(self, record: Record, *, durable: bool | None = None) -> None:
        """Replace the record of `record.job_id` atomically; `durable` overrides the store's
        setting for one write (a claim's `running` record, where it cannot be appended, is
        not fsynced)."""
        fsops.replace_file(
            f"{self._dir}/{record.job_id}.json",
            record.to_bytes(),
            tmp=f"{self._tmp}/.rec.{tmp_suffix()}",
            durable=self.durable if durable is None else durable,
        )

    def settle(self, record: Record, held: OpenRecord | None = None) -> None:
        """Write the record that settles a claim this process holds the running mark of
        (lanekit.queue.directory.mark): appended to the record file (see the module docstring), else
        (the file would outgrow FILE_LIMIT, or ends in a line cut short) replacing it
        atomically, so that the claim's `running` line is there until the outcome is: cut
        short anywhere, the attempt still counts.

        `held`: the claim's record, open since its `running` line (mark_running). The line is
        appended through it while the record's name still is that file (one lstat: a hand's
        `lanekit retry` of a failed copy of the id may have replaced it meanwhile); else by
        the name, as without it."""
        line = record.to_bytes()
        if held is not None and held.fd >= 0 and self._still(held, record):
            if not held.append(line, durable=self.durable):
                self.write(record)  # a line cut short, or the block is full: replaced
            return
        if fsops.append_line(
            f"{self._dir}/{record.job_id}.json", line, limit=FILE_LIMIT, durable=self.durable
        ):
            return
        self.write(record)

    def _still(self, held: OpenRecord, record: Record) -> bool:
        """Whether the record's name is still the file `held` has open."""
        try:
            return os.lstat(f"{self._dir}/{record.job_id}.json").st_ino == held.ino
        except OSError:
            return False

    def stage(self, record: Record, *, durable: bool | None = None) -> str:
        """Write `record` to a fresh temp file for `create`; returns its path."""
        from lanekit.queue.directory.recordfile import stage_record

        return stage_record(
            str(self._tmp), record.to_bytes(), durable=self.durable if durable is None else durable
        )

    def create(self, staged: str, job_id: str, *, durable: bool | None = None) -> bool:
        """Move the staged record of `job_id` into place unless the job already has a record;
        True if it did (lanekit.queue.directory.recordfile.create_record)."""
        from lanekit.queue.directory.recordfile import create_record

        return create_record(
            self._dir, staged, job_id, durable=self.durable if durable is None else durable
        )

    # -- the guard beyond purged records ---------------------------------------------------

    @property
    def guard_dir(self) -> Path:
        """records/.guard/: the ids of succeeded jobs whose records were purged."""
        return self.dir / GUARD_DIR

    def succeeded(self, job_id: str, record: Record | None) -> bool:
        """The re-execution guard: True when `record` (the job's, as read) says succeeded, or
        when there is no record and the purge index lists the id. The index is read only for
        a job without a record (one enqueued by a producer outside lanekit, or purged)."""
        if record is not None:
            return record.state is JobState.SUCCEEDED
        directory = f"{self._dir}/{GUARD_DIR}"
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return False
        needle = job_id.encode("ascii", "replace")
        for name in names:
            if not name.endswith(".ids") or name[0] == ".":
                continue
            try:
                with open(f"{directory}/{name}", "rb") as file:  # noqa: PTH123
                    if needle in file.read().split(b"\n"):
                        return True
            except FileNotFoundError:
                continue
        return False

    def remember_succeeded(self, job_ids: list[str], day: str) -> None:
        """Add `job_ids` to the index file of `day` (YYYY-MM-DD), atomically (the old file's
        ids plus these, sorted): call before their records are removed."""
        if not job_ids:
            return
        from lanekit.system.atomic import write_atomic  # purging only: off the fast path

        path = f"{self._dir}/{GUARD_DIR}/{day}.ids"
        try:
            with open(path, "rb") as file:  # noqa: PTH123
                known = set(file.read().decode("ascii", "replace").split())
        except FileNotFoundError:
            known = set()
        text = "".join(f"{job_id}\n" for job_id in sorted(known | set(job_ids)))
        # The temp file is .<day>.ids.<random>.tmp in .guard/ itself: succeeded() skips it.
        write_atomic(Path(path), text.encode("ascii"), durable=self.durable)

    def expire_guard(self, before_day: str) -> list[str]:
        """Remove index files of days before `before_day` (YYYY-MM-DD); their names."""
        directory = f"{self._dir}/{GUARD_DIR}"
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        gone = []
        for name in sorted(names):
            if name.endswith(".ids") and name[:-4] < before_day:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{directory}/{name}")
                    gone.append(name)
        return gone

    def remove(self, job_id: str) -> bool:
        """Delete the record of `job_id` (purging); False if there was none."""
        try:
            os.unlink(f"{self._dir}/{job_id}.json")
        except FileNotFoundError:
            return False
        return True

    def ids(self) -> list[str]:
        """Every job id that has a record (unordered)."""
        try:
            names = os.listdir(self._dir)
        except FileNotFoundError:
            return []
        return [name[:-5] for name in names if name.endswith(".json") and name[0] != "."]

    def succeeded_ids(self) -> set[str]:
        """Ids whose record says succeeded. Reads every record: for tools and tests, not runs.

        An unreadable record raises RecordError: it is not known to have succeeded.
        """
        result = set()
        for job_id in self.ids():
            record = self.read(job_id)
            if record is not None and record.state is JobState.SUCCEEDED:
                result.add(job_id)
        return result
