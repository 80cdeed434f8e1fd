"""What the admin API returns: one frozen dataclass per kind of row of a ``pgq`` view or function.

Each field is a column of the SQL object named in the class docstring, with the same name, so
a number shown by the CLI, an exporter or a web page is that column and nothing computed in
Python. The row records are generated from ``sql/api.json`` into :mod:`pgq_thin._api` (the
Python type from the column's SQL type; ``| None`` unless ``RECORDS`` of scripts/gen_api.py
lists the column as never NULL; derived properties from :mod:`pgq_thin._record_mixins`) and
re-exported here. A column an older client does not know
is ignored (old clients keep working against a newer schema).

:func:`to_json` turns any record into JSON data (timestamps as ISO 8601 text, intervals as
seconds, UUIDs as text) for ``--json`` output and web pages.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pgq_thin._api import (
    EntrypointConfig,
    EntrypointMetrics,
    EntrypointStats,
    FailedJob,
    HistorySummary,
    JobInfo,
    JobListing,
    JobResult,
    MetricsPoint,
    Privileges,
    Rollup,
    Schedule,
    WorkerRegistration,
    WorkerStatus,
)
from pgq_thin._statements import from_row

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
