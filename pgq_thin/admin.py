"""The admin API: see and steer the queue. Sync :class:`Admin` and async :class:`AsyncAdmin`.

This is the one path from the ``pgq`` views and functions to every screen: the ``pgq-thin``
commands, dashboards, exporters and web pages read and act through it and keep no query of
their own. Each method is one call (one statement, one ``pgq`` function or view, built by
:mod:`pgq_thin.admin_calls`) and returns frozen records of :mod:`pgq_thin.records`, whose
fields are the SQL columns. Every action is checked by the database against the caller's
role: the API adds no rights of its own (a missing privilege raises
:class:`~pgq_thin.errors.PrivilegeMissing`, naming the role needed).

It is kept apart from the producer (:class:`~pgq_thin.queue.Queue`), which application code
holds with the ``pgq_producer`` role; these are operator actions (requeue, configure,
unschedule need ``pgq_admin``; reading jobs and dead jobs ``pgq_reader``; see
docs/operations.md). Construction is the same: a DSN (or nothing: the rule of
:mod:`pgq_thin.dsn`), or a connection you hold::

    with Admin() as admin:
        for row in admin.metrics():
            print(row.entrypoint, row.due, row.lag_s, row.throughput_1m, row.run_p95_s)
        admin.pause("send_email")
        admin.requeue_history("send_email", since=yesterday)

Each operation is written once, in :class:`Build`, as a function returning the call to make
(:class:`pgq_thin.admin_calls.Call`), most of them the generated builder of the ``pgq`` function
itself (its arguments and docstring from the SQL API manifest); :class:`Admin` and
:class:`AsyncAdmin` expose the same table of them as sync and async methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pgq_thin import _api, admin_calls
from pgq_thin.admin_calls import Call, Row, async_method, sync_method
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
    Privileges,
    Schedule,
    WorkerStatus,
)

__all__ = ["Admin", "AsyncAdmin", "Build"]

CatchUp = Literal["once", "skip"]
HistoryStatus = Literal["successful", "failed", "canceled"]


def _limit(limit: int | None) -> int | None:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for all), got {limit}")
    return limit


class Build:
    """Every admin operation as the call it makes; :class:`Admin` and :class:`AsyncAdmin`
    expose each as a method (the docstrings below are theirs). A None argument is left out of
    the statement, so the SQL function's default applies."""

    @staticmethod
    def stats() -> Call[list[EntrypointStats]]:
        """Per entrypoint: queued, due, running, stale, oldest queued age, its policy and
        whether it is paused (view ``pgq.queue_stats``, by entrypoint)."""
        return admin_calls.stats()

    @staticmethod
    def metrics(
        entrypoints: str | Sequence[str] | None = None,
        *,
        percentile_window: timedelta | None = None,
    ) -> Call[list[EntrypointMetrics]]:
        """Per entrypoint (None: every one): live jobs, lag, finished jobs over 1/5/15 minutes,
        throughput, wait and run time p50/p95/p99 over ``percentile_window`` (None: the SQL
        default, 5 minutes) and monotonic totals (``pgq.metrics``)."""
        return _api.metrics(entrypoints=entrypoints, percentile_window=percentile_window)

    @staticmethod
    def metrics_series(
        entrypoints: str | Sequence[str] | None = None, *, combined: bool = False
    ) -> Call[list[MetricsPoint]]:
        """The last hour minute by minute, for charts (``pgq.metrics_series``): per
        entrypoint (None: every one), or with ``combined`` one series over them all; per
        minute the jobs finished by status, the due and running backlog the rollup sampled
        (None: no sample that minute), wait and run p95. Oldest minute first; the last one is
        in progress. Reads only: call :meth:`metrics` first for the newest figures."""
        return _api.metrics_series(entrypoints=entrypoints, combined=combined)

    @staticmethod
    def workers() -> Call[list[WorkerStatus]]:
        """Every registered worker, and every worker holding jobs without having registered
        (view ``pgq.worker_status``): state active, gone or unregistered, the jobs it holds."""
        return admin_calls.workers()

    @staticmethod
    def pause(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
        """Pause entrypoints (``pgq.pause``): no job of theirs starts from the next claim on;
        enqueueing goes on. Returns their policy rows (``paused_at`` set)."""
        return _api.pause(entrypoints)

    @staticmethod
    def resume(entrypoints: str | Sequence[str]) -> Call[list[EntrypointConfig]]:
        """Resume paused entrypoints (``pgq.resume``): the configured policy applies again;
        unknown names are ignored. Returns the policy rows of those resumed."""
        return _api.resume(entrypoints)

    @staticmethod
    def job(job_id: int) -> Call[JobInfo | None]:
        """Everything about one job, live or finished (``pgq.job``): status, attempts, each
        failed attempt, timings, result; None for an id that is not there."""
        return _api.job(job_id)

    @staticmethod
    def job_results(ids: Sequence[int]) -> Call[list[JobResult]]:
        """Status and result of jobs by id, in input order (``pgq.job_results``; status
        ``unknown`` for an id not there). Up to 10,000 ids."""
        return _api.job_results(ids)

    @staticmethod
    def list_jobs(
        entrypoint: str, state: str, *, after: str | None = None, page_size: int | None = None
    ) -> Call[JobPage]:
        """One page of the jobs of an entrypoint in a state (queued: due, in claim order;
        scheduled: not due yet, by due time; running by id; successful/failed/canceled newest
        first; ``pgq.list_jobs``). Pass the page's
        ``next_cursor`` as ``after`` for the next page."""
        return admin_calls.page(
            _api.list_jobs(entrypoint, state, after=after, page_size=page_size), page_size
        )

    @staticmethod
    def find_history(
        entrypoint: str | None = None,
        *,
        statuses: HistoryStatus | Sequence[HistoryStatus] | None = None,
        since: datetime | timedelta | None = None,
        until: datetime | timedelta | None = None,
        error: str | None = None,
        after: str | None = None,
        page_size: int | None = None,
    ) -> Call[JobPage]:
        """One page of finished jobs, newest first (``pgq.find_history``): of an entrypoint
        (None: all), statuses (None: failed), finished in ``[since, until)`` (a timedelta: that
        long before the database's clock), with ``error`` found in the failure's error,
        message or traceback."""
        call = _api.find_history(
            entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error,
            after=after, page_size=page_size,
        )  # fmt: skip
        return admin_calls.page(call, page_size)

    @staticmethod
    def requeue_history(
        entrypoint: str | None = None,
        *,
        statuses: HistoryStatus | Sequence[HistoryStatus] | None = None,
        since: datetime | timedelta | None = None,
        until: datetime | timedelta | None = None,
        error: str | None = None,
        max_jobs: int | None = None,
        every: bool = False,
    ) -> Call[list[int]]:
        """Requeue finished jobs matching the filter of :meth:`find_history` (failed or
        canceled; ``pgq.requeue_history``), up to ``max_jobs`` per call (None: the SQL
        default); with ``every``, call again until no more match (each job at most once).
        Returns the ids requeued."""
        call = _api.requeue_history(
            entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error,
            max_jobs=max_jobs,
        )  # fmt: skip
        return admin_calls.every_once(call) if every else call

    @staticmethod
    def delete_history(
        entrypoint: str | None = None,
        *,
        statuses: HistoryStatus | Sequence[HistoryStatus] | None = None,
        since: datetime | timedelta | None = None,
        until: datetime | timedelta | None = None,
        error: str | None = None,
        max_jobs: int | None = None,
        every: bool = False,
    ) -> Call[int]:
        """Delete finished jobs matching the filter of :meth:`find_history`
        (``pgq.delete_history``), up to ``max_jobs`` per call; with ``every``, until none is
        left. Returns how many were deleted."""
        call = _api.delete_history(
            entrypoint=entrypoint, statuses=statuses, since=since, until=until, error=error,
            max_jobs=max_jobs,
        )  # fmt: skip
        return admin_calls.until_none(call) if every else call

    @staticmethod
    def prune(older_than: timedelta) -> Call[int]:
        """Delete the history of jobs finished more than ``older_than`` ago
        (``pgq.prune_history``, batch after batch); returns how many rows."""
        return admin_calls.until_none(_api.prune_history(older_than))

    @staticmethod
    def failed(limit: int | None = 50) -> Call[list[FailedJob]]:
        """Dead jobs, newest first (view ``pgq.failed_jobs``); ``limit`` None: all."""
        return admin_calls.failed(_limit(limit))

    @staticmethod
    def history_summary(
        entrypoints: Sequence[str] | None = None, *, since_id: int = 0
    ) -> Call[list[HistorySummary]]:
        """Finished jobs per entrypoint and final status, for jobs with ``id >= since_id``
        (``pgq.history_summary``); ``entrypoints`` None: every one."""
        return _api.history_summary(entrypoints=entrypoints, since_id=since_id)

    @staticmethod
    def requeue(ids: Sequence[int]) -> Call[list[int]]:
        """Put dead or canceled jobs back in the queue (attempt 0, due now); returns the ids
        requeued (unknown, successful or live ids are left out)."""
        return _api.requeue(ids)

    @staticmethod
    def cancel(ids: Sequence[int]) -> Call[list[int]]:
        """Cancel jobs: queued ones at once, running ones are asked to stop. Ids affected."""
        return _api.cancel(ids)

    #: Set an entrypoint's policy (``pgq.configure``: a setting left out or None stays as it
    #: is, ``reset`` first returns every setting to its default); returns the stored policy.
    #: The generated builder itself: an argument ``pgq.configure`` gains is one here too.
    configure = staticmethod(_api.configure)

    @staticmethod
    def schedules() -> Call[list[Schedule]]:
        """Every cron schedule, by name (table ``pgq.schedules``)."""
        return admin_calls.schedules()

    @staticmethod
    def add_schedule(
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
    ) -> Call[Schedule]:
        """Add a schedule, or update the one called ``name`` (``pgq.schedule``: its next run is
        kept unless the expression or time zone changed). Cron: 5 fields, or 6 with seconds
        first. Jobs fire while a worker with a scheduler runs (docs/schedules.md). A bad
        expression, time zone or catch-up raises :class:`~pgq_thin.errors.InvalidSchedule`
        before anything is sent."""
        # Imported here: croniter and the codecs cost every light command ~20 ms otherwise.
        from pgq_thin.cron import CronSchedule
        from pgq_thin.payloads import encode_payload
        from pgq_thin.scheduler import Scheduler, ScheduleSpec

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
        return Scheduler.register_call(spec, datetime.now(UTC))

    @staticmethod
    def remove_schedule(name: str) -> Call[bool]:
        """Remove a schedule (``pgq.unschedule``); False when there was none of that name."""
        return _api.unschedule(name)

    @staticmethod
    def fire_schedule_now(name: str) -> Call[int]:
        """Fire a schedule once now, as a tick would, without moving its next run
        (``pgq.fire_schedule_now``); returns the job id."""
        return _api.fire_schedule_now(name)

    @staticmethod
    def entrypoint_config(
        entrypoints: str | Sequence[str] | None = None,
    ) -> Call[list[EntrypointConfig]]:
        """The stored policy of entrypoints (None: every one), by entrypoint; names never
        enqueued or configured are left out (``pgq.entrypoint_config``)."""
        return _api.entrypoint_config(entrypoints=entrypoints)

    @staticmethod
    def key_stats(
        entrypoints: Sequence[str] | None = None, *, max_keys: int | None = None
    ) -> Call[list[Row]]:
        """The busiest group keys of key-limited entrypoints (None: every one): queued,
        running, the limit and whether the key is at it (``pgq.key_stats``)."""
        return _api.key_stats(entrypoints=entrypoints, max_keys=max_keys)

    @staticmethod
    def workflow(job_id: int) -> Call[list[Row]]:
        """Every job of a workflow, given its id (its first job's) or any of its jobs, with its
        state, parents, children and the workflow id (``pgq.workflow``); empty for a job without
        dependencies or dependents."""
        return _api.workflow(job_id)

    @staticmethod
    def cancel_workflow(job_id: int) -> Call[list[int]]:
        """Cancel every job of ``job_id``'s workflow that has not ended (``pgq.cancel_workflow``);
        the ids canceled or asked to stop."""
        return _api.cancel_workflow(job_id)

    @staticmethod
    def requeue_workflow(job_id: int) -> Call[list[int]]:
        """Requeue the failed part of ``job_id``'s workflow: every job of it that ended dead or
        canceled, in one call, so a job whose parent comes back waits for it again
        (``pgq.requeue_workflow``); the ids requeued."""
        return _api.requeue_workflow(job_id)

    @staticmethod
    def rate_stats(entrypoints: Sequence[str] | None = None) -> Call[list[Row]]:
        """The rate limits of these entrypoints (None: every one): starts in the window, what
        is left, the budgets (keys) used up and when the budget next grows (``pgq.rate_stats``)."""
        return _api.rate_stats(entrypoints=entrypoints)

    @staticmethod
    def find_by_dedupe_key(
        dedupe_key: str, *, max_rows: int | None = None
    ) -> Call[list[JobListing]]:
        """The jobs carrying a dedupe key: the live one first, then finished ones, newest first
        (``pgq.find_by_dedupe_key``; ``max_rows`` None: the SQL default, 50)."""
        return _api.find_by_dedupe_key(dedupe_key, max_rows=max_rows)

    @staticmethod
    def delete_jobs(ids: Sequence[int]) -> Call[list[int]]:
        """Delete finished jobs by id (``pgq.delete_jobs``); live and unknown ids are left
        alone. Returns the ids deleted."""
        return _api.delete_jobs(ids)

    @staticmethod
    def privileges() -> Call[Privileges]:
        """What the connected role may call: reading jobs and each admin action (the
        catalog's answer), so a screen can hide what the database would refuse."""
        return _api.privileges()


class Admin(SyncHandle):
    """Sync admin API over a DSN or a ``psycopg.Connection`` you hold (see the module
    docstring); each method is the :class:`Build` function of the same name, run."""

    APPLICATION_NAME = "pgq-thin admin"

    stats = sync_method(Build.stats)
    metrics = sync_method(Build.metrics)
    metrics_series = sync_method(Build.metrics_series)
    workers = sync_method(Build.workers)
    pause = sync_method(Build.pause)
    resume = sync_method(Build.resume)
    job = sync_method(Build.job)
    job_results = sync_method(Build.job_results)
    list_jobs = sync_method(Build.list_jobs)
    find_history = sync_method(Build.find_history)
    requeue_history = sync_method(Build.requeue_history)
    delete_history = sync_method(Build.delete_history)
    prune = sync_method(Build.prune)
    failed = sync_method(Build.failed)
    history_summary = sync_method(Build.history_summary)
    requeue = sync_method(Build.requeue)
    cancel = sync_method(Build.cancel)
    configure = sync_method(Build.configure)
    schedules = sync_method(Build.schedules)
    add_schedule = sync_method(Build.add_schedule)
    remove_schedule = sync_method(Build.remove_schedule)
    fire_schedule_now = sync_method(Build.fire_schedule_now)
    entrypoint_config = sync_method(Build.entrypoint_config)
    key_stats = sync_method(Build.key_stats)
    rate_stats = sync_method(Build.rate_stats)
    workflow = sync_method(Build.workflow)
    cancel_workflow = sync_method(Build.cancel_workflow)
    requeue_workflow = sync_method(Build.requeue_workflow)
    find_by_dedupe_key = sync_method(Build.find_by_dedupe_key)
    delete_jobs = sync_method(Build.delete_jobs)
    privileges = sync_method(Build.privileges)


class AsyncAdmin(AsyncHandle):
    """Async admin API over a DSN or a ``psycopg.AsyncConnection`` you hold; each method as
    in :class:`Admin`, awaited."""

    APPLICATION_NAME = "pgq-thin admin"

    stats = async_method(Build.stats)
    metrics = async_method(Build.metrics)
    metrics_series = async_method(Build.metrics_series)
    workers = async_method(Build.workers)
    pause = async_method(Build.pause)
    resume = async_method(Build.resume)
    job = async_method(Build.job)
    job_results = async_method(Build.job_results)
    list_jobs = async_method(Build.list_jobs)
    find_history = async_method(Build.find_history)
    requeue_history = async_method(Build.requeue_history)
    delete_history = async_method(Build.delete_history)
    prune = async_method(Build.prune)
    failed = async_method(Build.failed)
    history_summary = async_method(Build.history_summary)
    requeue = async_method(Build.requeue)
    cancel = async_method(Build.cancel)
    configure = async_method(Build.configure)
    schedules = async_method(Build.schedules)
    add_schedule = async_method(Build.add_schedule)
    remove_schedule = async_method(Build.remove_schedule)
    fire_schedule_now = async_method(Build.fire_schedule_now)
    entrypoint_config = async_method(Build.entrypoint_config)
    key_stats = async_method(Build.key_stats)
    rate_stats = async_method(Build.rate_stats)
    workflow = async_method(Build.workflow)
    cancel_workflow = async_method(Build.cancel_workflow)
    requeue_workflow = async_method(Build.requeue_workflow)
    find_by_dedupe_key = async_method(Build.find_by_dedupe_key)
    delete_jobs = async_method(Build.delete_jobs)
    privileges = async_method(Build.privileges)
