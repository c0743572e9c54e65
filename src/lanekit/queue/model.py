"""The directory queue's values for moving jobs: claims, what claim/recover/settle/verbs
report, and its two errors of its own (what observing a queue returns is in
lanekit.queue.observed). Frozen dataclasses and closed vocabularies, no I/O (ClaimLock closes
its descriptors, nothing else)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from lanekit.errors import QueueError, UsageError
from lanekit.queue.observed import RecoverReason
from lanekit.queue.records import JobState

CANCELLED = "cancelled"
"""The reason `lanekit cancel` records (the record's error and the job's .error)."""


def is_cancelled(error: str | None) -> bool:
    """A failed job's reason (its .error or record error) says a person cancelled it (`lanekit
    cancel`, `cancel --stop`): it did not run out of attempts, and nobody needs telling."""
    words = (error or "").split(None, 1)
    return bool(words) and words[0] == CANCELLED


def error_file_text(reason: str) -> str:
    """What a failed job's .error holds for `reason` (a record's error): it, one final newline."""
    return reason.rstrip("\n") + "\n"


TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.records import Record


class JobExistsError(UsageError):
    """An id given to enqueue is already in the queue (or already succeeded)."""


class ClaimFencedError(QueueError):
    """A settle by a holder whose lease was taken over (it lapsed and another run recovered
    the job): nothing changed, and the lane log says `fenced`. Only a backend with leases
    raises it."""


@dataclass(frozen=True, slots=True)
class LeaseTerms:
    """What the job's watcher needs to keep a leased claim: the queue's location (it opens
    the queue itself, in its own process), the claim and its fencing token, and the
    self-fence deadline on lanekit.queue.postgres.lease.awake_clock (system-wide, so it
    means the same in the watcher)."""

    location: str
    job_id: str
    token: int
    lease: float
    """Seconds a renew buys; the watcher renews every lease/5."""
    deadline: float
    """When the job must have stopped unless a renew succeeds first (awake clock)."""


@dataclass(frozen=True, slots=True)
class LeaseRenewal:
    """What one renew learned."""

    held: bool
    """False: the lease is lost (taken over, or settled): stop the job at once."""
    cancel: bool
    """`lanekit cancel --stop` asked for the job to stop (from any machine)."""
    deadline: float
    """The new self-fence deadline (awake clock), measured from the renew's send time."""


class RecordNotWrittenError(QueueError):
    """A settled job's final record could not be written; its file was moved all the same.

    Raised by complete() and fail() (and release() out of attempts) after the move: the job is
    finished, `moved_to` is where it went (done/ or failed/), `state` what the record should
    have said (SUCCEEDED or FAILED); the record itself still says what it said before the
    claim (`queued`, or `running` for a claim by an earlier version).
    """

    def __init__(self, message: str, hint: str, *, state: JobState, moved_to: str) -> None:
        super().__init__(message, hint)
        self.state = state
        self.moved_to = moved_to


class ClaimHandle(Protocol):
    """A backend's own side of a claim (ClaimLock for the directory queue)."""

    @property
    def held(self) -> bool:
        """False once the claim was settled."""
        ...

    @property
    def fd(self) -> int:
        """A descriptor the job's process inherits to keep the claim live however the runner
        dies (the directory queue's flocked claimed file); -1 when the backend needs none."""
        ...

    def release(self) -> None:
        """The claim is settled (idempotent)."""
        ...


@dataclass(frozen=True, slots=True)
class Claim:
    """A job this process owns until it is settled, whatever backend keeps it."""

    job_id: str
    file: str
    """The job as a file, the `{job}` of the lane's command (`path` is the same as a Path):
    the directory queue's claimed file, a materialized payload for another backend."""
    attempt: int
    """1 on the first run, counting every start (a crash mid-run counts too): the fencing
    token, as no two claims of one job share it."""
    owner: str
    record: Record
    """The attempt's `running` state, as the backend recorded it at claim; the settle writes
    the outcome from it."""
    handle: ClaimHandle = field(repr=False, compare=False)
    """The backend's own (opaque to everyone else)."""
    lease_until: float | None = None
    """When the claim lapses unless renewed (epoch seconds); None: it lasts as long as its
    owner does (the directory and memory queues), and renew() answers True."""

    @property
    def path(self) -> Path:
        """The job file; the job's command gets this path. Made when asked: a claim settled
        without it (a library's loop) never parses one."""
        return Path(self.file)

    @property
    def held(self) -> bool:
        """True until the claim was settled."""
        return self.handle.held

    @property
    def lock_fd(self) -> int:
        """The descriptor to give the job's process (-1: none, or settled); not inheritable.

        Given to the job's process (`subprocess.Popen(..., pass_fds=(claim.lock_fd,))` makes
        it inheritable in the child only), the directory queue's claim stays locked for as long
        as the job runs, even if this process is SIGKILLed: recover() takes only claims whose
        lock nobody holds."""
        return self.handle.fd


class DropReason(StrEnum):
    """Why a claimed file was settled without running (see Dropped)."""

    CORRUPT = "corrupt"
    """Not JSON, or not a JSON object."""
    INVALID_ID = "invalid-id"
    """A producer named the file with an id lanekit would have refused."""
    RECORD_UNREADABLE = "record-unreadable"
    """The record cannot be trusted, so the guard cannot say whether the job already ran."""
    ALREADY_SUCCEEDED = "already-succeeded"
    """The re-execution guard: the record says succeeded."""
    DUPLICATE = "duplicate"
    """Another copy of the same id is running right now."""
    UNREADABLE = "unreadable"
    """Not a regular file (a symlink, directory, FIFO...), or one lanekit may not read: it can
    never run, so it goes to failed/ instead of blocking the lane."""
    LINKED = "linked"
    """A hard link to a file elsewhere (more names than lanekit's own): claiming it would
    date, and running it could change, a file lanekit did not create."""
    TOO_LARGE = "too-large"
    """Larger than the queue's `max_job_bytes`: refused unread (see
    lanekit.queue.directory.state)."""


@dataclass(frozen=True, slots=True)
class Dropped:
    """A job claim() took out of queue/ but did not hand out; reported through `on_drop`."""

    job_id: str
    reason: DropReason
    detail: str
    destination: str
    """Where it went, for messages: done/ for already-succeeded, failed/ (+ .error)
    otherwise (the directory backend's file)."""

    @property
    def state(self) -> JobState:
        """SUCCEEDED for already-succeeded (log `skipped`), FAILED otherwise (log `failed`)."""
        if self.reason is DropReason.ALREADY_SUCCEEDED:
            return JobState.SUCCEEDED
        return JobState.FAILED


@dataclass(frozen=True, slots=True)
class Recovered:
    """One claim recover() moved (or, with dry_run, would move)."""

    job_id: str
    reason: RecoverReason
    destination: str
    """Where it went, for messages (the directory backend's file)."""
    state: JobState
    """QUEUED (back in queue/), FAILED (out of attempts, or its record already said failed) or
    SUCCEEDED (its record already said so). A record that already said so means the owner died
    between recording the outcome and moving the file; the move is finished, the job not rerun."""
    owner: str
    attempts: int
    exit: int | None = None
    """The exit status the job's watcher recorded: the job finished after its owner died and
    was settled by it (None: it did not finish, and goes back to run again)."""


@dataclass(frozen=True, slots=True)
class Moved:
    """One job an operator verb (retry, requeue, cancel) moved, or with dry_run would move."""

    job_id: str
    source: str
    """Where it was, for messages (the directory backend's file)."""
    destination: str
    """Where it went."""
    state: JobState
    """The job's state once moved: QUEUED (retry, requeue) or FAILED (cancel)."""


@dataclass(frozen=True, slots=True)
class Purged:
    """What `Queue.purge` removed (or, with dry_run, would remove)."""

    done: tuple[str, ...]
    """Ids of finished jobs removed from done/."""
    failed: tuple[str, ...]
    """Ids of failed jobs removed from failed/."""
    guard_expired: tuple[str, ...]
    """Guard index files (records/.guard/<day>.ids) that expired."""
    dry_run: bool = False


class VerdictKind(StrEnum):
    """How a claim ends (see Verdict)."""

    SUCCEEDED = "succeeded"
    """The job succeeded: recorded once, never run again."""
    FAILED = "failed"
    """This attempt failed: a retry after the backoff, or failed for good when the attempts
    are spent."""
    STOPPED = "stopped"
    """The run stopped before the job failed (a signal, a command that cannot start): back in
    the queue at once, spending no attempt."""
    GAVE_UP = "gave-up"
    """Failed for good whatever the attempts left."""
    DEFERRED = "deferred"
    """The lane cannot run it now (its command cannot start): not the job's fault, so no
    attempt is spent, but it waits in delayed/ (queue.policy.DEFER_SECONDS at least) instead
    of going back to queue/, where a lane started on enqueue would be started for it again
    and again."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the runner learned about a claim; the backend decides where the job goes."""

    kind: VerdictKind
    error: str = ""
    """Why (the record's `error`), empty for a success."""
    max_attempts: int = 1
    """The lane's max_attempts (FAILED gives up once the claim's attempt reached it)."""

    @classmethod
    def succeeded(cls) -> Verdict:
        """The job succeeded."""
        return _SUCCEEDED

    @classmethod
    def failed(cls, error: str, max_attempts: int) -> Verdict:
        """This attempt failed with `error`."""
        return cls(VerdictKind.FAILED, error, max_attempts)

    @classmethod
    def stopped(cls, error: str = "") -> Verdict:
        """Back at once, no attempt spent (`error` says why, when there is a why)."""
        return cls(VerdictKind.STOPPED, error)

    @classmethod
    def deferred(cls, error: str) -> Verdict:
        """Back after a wait, no attempt spent (`error` says why the lane could not run it)."""
        return cls(VerdictKind.DEFERRED, error)

    @classmethod
    def gave_up(cls, error: str) -> Verdict:
        """Failed for good with `error`."""
        return cls(VerdictKind.GAVE_UP, error)


_SUCCEEDED = Verdict(VerdictKind.SUCCEEDED)


@dataclass(frozen=True, slots=True)
class Settled:
    """Where a settled job went, as a state: callers never compare paths."""

    job_id: str
    state: JobState
    """SUCCEEDED (done), QUEUED (to run again, now or after `not_before`) or FAILED."""
    destination: str
    """What stands for the job now, for messages (the directory backend's done/, queue/,
    delayed/ or failed/ file; `memory:NAME/<state>/<id>`)."""
    not_before: float | None = None
    """For a retry waiting out its backoff: when it is due (epoch seconds)."""
