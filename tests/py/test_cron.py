"""Cron times in named time zones, across DST changes, as docs/schedules.md promises."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from pgq_thin.cron import CronSchedule
from pgq_thin.errors import InvalidSchedule

BERLIN = ZoneInfo("Europe/Berlin")


def fires(expression: str, start: datetime, n: int, zone: str = "Europe/Berlin") -> list[str]:
    schedule = CronSchedule(expression, zone)
    out, t = [], start
    for _ in range(n):
        t = schedule.next_after(t)
        assert t.tzinfo is UTC
        out.append(t.astimezone(ZoneInfo(zone)).isoformat())
    return out


def test_spring_forward_skipped_time_fires_after_the_gap() -> None:
    # 2026-03-29: Berlin clocks jump from 02:00 (+01:00) to 03:00 (+02:00).
    assert fires("30 2 * * *", datetime(2026, 3, 27, 12, tzinfo=BERLIN), 3) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_fall_back_repeated_time_fires_once() -> None:
    # 2026-10-25: Berlin clocks go back from 03:00 (+02:00) to 02:00 (+01:00).
    assert fires("30 2 * * *", datetime(2026, 10, 23, 12, tzinfo=BERLIN), 3) == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]


def test_fall_back_once_even_when_computed_from_inside_the_repeated_hour() -> None:
    after = datetime(2026, 10, 25, 2, 45, tzinfo=BERLIN)  # first pass, after the 02:30 fire
    nxt = CronSchedule("30 2 * * *", "Europe/Berlin").next_after(after)
    assert nxt.astimezone(BERLIN).isoformat() == "2026-10-26T02:30:00+01:00"


def test_hourly_keeps_its_interval_through_the_repeated_hour() -> None:
    assert fires("0 * * * *", datetime(2026, 10, 25, 0, 30, tzinfo=BERLIN), 4) == [
        "2026-10-25T01:00:00+02:00",
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:00:00+01:00",
        "2026-10-25T03:00:00+01:00",
    ]


def test_six_fields_are_seconds_first() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert fires("*/2 * * * * *", start, 3, "UTC") == [
        "2026-01-01T00:00:02+00:00",
        "2026-01-01T00:00:04+00:00",
        "2026-01-01T00:00:06+00:00",
    ]


def test_next_after_is_strictly_after() -> None:
    tick = datetime(2026, 1, 1, 10, 5, tzinfo=UTC)
    assert CronSchedule("*/5 * * * *").next_after(tick) == datetime(2026, 1, 1, 10, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "zone", "message"),
    [
        ("61 * * * *", "UTC", "invalid cron expression '61 * * * *'"),
        ("every minute", "UTC", "invalid cron expression 'every minute'"),
        ("* * * *", "UTC", "invalid cron expression '* * * *'"),
        ("* * * * *", "Mars/Olympus", "unknown time zone 'Mars/Olympus'"),
    ],
)
def test_bad_expressions_and_zones_are_refused(expression: str, zone: str, message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message.replace("*", r"\*")):
        CronSchedule(expression, zone)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        CronSchedule("* * * * *").next_after(datetime(2026, 1, 1))
