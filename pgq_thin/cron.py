"""Cron times: the one place pgq_thin computes when a schedule fires next.

A small interface over croniter (pinned to one major version in pyproject), so the rest of the
package never imports croniter and a replacement would touch this module only.

Time-zone rules (see docs/schedules.md):

- Expressions are read in the schedule's IANA time zone, on the wall clock.
- A wall-clock time skipped by a spring-forward change fires at the first instant after the gap
  (02:30 on the night clocks jump from 02:00 to 03:00 fires at 03:00).
- A wall-clock time that occurs twice in a fall-back change fires once, at its first
  occurrence, when the hour field names hours (``30 2 * * *``). Expressions whose hour field is
  ``*`` (every minute, every 5 minutes, hourly) follow elapsed time and fire in both passes of
  the repeated hour, so their interval stays the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, croniter

from pgq_thin.errors import InvalidSchedule

__all__ = ["CronSchedule"]


@dataclass(frozen=True)
class CronSchedule:
    """A validated cron expression (5 fields, or 6 with seconds first) in a time zone."""

    expression: str
    timezone: str = "UTC"
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        expression = " ".join(self.expression.split())
        object.__setattr__(self, "expression", expression)
        if len(expression.split()) not in (5, 6) or not croniter.is_valid(
            expression, second_at_beginning=True
        ):
            raise InvalidSchedule(f"invalid cron expression {expression!r}")
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise InvalidSchedule(f"unknown time zone {self.timezone!r}") from exc
        object.__setattr__(self, "_zone", zone)

    @property
    def _hour_field(self) -> str:
        fields = self.expression.split()
        return fields[2] if len(fields) == 6 else fields[1]

    def next_after(self, after: datetime) -> datetime:
        """The first fire time strictly after ``after`` (an aware datetime), in UTC."""
        if after.tzinfo is None:
            raise ValueError("next_after needs an aware datetime")
        local_after = after.astimezone(self._zone)
        try:
            it = croniter(self.expression, local_after, second_at_beginning=True)
        except CroniterBadCronError as exc:  # pragma: no cover - validated in __post_init__
            raise InvalidSchedule(str(exc)) from exc
        candidate: datetime = it.get_next(datetime)
        if self._hour_field != "*":
            # Fall back: the second occurrence of a wall-clock time is not a new tick.
            while self._is_repeat(candidate):
                candidate = it.get_next(datetime)
        return candidate.astimezone(UTC)

    def _is_repeat(self, moment: datetime) -> bool:
        first = moment.replace(tzinfo=None).replace(tzinfo=self._zone, fold=0)
        return first.utcoffset() != moment.utcoffset()
