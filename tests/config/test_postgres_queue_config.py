"""lanes.toml's `[queues.NAME] backend = "postgres"`: its keys, the location every caller gets,
and a dsn with a password refused at load without repeating it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanekit.config import validate_config
from lanekit.queue import directory_of
from lanekit.queue.postgres.location import OnOrphan, parse
from lanekit.state.paths import Paths

CANARY = "canary-Pw-7731"

LANES = """
[queues.shared]
backend = "postgres"
{queue}

[lanes.publish]
queue = "shared"
command = ["/bin/cat", "{{job}}"]
every = "5m"
"""


def load(tmp_path: Path, queue: str) -> tuple[object, list[str]]:
    path = tmp_path / "lanes.toml"
    path.write_text(LANES.format(queue=queue))
    config, errors = validate_config(path, Paths.under(tmp_path))
    return config, [f"{error.message} | {error.hint}" for error in errors]


def test_a_postgres_queue_becomes_a_location_without_a_directory(tmp_path: Path) -> None:
    """dsn, schema, lease and on_orphan become the queue's location; its lanes keep their
    logs (and lane locks) in lanekit's state directory."""
    config, errors = load(
        tmp_path,
        'dsn = "service=lanes"\nschema = "jobs_1"\nlease = "45s"\non_orphan = "fail"',
    )
    assert errors == []
    lane = config.lanes["publish"]  # type: ignore[attr-defined]
    assert directory_of(lane.queue.dir) is None
    location = parse(str(lane.queue.dir))
    assert (location.queue, location.dsn, location.schema) == ("shared", "service=lanes", "jobs_1")
    assert (location.lease, location.on_orphan) == (45, OnOrphan.FAIL)
    state = Paths.under(tmp_path).state
    assert lane.log_path == state / "queues" / "shared" / "logs" / "publish.log"


def test_the_defaults(tmp_path: Path) -> None:
    """schema lanekit, lease 30 s, on_orphan retry."""
    config, errors = load(tmp_path, 'dsn = "host=db.local dbname=jobs user=me"')
    assert errors == []
    location = parse(str(config.queues["shared"].dir))  # type: ignore[attr-defined]
    assert (location.schema, location.lease, location.on_orphan) == ("lanekit", 30, "retry")


@pytest.mark.parametrize(
    "dsn",
    [
        f"host=db user=me password={CANARY} dbname=jobs",
        f"host=db user=me password = '{CANARY}' dbname=jobs",
        f"postgresql://me:{CANARY}@db/jobs",
        f"postgresql://me@db/jobs?password={CANARY}",
    ],
)
def test_a_password_in_the_dsn_is_refused_without_repeating_it(tmp_path: Path, dsn: str) -> None:
    """Every way libpq reads a password in a conninfo is refused, naming the key and the fix
    (~/.pgpass, pg_service.conf), and the message never carries the password."""
    _, errors = load(tmp_path, f'dsn = "{dsn}"')
    assert len(errors) == 1
    assert "carries a password" in errors[0]
    assert ".pgpass" in errors[0] and "pg_service.conf" in errors[0]
    assert CANARY not in errors[0]


def test_keys_of_the_other_backend_are_refused(tmp_path: Path) -> None:
    """dir belongs to a directory queue, dsn to a postgres one; a postgres queue needs a dsn."""
    _, errors = load(tmp_path, 'dir = "/tmp/q"')
    assert any("dir is not a key of a postgres queue" in error for error in errors)
    assert any('missing required key "dsn"' in error for error in errors)


def test_a_schema_name_must_be_a_plain_identifier(tmp_path: Path) -> None:
    """The schema is written into SQL as an identifier: only [a-z0-9_], a letter first."""
    _, errors = load(tmp_path, 'dsn = "service=x"\nschema = "x; DROP TABLE y"')
    assert len(errors) == 1 and "cannot name a schema" in errors[0]


def test_a_lease_shorter_than_five_seconds_is_refused(tmp_path: Path) -> None:
    """One slow statement would lose a shorter lease."""
    _, errors = load(tmp_path, 'dsn = "service=x"\nlease = 2')
    assert len(errors) == 1 and "at least 5" in errors[0]
