"""One run of a worker: everything made in ``open()`` and dropped in ``close()``, together.

:class:`Run` holds the session (and, with ``results_connection``, the session that writes
results), the thread pool, the listener, the events and the parts that
use them (attempts, results, claimer, heartbeat, scheduler, maintenance). Nothing in it is
optional or reset: a new run is a new object. It wires the parts to each other (a finished
attempt frees a slot and wakes the claimer; a written result ends its attempt; a notification
wakes the part it concerns), runs the background loops beside the claim loop (as
``_loops.LoopTasks``: a failed loop ends the run) and shuts down gracefully.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from pgq_thin import calls
from pgq_thin.connection import AsyncSession, short_id
from pgq_thin.dsn import resolve_dsn
from pgq_thin.errors import SetupError
from pgq_thin.listener import (
    CancelRequested,
    Enqueued,
    Event,
    Listener,
    Scheduled,
    SchedulesChanged,
)
from pgq_thin.scheduler import Scheduler
from pgq_thin.worker import _presence
from pgq_thin.worker._attempts import Attempts
from pgq_thin.worker._claimer import Claimer
from pgq_thin.worker._heartbeat import Heartbeat
from pgq_thin.worker._loops import LOOP_ERRORS, LoopTasks, one_line, wait_event
from pgq_thin.worker._maintenance import Maintenance
from pgq_thin.worker._outcomes import Ending
from pgq_thin.worker._registry import Registry
from pgq_thin.worker._results import ResultBuffer
from pgq_thin.worker._settings import WorkerSettings, WorkerStats
from pgq_thin.worker._telemetry import Progress, Telemetry

if TYPE_CHECKING:
    pass

T = TypeVar("T")

SCHEDULER_TASK = "pgq-thin-scheduler"


class Run:
    """Use ``await Run.open(...)``; the constructor takes the opened session."""

    def __init__(
        self,
        settings: WorkerSettings,
        registry: Registry,
        stats: WorkerStats,
        session: AsyncSession,
        dsn: str,
        telemetry: Telemetry,
        results_session: AsyncSession | None = None,
    ) -> None:
        self.settings = settings
        self.stats = stats
        self.telemetry = telemetry
        self.log = telemetry.log
        self._registry = registry
        self.session = session
        self.results_session = results_session
        self._dsn = dsn
        self.loop = asyncio.get_running_loop()
        self.executor = ThreadPoolExecutor(
            max_workers=min(settings.threads, settings.concurrency),
            thread_name_prefix="pgq-thin-job",
        )
        self.stopping = asyncio.Event()
        self.schedule_wake = asyncio.Event()
        claimer_tick = asyncio.Event()  # the claim loop looks again (a slot freed, ...)
        # Results go by the next claim (one round trip), or by a connection of their own.
        write = self.call if results_session is None else self._call_results
        self.results = ResultBuffer(settings, stats, write, self._settled, telemetry)
        self.attempts = Attempts(
            settings,
            stats,
            registry.handlers,
            self.results,
            self.executor,
            claimer_tick.set,
            telemetry,
        )
        self.claimer = Claimer(
            settings,
            stats,
            registry.claimed,
            registry.claimed_async,
            self.attempts,
            self.results,
            self.call,
            self.stopping,
            claimer_tick,
            telemetry,
            registry.with_parent_results,
            carry=results_session is None,
        )
        self.heartbeat = Heartbeat(settings.worker_id, self.attempts, self.call, self.log)
        self.scheduler = Scheduler(settings.worker_id, registry.schedules, logger=self.log)
        self.listener = Listener(
            settings.listen_dsn or dsn,
            self._on_event,
            self._on_listener_connect,
            check_interval=settings.ping_interval,
            ping_timeout=settings.ping_timeout,
            application_name=f"pgq-thin listener {short_id(settings.worker_id)}",
        )
        self.maintenance = Maintenance(settings, stats, self.call, dsn, self.log)
        self.loops = LoopTasks(self.claimer.kick, self.log)
        session.on_reconnect = self._after_reconnect
        if results_session is not None:
            results_session.on_reconnect = self._after_results_reconnect

    @classmethod
    async def open(
        cls,
        settings: WorkerSettings,
        registry: Registry,
        stats: WorkerStats,
        telemetry: Telemetry,
    ) -> Run:
        dsn = await asyncio.to_thread(resolve_dsn, settings.dsn, who="ThinWorker")
        session = AsyncSession(
            dsn,
            reconnect_timeout=settings.reconnect_timeout,
            application_name=f"pgq-thin worker {short_id(settings.worker_id)}",
        )
        await session.open()
        results_session = None
        if settings.results_connection:
            results_session = AsyncSession(
                dsn,
                reconnect_timeout=settings.reconnect_timeout,
                application_name=f"pgq-thin results {short_id(settings.worker_id)}",
            )
            try:
                await results_session.open()
            except BaseException:
                await session.close()
                raise
        return cls(settings, registry, stats, session, dsn, telemetry, results_session)

    async def call(self, fn: Callable[[calls.AConn], Awaitable[T]]) -> T:
        """``fn`` on the session (reconnecting and re-running it after a loss). A missing
        schema or grant comes out of ``calls`` as a SetupError, which ends the run."""
        return await self.session.call(fn)

    async def _call_results(self, fn: Callable[[calls.AConn], Awaitable[T]]) -> T:
        """``fn`` on the results' own session (``results_connection``), as :meth:`call`."""
        assert self.results_session is not None
        return await self.results_session.call(fn)

    # --- the loops ----------------------------------------------------------------------------

    async def serve(self, until_empty: bool) -> None:
        """Start the background loops, claim until stopped, then shut down gracefully."""
        await self.register()
        self._start_background()
        settings = self.settings
        try:
            await self.claimer.loop(until_empty, self.loops.raise_failure, self._announce)
        except SetupError:
            raise  # nothing can be written either: no graceful shutdown
        except Exception:
            try:  # before a restart: let running jobs finish, write what can be written
                await asyncio.wait_for(self.shutdown(), settings.grace_period + 15.0)
            except Exception as err:
                self.log.warning("pgq-thin: shutdown after a failure did not complete: %r", err)
            raise
        await self.shutdown()

    async def register(self, conn: calls.AConn | None = None) -> None:
        """Announce the worker in ``pgq.workers``; from then on it heartbeats even when idle."""
        claimed = list(self._registry.claimed)
        if conn is None:
            reg = await self.call(lambda c: _presence.register(c, self.settings, claimed))
        else:
            reg = await _presence.register(conn, self.settings, claimed)
        self.heartbeat.idle_interval = reg.heartbeat_interval.total_seconds()

    def _announce(self) -> None:
        """The first claim came back: the worker is running (said once per run)."""
        settings = self.settings
        self.log.info(
            "pgq-thin worker %s started: entrypoints %s, concurrency %d, batch %d, %s",
            settings.worker_id,
            ", ".join(sorted(self._registry.claimed)) or "none",
            settings.concurrency,
            settings.batch_size,
            "fires due schedules" if settings.run_schedules else "fires no schedules",
        )

    def _start_background(self) -> None:
        settings, start = self.settings, self.loops.start
        start("pgq-thin-flush", self.results.loop())
        start("pgq-thin-heartbeat", self.heartbeat.loop())
        if settings.listen:
            start("pgq-thin-listener", self.listener.run())
        if settings.run_schedules or self._registry.schedules:
            # Every due schedule in the database, not only this worker's own (run_schedules
            # off: only registers its own schedules, fires none).
            fire = settings.run_schedules
            start(
                SCHEDULER_TASK,
                self.scheduler.run(self.call, self.schedule_wake, self.stopping, fire=fire),
            )
        for name, loop in self.maintenance.loops(self.stopping).items():
            start(name, loop)
        if settings.progress_interval is not None:
            start("pgq-thin-progress", self._progress(settings.progress_interval))

    async def _progress(self, interval: float) -> None:
        """An INFO line every ``interval`` seconds on a worker that finished something."""
        progress = Progress(self.stats)
        while not await wait_event(self.stopping, interval):
            progress.log(self.log)

    # --- run-once steps -----------------------------------------------------------------------

    async def schedule_once(self, at: datetime | None = None) -> list[calls.Row]:
        scheduler = self.scheduler
        return await self.call(lambda conn: scheduler.fire_due(conn, at))

    # --- stopping -----------------------------------------------------------------------------

    def request_stop_from_any_thread(self) -> None:
        """:meth:`request_stop`, from the loop's own thread or any other."""
        if self.loop.is_closed():
            return
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop and threading.current_thread() is threading.main_thread():
            self.request_stop()
        else:
            self.loop.call_soon_threadsafe(self.request_stop)

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            self.log.info("pgq-thin worker %s stopping: no new claims", self.settings.worker_id)
            self.stopping.set()
            self.claimer.kick()

    async def shutdown(self) -> None:
        """Graceful end: no new claims, running jobs get ``grace_period`` to finish, the rest
        are stopped, unstarted ones released, results written."""
        grace = self.settings.grace_period
        self.request_stop()
        for session in self._sessions():
            session.give_up_at(time.monotonic() + grace + 10.0)  # do not wait forever
        await self._stop_scheduler()
        await self.claimer.release_unstarted()
        if not await self.attempts.wait_idle(grace):
            self.attempts.abort_running()
            await self.attempts.wait_idle(1.0)
        await self.claimer.release_unstarted()
        await self.results.flush_all()
        await self._unregister()

    async def _unregister(self) -> None:
        """Leave the registry (jobs still held, if any, go stale as they would anyway)."""
        if self.heartbeat.idle_interval is None:
            return
        try:
            await self.call(lambda conn: _presence.unregister(conn, self.settings))
        except LOOP_ERRORS as err:
            self.log.warning("pgq-thin could not unregister the worker: %s", one_line(err))
        self.heartbeat.idle_interval = None

    async def _stop_scheduler(self) -> None:
        """Let the scheduler loop end between two fires, so no tick is left claimed (a tick
        left claimed would wait for its fire_timeout before another scheduler takes it)."""
        task = self.loops.named(SCHEDULER_TASK)
        if task is None or task.done():
            return
        self.schedule_wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=10.0)
        except TimeoutError:
            self.log.warning("pgq-thin scheduler did not stop within 10 s; cancelling it")

    async def close(self) -> None:
        """Stop the loops and handlers, close the connection and the thread pool. Results not
        yet written are lost here: :meth:`shutdown` first to finish cleanly."""
        tasks = self.loops.tasks + self.attempts.tasks()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for session in self._sessions():
            await session.close()
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _sessions(self) -> list[AsyncSession]:
        return [self.session] + ([self.results_session] if self.results_session else [])

    # --- wiring -------------------------------------------------------------------------------

    def _settled(self, results: list[Ending]) -> None:
        self.attempts.forget([(r.job_id, r.lease) for r in results])
        self.claimer.kick()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, Enqueued):
            self.claimer.on_enqueued(event.entrypoints)
        elif isinstance(event, Scheduled):
            self.claimer.on_scheduled(event.entrypoints)
        elif isinstance(event, CancelRequested):
            if not event.ids.isdisjoint(self.attempts.owned):
                self.heartbeat.wake()
        elif isinstance(event, SchedulesChanged):
            self.schedule_wake.set()

    def _on_listener_connect(self) -> None:
        if self.listener.connects > 1:
            self.stats.listener_reconnects += 1
        self.claimer.wake()  # poll once for what was missed while not listening
        self.schedule_wake.set()

    async def _after_reconnect(self, conn: calls.AConn) -> None:
        """First thing on a new session connection (before the call that met the broken one
        is re-run): heartbeat every owned job, so none goes stale while the loops catch up;
        then wake the claim loop (claim once), the flush and the scheduler."""
        self.stats.reconnects += 1
        await self.heartbeat.on_connection(conn)
        if self.heartbeat.idle_interval is not None:  # pruned if the outage was long
            try:
                await self.register(conn)
            except LOOP_ERRORS as err:
                self.log.warning("pgq-thin could not register again: %s", one_line(err))
        self.claimer.wake()
        self.results.flush_soon()
        self.schedule_wake.set()

    async def _after_results_reconnect(self, conn: calls.AConn) -> None:
        """A new connection for results: the write that met the broken one is sent again on
        it (``pgq.complete`` is idempotent); nothing else to catch up."""
        self.stats.reconnects += 1
