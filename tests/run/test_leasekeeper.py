"""The job watcher's lease keeper, on a real server (tests/pgserver.py): once closed, its
renewer thread is gone, so the watcher forks its next job with no other thread alive
(lanekit.run.watcher.JobTie: the child runs Python before exec)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from lanekit.run.leasekeeper import LeaseKeeper
from pgserver import PgServer


def test_closing_the_keeper_ends_its_renewer_thread(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    queue = PostgresQueue(PgLocation("keep", pg_server.dsn, schema=pg_schema), spool=tmp_path)
    queue.migrate()
    queue.ensure()
    queue.enqueue({"n": 1}, job_id="kept")
    claim = queue.claimer().claim()
    assert claim is not None
    terms = queue.lease_terms(claim)
    assert terms is not None
    keeper = LeaseKeeper(terms).start()
    time.sleep(0.05)
    assert "lanekit-lease" in {thread.name for thread in threading.enumerate()}
    keeper.close()
    assert "lanekit-lease" not in {thread.name for thread in threading.enumerate()}
    assert not keeper.must_stop()
