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
import ipaddress
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

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


@dataclass(frozen=True)
class EntrypointStats:
    """One row of view ``pgq.queue_stats``: live jobs of an entrypoint, its policy, whether
    it is paused."""

    entrypoint: str
    queued: int
    due: int
    running: int
    stale: int
    oldest_queued_age: timedelta | None
    concurrency_limit: int | None
    max_attempts: int
    heartbeat_timeout: timedelta
    paused: bool


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
    """One row of table ``pgq.entrypoints`` (what ``pgq.configure``, ``pgq.pause`` and
    ``pgq.resume`` return): the policy, and the pause."""

    entrypoint: str
    concurrency_limit: int | None
    max_attempts: int
    backoff_base: timedelta
    backoff_max: timedelta
    heartbeat_timeout: timedelta
    updated_at: datetime
    paused_at: datetime | None  # set by pgq.pause, cleared by pgq.resume
    paused_by: str | None

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


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
    retry_at: datetime | None  # set by pgq.release_schedule: not claimed again before
    last_error: str | None  # why the last scheduler could not fire it (cleared by a fire)


@dataclass(frozen=True)
class EntrypointMetrics:
    """One row of ``pgq.metrics()``: live jobs, lag, finished jobs per window, throughput, wait
    and run time percentiles, and monotonic totals of one entrypoint (docs/sql-api.md)."""

    entrypoint: str
    paused: bool
    queued: int
    due: int
    delayed: int
    running: int
    stale: int
    lag_s: float
    successful_1m: int
    failed_1m: int
    canceled_1m: int
    successful_5m: int
    failed_5m: int
    canceled_5m: int
    successful_15m: int
    failed_15m: int
    canceled_15m: int
    throughput_1m: float
    throughput_5m: float
    throughput_15m: float
    wait_p50_s: float | None
    wait_p95_s: float | None
    wait_p99_s: float | None
    run_p50_s: float | None
    run_p95_s: float | None
    run_p99_s: float | None
    successful_total: int
    failed_total: int
    canceled_total: int
    rollup_caught_up: bool


@dataclass(frozen=True)
class WorkerStatus:
    """One row of view ``pgq.worker_status``: a worker (``state`` active, gone or
    unregistered), what it announced, how long it has been silent, the jobs it holds."""

    worker_id: uuid.UUID
    state: str
    host: str | None
    pid: int | None
    application_name: str | None
    entrypoints: list[str] | None
    version: str | None
    metadata: Any
    client_addr: Any
    started_at: datetime | None
    last_seen_at: datetime | None
    silent_s: float | None
    timeout: timedelta | None
    running: int
    stale: int
    job_ids: list[int]


@dataclass(frozen=True)
class WorkerRegistration:
    """What ``pgq.register_worker`` answers: first registration, last seen, the silence after
    which the worker shows as gone, and the longest pause allowed between heartbeats."""

    started_at: datetime
    last_seen_at: datetime
    gone_after: timedelta
    heartbeat_interval: timedelta


@dataclass(frozen=True)
class Rollup:
    """What ``pgq.rollup_metrics`` answers: rows counted, whether it caught up, and whether
    another caller was rolling up (then it did nothing)."""

    rolled: int
    caught_up: bool
    busy: bool


@dataclass(frozen=True)
class JobInfo:
    """What ``pgq.job(id)`` answers (type ``pgq.job_info``): one job, live or finished, with
    its timings, ``result``, last ``details`` and every failed attempt in ``errors``."""

    id: int
    entrypoint: str
    status: str
    priority: int
    attempt: int
    max_attempts: int
    payload: Any
    headers: dict[str, Any] | None
    dedupe_key: str | None
    enqueued_at: datetime
    run_at: datetime | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    wait_s: float | None
    run_s: float | None
    worker_id: uuid.UUID | None
    cancel_requested: bool | None
    result: Any
    details: Any
    errors: list[Any] | None
    schedule: str | None
    schedule_due_at: datetime | None


@dataclass(frozen=True)
class JobResult:
    """One row of ``pgq.job_results``: where a job is (``unknown`` for an id not there),
    whether it finished, what a successful handler returned, or the final error."""

    id: int
    status: str
    finished: bool
    result: Any
    error: Any
    attempt: int | None
    finished_at: datetime | None


@dataclass(frozen=True)
class JobListing:
    """One row of ``pgq.list_jobs`` or ``pgq.find_history`` (type ``pgq.job_listing``): a
    job without its payload, the last failure's error and message, and its paging cursor."""

    id: int
    entrypoint: str
    status: str
    priority: int
    attempt: int
    dedupe_key: str | None
    enqueued_at: datetime
    run_at: datetime | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    worker_id: uuid.UUID | None
    error: str | None
    message: str | None
    cursor: str


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
    jobs with their payloads (``pgq.job``), and each action a dashboard offers. A screen hides
    what is False; the database refuses it anyway."""

    read_jobs: bool = False
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

    @property
    def actions(self) -> list[str]:
        """The names of the actions allowed (every field but ``read_jobs``)."""
        return [
            f.name
            for f in dataclasses.fields(self)
            if f.name != "read_jobs" and getattr(self, f.name)
        ]

