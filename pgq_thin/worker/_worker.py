"""``ThinWorker``: the facade over the worker's parts (see the package docstring)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pgq_thin.entrypoints import Entrypoint
from pgq_thin.errors import SetupError
from pgq_thin.job import Job
from pgq_thin.scheduler import ScheduleSpec
from pgq_thin.worker._registry import P, R, Registry
from pgq_thin.worker._run import Run
from pgq_thin.worker._settings import Setting, WorkerSettings, WorkerStats
from pgq_thin.worker._steps import WorkerSteps
from pgq_thin.worker._supervisor import Signals, abandon_stuck_threads, supervise
from pgq_thin.worker._telemetry import Telemetry, log_summary
from pgq_thin.worker._view import WorkerView

if TYPE_CHECKING:
    from pgq_thin.worker._metrics import WorkerMetrics


class ThinWorker(WorkerView, WorkerSteps):
    """Runs handlers for jobs of the entrypoints registered with :meth:`entrypoint`.

    The keyword arguments are the fields of :class:`WorkerSettings` (documented there), kept
    as one validated value (``worker.settings``); each is also an attribute of the worker, and
    assigning one replaces the settings (a run in progress keeps those it opened with).
    """

    dsn = Setting[str | None]()
    concurrency = Setting[int]()
    threads = Setting[int]()
    batch_size = Setting[int]()
    prefetch = Setting[int]()
    results_connection = Setting[bool]()
    poll_interval = Setting[float]()
    worker_id = Setting[uuid.UUID]()
    grace_period = Setting[float]()
    flush_interval = Setting[float]()
    flush_size = Setting[int | None]()
    listen = Setting[bool]()
    listen_dsn = Setting[str | None]()
    ping_interval = Setting[float]()
    ping_timeout = Setting[float]()
    reconnect_timeout = Setting[float | None]()
    restart_on_failure = Setting[bool]()
    max_restarts = Setting[int]()
    restart_delay = Setting[float]()
    restart_reset_after = Setting[float]()
    history_retention = Setting[timedelta | None]()
    maintenance_interval = Setting[float]()
    maintain_interval = Setting[float | None]()
    rollup_interval = Setting[float | None]()
    run_schedules = Setting[bool]()
    metrics_port = Setting[int | None]()
    metrics_addr = Setting[str]()
    tracing = Setting[bool]()
    progress_interval = Setting[float | None]()

    def __init__(
        self,
        dsn: str | None = None,
        *,
        concurrency: int = 100,
        threads: int = 10,
        batch_size: int = 50,
        prefetch: int = 0,
        results_connection: bool = False,
        poll_interval: float = 5.0,
        worker_id: uuid.UUID | str | None = None,
        grace_period: float = 30.0,
        flush_interval: float = 0.05,
        flush_size: int | None = None,
        listen: bool = True,
        listen_dsn: str | None = None,
        ping_interval: float = 5.0,
        ping_timeout: float = 5.0,
        reconnect_timeout: float | None = 300.0,
        restart_on_failure: bool = True,
        max_restarts: int = 5,
        restart_delay: float = 1.0,
        restart_reset_after: float = 60.0,
        history_retention: timedelta | None = timedelta(days=7),
        maintenance_interval: float = 300.0,
        maintain_interval: float | None = 1.0,
        rollup_interval: float | None = 30.0,
        run_schedules: bool = True,
        metrics_port: int | None = None,
        metrics_addr: str = "127.0.0.1",
        tracing: bool = True,
        progress_interval: float | None = 60.0,
    ) -> None:
        given = dict(locals())
        del given["self"]
        self.settings = WorkerSettings(**given)  # validated; worker_id None: a new one
        self.stats = WorkerStats()
        self._registry = Registry()
        self._run: Run | None = None
        self._halted = False  # stop() was called: the supervisor must not restart
        self._connected = False  # the current run got as far as an open connection
        self._metrics: WorkerMetrics | None = None  # made at the first open with metrics_port
        self._started_at = 0.0  # time.time() when arun began

    # --- registration -------------------------------------------------------------------------

    def entrypoint(
        self, name: str, *, payload_type: type | None = None, parent_results: bool = False
    ) -> Callable[[Callable[[Job[P]], R]], Entrypoint[P, R]]:
        """Register the decorated function as the handler of ``name``.

        The handler takes one :class:`~pgq_thin.job.Job`. ``async def`` handlers run on the
        event loop, plain functions on the thread pool. With ``payload_type`` (or an
        annotation ``job: Job[T]``) naming a dataclass or pydantic model, the payload is
        validated into it first; a mismatch fails the attempt. With ``parent_results=True``
        (the fan-in of a workflow), the worker reads the results of the jobs each job depends
        on (``pgq.parent_results``, one round trip per claimed batch that has such jobs) into
        :attr:`Job.parent_results` before the handler starts.

        Returns a typed handle (:class:`~pgq_thin.entrypoints.Entrypoint`): still the
        handler when called, and ``send_email.enqueue(queue, Email(...))`` or
        ``queue.enqueue(send_email, ...)`` for producers, checked against the payload type.
        """
        return self._registry.entrypoint(
            name, payload_type=payload_type, parent_results=parent_results
        )

    def schedule(
        self,
        cron: str,
        entrypoint: str,
        *,
        name: str | None = None,
        timezone: str = "UTC",
        payload: Any = None,
        priority: int = 0,
        headers: dict[str, Any] | None = None,
        catch_up: str = "once",
        misfire_grace: timedelta | None = None,
        fire_timeout: timedelta | None = None,
    ) -> Callable[[Callable[[Job[P]], R]], Entrypoint[P, R]]:
        """Fire a job of ``entrypoint`` on a cron schedule (5 fields, or 6 with seconds first),
        read in the IANA ``timezone``. The worker registers it at start and runs a scheduler
        loop; any number of workers may register the same schedule: each tick fires once.

        ``name`` identifies the schedule (default: the entrypoint; give each schedule of one
        entrypoint its own name). ``catch_up``: a tick missed by more than ``misfire_grace``
        (default 1 minute; downtime) fires once (``"once"``) or is dropped (``"skip"``).
        ``fire_timeout`` (default 30 s): a scheduler silent that long after claiming a tick is
        taken over. A bad expression or time zone raises
        :class:`~pgq_thin.errors.InvalidSchedule` here. Used as a decorator, it also registers
        the function as the entrypoint's handler.
        """
        return self._registry.schedule(
            cron,
            entrypoint,
            name=name,
            timezone=timezone,
            payload=payload,
            priority=priority,
            headers=headers,
            catch_up=catch_up,
            misfire_grace=misfire_grace,
            fire_timeout=fire_timeout,
        )

    @property
    def schedules(self) -> list[ScheduleSpec]:
        """The schedules this worker registers and fires."""
        return self._registry.schedules

    @property
    def entrypoints(self) -> list[str]:
        """The entrypoints this worker claims, sorted."""
        return sorted(self._registry.claimed)

    def restrict(self, names: Iterable[str]) -> None:
        """Claim only these registered entrypoints (e.g. ``pgq-thin run --entrypoint``)."""
        self._registry.restrict(names)

    # --- lifecycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect; needed before the run-once steps (``arun`` does it itself)."""
        if self._run is None:
            self._registry.check_runnable()
            self._run = await Run.open(self.settings, self._registry, self.stats, self._telemetry())

    def _telemetry(self) -> Telemetry:
        """What the next run logs, measures and traces with (settings as they are now)."""
        return Telemetry.for_run(self.settings, self._metrics_made())

    def _metrics_made(self) -> WorkerMetrics | None:
        """The worker's metrics (one registry for its whole life, across restarts), made once
        ``metrics_port`` is set."""
        if self._metrics is None and self.settings.metrics_port is not None:
            from pgq_thin.worker._metrics import WorkerMetrics

            self._metrics = WorkerMetrics(
                self.stats,
                running=lambda: self.running_jobs,
                held=lambda: self.held_jobs,
                worker_id=lambda: str(self.settings.worker_id),
                started=lambda: self._started_at,
            )
        return self._metrics

    async def close(self) -> None:
        """Stop background tasks, close connections; unwritten results are lost (see
        :meth:`shutdown`)."""
        run, self._run = self._run, None
        if run is not None:
            await run.close()

    async def __aenter__(self) -> ThinWorker:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def stop(self) -> None:
        """Ask a running worker to shut down gracefully; safe to call from any thread."""
        self._halted = True
        if self._run is not None:
            self._run.request_stop_from_any_thread()

    def run(self, *, until_empty: bool = False) -> None:
        """Run until stopped (SIGTERM, SIGINT, SIGHUP) or, with ``until_empty``, until a claim finds
        nothing and nothing runs. Returns after a graceful shutdown."""
        asyncio.run(self.arun(until_empty=until_empty))
        self.abandon_stuck_threads()

    def abandon_stuck_threads(self) -> None:
        """End the process now if sync handlers aborted at shutdown still run (their threads
        cannot be killed); results are written. Only where exiting the process is right."""
        abandon_stuck_threads(self.stats)

    async def arun(
        self, *, until_empty: bool = False, install_signal_handlers: bool | None = None
    ) -> None:
        """The async form of :meth:`run`. Signal handlers are installed when called from the
        main thread (``install_signal_handlers`` forces either way). A run that fails with an
        error a restart may cure is restarted (see ``_supervisor``); a failure of the very
        first start, a :class:`~pgq_thin.errors.SetupError` (schema or grant missing) and any
        failure with ``restart_on_failure`` off are raised at once. With ``metrics_port`` the
        metrics endpoint serves from start to end. One INFO line sums the run up at the end."""
        self._halted = False
        settings = self.settings
        began = time.monotonic()
        self._started_at = time.time()
        metrics = self._metrics_made()
        if metrics is not None and settings.metrics_port is not None:
            metrics.serve_for(settings)

        async def run_once() -> None:
            self._connected = False
            await self.open()
            self._connected = True
            run = self._run
            assert run is not None
            signals = Signals(self.settings.grace_period, self._halt_and_stop)
            signals.install(run.loop, install_signal_handlers)
            try:
                await run.serve(until_empty)
            finally:
                signals.remove(run.loop)
                await self.close()

        ran = True
        try:
            await supervise(
                run_once,
                self.settings,
                self.stats,
                connected=lambda: self._connected,
                halted=lambda: self._halted,
            )
        except SetupError:
            ran = False  # it could not run: the error says it all
            raise
        finally:
            if metrics is not None:
                await asyncio.to_thread(metrics.close)  # waits for the server's loop to end
            if ran:
                log_summary(self.settings.worker_id, self.stats, time.monotonic() - began)

    def _halt_and_stop(self) -> None:
        self._halted = True
        if self._run is not None:
            self._run.request_stop()
