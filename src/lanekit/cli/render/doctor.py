"""Output of `lanekit doctor`, `lanekit try` and `lanekit logs`."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

from lanekit.cli.render import json_out, line, show, styled, warning
from lanekit.doctor import Check, DoctorReport, Finding, Severity, SubjectKind
from lanekit.proof.tryrun import TryResult
from lanekit.state.schemas import CHECKS_SCHEMA
from lanekit.system.quoting import cmdline

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _findings(findings: Sequence[Finding]) -> None:
    """Findings grouped by subject (already ordered most severe first within each)."""
    id_width = max((len(f.id) for f in findings), default=0)
    subject: tuple[str, str] | None = None
    for finding in findings:
        if (finding.kind, finding.subject) != subject:
            if subject is not None:
                line()
            subject = (finding.kind, finding.subject)
            show(styled((_heading(finding), "bold")))
        show(
            styled(
                "  ",
                (f"{finding.severity.value:<7}", _STYLE[finding.severity]),
                f"  {finding.id:<{id_width}}  {finding.message}",
            )
        )
        show(styled(" " * 11, ("fix: ", "bold"), finding.fix))


def _heading(finding: Finding) -> str:
    """`funnel`, a plist path, or `queue notes (drained by funnel, pm)`."""
    if finding.kind is SubjectKind.QUEUE:
        return f"queue {finding.subject} (drained by {', '.join(finding.lanes)})"
    return finding.subject


def report(result: DoctorReport, *, as_json: bool) -> None:
    """The findings as a table grouped by lane/plist, then a summary line; or the JSON document."""
    for note in result.notes:
        warning(note)
    if as_json:
        json_out(result.to_json())
        return
    scope = f"{_plural(len(result.subjects), 'subject')}, {_plural(len(result.checks), 'check')}"
    if not result.findings:
        line(f"no problems found ({scope})")
        return
    _findings(result.findings)
    line()
    counts = [
        _plural(result.count(Severity.ERROR), "error"),
        _plural(result.count(Severity.WARNING), "warning"),
        f"{result.count(Severity.INFO)} info",
    ]
    line(f"{', '.join(counts)} ({scope})")


def checks(registered: Sequence[Check], *, as_json: bool) -> None:
    """`--list-checks`: every id, what it needs, and what it looks for."""
    if as_json:
        json_out(
            {
                "schema": CHECKS_SCHEMA,
                "checks": [
                    {
                        "id": c.id,
                        "group": c.group,
                        "summary": c.summary,
                        "lanekit_only": c.needs_lane,
                        "asks_launchd": c.asks_launchd,
                    }
                    for c in registered
                ],
            }
        )
        return
    width = max((len(c.id) for c in registered), default=0)
    for c in registered:
        scope = "lanes " if c.needs_lane else "any   "
        line(f"{c.id:<{width}}  {scope}  {c.summary}")
    line()
    line("lanes = lanekit lanes only (skipped for other plists); any = every plist")


def tried(result: TryResult) -> None:
    """What ran and how, the preflight findings, then the decoded status and stderr tail."""
    line(f"try: {result.subject}")
    line(f"  run:     {cmdline(*result.argv)}")
    line(f"  cwd:     {result.cwd}")
    line(f"  PATH:    {result.env_path}")
    line(f"  stdout:  {result.stdout_path or '/dev/null (no StandardOutPath)'}")
    if result.launchd_job is not None:
        line(f"  as:      one-shot launchd job {result.launchd_job} (booted out afterwards)")
    if result.problems:
        line()
        _findings(result.problems)
    line()
    if not result.ran:
        if result.setup_error is not None:
            show(styled((f"not started: {result.setup_error}", "bold red")))
            line("launchd would record last exit 78 (EX_CONFIG): the program never runs")
        else:
            refused = "not run: launchd would hit the errors above; fix them first"
            show(styled((refused, "bold red")))
        return
    style = "green" if result.exit_status == 0 else "bold red"
    took = f" in {result.duration:.2f} s" if result.duration is not None else ""
    timed_out = " (stopped: --timeout reached)" if result.timed_out else ""
    show(styled((f"result: {result.status}{took}{timed_out}", style)))
    where = result.stderr_path or "no StandardErrorPath: launchd would discard it"
    if result.stderr_tail:
        line(f"stderr ({where}), last {_plural(len(result.stderr_tail), 'line')}:")
        for text in result.stderr_tail:
            line(f"  {text}")
    else:
        line(f"stderr ({where}): nothing")


def log_lines(lines: Iterable[str]) -> None:
    """Each line as it comes, controls escaped (job output may carry any bytes), flushed so that
    `logs -f | grep` sees it at once."""
    for text in lines:
        line(text)
        sys.stdout.flush()
