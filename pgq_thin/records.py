"""What the admin API returns: one frozen dataclass per kind of row of a ``pgq`` view or function.

Each field is a column of the SQL object named in the class docstring, with the same name, so
a number shown by the CLI, an exporter or a web page is that column and nothing computed in
Python. A column the SQL gains later is ignored until a field is added here (old clients keep
working against a newer schema).

:func:`to_json` turns any record into JSON data (timestamps as ISO 8601 text, intervals as
seconds, UUIDs as text) for ``--json`` output and web pages.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

__all__ = [
    "EntrypointConfig",
    "EntrypointStats",
    "FailedJob",
    "HistorySummary",
    "Schedule",
    "from_row",
    "to_json",
]

R = TypeVar("R")


def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
    """An instance of the record class ``cls`` from a row, by column name."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    missing = [n for n in names if n not in row]
    if missing:
        raise ValueError(f"{cls.__name__} row misses column(s) {', '.join(missing)}")
    return cls(**{n: row[n] for n in names})


def to_json(record: Any) -> Any:
    """A record (or a list of them, or any value of their fields) as JSON data."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: to_json(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, list | tuple):
        return [to_json(v) for v in record]
    if isinstance(record, dict):
        return {str(k): to_json(v) for k, v in record.items()}
    if isinstance(record, datetime | date):
        return record.isoformat()
    if isinstance(record, timedelta):
        return record.total_seconds()
    if isinstance(record, uuid.UUID | Decimal):
        return str(record)
    return record


@dataclass(frozen=True)
class EntrypointStats:
    """One row of view ``pgq.queue_stats``: live jobs of an entrypoint and its policy."""

    entrypoint: str
    queued: int
    due: int
    running: int
    stale: int
    oldest_queued_age: timedelta | None
    concurrency_limit: int | None
    max_attempts: int
    heartbeat_timeout: timedelta


@dataclass(frozen=True)
class FailedJob:
    """One row of view ``pgq.failed_jobs``: a dead job (attempts used up), newest first.

    ``details`` is what the last attempt reported; ``errors`` one entry per failed attempt.
    """

    id: int
    entrypoint: str
    attempt: int
    payload: Any
    headers: dict[str, Any] | None
    priority: int
    dedupe_key: str | None
    enqueued_at: datetime
    started_at: datetime | None
    finished_at: datetime
    worker_id: uuid.UUID | None
    details: Any
    errors: list[Any]

    @property
    def error(self) -> str:
        """The last attempt's error type (``details.error``), or an empty string."""
        return str(self.details.get("error", "")) if isinstance(self.details, dict) else ""

    @property
    def message(self) -> str:
        """The last attempt's error message (``details.message``), or an empty string."""
        return str(self.details.get("message", "")) if isinstance(self.details, dict) else ""


@dataclass(frozen=True)
class HistorySummary:
    """One row of ``pgq.history_summary()``: finished jobs of one entrypoint and final status."""

    entrypoint: str
    status: str
    jobs: int
    max_attempt: int
    avg_latency_s: float  # mean seconds from enqueue to finish


@dataclass(frozen=True)
class EntrypointConfig:
    """One row of table ``pgq.entrypoints`` (what ``pgq.configure`` returns): the policy."""

    entrypoint: str
    concurrency_limit: int | None
    max_attempts: int
    backoff_base: timedelta
    backoff_max: timedelta
    heartbeat_timeout: timedelta
    updated_at: datetime


@dataclass(frozen=True)
class Schedule:
    """One row of table ``pgq.schedules``: a cron schedule, its next and last run and state."""

    name: str
    entrypoint: str
    cron: str
    timezone: str
    payload: Any
    headers: dict[str, Any] | None
    priority: int
    catch_up: str
    misfire_grace: timedelta
    fire_timeout: timedelta
    next_run_at: datetime
    last_run_at: datetime | None
    last_job_id: int | None
    state: str
    worker_id: uuid.UUID | None
    lease: int | None
    heartbeat_at: datetime | None
    created_at: datetime
    updated_at: datetime
