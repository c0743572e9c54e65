"""The `lanekit timeline --json` document (docs/json.md pins its keys)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lanekit.state.schemas import TIMELINE_SCHEMA
from lanekit.timeline.build import JobLife, TimelineResult
from lanekit.timeline.events import Event
from lanekit.timeline.model import AwayRun, Burst, LaneRow, Marker, Run


def utc(at: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a Z, the format of the lane log and job records."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _event(event: Event) -> dict[str, Any]:
    return {
        "ts": utc(event.at),
        "lane": event.lane,
        "event": event.name,
        "kind": str(event.kind),
        "job": event.job,
        "fields": [{"key": k, "value": v} for k, v in event.fields.items()],
    }


def _run(run: Run) -> dict[str, Any]:
    return {
        "start": utc(run.start),
        "end": utc(run.end),
        "outcome": str(run.outcome),
        "pid": run.pid,
        "exit": run.exit,
        "reason": run.reason,
        "claimed": run.claimed,
        "done": run.done,
        "failed": run.failed,
        "requeued": run.requeued,
        "recovered": run.recovered,
        "skipped": run.skipped,
        "max_attempt": run.attempts_max,
        "jobs": list(run.jobs),
        "errors": list(run.errors),
        "fire": None if run.fire is None else utc(run.fire),
        "throttled": run.throttled,
        "started_before": run.started_before,
    }


def _marker(marker: Marker) -> dict[str, Any]:
    return {"at": utc(marker.at), "kind": str(marker.kind), "detail": marker.detail}


def _away(run: AwayRun) -> dict[str, Any]:
    return {
        "host": run.host,
        "lane": run.lane,
        "job": run.job,
        "attempt": run.attempt,
        "pid": run.pid,
        "start": utc(run.start),
        "end": utc(run.end),
        "outcome": str(run.outcome),
    }


def _row(row: LaneRow) -> dict[str, Any]:
    return {
        "lane": row.lane,
        "queue": row.queue,
        "fires": [utc(f) for f in row.fires],
        "runs": [_run(r) for r in row.runs],
        "markers": [_marker(m) for m in row.markers],
        "away": [_away(r) for r in row.away],
    }


def _burst(burst: Burst) -> dict[str, Any]:
    return {
        "queue": burst.queue,
        "start": utc(burst.start),
        "end": utc(burst.end),
        "lanes": [{"lane": lane, "claims": n} for lane, n in burst.claims.items()],
    }


def _job(job: JobLife) -> dict[str, Any]:
    view = job.view
    record = None if view is None else view.record
    return {
        "job_id": job.job_id,
        "state": None if view is None else str(view.state),
        "queued_at": None if record is None else record.queued_at,
        "attempts": None if record is None else record.attempts,
        "output": None if job.output is None else str(job.output),
        "events": [_event(e) for e in job.events],
        "attempt_history": [] if view is None else [a.to_json() for a in view.history],
    }


def to_json(result: TimelineResult) -> dict[str, Any]:
    """The versioned document: the window, each lane's row, bursts, and every event read."""
    t = result.timeline
    document: dict[str, Any] = {
        "schema": TIMELINE_SCHEMA,
        "day": None if result.day is None else result.day.isoformat(),
        "start": utc(t.window.start),
        "end": utc(t.window.end),
        "lanes": [_row(r) for r in t.rows],
        "bursts": [_burst(b) for b in t.bursts],
        "events": [_event(e) for e in t.events],
        "notes": list(result.notes),
    }
    if result.job is not None:
        document["job"] = _job(result.job)
    return document
