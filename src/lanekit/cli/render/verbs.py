"""Output of `lanekit retry`, `requeue`, `cancel`, `pause`, `resume` and `purge`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanekit.cli.render import json_out, line
from lanekit.state.schemas import VERBS_SCHEMA

if TYPE_CHECKING:
    from lanekit.jobs.retention import PurgeRow
    from lanekit.jobs.verbs import VerbResult
    from lanekit.reconcile.pause import PauseResult


def moved_json(result: VerbResult) -> dict[str, Any]:
    """The `retry|requeue|cancel --json` document."""
    return {
        "schema": VERBS_SCHEMA,
        "verb": str(result.verb),
        "dry_run": result.dry_run,
        "jobs": [
            {
                "job_id": job.item.job_id,
                "queue": job.queue,
                "lanes": list(job.lanes),
                "from": str(job.item.source),
                "to": str(job.item.destination),
                "state": str(job.item.state),
            }
            for job in result.jobs
        ],
    }


def moved(result: VerbResult, *, as_json: bool) -> None:
    """One line per job moved (or that would be), then a count."""
    if as_json:
        json_out(moved_json(result))
        return
    verb = {"retry": "retried", "requeue": "requeued", "cancel": "cancelled"}[str(result.verb)]
    if not result.jobs:
        line(f"no jobs to {result.verb}")
        return
    for job in result.jobs:
        source, where = (_folder(job.item.source), _folder(job.item.destination))
        line(f"{job.item.job_id}: {source}/ -> {where}/ (queue {job.queue})")
    count = len(result.jobs)
    head = f"would have {verb}" if result.dry_run else verb
    tail = " (dry run)" if result.dry_run else ""
    line(f"{head} {count} job{'s' if count != 1 else ''}{tail}")


def paused_json(results: Sequence[PauseResult], *, verb: str, dry_run: bool) -> dict[str, Any]:
    """The `pause|resume --json` document."""
    return {
        "schema": VERBS_SCHEMA,
        "verb": verb,
        "dry_run": dry_run,
        "lanes": [
            {
                "lane": r.lane,
                "label": r.label,
                "paused": r.paused,
                "loaded": r.loaded,
                "changed": r.changed,
                "steps": list(r.steps),
            }
            for r in results
        ],
    }


def paused(results: Sequence[PauseResult], *, verb: str, dry_run: bool, as_json: bool) -> None:
    """One line per lane: what was done, or that it already was so."""
    if as_json:
        json_out(paused_json(results, verb=verb, dry_run=dry_run))
        return
    state = "paused" if verb == "pause" else "resumed"
    for r in results:
        if not r.changed:
            line(f"{r.lane}: already {'paused' if r.paused else 'not paused'}")
            continue
        steps = ", ".join(r.steps)
        line(f"{r.lane}: {'would be ' if dry_run else ''}{state} ({steps})")


def purged_json(rows: Sequence[PurgeRow], *, dry_run: bool) -> dict[str, Any]:
    """The `purge --json` document."""
    return {
        "schema": VERBS_SCHEMA,
        "dry_run": dry_run,
        "queues": [
            {
                "queue": row.queue,
                "lanes": list(row.lanes),
                "keep_done_seconds": row.keep_done,
                "keep_failed_seconds": row.keep_failed,
                "done": list(row.purged.done),
                "failed": list(row.purged.failed),
            }
            for row in rows
        ],
    }


def purged(rows: Sequence[PurgeRow], *, dry_run: bool, as_json: bool) -> None:
    """One line per queue: how many finished and failed jobs went (or would go)."""
    if as_json:
        json_out(purged_json(rows, dry_run=dry_run))
        return
    if not rows:
        line("no queues to purge")
        return
    verb = "would purge" if dry_run else "purged"
    for row in rows:
        line(
            f"queue {row.queue}: {verb} {len(row.purged.done)} done, "
            f"{len(row.purged.failed)} failed (older than {_days(row.keep_done)} / "
            f"{_days(row.keep_failed)})"
        )


def _days(seconds: float) -> str:
    """A retention as lanes.toml writes it (`30d`, `12h`, `1m`, `1h30m`), never a fraction."""
    from lanekit.schedule import format_duration

    return format_duration(seconds)


def _folder(where: str) -> str:
    """The last folder of a place a job was or went (`claimed` of `.../claimed/<id>.json`)."""
    return Path(where).parent.name
