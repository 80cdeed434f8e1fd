"""The admin API's calls beyond one generated builder of :mod:`pgq_thin._api`: the views (in
the order shown), a listing as a :class:`~pgq_thin.records.JobPage`, bulk actions repeated
until done, and :func:`sync_method`/:func:`async_method`,
which make one call a method of a sync or an async handle (so :class:`~pgq_thin.admin.Admin`
and :class:`~pgq_thin.admin.AsyncAdmin`, the producer's classes too, share every statement).
Every other call is the generated builder itself, its answer typed from the result columns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from pgq_thin._sql_runner import arun, run
from pgq_thin._statements import Call, Row, records
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.records import (
    EntrypointStats,
    FailedJob,
    JobListing,
    JobPage,
    Schedule,
    WorkerStatus,
)

__all__ = ["Call", "Row", "arun", "run"]

R = TypeVar("R")
P = ParamSpec("P")
# The statements that read a view (views have no builder in _api), in the order shown.
WORKERS = "SELECT * FROM pgq.worker_status ORDER BY started_at NULLS LAST, worker_id"
QUEUE_STATS = "SELECT * FROM pgq.queue_stats ORDER BY entrypoint"
FAILED_JOBS = "SELECT * FROM pgq.failed_jobs ORDER BY finished_at DESC, id DESC LIMIT %s"
SCHEDULES = "SELECT * FROM pgq.schedules ORDER BY name"


def sync_method(build: Callable[P, Call[R]]) -> Callable[Concatenate[SyncHandle, P], R]:
    """A method of a sync handle that builds a call with ``build`` (same arguments and
    docstring) and runs it on the handle's connection."""

    @functools.wraps(build)
    def method(self: SyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.run_call(build(*args, **kwargs))

    return method


def async_method(
    build: Callable[P, Call[R]],
) -> Callable[Concatenate[AsyncHandle, P], Coroutine[Any, Any, R]]:
    """The async twin of :func:`sync_method`."""

    @functools.wraps(build)
    async def method(self: AsyncHandle, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self.arun_call(build(*args, **kwargs))

    return method


def workers() -> Call[list[WorkerStatus]]:
    return Call(WORKERS, (), records(WorkerStatus))


def stats() -> Call[list[EntrypointStats]]:
    return Call(QUEUE_STATS, (), records(EntrypointStats))


def failed(limit: int | None) -> Call[list[FailedJob]]:
    return Call(FAILED_JOBS, (limit,), records(FailedJob))


def schedules() -> Call[list[Schedule]]:
    return Call(SCHEDULES, (), records(Schedule))


def page(call: Call[list[JobListing]], page_size: int | None) -> Call[JobPage]:
    """A listing's jobs as a page: its cursor for the next one unless this one came short."""

    def shape(jobs: list[JobListing]) -> JobPage:
        short = not jobs or (page_size is not None and len(jobs) < page_size)
        return JobPage(jobs, None if short else jobs[-1].cursor)

    return call.then(shape)


def every_once(call: Call[list[int]]) -> Call[list[int]]:
    """Sent again until it requeues nothing, or only jobs it requeued already (they failed
    again meanwhile): each job is requeued at most once."""
    seen: set[int] = set()

    def more(ids: list[int]) -> bool:
        fresh = not seen.intersection(ids)
        seen.update(ids)
        return bool(ids) and fresh

    return call.then(list, more)


def until_none(call: Call[int]) -> Call[int]:
    """Sent again until a call deletes nothing."""
    return call.then(int, bool)
