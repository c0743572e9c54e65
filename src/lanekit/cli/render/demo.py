"""How `lanekit demo` looks: a progress bar while lanes drain (terminal only), then tables."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from lanekit.cli.render import escaped, line, stderr, stdout, styled
from lanekit.cli.render.timeline import chart_lines, notable_lines
from lanekit.proof.demo import DemoReport
from lanekit.proof.demo import Progress as DrainProgress
from lanekit.system.quoting import cmdline, shell_quote


@contextlib.contextmanager
def progress() -> Iterator[Callable[[DrainProgress], None]]:
    """A live bar on a terminal; silent otherwise (logs and pipes get the final table only)."""
    console = stderr()
    if not console.is_terminal:
        yield lambda _: None
        return
    with Progress(
        TextColumn("draining"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[running]}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("drain", total=None, running="")

        def show(p: DrainProgress) -> None:
            running = f"running: {', '.join(p.running)}" if p.running else ""
            bar.update(task, completed=p.done, total=p.total, running=running)

        yield show


def report(r: DemoReport) -> None:
    """The incident's numbers, the reload story and the doctor finding."""
    d = r.drain
    out = stdout()
    if r.backend == "systemd":
        line(f"lanekit demo (systemd user manager: its own timers fire the burst) in {r.root}")
    else:
        line(f"lanekit demo ({r.backend} launchd) in {r.root}")
    if r.backend == "emulated" and sys.platform.startswith("linux") and r.manager_reason:
        line(f"  the emulated domain: {r.manager_reason}")
    line(
        f"{d.jobs} jobs queued; {len(d.fired)} lanes fired at the same moment: {', '.join(d.fired)}"
    )
    line()
    table = Table(title="after the burst", title_justify="left", show_edge=False)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("jobs processed", str(d.processed))
    table.add_row("processed more than once", str(d.duplicates))
    table.add_row("lost", str(d.lost))
    table.add_row("seconds to drain", f"{d.seconds:.1f}")
    out.print(table)
    lanes = Table(title="jobs per lane", title_justify="left", show_edge=False)
    lanes.add_column("lane")
    lanes.add_column("jobs", justify="right")
    for lane, count in d.per_lane.items():
        lanes.add_row(styled(lane), str(count))
    out.print(lanes)
    line()
    rl = r.reload
    line(f"plist change while {rl.lane} was mid-run (pid {rl.pid}):")
    line(f"  apply: {rl.lane} {rl.skipped.result} - {rl.skipped.detail}")
    line(
        f"  apply --wait: {rl.lane} {rl.applied.result} after {rl.waited_seconds:.1f} s"
        f" - {rl.applied.detail}"
    )
    line()
    if r.findings:
        line("lanekit doctor on the sixth lane:")
        for f in r.findings:
            line(f"  {f.severity} {f.id} [{f.subject}]: {f.message}")
            line(f"    fix: {f.fix}")
    else:
        line("lanekit doctor found no PATH problem in the sixth lane (unexpected)")
    line()
    if r.timeline is not None:
        for text in chart_lines(r.timeline, min(out.width, 120)):
            out.print(escaped(text), crop=True, soft_wrap=False, no_wrap=True, overflow="crop")
        for words in notable_lines(r.timeline):
            line(words)
        line()
    if r.timeline_page is not None:
        line(f"the day's timeline, as a page: {r.timeline_page}")
    if r.kept:
        env = " ".join(f"{k}={shell_quote(v)}" for k, v in r.env_hint.items())
        line(
            f"kept {r.root}; inspect with: {env} {cmdline('lanekit', 'status')}"
            f" (or {cmdline('lanekit', 'timeline')})"
        )
    else:
        line("cleaned up: lanes booted out and the demo directory removed")
