"""The lease answers of a backend whose claims last as long as their owner (the directory and
memory queues: a flock, a live process): no terms to hand out, nothing to renew, no outcome to
keep in the claim. One mixin, so the backends without leases answer alike."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs start-up: the directory backend imports this module
if TYPE_CHECKING:
    from lanekit.queue.model import Claim, LeaseRenewal, LeaseTerms
    from lanekit.queue.outcome import Outcome


class Unleased:
    """JobQueue's lease methods for a queue whose claims have no lease."""

    __slots__ = ()

    def lease_terms(self, claim: Claim) -> LeaseTerms | None:
        """None: a claim here lasts as long as its owner, no lease to renew."""
        return None

    def renew_lease(self, terms: LeaseTerms) -> LeaseRenewal:
        """Held, for ever: no claim here has a lease (lease_terms gives none out)."""
        from lanekit.queue.model import LeaseRenewal

        return LeaseRenewal(held=True, cancel=False, deadline=float("inf"))

    def keep_outcome(self, terms: LeaseTerms, outcome: Outcome) -> None:
        """Nothing: no claim here has a lease (the watcher's status file is the record)."""
