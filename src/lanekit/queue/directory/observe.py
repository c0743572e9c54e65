"""Looking at a queue without changing it: where a job is, the listing history pages through,
each claim classified by its runner's liveness, and the records that contradict where their
job is (counts, ages and the claims' owners are lanekit.queue.directory.census). Built from
directory listings (and a stat where an age needs one), so it stays cheap at 100k jobs."""

# (str paths and os.* on purpose: the claim path, see lanekit.queue.directory)
from __future__ import annotations

import os
from collections import Counter

from lanekit.errors import LanekitError
from lanekit.queue import outcome as job_outcome
from lanekit.queue.directory.census import list_claims
from lanekit.queue.directory.fileio import job_names, listdir
from lanekit.queue.directory.layout import error_name, has_id, stem_id
from lanekit.queue.directory.liveness import claim_locked, classify_claim
from lanekit.queue.ids import owned_id, split_owned_name, validate_job_id
from lanekit.queue.observed import ClaimState, ClaimView, JobLocation
from lanekit.queue.records import JobState, RecordError
from lanekit.system import fsops, procinfo
from lanekit.system.fdio import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.directory.state import QueueState
    from lanekit.queue.records import Record


def listing(
    q: QueueState, state: JobState | None = None
) -> dict[str, tuple[JobState, str, str | None]]:
    """Every job file as id -> (state, directory, file name or None for `<id>.json`).

    Built from directory listings alone (no file is opened or stat'ed, and entries of one
    directory share one value tuple), so it stays cheap at 100k jobs. `state` limits it to
    that state's directories (queued = queue/ and delayed/). When one id has files in
    several places (a duplicate), the live one wins: claimed/ over queue/ and delayed/ over
    failed/ over done/.
    """
    found: dict[str, tuple[JobState, str, str | None]] = {}

    def add(directory: str, job_state: JobState, *, owned: bool) -> None:
        stems = [n[:-5] for n in listdir(directory) if n[0] != "." and n.endswith(".json")]
        found.update(dict.fromkeys(stems, (job_state, directory, None)))
        if not owned:
            return
        for stem in [stem for stem in stems if "." in stem]:  # generated ids have no dots
            parsed = split_owned_name(stem + ".json")
            if parsed is not None:
                del found[stem]
                found[parsed[0]] = (job_state, directory, stem + ".json")

    if state is None or state is JobState.SUCCEEDED:
        for day in q.done_days():
            add(f"{q.done_root}/{day}", JobState.SUCCEEDED, owned=True)
    if state is None or state is JobState.FAILED:
        add(q.failed_dir, JobState.FAILED, owned=True)
    if state is None or state is JobState.QUEUED:
        for name in job_names(q.delayed_dir):
            job_id = stem_id(name)
            found[job_id] = (JobState.QUEUED, q.delayed_dir, name)
        add(q.queue_dir, JobState.QUEUED, owned=False)
    if state is None or state is JobState.RUNNING:
        add(q.claimed_dir, JobState.RUNNING, owned=True)
    return found


def locate(q: QueueState, job_id: str) -> JobLocation | None:
    """Where the job's file is now, or None if it is nowhere. done/ is searched in the day
    its record says it finished first, then newest day first."""
    validate_job_id(job_id)
    for directory, job_state in (
        (q.queue_dir, JobState.QUEUED),
        (q.failed_dir, JobState.FAILED),
    ):
        path = f"{directory}/{job_id}.json"
        if os.path.lexists(path):
            return JobLocation(job_id, job_state, path)
    for directory, job_state in (
        (q.claimed_dir, JobState.RUNNING),
        (q.delayed_dir, JobState.QUEUED),
    ):
        for name in job_names(directory):
            if has_id(name, job_id):
                return JobLocation(job_id, job_state, f"{directory}/{name}")
    try:
        record = q.store.read(job_id)
    except RecordError:
        record = None
    days = q.done_days()[::-1]
    if record is not None and record.updated_at[:10] in days:
        days.insert(0, record.updated_at[:10])
    for day in days:
        path = f"{q.done_root}/{day}/{job_id}.json"
        if os.path.lexists(path):
            return JobLocation(job_id, JobState.SUCCEEDED, path)
    return None


def error_text(q: QueueState, location: JobLocation) -> str | None:
    """The .error file next to a failed job, or None."""
    if location.state is not JobState.FAILED:
        return None
    try:
        fd = fsops.open_regular(error_name(location.where))
    except (FileNotFoundError, fsops.NotRegularFileError):
        return None
    try:
        return read_all(fd, os.fstat(fd).st_size).decode("utf-8", "replace")
    finally:
        os.close(fd)


def failed_ids(q: QueueState) -> list[str]:
    """Ids of the jobs in failed/ under their own name, oldest first (`retry --failed`)."""
    return sorted(name[:-5] for name in job_names(q.failed_dir) if "." not in name[:-5])


def done_file(q: QueueState, job_id: str) -> str | None:
    """done/<day>/<id>.json, newest day first, or None. A job's file reaches done/ only once
    it succeeded, and the move is a rename (it needs no free space), so this is the proof
    that survives a success whose record could not be written (disk full): the guard asks
    it wherever the record does not already say succeeded."""
    for day in reversed(q.done_days()):
        path = f"{q.done_root}/{day}/{job_id}.json"
        if os.path.lexists(path):
            return path
    return None


def claims(q: QueueState, now: float | None = None) -> list[ClaimView]:
    """Every claim, oldest first, classified by its runner's liveness and its lock.

    list_claims' own `owner_alive` counts a held lock as a live owner, which cannot tell a
    runner from a job that outlived it; the runner's liveness is asked here instead."""
    here = procinfo.hosttag()
    views = []
    for info in list_claims(q, now=now, check_owners=False):
        runner = None
        if info.host == here and info.pid is not None and info.token is not None:
            runner = procinfo.liveness(info.pid, info.token)
        locked = claim_locked(info.path)
        if locked is None:
            continue
        state = classify_claim(runner, locked)
        if state is ClaimState.STRANDED and job_outcome.job_copies(str(info.path)):
            state = ClaimState.ORPHANED  # its runner and watcher died, its job did not
        views.append(ClaimView(info, state))
    return views


def _contradicts(record: Record, *, in_claimed: bool, found: JobState | None) -> bool:
    """Whether a record disagrees with the files: `running` with no file of the id in
    claimed/ (a settle could not write its record after the claim's `running` line),
    `queued` with its file only in done/ or failed/ (the same, for a claim of the version
    whose marks carried the attempt), or `succeeded` with its file (`found` is where) in
    queue/ or delayed/."""
    if record.state is JobState.RUNNING:
        return not in_claimed
    if record.state is JobState.QUEUED:
        return found in {JobState.SUCCEEDED, JobState.FAILED}
    return record.state is JobState.SUCCEEDED and found is JobState.QUEUED


def contradictions(queue: QueueState) -> list[tuple[Record, JobLocation | None]]:
    """Records that contradict where their job is, with where the job's file is (or None).

    Three contradictions: `queued` while the id's file is only in done/ or failed/, and
    `running` while no file of the id is in claimed/ (a settle whose record could not be
    written moved the file all the same, after the claim's `running` line; a claim of the
    version whose marks carried the attempt left `queued`), and `succeeded` while the file
    waits in queue/ or delayed/ (the guard will
    skip it). A suspect is confirmed by a second look (a
    fresh listing of claimed/, `locate`, and the record read again, unchanged), so a job that
    was claimed, settled or given back while the first pass ran is not reported.
    """
    files = listing(queue)
    suspects = []
    for job_id in sorted(queue.store.ids()):
        try:
            record = queue.store.read(job_id)
        except (LanekitError, OSError):
            continue  # an unreadable record contradicts nothing; the claimer refuses its job
        if record is None:
            continue
        entry = files.get(job_id)
        state = None if entry is None else entry[0]
        if _contradicts(record, in_claimed=state is JobState.RUNNING, found=state):
            suspects.append(record)
    if not suspects:
        return []
    running = listing(queue, JobState.RUNNING)
    confirmed: list[tuple[Record, JobLocation | None]] = []
    for record in suspects:
        try:
            location = locate(queue, record.job_id)
            again = queue.store.read(record.job_id)
        except (LanekitError, OSError):
            continue
        in_claimed = record.job_id in running
        where = None if location is None else location.state
        if again == record and _contradicts(record, in_claimed=in_claimed, found=where):
            confirmed.append((record, location))
    return confirmed


def success_copies(q: QueueState) -> Counter[str]:
    """Per id, its files in done/ (bucketed by day, so one id can sit in two buckets; a copy
    the guard skipped is kept there too, under its claimed name)."""
    counts: Counter[str] = Counter()
    for day in q.done_days():
        counts.update(owned_id(name) for name in job_names(f"{q.done_root}/{day}"))
    return counts
