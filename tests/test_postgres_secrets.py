"""The database password reaches no file lanekit writes and no output it prints: a real server
whose password (the canary) is in a 0600 pgpass, a lane applied, jobs run (one failing), and
every read command with --json; then every plist, snapshot, lane log and output is searched
for it. A dsn carrying a password is refused at load without repeating it."""

from __future__ import annotations

import os
from pathlib import Path

from lanekit.queue.model import Verdict
from pglane import lanekit, queue_of, setup
from pgserver import PgServer


def test_the_password_reaches_no_plist_snapshot_log_or_output(
    pg_server: PgServer, pg_schema: str, tmp_path: Path
) -> None:
    canary = pg_server.password
    config = setup(pg_server, pg_schema, tmp_path)
    c = ["-c", str(config)]
    queue = queue_of(pg_server, pg_schema, tmp_path)
    queue.enqueue({}, job_id="broke")
    queue.settle(queue.claimer().claim(), Verdict.failed("exit 1", 1))  # type: ignore[arg-type]
    outputs = [
        lanekit("enqueue", "publish", "-", "--id", "ok", *c, stdin="{}"),
        lanekit("run", "publish"),
        lanekit("status", "--json"),
        lanekit("status"),
        lanekit("doctor", "--json", *c),
        lanekit("jobs", "publish", "--json", *c),
        lanekit("job", "publish", "broke", "--json", *c),
        lanekit("job", "publish", "ok", *c),
        lanekit("plan", *c),
        lanekit("apply", "--json", *c),
        lanekit("validate", "--json", *c),
        lanekit("render", *c),
        lanekit("db", "migrate", *c),
    ]
    assert all(done.returncode in {0, 1} for done in outputs), [
        (o.args[3:5], o.returncode, o.stderr) for o in outputs if o.returncode not in {0, 1}
    ]
    assert queue.succeeded("ok")
    for done in outputs:
        assert canary not in done.stdout + done.stderr, done.args
    state = Path(os.environ["LANEKIT_STATE_DIR"])
    written = [path for path in state.rglob("*") if path.is_file()]
    assert any(path.suffix == ".plist" for path in written)
    assert any(path.name.endswith(".log") for path in written)
    assert any(path.suffix == ".json" and "lanes" in path.parts for path in written)
    for path in written:
        assert canary.encode() not in path.read_bytes(), path


def test_a_dsn_with_the_password_is_refused_without_repeating_it(
    pg_server: PgServer, tmp_path: Path
) -> None:
    canary = pg_server.password
    config = tmp_path / "lanes.toml"
    config.write_text(
        "[queues.q]\n"
        'backend = "postgres"\n'
        f'dsn = "postgresql://lk:{canary}@127.0.0.1:{pg_server.port}/lk"\n'
        "[lanes.l]\n"
        'queue = "q"\n'
        'command = ["/bin/cat", "{job}"]\n'
        'every = "5m"\n'
    )
    for args in (("validate",), ("validate", "--json"), ("apply",), ("db", "migrate")):
        done = lanekit(*args, "-c", str(config))
        assert done.returncode != 0
        assert "carries a password" in done.stdout + done.stderr
        assert canary not in done.stdout + done.stderr
    state = Path(os.environ["LANEKIT_STATE_DIR"])
    for path in state.rglob("*"):
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path
