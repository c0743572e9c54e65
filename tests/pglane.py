"""A lane on a postgres queue for CLI and run tests: lanes.toml, `db migrate` and `apply` (the
emulated launchd domain), and `lanekit` run as a real process. The job records what it got
(the payload, its path, the spool's mode, its pid) in OUT and sleeps for its payload's `sleep`;
with `child` in the payload it first starts a child in its process group, whose pid it records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lanekit.queue.postgres.backend import PostgresQueue
from lanekit.queue.postgres.location import PgLocation
from pgserver import PgServer

JOB = """
import json, os, subprocess, sys, time
path = sys.argv[1]
assert path == os.environ["LANEKIT_JOB_FILE"], (path, os.environ["LANEKIT_JOB_FILE"])
job = json.loads(open(path).read())
mode = oct(os.stat(os.path.dirname(path)).st_mode & 0o777)
child = None
if job.get("child"):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]).pid
line = {"job": job, "path": path, "dir_mode": mode, "pid": os.getpid(), "child": child}
with open(os.environ["OUT"], "a") as out:
    out.write(json.dumps(line) + "\\n")
time.sleep(job.get("sleep", 0))
"""

CONFIG = """
[defaults]
path = ["/usr/bin", "/bin"]

[queues.shared]
backend = "postgres"
dsn = "{dsn}"
schema = "{schema}"
lease = "{lease}s"

[lanes.publish]
queue = "shared"
command = ["{python}", "{script}", "{{job}}"]
every = "5m"
env = {{ OUT = "{out}" }}
"""


def setup(server: PgServer, schema: str, tmp_path: Path, lease: int = 30) -> Path:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    config = tmp_path / "lanes.toml"
    config.write_text(
        CONFIG.format(
            dsn=server.dsn,
            schema=schema,
            lease=lease,
            python=sys.executable,
            script=script,
            out=tmp_path / "out.jsonl",
        )
    )
    assert lanekit("db", "migrate", "-c", str(config)).returncode == 0
    applied = lanekit("apply", "-c", str(config))
    assert applied.returncode == 0, applied.stderr
    return config


def lanekit(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lanekit", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def queue_of(server: PgServer, schema: str, tmp_path: Path) -> PostgresQueue:
    queue = PostgresQueue(PgLocation("shared", server.dsn, schema=schema), spool=tmp_path / "x")
    queue.ensure()
    return queue
