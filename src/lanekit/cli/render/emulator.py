"""Output of `lanekit emulator tick`."""

from __future__ import annotations

from lanekit.cli.render import line, warning
from lanekit.service.emulated.clock import TickReport


def ticked(report: TickReport) -> None:
    """One line per fire (time and lanes' labels), then where the emulated clock stands."""
    for fire in report.fires:
        line(f"{fire.at:%Y-%m-%d %H:%M:%S}  {', '.join(fire.labels)}")
    how = "woke after sleeping" if report.asleep else "fired"
    runs = report.runs
    line(
        f"emulated clock at {report.until:%Y-%m-%d %H:%M:%S}: {how}"
        f" {runs} start{'' if runs == 1 else 's'} since {report.start:%Y-%m-%d %H:%M:%S}"
    )
    if report.still_running:
        warning(
            f"still running after --wait: {', '.join(report.still_running)}"
            " (later fires missed them while they ran, as launchd does)"
        )
