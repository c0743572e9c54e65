"""The job watcher's hold on a leased claim (a server queue's): it renews the lease every
lease/5 from a thread of its own, and says when the job must stop, at once: the lease was lost
(another run took the job over), or the self-fence deadline came (no renew succeeded for
lease - margin, measured on a clock that counts sleep from the send time of the last renew
that did), so the job is gone before anyone else may reclaim it.

The renew runs in a thread so that a statement stuck on a partition (up to the connection's
timeouts) never delays the deadline check, which the watcher's loop makes every CANCEL_POLL.
The watcher is a fork of the runner: its first renew opens a session of its own.
"""

from __future__ import annotations

import contextlib
import threading

from lanekit.queue.postgres.lease import awake_clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.model import LeaseTerms
    from lanekit.queue.outcome import Outcome

FENCE = True
"""Whether the self-fence stops a job whose lease is lost or lapsing. The chaos run's control
switches it off to show the overlaps it prevents; nothing else changes it."""


class LeaseKeeper:
    """Renews one claim's lease until closed; `must_stop()` once it is lost or lapsing."""

    def __init__(self, terms: LeaseTerms) -> None:
        self.terms = terms
        self.deadline = terms.deadline
        self.lost = False
        self.cancel = False
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="lanekit-lease", daemon=True)

    def start(self) -> LeaseKeeper:
        """Start renewing (every lease/5)."""
        self._thread.start()
        return self

    def _renew(self) -> None:
        from lanekit.errors import LanekitError
        from lanekit.queue import open_queue

        queue = open_queue(self.terms.location)
        while not self._closed.wait(self.terms.lease / 5):
            try:
                renewal = queue.renew_lease(self.terms)
            except (LanekitError, OSError):
                continue  # the server cannot be reached: the deadline decides
            if self._closed.is_set():
                return
            if not renewal.held:
                self.lost = True
                return
            self.deadline = max(self.deadline, renewal.deadline)
            self.cancel = self.cancel or renewal.cancel

    def must_stop(self) -> bool:
        """True once the lease is lost or the self-fence deadline has come."""
        return FENCE and (self.lost or awake_clock() >= self.deadline)

    def close(self, outcome: Outcome | None = None) -> None:
        """Stop renewing (the job ended). With the
        job's `outcome`, keep it in the claim first (best effort: a server out of reach
        leaves recovery to run the job again, at least once), so that a run on any machine
        settles the job by it if this one's runner is gone. Returns once the renewer thread
        has ended (a renew in flight is bounded by the connection's timeouts; the lease
        bounds the wait): the watcher forks the next job, which must happen with no other
        thread alive (lanekit.run.watcher.JobTie)."""
        self._closed.set()
        try:
            if outcome is None or self.lost:
                return
            from lanekit.errors import LanekitError
            from lanekit.queue import open_queue

            with contextlib.suppress(LanekitError, OSError):
                open_queue(self.terms.location).keep_outcome(self.terms, outcome)
        finally:
            if self._thread.is_alive():
                self._thread.join(self.terms.lease)
