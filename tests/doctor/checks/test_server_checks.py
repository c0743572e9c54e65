"""doctor's checks on a postgres queue, against a real server: unreachable (2 s), schema
version, lapsed leases, clock skew, a password on its way to a plist, a pgpass libpq ignores.
Each finds its problem and names the fix; each is quiet on a healthy queue."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lanekit.config import Config, load_config
from lanekit.doctor import DoctorContext, Finding, lane_target, queue_targets
from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from lanekit.state.paths import Paths
from pgserver import PgServer

LANES = """
[queues.shared]
backend = "postgres"
dsn = "{dsn}"
schema = "{schema}"

[lanes.publish]
queue = "shared"
command = ["/bin/cat", "{{job}}"]
every = "5m"
{env}
"""


def config_for(tmp_path: Path, dsn: str, schema: str, env: str = "") -> tuple[Paths, Config]:
    paths = Paths.under(tmp_path)
    path = tmp_path / "lanes.toml"
    path.write_text(LANES.format(dsn=dsn, schema=schema, env=env))
    return paths, load_config(path, paths)


def findings(paths: Paths, config: Config, check_id: str) -> list[Finding]:
    ctx = DoctorContext(paths, config=config)
    lane = config.lanes["publish"]
    if check_id in {"queue.secret-in-dsn"}:
        target = lane_target(lane, paths)
    else:
        [target] = queue_targets([lane], config)
    return ctx.findings(check_id, target)


CHECKS = (
    "queue.db-unreachable",
    "queue.schema-version",
    "queue.lease-expired",
    "queue.clock-skew",
    "queue.secret-in-dsn",
    "queue.pgpass-mode",
)


def migrated(server: PgServer, schema: str) -> PostgresQueue:
    queue = PostgresQueue(PgLocation("shared", server.dsn, schema=schema))
    queue.migrate()
    return queue


def test_a_healthy_postgres_queue_has_no_findings(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    migrated(pg_server, pg_schema)
    paths, config = config_for(tmp_path, pg_server.dsn, pg_schema)
    for check_id in CHECKS:
        assert findings(paths, config, check_id) == [], check_id


def test_an_unreachable_server_is_found_within_two_seconds(tmp_path: Path) -> None:
    paths, config = config_for(tmp_path, "host=127.0.0.1 port=9 user=lk dbname=lk", "lanekit")
    started = time.monotonic()
    [found] = findings(paths, config, "queue.db-unreachable")
    assert time.monotonic() - started < 3
    assert "cannot be reached" in found.message and "exit 75" in found.message
    assert "psql" in found.fix
    assert findings(paths, config, "queue.schema-version") == []  # one finding, not two


def test_a_schema_not_migrated_or_newer(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    paths, config = config_for(tmp_path, pg_server.dsn, pg_schema)
    [found] = findings(paths, config, "queue.schema-version")
    assert found.fix == "lanekit db migrate shared"
    migrated(pg_server, pg_schema)
    pg_server.admin(f"UPDATE {pg_schema}.meta SET value = '9' WHERE key = 'version'")
    [found] = findings(paths, config, "queue.schema-version")
    assert "newer" in found.message and "upgrade lanekit" in found.fix


def test_a_lapsed_lease_is_found_with_its_host(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    queue = migrated(pg_server, pg_schema)
    queue.enqueue({}, job_id="j")
    assert queue.claimer().claim() is not None
    paths, config = config_for(tmp_path, pg_server.dsn, pg_schema)
    assert findings(paths, config, "queue.lease-expired") == []
    pg_server.admin(f"UPDATE {pg_schema}.jobs SET lease_expires = now() - interval '1 minute'")
    [found] = findings(paths, config, "queue.lease-expired")
    assert "lapsed lease" in found.message and found.fix.startswith("lanekit recover publish")


def test_clock_skew_is_measured_against_the_server(
    pg_server: PgServer, pg_schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrated(pg_server, pg_schema)
    paths, config = config_for(tmp_path, pg_server.dsn, pg_schema)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this machine an hour ahead
    [found] = findings(paths, config, "queue.clock-skew")
    assert "3600 s ahead of the server" in found.message


def test_pgpassword_in_a_lane_env_is_found(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    paths, config = config_for(
        tmp_path, pg_server.dsn, pg_schema, env='env = { PGPASSWORD = "canary-9" }'
    )
    [found] = findings(paths, config, "queue.secret-in-dsn")
    assert "PGPASSWORD" in found.message and "canary-9" not in found.message + found.fix


def test_a_pgpass_open_to_others_is_found(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    migrated(pg_server, pg_schema)
    paths, config = config_for(tmp_path, pg_server.dsn, pg_schema)
    pg_server.passfile.chmod(0o644)
    try:
        [found] = findings(paths, config, "queue.pgpass-mode")
    finally:
        pg_server.passfile.chmod(0o600)
    assert found.fix == f"chmod 600 {pg_server.passfile}"
