"""`lanekit db migrate [QUEUE]`: create or upgrade the schema of lanes.toml's PostgreSQL queues
(versioned, lanekit.queue.postgres.schema). The one place a schema changes: runs, `apply` and
every other command only check it, so a lane never migrates a database on its own."""

from __future__ import annotations

from dataclasses import dataclass

from lanekit.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from lanekit.config import QueueSpec


@dataclass(frozen=True, slots=True)
class Migrated:
    """One queue's schema before and after."""

    queue: str
    where: str
    """The queue, its schema and its dsn (no password: lanes.toml refuses one)."""
    before: int | None
    """The version found (None: no schema yet)."""
    after: int


def migrate(queues: Mapping[str, QueueSpec], name: str | None = None) -> list[Migrated]:
    """Migrate queue `name` (default: every postgres queue). UsageError for a name that is not
    a postgres queue; SchemaError (exit 69) for a schema newer than this lanekit;
    QueueUnavailableError (exit 75) when the server cannot be reached."""
    from lanekit.queue import POSTGRES, open_queue
    from lanekit.queue.postgres.backend import PostgresQueue

    if name is not None:
        spec = queues.get(name)
        if spec is None:
            known = ", ".join(queues) or "(none)"
            raise UsageError(f"no queue named {name!r}", f"queues: {known}")
        if not str(spec.dir).startswith(POSTGRES):
            raise UsageError(
                f"queue {name} is a directory queue: it has no schema to migrate",
                'only a queue with backend = "postgres" has one',
            )
        chosen = [spec]
    else:
        chosen = [spec for spec in queues.values() if str(spec.dir).startswith(POSTGRES)]
    done = []
    for spec in chosen:
        queue = open_queue(spec.dir, max_job_bytes=spec.max_job_bytes)
        assert isinstance(queue, PostgresQueue)
        before, after = queue.migrate()
        done.append(Migrated(spec.name, queue.where, before, after))
    return done
