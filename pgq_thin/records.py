"""What the admin API returns: one frozen dataclass per kind of row of a ``pgq`` view or function.

Each field is a column of the SQL object named in the class docstring, with the same name, so
a number shown by the CLI, an exporter or a web page is that column and nothing computed in
Python. The row records are generated from ``sql/api.json`` into :mod:`pgq_thin._api` (the
Python type from the column's SQL type; ``| None`` unless ``RECORDS`` of scripts/gen_api.py
lists the column as never NULL) and re-exported here. A column an older client does not know
is ignored (old clients keep working against a newer schema).

:func:`to_json` turns any record into JSON data (timestamps as ISO 8601 text, intervals as
seconds, UUIDs as text) for ``--json`` output and web pages.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from pgq_thin import _api
from pgq_thin._api import (
    EntrypointMetrics,
    EntrypointStats,
    HistorySummary,
    JobInfo,
    JobListing,
    JobResult,
    MetricsPoint,
    Rollup,
    Schedule,
    WorkerRegistration,
    WorkerStatus,
)

__all__ = [
    "EntrypointConfig",
    "EntrypointMetrics",
    "EntrypointStats",
    "FailedJob",
    "HistorySummary",
    "JobInfo",
    "JobListing",
    "JobPage",
    "JobResult",
    "MetricsPoint",
    "Privileges",
    "Rollup",
    "Schedule",
    "WorkerRegistration",
    "WorkerStatus",
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
    if isinstance(record, uuid.UUID | Decimal | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(record)
    return record


# The row records are generated from the manifest (``pgq_thin._api``, scripts/gen_api.py
# RECORDS: types from the catalog, NOT NULL from its table); these two add derived properties.


class FailedJob(_api.FailedJob):
    """One row of view ``pgq.failed_jobs``: a dead job (attempts used up), newest first.

    ``details`` is what the last attempt reported; ``errors`` one entry per failed attempt.
    """

    @property
    def error(self) -> str:
        """The last attempt's error type (``details.error``), or an empty string."""
        return str(self.details.get("error", "")) if isinstance(self.details, dict) else ""

    @property
    def message(self) -> str:
        """The last attempt's error message (``details.message``), or an empty string."""
        return str(self.details.get("message", "")) if isinstance(self.details, dict) else ""


class EntrypointConfig(_api.EntrypointConfig):
    """One row of table ``pgq.entrypoints`` (what ``pgq.configure``, ``pgq.pause`` and
    ``pgq.resume`` return): the policy, and the pause (``paused_at``, set by ``pgq.pause``)."""

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


@dataclass(frozen=True)
class JobPage:
    """One page of a listing: its jobs and ``next_cursor``, the cursor to pass as ``after``
    for the next page (None when this page is empty, or shorter than the page size asked for;
    without a page size, the last page is the empty one)."""

    jobs: list[JobListing]
    next_cursor: str | None

    def __iter__(self) -> Iterator[JobListing]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


@dataclass(frozen=True)
class Privileges:
    """What the connected role may call (the catalog's ``has_function_privilege``): reading
    jobs with their payloads (``pgq.job``), reading dead jobs (``read_failed``: SELECT on view
    ``pgq.failed_jobs``), and each action a dashboard or the CLI offers. A screen hides what
    is False; the database refuses it anyway."""

    read_jobs: bool = False
    read_failed: bool = False
    pause: bool = False
    resume: bool = False
    cancel: bool = False
    requeue: bool = False
    requeue_history: bool = False
    delete_history: bool = False
    delete_jobs: bool = False
    schedule: bool = False
    unschedule: bool = False
    fire_schedule_now: bool = False
    configure: bool = False

    @property
    def actions(self) -> list[str]:
        """The names of the actions allowed (every field but ``read_jobs``, ``read_failed``)."""
        return [
            f.name
            for f in dataclasses.fields(self)
            if not f.name.startswith("read_") and getattr(self, f.name)
        ]
