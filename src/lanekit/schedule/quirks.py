"""Where launchd's calendar may fire differently from cron: Feb 29, Month with Weekday, and
Day 29-31 without a Month, as launchd 10.9's own calendar code does (ported in the tests).

launchd 10.9 (apple-oss-distributions/launchd, tag launchd-842.1.4, `src/core.c`: `cronemu`,
`cronemu_mon`, `cronemu_mday`, `cronemu_wday`, `calendarinterval_setalarm`) finds the next fire
by stepping `struct tm` fields and handing them to mktime(3), which normalises a day the month
does not have: `{Day=31}` fires on May 1 for "April 31", `{Month=2, Day=29}` on March 1 in a
non-leap year. An entry with Weekday is scheduled by `cronemu_wday`, which has no month, so
Month is ignored there (`0 9 * 6 1` runs every Monday, not only in June). Whether today's
launchd still does this is unknown (it is closed source since 10.10).

parse_cron already avoids the Day 29-31 case (explicit Month+Day entries for the months that
have the day, so launchd has no day to normalise but Feb 29 in other years); what it cannot
avoid without changing the schedule is warned about here: Feb 29 (unless the schedule runs on
March 1 at that time anyway), Month with Weekday, and tables with Day 29-31 and no Month.
"""

from __future__ import annotations

from collections.abc import Iterable

from lanekit.schedule.model import MAX_ENTRIES, MONTH_NAMES, CalendarEntry

MONTHS_WITH = {
    29: tuple(range(1, 13)),
    30: tuple(m for m in range(1, 13) if m != 2),
    31: (1, 3, 5, 7, 8, 10, 12),
}
"""The months that have day 29, 30 and 31 (February 29 in leap years: cron runs then, and
calendar_warnings says what launchd may do in the other years)."""


def _covers(wide: int | None, narrow: int | None) -> bool:
    """Whether an entry's value `wide` matches every value `narrow` stands for."""
    return wide is None or wide == narrow


def _march_first_fires(leap: CalendarEntry, entries: list[CalendarEntry]) -> bool:
    """Whether the schedule also fires on March 1 at every time `leap` (a Feb 29 entry) does:
    then launchd turning Feb 29 into March 1 starts nothing that would not run anyway."""
    return any(
        e.day == 1
        and e.month in (None, 3)
        and _covers(e.hour, leap.hour)
        and _covers(e.minute, leap.minute)
        for e in entries
    )


def calendar_warnings(text: str, entries: Iterable[CalendarEntry]) -> list[str]:
    """What launchd may do with these entries that cron would not, each message starting with
    the expression `text` it is about, saying what launchd may do and the fix."""
    entries = list(entries)
    found: list[str] = []
    if any(e.month == 2 and e.day == 29 and not _march_first_fires(e, entries) for e in entries):
        found.append(
            f'"{text}": launchd may also run it on March 1 in years without a February 29 '
            "(launchd 10.9 turns {Month=2, Day=29} into March 1; whether today's launchd still "
            "does is unknown). To be sure, have the job exit at once when the day of the month "
            'is not the one scheduled (a guard at the start of its command, e.g. `[ "$(date +%d)" '
            "= 29 ] || exit 0`)."
        )
    with_weekday = sorted(
        {e.month for e in entries if e.month is not None and e.weekday is not None}
    )
    if with_weekday:
        months = ", ".join(MONTH_NAMES[m - 1] for m in with_weekday)
        numbers = "|".join(str(m) for m in with_weekday)
        found.append(
            f'"{text}": launchd may run it on those weekdays in every month, not only in '
            f"{months} (launchd 10.9 ignores Month in an entry with Weekday; whether today's "
            "launchd still does is unknown). To be sure, schedule it without the month and have "
            "the job exit at once in the other months (a guard at the start of its command, "
            f'e.g. `case "$(date +%-m)" in {numbers}) ;; *) exit 0 ;; esac`).'
        )
    short = sorted({e.day for e in entries if e.month is None and e.day is not None and e.day > 28})
    if short:
        days = ", ".join(str(d) for d in short)
        found.append(
            f'"{text}": in months without day {days} launchd may run it on the first days of '
            "the next month instead (launchd 10.9 normalises April 31 to May 1). To be sure, "
            "write one entry per month that has the day ({Month=1, Day=31}, {Month=3, Day=31}, "
            f"...; lanekit does this for cron text when it stays within {MAX_ENTRIES} entries), "
            "or have "
            "the job exit at once when the day of the month is not the one scheduled (a guard "
            f'at the start of its command, e.g. `[ "$(date +%d)" = {short[-1]} ] || exit 0`).'
        )
    return found
