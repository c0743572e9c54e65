"""A lane's unit names, `<label>.service` and `<label>.timer`: all `lanekit status` needs of
the systemd backend besides the adapter (the renderer, lanekit.service.systemd.units, is not
imported to observe)."""

from __future__ import annotations

SERVICE_SUFFIX = ".service"
TIMER_SUFFIX = ".timer"


def unit_names(label: str) -> tuple[str, str]:
    """(`<label>.service`, `<label>.timer`)."""
    return f"{label}{SERVICE_SUFFIX}", f"{label}{TIMER_SUFFIX}"
