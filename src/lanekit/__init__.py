"""lanekit: launchd lanes that drain a directory queue.

Kept import-free on purpose: `lanekit run LANE` (through lanekit.run.entry) is what launchd
starts, and its start-up time on an empty queue is a benchmark figure.
"""

__version__ = "0.1.0"

PROMISE_CLAUSES = (
    "Execution is at-least-once under crashes",
    "success is recorded exactly once",
    "two copies of one job never run at the same time",
    "a job that finished after its runner died is settled by its recorded exit status, "
    "not run again",
)
"""What lanekit promises about jobs (design.md section 8), one clause each. `lanekit --help`,
`lanekit run --help`, README.md and docs/cli.md say PROMISE word for word (tests/test_docs.py
pins it); add a clause here only when it is true, then update README.md and regenerate
docs/cli.md."""

PROMISE = "; ".join(PROMISE_CLAUSES) + ". No job is ever lost or overwritten."
