"""The admin API: see and steer the queue. Sync :class:`Admin` and async :class:`AsyncAdmin`.

This is the one path from the ``pgq`` views and functions to every screen: the ``pgq-thin``
commands, dashboards, exporters and web pages read and act through it and keep no query of
their own. Each method is one call of :mod:`pgq_thin.calls` (one statement, one ``pgq``
function or view) and returns frozen records of :mod:`pgq_thin.records`, whose fields are the
SQL columns. Every action is checked by the database against the caller's role: the API adds
no rights of its own (a missing privilege raises
:class:`~pgq_thin.errors.PrivilegeMissing`, naming the role needed).

It is kept apart from the producer (:class:`~pgq_thin.queue.Queue`), which application code
holds with the ``pgq_producer`` role; these are operator actions (requeue, configure,
unschedule, reading dead jobs need the schema owner or an operator role, see
docs/operations.md). Construction is the same: a DSN (or nothing: the rule of
:mod:`pgq_thin.dsn`), or a connection you hold::

    with Admin() as admin:
        for row in admin.stats():
            print(row.entrypoint, row.due, row.running)
        admin.requeue([job.id for job in admin.failed(limit=100)])
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pgq_thin import calls
from pgq_thin.cron import CronSchedule
from pgq_thin.handle import AsyncHandle, SyncHandle
from pgq_thin.payloads import encode_payload
from pgq_thin.records import (
    EntrypointConfig,
    EntrypointStats,
    FailedJob,
    HistorySummary,
    Schedule,
    from_row,
)
from pgq_thin.scheduler import Scheduler, ScheduleSpec

__all__ = ["Admin", "AsyncAdmin"]

CatchUp = Literal["once", "skip"]


def _limit(limit: int | None) -> int | None:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for all), got {limit}")
    return limit


def _schedule_args(
    name: str,
    entrypoint: str,
    cron: str,
    payload: Any,
    timezone: str,
    priority: int,
    headers: dict[str, Any] | None,
    catch_up: str,
    misfire_grace: timedelta | None,
    fire_timeout: timedelta | None,
) -> tuple[Any, ...]:
    """``pgq.schedule`` arguments; a bad expression, time zone or catch-up raises
    :class:`~pgq_thin.errors.InvalidSchedule` before anything is sent."""
    spec = ScheduleSpec(
        cron=CronSchedule(cron, timezone),
        entrypoint=entrypoint,
        name=name,
        payload=encode_payload(payload),
        priority=priority,
        headers=headers,
        catch_up=catch_up,
        misfire_grace=misfire_grace,
        fire_timeout=fire_timeout,
    )
    return Scheduler.register_args(spec, datetime.now(UTC))


class Admin(SyncHandle):
    """Sync admin API over a DSN or a ``psycopg.Connection`` you hold (see the module
    docstring)."""

    APPLICATION_NAME = "pgq-thin admin"

    def stats(self) -> list[EntrypointStats]:
        """Per entrypoint: queued, due, running, stale, oldest queued age, and its policy
        (view ``pgq.queue_stats``, by entrypoint)."""
        return [from_row(EntrypointStats, r) for r in calls.queue_stats(self.connection)]

    def failed(self, limit: int | None = 50) -> list[FailedJob]:
        """Dead jobs, newest first (view ``pgq.failed_jobs``); ``limit`` None: all."""
        rows = calls.failed_jobs(self.connection, _limit(limit))
        return [from_row(FailedJob, r) for r in rows]

    def history_summary(
        self, entrypoints: Sequence[str] | None = None, *, since_id: int = 0
    ) -> list[HistorySummary]:
        """Finished jobs per entrypoint and final status, for jobs with ``id >= since_id``
        (``pgq.history_summary``); ``entrypoints`` None: every one."""
        rows = calls.history_summary(self.connection, entrypoints, since_id)
        return [from_row(HistorySummary, r) for r in rows]

    def requeue(self, ids: Sequence[int]) -> list[int]:
        """Put dead or canceled jobs back in the queue (attempt 0, due now); returns the ids
        requeued (unknown, successful or live ids are left out)."""
        return calls.requeue(self.connection, ids)

    def cancel(self, ids: Sequence[int]) -> list[int]:
        """Cancel jobs: queued ones at once, running ones are asked to stop. Ids affected."""
        return calls.cancel(self.connection, ids)

    def configure(
        self,
        entrypoint: str,
        *,
        concurrency_limit: int | None = None,
        max_attempts: int | None = None,
        backoff_base: timedelta | None = None,
        backoff_max: timedelta | None = None,
        heartbeat_timeout: timedelta | None = None,
        reset: bool = False,
    ) -> EntrypointConfig:
        """Set an entrypoint's policy (``pgq.configure``: None leaves a setting as it is,
        ``reset`` first returns every setting to its default); returns the stored policy."""
        args = calls.configure_args(
            entrypoint,
            concurrency_limit,
            max_attempts,
            backoff_base,
            backoff_max,
            heartbeat_timeout,
            reset,
        )
        return from_row(EntrypointConfig, calls.configure(self.connection, args))

    def schedules(self) -> list[Schedule]:
        """Every cron schedule, by name (table ``pgq.schedules``)."""
        return [from_row(Schedule, r) for r in calls.schedules(self.connection)]

    def add_schedule(
        self,
        name: str,
        entrypoint: str,
        cron: str,
        *,
        payload: Any = None,
        timezone: str = "UTC",
        priority: int = 0,
        headers: dict[str, Any] | None = None,
        catch_up: CatchUp = "once",
        misfire_grace: timedelta | None = None,
        fire_timeout: timedelta | None = None,
    ) -> Schedule:
        """Add a schedule, or update the one called ``name`` (``pgq.schedule``: its next run is
        kept unless the expression or time zone changed). Cron: 5 fields, or 6 with seconds
        first. Jobs fire while a worker with a scheduler runs (docs/schedules.md)."""
        args = _schedule_args(
            name,
            entrypoint,
            cron,
            payload,
            timezone,
            priority,
            headers,
            catch_up,
            misfire_grace,
            fire_timeout,
        )
        return from_row(Schedule, calls.schedule(self.connection, args))

    def remove_schedule(self, name: str) -> bool:
        """Remove a schedule (``pgq.unschedule``); False when there was none of that name."""
        return calls.unschedule(self.connection, name)


class AsyncAdmin(AsyncHandle):
    """Async admin API over a DSN or a ``psycopg.AsyncConnection`` you hold; each method as
    in :class:`Admin`."""

    APPLICATION_NAME = "pgq-thin admin"

    async def stats(self) -> list[EntrypointStats]:
        """As :meth:`Admin.stats`."""
        rows = await calls.aqueue_stats(await self.connection())
        return [from_row(EntrypointStats, r) for r in rows]

    async def failed(self, limit: int | None = 50) -> list[FailedJob]:
        """As :meth:`Admin.failed`."""
        rows = await calls.afailed_jobs(await self.connection(), _limit(limit))
        return [from_row(FailedJob, r) for r in rows]

    async def history_summary(
        self, entrypoints: Sequence[str] | None = None, *, since_id: int = 0
    ) -> list[HistorySummary]:
        """As :meth:`Admin.history_summary`."""
        rows = await calls.ahistory_summary(await self.connection(), entrypoints, since_id)
        return [from_row(HistorySummary, r) for r in rows]

    async def requeue(self, ids: Sequence[int]) -> list[int]:
        """As :meth:`Admin.requeue`."""
        return await calls.arequeue(await self.connection(), ids)

    async def cancel(self, ids: Sequence[int]) -> list[int]:
        """As :meth:`Admin.cancel`."""
        return await calls.acancel(await self.connection(), ids)

    async def configure(
        self,
        entrypoint: str,
        *,
        concurrency_limit: int | None = None,
        max_attempts: int | None = None,
        backoff_base: timedelta | None = None,
        backoff_max: timedelta | None = None,
        heartbeat_timeout: timedelta | None = None,
        reset: bool = False,
    ) -> EntrypointConfig:
        """As :meth:`Admin.configure`."""
        args = calls.configure_args(
            entrypoint,
            concurrency_limit,
            max_attempts,
            backoff_base,
            backoff_max,
            heartbeat_timeout,
            reset,
        )
        return from_row(EntrypointConfig, await calls.aconfigure(await self.connection(), args))

    async def schedules(self) -> list[Schedule]:
        """As :meth:`Admin.schedules`."""
        return [from_row(Schedule, r) for r in await calls.aschedules(await self.connection())]

    async def add_schedule(
        self,
        name: str,
        entrypoint: str,
        cron: str,
        *,
        payload: Any = None,
        timezone: str = "UTC",
        priority: int = 0,
        headers: dict[str, Any] | None = None,
        catch_up: CatchUp = "once",
        misfire_grace: timedelta | None = None,
        fire_timeout: timedelta | None = None,
    ) -> Schedule:
        """As :meth:`Admin.add_schedule`."""
        args = _schedule_args(
            name,
            entrypoint,
            cron,
            payload,
            timezone,
            priority,
            headers,
            catch_up,
            misfire_grace,
            fire_timeout,
        )
        return from_row(Schedule, await calls.aschedule(await self.connection(), args))

    async def remove_schedule(self, name: str) -> bool:
        """As :meth:`Admin.remove_schedule`."""
        return await calls.aunschedule(await self.connection(), name)
