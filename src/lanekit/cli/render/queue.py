"""Output of `lanekit enqueue`, `run`, `recover`, `jobs` and `job`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lanekit.cli.render import error, json_out, line, note, warning
from lanekit.state.schemas import JOBS_SCHEMA

if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.jobs.batch import Batch
    from lanekit.jobs.migrate import Migrated
    from lanekit.jobs.recovery import RecoverRow
    from lanekit.queue.paging import JobView, Page
    from lanekit.run.runner import RunResult


def enqueued(job_id: str) -> None:
    """The new job's id, alone on stdout (so `id=$(lanekit enqueue ...)` works)."""
    line(job_id)


def batch(result: Batch, *, ids_from_lines: bool = False) -> None:
    """`enqueue --jsonl`: each new id on stdout (input order); each bad line (`error:` naming
    FILE:LINE, `hint:`), then a count naming the lines to fix, on stderr; without
    `ids_from_lines` (--id-field), a warning that re-running the whole file enqueues the good
    lines a second time."""
    for _, job_id in result.enqueued:
        line(job_id)
    for bad in result.bad:
        error(f"{result.source}:{bad.line}: {bad.message}", bad.hint)
    if result.stopped is not None:
        error(result.stopped.message, result.stopped.hint)
    if result.bad or result.stopped is not None:
        done = len(result.enqueued)
        summary = f"{result.source}: enqueued {done} job{'s' * (done != 1)}"
        if result.bad:
            numbers = ", ".join(str(b.line) for b in result.bad)
            summary += (
                f"; line{'s' * (len(result.bad) != 1)} {numbers} not enqueued: fix and enqueue "
                "just those again"
            )
            if not ids_from_lines and result.enqueued:
                summary += (
                    " (re-running the whole file would enqueue the other lines a second time, "
                    "under new ids; with --id-field a re-run refuses the ids already there)"
                )
        if result.stopped is not None:
            summary += "; stopped at the error above, later lines not read"
        note(summary)


def run_summary(lane: str, result: RunResult) -> None:
    """One line on stderr after a foreground run; the details are in the lane log."""
    parts = [
        f"{result.done} done",
        f"{result.failed} failed",
        f"{result.requeued} requeued",
        f"{result.skipped} skipped",
        f"{result.recovered} recovered",
    ]
    note(f"{lane}: {', '.join(parts)} ({result.reason}, exit {result.exit_code})")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        line("  ".join(cells).rstrip())


def recovered(rows: Sequence[RecoverRow], *, dry_run: bool) -> None:
    """The claims given back (or that would be), one per line; a clear line when none."""
    if not rows:
        line("no dead claims" + (" (dry run)" if dry_run else ""))
        return
    verb = "would move" if dry_run else "moved"
    _table(
        ["LANE", "JOB", "REASON", "EXIT", "TO", "OWNER"],
        [
            [
                r.lane,
                r.item.job_id,
                str(r.item.reason),
                "-" if r.item.exit is None else str(r.item.exit),  # recorded: settled by it
                str(r.item.destination),
                r.item.owner,
            ]
            for r in rows
        ],
    )
    line(f"{verb} {len(rows)} claim{'s' if len(rows) != 1 else ''}")


def _short(text: str | None, width: int = 60) -> str:
    if not text:
        return ""
    flat = text.replace("\n", " ").strip()
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def jobs_page(
    lane: str,
    page: Page,
    *,
    as_json: bool,
    state: str | None = None,
    shared_with: Sequence[str] = (),
) -> None:
    """A page of jobs: a table with a footer that says how to get the next page, or JSON. A
    queued job that waits for its time shows as `delayed`, with when it is due; LANE is the
    lane that last claimed the job (`-`: none yet: any lane of the queue may take it)."""
    if as_json:
        json_out({"schema": JOBS_SCHEMA, **page.to_json()})
        return
    meta = page.meta
    if meta.total == 0:
        if page.state is None:
            line(f"no jobs in lane {lane}'s queue")
        else:
            # The filter is why nothing shows, not an empty queue: say what else is there.
            line(f"no {state or page.state} jobs ({page.elsewhere} in other states)")
        return
    waiting = bool(page.not_before)
    _table(
        ["ID", "LANE", "STATE", "ATTEMPTS", "UPDATED", *(["DUE"] if waiting else []), "ERROR"],
        [
            [
                r.job_id,
                r.lane or "-",
                page.state_of(r),
                str(r.attempts),
                r.updated_at,
                *([page.not_before.get(r.job_id, "-")] if waiting else []),
                _short(r.error),
            ]
            for r in page.items
        ],
    )
    for item in page.unreadable:
        warning(f"{item.path}: {item.reason}")
    footer = f"{meta.from_}-{meta.to} of {meta.total} (page {meta.page}/{meta.total_pages})"
    if meta.has_next:
        footer += f"; next: --page {meta.next_page}"
    line(footer)
    if shared_with:
        others = ", ".join(shared_with)
        line(
            f"lane {lane} shares its queue with {others}: these are all the queue's jobs "
            "(LANE: the lane that last ran each; a queued one goes to whichever claims it)"
        )


def job_output(text: str) -> None:
    """A job's output file as kept (lanekit.run.joboutput), line by line, control characters
    escaped: a job's output may hold terminal escapes."""
    for text_line in text.splitlines():
        line(text_line)


def job_detail(view: JobView, *, as_json: bool, output: Path | None = None) -> None:
    """Everything known about one job; `output`: its output file, when it has one."""
    record = view.record
    if as_json:
        data: dict[str, Any] = {
            "schema": JOBS_SCHEMA,
            "job_id": view.job_id,
            "state": str(view.state),
            "path": None if view.path is None else str(view.path),
            "record": None if record is None else record.to_dict(),
            "error": view.error,
            "retry_at": view.retry_at,
            "attempt_history": [item.to_json() for item in view.history],
            "output": None if output is None else str(output),
        }
        json_out(data)
        return
    rows = [
        ("job", view.job_id),
        ("state", str(view.state)),
        ("file", str(view.path) if view.path is not None else "(none: only the record remains)"),
    ]
    if record is None:
        rows.append(("record", "(none yet: the job has not been claimed)"))
    else:
        rows += [
            ("attempts", str(record.attempts)),
            ("queued at", record.queued_at),
            ("updated at", record.updated_at),
            ("lane", record.lane or "-"),
        ]
    if view.retry_at is not None:
        # A retry waits out its backoff; a job enqueued for later (--at, --delay) its time.
        retry = record is not None and record.attempts > 0
        rows.append(("retry due" if retry else "due", view.retry_at))
    if output is not None:
        rows.append(("output", f"{output} (--output prints it)"))
    for key, value in rows:
        line(f"{key + ':':12}{value}")
    if view.history:
        line("history:")
        for item in view.history:
            outcome = item.outcome or "running"
            line(f"  #{item.attempt} {outcome:9} {item.host} pid {item.pid}  {item.started_at}")
    if not view.error and record is not None and record.error and "\n" in record.error:
        # A retry's or a running job's last failure, with the job's stderr tail under it.
        line("last error:")
        for text in record.error.splitlines():
            line(f"  {text}")
    if view.error:
        line("error:")
        for text in view.error.rstrip("\n").splitlines():
            line(f"  {text}")


def migrated(rows: Sequence[Migrated]) -> None:
    """One line per postgres queue: its schema version before and after `lanekit db migrate`."""
    if not rows:
        line('no postgres queues in lanes.toml (backend = "postgres")')
        return
    for row in rows:
        if row.before == row.after:
            line(f"{row.where}: schema version {row.after}, up to date")
        elif row.before is None:
            line(f"{row.where}: schema created (version {row.after})")
        else:
            line(f"{row.where}: schema upgraded from version {row.before} to {row.after}")
