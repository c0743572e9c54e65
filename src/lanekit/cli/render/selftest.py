"""How `lanekit selftest` looks: one row per step, then where the JSON report is."""

from __future__ import annotations

from lanekit.cli.render import json_out, line
from lanekit.proof.selftest import SelftestReport


def report(result: SelftestReport, *, as_json: bool) -> None:
    """The step table and the verdict, or the JSON report itself."""
    if as_json:
        json_out(result.to_json())
        return
    line(f"selftest of {result.label} in {result.domain} ({result.backend})")
    width = max(len(step.name) for step in result.steps)
    for step in result.steps:
        mark = "ok  " if step.ok else "FAIL"
        line(f"{mark} {step.name:<{width}}  {step.seconds:6.1f}s  {step.detail}")
    verdict = "all steps passed" if result.ok else "some steps FAILED"
    line(f"{verdict}; report: {result.report_path}")
