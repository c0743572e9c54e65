"""Plain lanes in lanes.toml: a lane without `queue` runs its command once per fire, through a
private queue under the state dir, and refuses what only a queue lane means."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lanekit.config import load_config, run_spec, validate_config
from lanekit.state.paths import Paths
from lanekit.state.snapshot import RunSpec

PLAIN = """
[defaults]
max_jobs = 7          # for the queue lanes: a plain lane ignores it
max_attempts = 5

[queues.notes]
dir = "~/q"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]

[lanes.backup]
command = ["/usr/bin/true", "--all"]
schedule = "@daily"
"""


def _write(paths: Paths, text: str) -> Path:
    path = paths.cwd / "lanes.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _errors(paths: Paths, text: str) -> list[str]:
    _, errors = validate_config(_write(paths, text), paths)
    return [f"{error.message} | {error.hint}" for error in errors]


def test_a_lane_without_queue_is_plain_with_a_private_queue(paths: Paths) -> None:
    """`backup` has no queue: it is plain, its queue is `plain:backup` under the state dir
    (logs inside it), one job per run and no retry, whatever [defaults] says; the queue lane
    beside it keeps its defaults."""
    config = load_config(_write(paths, PLAIN), paths)
    backup, funnel = config.lanes["backup"], config.lanes["funnel"]
    assert backup.plain and not funnel.plain
    assert backup.queue.name == "plain:backup"
    assert backup.queue.dir == paths.state / "plain" / backup.label
    assert backup.log_path == backup.queue.dir / "logs" / "backup.log"
    assert (backup.max_jobs, backup.max_attempts, backup.retry_on_crash) == (1, 1, False)
    assert (funnel.max_jobs, funnel.max_attempts) == (7, 5)
    assert "plain:backup" not in config.queues


def test_the_snapshot_of_a_plain_lane_says_so_and_a_queue_lane_s_is_unchanged(
    paths: Paths,
) -> None:
    """`plain` and `retry_on_crash` reach a plain lane's snapshot (and read back); a queue
    lane's snapshot has neither key, so installed lanes are not rewritten by the upgrade."""
    text = PLAIN.replace('schedule = "@daily"', 'schedule = "@daily"\nretry_on_crash = true')
    config = load_config(_write(paths, text), paths)
    plain = run_spec(config.lanes["backup"])
    document = plain.to_json()
    assert '"plain": true' in document and '"retry_on_crash": true' in document
    assert RunSpec.from_json(document, Path("x.json")) == plain
    queue_lane = run_spec(config.lanes["funnel"]).to_json()
    assert '"plain"' not in queue_lane and "retry_on_crash" not in queue_lane


def test_what_a_plain_lane_refuses(paths: Paths) -> None:
    """{job} (there is no job file) and the per-job keys written on the lane are errors that
    say what to do; retry_on_crash on a queue lane is one too."""
    text = """
    [queues.notes]
    dir = "~/q"

    [lanes.funnel]
    queue = "notes"
    command = ["/bin/cat", "{job}"]
    retry_on_crash = true

    [lanes.backup]
    command = ["/bin/cat", "{job}"]
    max_jobs = 3
    """
    assert _errors(paths, text) == [
        "lanes.toml: lanes.funnel.retry_on_crash: applies to plain lanes only (a lane without "
        "`queue`) | remove it: a queue lane's jobs always run again after a crash",
        "lanes.toml: lanes.backup.command: uses {job}, but a lane without `queue` has no job "
        'file | add queue = "NAME" to run the command once per job, or remove {job}',
        "lanes.toml: lanes.backup.max_jobs: applies to lanes with a queue only: a plain lane "
        "runs its command once per fire, one run at a time | remove max_jobs, or add "
        'queue = "NAME"',
    ]


def test_a_plain_lane_still_needs_a_command(paths: Paths) -> None:
    """Without `command` the error's example has no {job}."""
    assert _errors(paths, '[lanes.backup]\nschedule = "@daily"\n') == [
        'lanes.toml: lanes.backup: missing required key "command" | add command = ["/path/to/tool"]'
    ]
