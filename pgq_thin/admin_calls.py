"""The admin API's calls (and the producer's result lookups): the generated statements of
:mod:`pgq_thin._api` with the shape of their answers as records.

Arguments pass **by name and only when given** (what the caller leaves out takes the SQL
function's own default). :func:`run` and :func:`arun` (:mod:`pgq_thin._statements`) send a
call on a sync or an async connection, so the sync and async classes share every statement
and every conversion (see ``admin.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar
from uuid import UUID

from pgq_thin import _api
from pgq_thin._sql_runner import arun, run
from pgq_thin._statements import Call, Row, ints, value
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.records import (
    EntrypointConfig,
    EntrypointMetrics,
    EntrypointStats,
    FailedJob,
    HistorySummary,
    JobInfo,
    JobListing,
    JobPage,
    JobResult,
    MetricsPoint,
    Rollup,
    Schedule,
    WorkerRegistration,
    WorkerStatus,
    from_row,
)

__all__ = ["Call", "HistoryFilter", "Row", "arun", "ints", "run", "value"]

R = TypeVar("R")
T = TypeVar("T")
P = ParamSpec("P")
# The statements that read a view (views have no builder in _api), in the order shown.
WORKERS = "SELECT * FROM pgq.worker_status ORDER BY started_at NULLS LAST, worker_id"
QUEUE_STATS = "SELECT * FROM pgq.queue_stats ORDER BY entrypoint"
FAILED_JOBS = "SELECT * FROM pgq.failed_jobs ORDER BY finished_at DESC, id DESC LIMIT %s"
SCHEDULES = "SELECT * FROM pgq.schedules ORDER BY name"


def records(cls: type[T]) -> Callable[[list[Row]], list[T]]:
    return lambda rows: [from_row(cls, r) for r in rows]


def first(cls: type[T]) -> Callable[[list[Row]], T]:
    return lambda rows: from_row(cls, rows[0])


def optional(cls: type[T]) -> Callable[[list[Row]], T | None]:
    return lambda rows: from_row(cls, rows[0]) if rows else None


def number(rows: list[Row]) -> int:
    return int(value(rows))


def truth(rows: list[Row]) -> bool:
    return bool(value(rows))


def shaped(
    build: Callable[P, Call[list[Row]]], shape: Callable[[list[Row]], T]
) -> Callable[P, Call[T]]:
    """The generated builder ``build`` (its arguments and docstring), its rows through ``shape``."""

    @functools.wraps(build)
    def call(*args: P.args, **kwargs: P.kwargs) -> Call[T]:
        return build(*args, **kwargs).then(shape)

    return call


def sync_method(build: Callable[P, Call[R]]) -> Callable[Concatenate[SyncHandle, P], R]:
    """A method of a sync handle that builds a call with ``build`` (same arguments and
    docstring) and runs it on the handle's connection."""

    @functools.wraps(build)
    def method(self: SyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.using() as conn:
            return run(conn, build(*args, **kwargs))

    return method


def async_method(
    build: Callable[P, Call[R]],
) -> Callable[Concatenate[AsyncHandle, P], Coroutine[Any, Any, R]]:
    """The async twin of :func:`sync_method`."""

    @functools.wraps(build)
    async def method(self: AsyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async with self.using() as conn:
            return await arun(conn, build(*args, **kwargs))

    return method


# --- the calls --------------------------------------------------------------------------------

job = shaped(_api.job, optional(JobInfo))
job_results = shaped(_api.job_results, records(JobResult))
history_summary = shaped(_api.history_summary, records(HistorySummary))
cancel = shaped(_api.cancel, ints)
requeue = shaped(_api.requeue, ints)
unschedule = shaped(_api.unschedule, truth)
unregister_worker = shaped(_api.unregister_worker, truth)
prune_workers = shaped(_api.prune_workers, number)
rollup_metrics = shaped(_api.rollup_metrics, first(Rollup))
find_by_dedupe_key = shaped(_api.find_by_dedupe_key, records(JobListing))
delete_jobs = shaped(_api.delete_jobs, ints)
fire_schedule_now = shaped(_api.fire_schedule_now, number)


def _names(entrypoints: str | Sequence[str] | None) -> list[str] | None:
    if entrypoints is None:
        return None
    return [entrypoints] if isinstance(entrypoints, str) else list(entrypoints)


def metrics(
    entrypoints: str | Sequence[str] | None, percentile_window: timedelta | None
) -> Call[list[EntrypointMetrics]]:
    call = _api.metrics(entrypoints=_names(entrypoints), percentile_window=percentile_window)
    return call.then(records(EntrypointMetrics))


def metrics_series(
    entrypoints: str | Sequence[str] | None, combined: bool
) -> Call[list[MetricsPoint]]:
    call = _api.metrics_series(entrypoints=_names(entrypoints), combined=combined)
    return call.then(records(MetricsPoint))


def workers() -> Call[list[WorkerStatus]]:
    return Call(WORKERS, (), records(WorkerStatus))


def stats() -> Call[list[EntrypointStats]]:
    return Call(QUEUE_STATS, (), records(EntrypointStats))


def failed(limit: int | None) -> Call[list[FailedJob]]:
    return Call(FAILED_JOBS, (limit,), records(FailedJob))


def schedules() -> Call[list[Schedule]]:
    return Call(SCHEDULES, (), records(Schedule))


def configure(entrypoint: str, **policy: Any) -> Call[EntrypointConfig]:
    """``pgq.configure``, the one path of ``Admin.configure`` and ``Queue.configure`` (whose
    signatures type ``policy``): a setting left out or None stays as it is."""
    return _api.configure(entrypoint=entrypoint, **policy).then(first(EntrypointConfig))


def pause(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
    return _api.pause(entrypoints=_names(entrypoints) or []).then(records(EntrypointConfig))


def resume(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
    return _api.resume(entrypoints=_names(entrypoints) or []).then(records(EntrypointConfig))


def _page(page_size: int | None) -> Callable[[list[Row]], JobPage]:
    def shape(rows: list[Row]) -> JobPage:
        jobs = [from_row(JobListing, r) for r in rows]
        short = not jobs or (page_size is not None and len(jobs) < page_size)
        return JobPage(jobs, None if short else jobs[-1].cursor)

    return shape


def list_jobs(
    entrypoint: str, state: str, after: str | None, page_size: int | None
) -> Call[JobPage]:
    call = _api.list_jobs(entrypoint=entrypoint, state=state, after=after, page_size=page_size)
    return call.then(_page(page_size))


@dataclass(frozen=True)
class HistoryFilter:
    """Which finished jobs: entrypoint (None: all), statuses (None: the SQL default, failed),
    finished in ``[since, until)`` (a timedelta: that long before the server's clock),
    ``error`` text found in the failure. Its fields are the filter arguments of
    ``pgq.find_history``, ``pgq.requeue_history`` and ``pgq.delete_history``."""

    entrypoint: str | None = None
    statuses: Sequence[str] | None = None
    since: datetime | timedelta | None = None  # a timedelta: that long before now()
    until: datetime | timedelta | None = None
    error: str | None = None


def find_history(where: HistoryFilter, after: str | None, page_size: int | None) -> Call[JobPage]:
    call = _api.find_history(after=after, page_size=page_size, **vars(where))
    return call.then(_page(page_size))


def requeue_history(where: HistoryFilter, max_jobs: int | None, every: bool) -> Call[list[int]]:
    """With ``every``: again until a call requeues nothing, or only jobs it requeued already
    (they failed again meanwhile): each job is requeued at most once."""
    call = _api.requeue_history(max_jobs=max_jobs, **vars(where))
    if not every:
        return call.then(ints)
    seen: set[int] = set()

    def more(ids: list[int]) -> bool:
        fresh = not seen.intersection(ids)
        seen.update(ids)
        return bool(ids) and fresh

    return call.then(ints, more)


def delete_history(where: HistoryFilter, max_jobs: int | None, every: bool) -> Call[int]:
    """With ``every``: again until a call deletes nothing."""
    return _api.delete_history(max_jobs=max_jobs, **vars(where)).then(
        number, bool if every else None
    )


def prune(older_than: timedelta) -> Call[int]:
    """``pgq.prune_history`` in batches of its default size until one deletes nothing."""
    return _api.prune_history(older_than=older_than).then(number, bool)


def register_worker(
    worker_id: UUID, entrypoints: Sequence[str], **announced: Any
) -> Call[WorkerRegistration]:
    """``announced``: any of host, pid, application_name, version, metadata (a dict) and
    timeout; those left out take the SQL defaults."""
    call = _api.register_worker(worker_id=worker_id, entrypoints=entrypoints, **announced)
    return call.then(first(WorkerRegistration))


# --- the dashboard's calls (formerly also in pgq_thin.dashboard_calls) -----------------------


def entrypoint_config(entrypoints: str | Sequence[str] | None) -> Call[list[EntrypointConfig]]:
    return _api.entrypoint_config(entrypoints=_names(entrypoints)).then(records(EntrypointConfig))
