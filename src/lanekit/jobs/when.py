"""Jobs for later: when `enqueue --at TIME` / `--delay DURATION` (or a --jsonl line's
`--at-field` / `--delay-field`) says a job may first run, as epoch seconds on the command's
clock (the emulated domain's time there, the real time on a Mac: lanekit.state.clock).

TIME is the local wall time of the Mac the lanes run on: `HH:MM` (the next such minute: today,
or tomorrow once it has passed), `YYYY-MM-DD HH:MM[:SS]` or ISO 8601 (`2026-12-06T09:00`, with
`Z` or `+01:00` for another zone), or `YYYY-MM-DD` (its midnight). A full date already past is
refused: a job for later that would run at once is a typo, not a plan. DURATION is a lanes.toml
duration (`90s`, `15m`, `2h`, `1d`: lanekit.schedule.parse_duration).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from lanekit.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.state.clock import Clock

AT_HINT = "give a local time: HH:MM, YYYY-MM-DD HH:MM, or ISO 8601 (2026-12-06T09:00+01:00)"
DELAY_HINT = "give a duration: 90s, 15m, 2h, 1d"


def parse_at(text: str, clock: Clock, *, what: str = "--at") -> float:
    """TIME (see the module's docstring) as epoch seconds; UsageError naming `what` when it
    is not one, or a full date that is already past."""
    now = clock.now()
    stripped = text.strip()
    if len(stripped) in {4, 5} and ":" in stripped:  # HH:MM: the next such minute
        hour, _, minute = stripped.partition(":")
        if not (hour.isdigit() and minute.isdigit() and len(minute) == 2):
            raise UsageError(f"{what} {text!r}: not a time", AT_HINT)
        try:
            when = now.replace(hour=int(hour), minute=int(minute), second=0, microsecond=0)
        except ValueError:
            raise UsageError(f"{what} {text!r}: not a time of day", AT_HINT) from None
        if when <= now:
            when += timedelta(days=1)
        return clock.time() + (when - now).total_seconds()
    try:
        when = datetime.fromisoformat(stripped)
    except ValueError:
        raise UsageError(f"{what} {text!r}: not a time", AT_HINT) from None
    if when.tzinfo is not None:
        seconds = when.timestamp() - datetime.now().astimezone().timestamp()
        epoch = clock.time() + seconds
        past = seconds <= 0
    else:
        epoch = clock.time() + (when - now).total_seconds()
        past = when <= now
    if past:
        raise UsageError(
            f"{what} {text!r} is already past (now: {now:%Y-%m-%d %H:%M})",
            "give a later time, or leave it out to run the job at the next run",
        )
    return epoch


def parse_delay(text: str, clock: Clock, *, what: str = "--delay") -> float:
    """Now plus DURATION, as epoch seconds; UsageError naming `what` when it is not one."""
    from lanekit.schedule import ScheduleError, parse_duration

    try:
        seconds = parse_duration(text)
    except ScheduleError as exc:
        raise UsageError(f"{what} {text!r}: {exc.message}", DELAY_HINT) from None
    return clock.time() + seconds


def not_before(at: str | None, delay: str | None, clock: Clock) -> float | None:
    """When a job given `--at` or `--delay` may first run (None: at the next run); both
    given is a UsageError."""
    if at is not None and delay is not None:
        raise UsageError("give either --at or --delay, not both", "--at 09:00   or   --delay 2h")
    if at is not None:
        return parse_at(at, clock)
    if delay is not None:
        return parse_delay(delay, clock)
    return None
