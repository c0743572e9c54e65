"""Schedules described in words (lanekit.schedule.describe)."""

from __future__ import annotations

import pytest

from lanekit.schedule import (
    Schedule,
    describe,
    describe_schedule,
    parse_cron,
)

DESCRIBE_TABLE: list[tuple[list[str], str]] = [
    (["40 10,16 * * *"], "every day at 10:40 and 16:40"),
    (["0 9 * * 1"], "every Monday at 09:00"),
    (["0 9 * * 1,5"], "every Monday and Friday at 09:00"),
    (["0 9 * * 1-5"], "every Monday to Friday at 09:00"),
    (["0 10 * * 6,0"], "every Saturday and Sunday at 10:00"),
    (["*/15 * * * *"], "every 15 minutes"),
    (["5,35 * * * *"], "every hour at :05 and :35"),
    (["@hourly"], "every hour at :00"),
    (["* 3 * * *"], "every minute from 03:00 to 03:59"),
    (["* 3-4 * * *"], "every minute from 03:00 to 04:59"),
    (["* * * * *"], "every minute"),
    (["@monthly"], "at 00:00 on day 1 of every month"),
    (["0 0 1,15 * *"], "at 00:00 on days 1 and 15 of every month"),
    (["@yearly"], "at 00:00 on January 1"),
    (["0 0 1 1,7 *"], "at 00:00 on day 1 of January and July"),
    (["0 9 * jan *"], "every day in January at 09:00"),
    (["0 9 * 1 1"], "every Monday in January at 09:00"),
    (["0 9 1 * 1"], "at 09:00 on day 1 of every month and every Monday"),
    (["*/30 * * * 1"], "every 30 minutes on Monday"),
    (["0 9 * * 1", "30 17 * * *"], "every day at 17:30; every Monday at 09:00"),
    (["0 0 1 * *", "0 0 * * 1"], "every Monday at 00:00; at 00:00 on day 1 of every month"),
    ([], "on demand only"),
]


@pytest.mark.parametrize(("crons_", "text"), DESCRIBE_TABLE)
def test_describe(crons_: list[str], text: str) -> None:
    """Plain English, deterministic, irregular sets listed part by part."""
    entries = [e for cron in crons_ for e in parse_cron(cron)]
    assert describe(entries) == text
    assert describe(reversed(entries)) == text


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        (Schedule(interval=900), "every 15 minutes"),
        (Schedule(interval=3600), "every hour"),
        (Schedule(interval=90), "every 90 seconds"),
        (Schedule(interval=5400), "every 90 minutes"),
        (Schedule(interval=172800), "every 2 days"),
        (Schedule(), "on demand only"),
        (Schedule(calendar=parse_cron("@daily")), "every day at 00:00"),
    ],
)
def test_describe_schedule(schedule: Schedule, text: str) -> None:
    """Intervals read in their largest whole unit; an empty schedule is on demand."""
    assert describe_schedule(schedule) == text


def test_day_29_to_31_reads_as_every_month_again() -> None:
    """parse_cron writes day 29-31 as one Month+Day entry per month that has it; the words
    are still the cron line's: "day 31 of every month", not a list of seven dates."""
    from lanekit.schedule import describe, parse_cron

    assert describe(parse_cron("0 0 31 * *")) == "at 00:00 on day 31 of every month"
    assert describe(parse_cron("0 0 15,31 * *")) == "at 00:00 on days 15 and 31 of every month"
    assert describe(parse_cron("0 0 */2 * *")).endswith("29 and 31 of every month")
    assert describe(parse_cron("0 0 31 1,3 *")) == "at 00:00 on day 31 of January and March"
