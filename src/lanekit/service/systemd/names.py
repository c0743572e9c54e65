"""A lane's unit names, `<label>.service`, `<label>.timer` and `<label>.path`: all `lanekit
status` needs of the systemd backend besides the adapter (the renderer,
lanekit.service.systemd.units, is not imported to observe)."""

from __future__ import annotations

SERVICE_SUFFIX = ".service"
TIMER_SUFFIX = ".timer"
PATH_SUFFIX = ".path"


def unit_names(label: str) -> tuple[str, str]:
    """(`<label>.service`, `<label>.timer`)."""
    return f"{label}{SERVICE_SUFFIX}", f"{label}{TIMER_SUFFIX}"


def path_name(label: str) -> str:
    """`<label>.path`: the unit that starts a lane on enqueue (start = [..., "enqueue"])."""
    return f"{label}{PATH_SUFFIX}"


def all_unit_names(label: str) -> tuple[str, str, str]:
    """Every unit a lane may have: the service, the timer and the path unit."""
    return (*unit_names(label), path_name(label))
