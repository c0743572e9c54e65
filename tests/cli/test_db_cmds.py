"""CLI: `lanekit db migrate` on a real PostgreSQL server: creates, then finds up to date, and
refuses a schema newer than this lanekit (exit 69); a directory queue has none."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from lanekit.cli import app
from lanekit.state.schemas import POSTGRES_QUEUE_SCHEMA
from pgserver import PgServer

CONFIG = """
[queues.shared]
backend = "postgres"
dsn = "{dsn}"
schema = "{schema}"

[queues.local]
dir = "{local}"

[lanes.publish]
queue = "shared"
command = ["/bin/cat", "{{job}}"]
every = "5m"
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_db_migrate_creates_then_finds_the_schema_up_to_date(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = tmp_path / "lanes.toml"
    config.write_text(CONFIG.format(dsn=pg_server.dsn, schema=pg_schema, local=tmp_path / "q"))
    code, out, err = invoke("db", "migrate", "-c", str(config))
    assert (code, err) == (0, "")
    assert "postgres queue shared" in out
    assert f"schema created (version {POSTGRES_QUEUE_SCHEMA})" in out
    code, out, _ = invoke("db", "migrate", "shared", "-c", str(config))
    assert code == 0 and "up to date" in out
    assert pg_server.password not in out


def test_db_migrate_refuses_a_newer_schema_and_a_directory_queue(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    config = tmp_path / "lanes.toml"
    config.write_text(CONFIG.format(dsn=pg_server.dsn, schema=pg_schema, local=tmp_path / "q"))
    assert invoke("db", "migrate", "-c", str(config))[0] == 0
    pg_server.admin(f"UPDATE {pg_schema}.meta SET value = '7' WHERE key = 'version'")
    code, _, err = invoke("db", "migrate", "-c", str(config))
    assert code == 69
    assert "newer than this lanekit" in err and "Traceback" not in err
    code, _, err = invoke("db", "migrate", "local", "-c", str(config))
    assert code == 2 and "directory queue" in err
