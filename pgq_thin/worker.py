"""``ThinWorker``: claims jobs, runs the registered handlers, reports back. No queue logic.

The worker is a loop over five SQL calls (``pgq.claim``, ``pgq.heartbeat``, ``pgq.complete``,
``pgq.release``, ``pgq.next_run_at``); retries, backoff, concurrency limits, stale recovery and
cancellation are decided by those functions. What the worker does:

* **claim**: when it has free slots, claim ``min(batch_size, free slots)`` jobs of its
  entrypoints and start one task per job. Async handlers run on the event loop; sync handlers
  on a thread pool of ``concurrency`` threads. It claims again at once while claims come back
  full, otherwise when a notification arrives, at the (jittered) poll interval, or when the
  next delayed job is due, whichever is first. A full claim that leaves slots free sends the
  claim of the next batch before its own jobs are taken in (claim ahead: the server claims
  while the process runs jobs; ``concurrency = 2 * batch_size`` gives it room).
* **complete**: finished attempts are buffered and written with one ``pgq.complete``: in the
  round trip of the next claim when one is about to go out, else by the flush loop, at once
  when nothing else runs or ``flush_size`` results wait, else after ``flush_interval``. A
  failed write keeps the results (with their leases) for the next call.
* **heartbeat**: every running (or finished but unflushed) job is kept alive by one
  ``pgq.heartbeat`` call per interval, a third of the smallest heartbeat timeout among them.
  ``lost`` cancels the local task and drops its result; ``cancel_requested`` cancels it (async:
  ``task.cancel()``; sync: ``job.cancelled`` is set) and it is completed as ``canceled``.
* **listen**: a dedicated connection LISTENs on ``pgq_events``; ``enqueued`` wakes the claim
  loop, ``cancel`` naming a local job triggers an immediate heartbeat (the heartbeat answer,
  not the notification, is the truth).
* **shutdown** (``stop()``, SIGTERM, SIGINT): stop claiming, let running jobs finish within
  ``grace_period``, then cancel the rest and fail them with ``retry_after`` 0 so another
  worker retries at once; ``pgq.release`` claimed jobs that never started; flush; return. A
  second signal exits the process at once (heartbeats expiring are the safety net).

Connections: one autocommit connection (:class:`~pgq_thin.connection.AsyncSession`) carries
claim, heartbeat, complete and release, serialized by a lock; the listener has its own
(``listen_dsn``: direct to PostgreSQL when the calls go through a transaction-mode pooler).

Connection loss is routine: the session reconnects in place (with backoff) and re-runs the
interrupted call, so no loop needs its own reconnect logic. On every new connection the worker
first heartbeats the jobs it owns, then claims once and flushes what it buffered, with the
original leases; handlers keep running throughout. A result whose lease was lost meanwhile is
counted in ``stats.rejected`` and logged, never retried. An error no loop can handle ends the
run, and ``run``/``arun`` restart the worker (``restart_on_failure``, on by default) up to
``max_restarts`` times in a row, with backoff.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

import psycopg

from pgq_thin import calls
from pgq_thin.connection import AsyncSession, Backoff, resolve_dsn
from pgq_thin.cron import CronSchedule
from pgq_thin.errors import PgqError, PgqThinError
from pgq_thin.job import (
    CancelJob,
    Job,
    PayloadValidationError,
    RetryAfter,
    failure_details,
    is_model,
    payload_type_of,
    validate_payload,
)
from pgq_thin.listener import Event, Listener
from pgq_thin.scheduler import Scheduler, ScheduleSpec

log = logging.getLogger(__name__)

# Longest sleep of the scheduler loop between looks at pgq.next_schedule_at().
SCHEDULE_MAX_SLEEP = 60.0
# Most pgq.prune_history batches (of calls.PRUNE_BATCH rows) in one maintenance pass.
MAINTENANCE_BATCHES = 20

Handler = Callable[[Job[Any]], Any]
H = TypeVar("H", bound=Handler)

MAX_FLUSH = 1000  # results per pgq.complete call


class UnknownEntrypoint(PgqThinError):
    """An entrypoint name the worker has no handler for."""


@dataclass(frozen=True)
class _Handler:
    name: str
    fn: Handler
    is_async: bool
    payload_type: type | None


@dataclass(eq=False)
class _Active:
    """A claimed job this worker owns (running, or finished with its result not yet written)."""

    job: Job[Any]
    handler: _Handler
    task: asyncio.Task[None] | None = None
    started: bool = False
    finished: bool = False
    released: bool = False
    lost: bool = False
    cancel_requested: bool = False
    aborted: bool = False
    reported: bool = False


@dataclass(eq=False)
class _Result:
    active: _Active
    status: str
    details: dict[str, Any] | None


@dataclass
class WorkerStats:
    """Counts of what this worker did since it started (results as accepted by the server)."""

    claimed: int = 0
    successful: int = 0
    failed: int = 0
    canceled: int = 0
    lost: int = 0
    released: int = 0
    aborted: int = 0
    #: results the server did not accept at flush: the lease was lost (also counted in lost)
    rejected: int = 0
    #: new connections of the session after a loss, and re-LISTENs of the listener
    reconnects: int = 0
    listener_reconnects: int = 0
    #: times the supervisor restarted the worker after an unrecoverable error
    restarts: int = 0

    @property
    def finished(self) -> int:
        return self.successful + self.failed + self.canceled


_RELEASED = object()


class ThinWorker:
    """Runs handlers for jobs of the entrypoints registered with :meth:`entrypoint`.

    :param dsn: the database (default: see :mod:`pgq_thin.connection`).
    :param concurrency: jobs run at once (also the size of the thread pool for sync handlers).
    :param batch_size: most jobs claimed by one ``pgq.claim`` call.
    :param poll_interval: seconds between polls when idle (jittered by +-20 %); the worker
        also wakes on notifications and when the next delayed job is due.
    :param worker_id: this worker's UUID in the database (default: a new random one).
    :param grace_period: seconds running jobs get to finish after a stop request.
    :param flush_interval: longest time a finished result waits before it is written.
    :param flush_size: results that trigger a write at once (default: ``batch_size``).
    :param listen: LISTEN for notifications (off: polling only, e.g. behind a
        transaction-mode pooler when no direct connection is allowed).
    :param listen_dsn: where to LISTEN (default: ``dsn``); a direct connection to PostgreSQL
        when ``dsn`` points at a transaction-mode pooler.
    :param ping_interval: the listener pings its connection after this many quiet seconds.
    :param ping_timeout: a ping not answered within this many seconds counts as a lost
        listener connection (it is replaced at once).
    :param reconnect_timeout: seconds without a working connection after which the run fails
        (and the supervisor restarts it); None: keep reconnecting forever.
    :param restart_on_failure: ``run``/``arun`` restart the worker after an unrecoverable error.
    :param max_restarts: consecutive restarts before giving up (the count resets after a run
        that lasted ``restart_reset_after`` seconds).
    :param restart_delay: base of the restart backoff (doubling, capped at 30 s, jittered).
    :param history_retention: finished jobs older than this are pruned from
        ``pgq.job_history`` (``pgq.prune_history``, a few batches every
        ``maintenance_interval`` seconds; workers never wait for each other). None: keep all.
    :param maintenance_interval: seconds between pruning passes (jittered by +-20 %).
    :param compact_interval: seconds between calls of ``pgq.compact_jobs`` (jittered by
        +-20 %), which rewrites ``pgq.jobs`` to its compact size when dead row versions have
        bloated it (a cheap check unless it does). None: never compact.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        concurrency: int = 10,
        batch_size: int = 10,
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
        compact_interval: float | None = 5.0,
    ) -> None:
        self.dsn = dsn
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.worker_id = uuid.UUID(str(worker_id)) if worker_id else uuid.uuid4()
        self.grace_period = grace_period
        self.flush_interval = flush_interval
        self.flush_size = flush_size
        self.listen = listen
        self.listen_dsn = listen_dsn
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.reconnect_timeout = reconnect_timeout
        self.restart_on_failure = restart_on_failure
        self.max_restarts = max_restarts
        self.restart_delay = restart_delay
        self.restart_reset_after = restart_reset_after
        self.history_retention = history_retention
        self.maintenance_interval = maintenance_interval
        self.compact_interval = compact_interval
        self.stats = WorkerStats()
        self._halted = False  # stop() was called: the supervisor must not restart
        # guards the started / released flags a sync handler's thread and the loop both look at
        self._start_lock = threading.Lock()
        self._session_was_open = False
        self._handlers: dict[str, _Handler] = {}
        self._schedules: dict[str, ScheduleSpec] = {}
        self._only: set[str] | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self._session: AsyncSession | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active: dict[int, _Active] = {}
        self._running: set[_Active] = set()
        self._results: list[_Result] = []
        self._background: list[asyncio.Task[None]] = []
        self._signals = 0
        self._notified = False
        self._more = False  # the last claim came back full: the claim loop claims again at once
        self._tick: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None
        self._results_ready: asyncio.Event | None = None
        self._flush_now: asyncio.Event | None = None
        self._hb_wake: asyncio.Event | None = None
        self._active_changed: asyncio.Event | None = None
        self._listener: Listener | None = None
        self._flush_lock: asyncio.Lock | None = None
        self._schedule_wake: asyncio.Event | None = None
        self._scheduler: Scheduler | None = None
        self._failure: BaseException | None = None

    # --- registration -------------------------------------------------------------------------

    def entrypoint(self, name: str, *, payload_type: type | None = None) -> Callable[[H], H]:
        """Register the decorated function as the handler of ``name``.

        The handler takes one :class:`~pgq_thin.job.Job`. ``async def`` handlers run on the
        event loop, plain functions on the thread pool. With ``payload_type`` (or an
        annotation ``job: Job[T]``) naming a dataclass or pydantic model, the payload is
        validated into it first; a mismatch fails the attempt.
        """
        if not name:
            raise ValueError("an entrypoint needs a non-empty name")
        if payload_type is not None and not is_model(payload_type):
            raise TypeError(f"payload_type must be a dataclass or pydantic model: {payload_type}")

        def register(fn: H) -> H:
            if name in self._handlers:
                raise ValueError(f"entrypoint {name!r} is already registered")
            self._handlers[name] = _Handler(
                name=name,
                fn=fn,
                is_async=inspect.iscoroutinefunction(fn),
                payload_type=payload_type or payload_type_of(fn),
            )
            return fn

        return register

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
    ) -> Callable[[H], H]:
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
        spec = ScheduleSpec(
            cron=CronSchedule(cron, timezone),
            entrypoint=entrypoint,
            name=name or entrypoint,
            payload=payload,
            priority=priority,
            headers=headers,
            catch_up=catch_up,
            misfire_grace=misfire_grace,
            fire_timeout=fire_timeout,
        )
        if spec.name in self._schedules:
            raise ValueError(
                f"schedule {spec.name!r} is already registered; pass name= to tell them apart"
            )
        self._schedules[spec.name] = spec

        def register(fn: H) -> H:
            return self.entrypoint(entrypoint)(fn)

        return register

    @property
    def schedules(self) -> list[ScheduleSpec]:
        """The schedules this worker registers and fires."""
        return list(self._schedules.values())

    @property
    def entrypoints(self) -> list[str]:
        """The entrypoints this worker claims, sorted."""
        names = self._handlers.keys() if self._only is None else self._only
        return sorted(names)

    def restrict(self, names: Iterable[str]) -> None:
        """Claim only these registered entrypoints (e.g. ``pgq-thin run --entrypoint``)."""
        wanted = set(names)
        unknown = sorted(wanted - self._handlers.keys())
        if unknown:
            known = ", ".join(sorted(self._handlers)) or "none"
            raise UnknownEntrypoint(
                f"unknown entrypoint(s) {', '.join(unknown)}; this worker has: {known}"
            )
        self._only = wanted or None

    # --- lifecycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect; needed before the run-once steps (``arun`` does it itself)."""
        if self._session is not None:
            return
        if not self._handlers and not self._schedules:
            raise UnknownEntrypoint("the worker has no entrypoints: register a handler first")
        self._loop = asyncio.get_running_loop()
        self._tick = asyncio.Event()
        self._stopping = asyncio.Event()
        self._results_ready = asyncio.Event()
        self._flush_now = asyncio.Event()
        self._hb_wake = asyncio.Event()
        self._active_changed = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._schedule_wake = asyncio.Event()
        if self._schedules:
            self._scheduler = Scheduler(self.worker_id, self._schedules.values())
        dsn = await asyncio.to_thread(resolve_dsn, self.dsn)
        session = AsyncSession(
            dsn, reconnect_timeout=self.reconnect_timeout, on_reconnect=self._after_reconnect
        )
        await session.open()
        self._session = session
        self._executor = ThreadPoolExecutor(
            max_workers=self.concurrency, thread_name_prefix="pgq-thin-job"
        )
        if self.listen:
            listen_dsn = self.listen_dsn or dsn
            self._listener = Listener(
                listen_dsn,
                self._on_event,
                self._on_listener_connect,
                check_interval=self.ping_interval,
                ping_timeout=self.ping_timeout,
            )

    async def close(self) -> None:
        """Stop background tasks, close connections. Results not yet written are lost here:
        call :meth:`shutdown` (or let ``arun`` do it) to finish cleanly."""
        tasks = self._background + [a.task for a in self._running if a.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._reset_state()

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
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.current_thread() is threading.main_thread() and _running_loop() is loop:
            self._request_stop()
        else:
            loop.call_soon_threadsafe(self._request_stop)

    def _request_stop(self) -> None:
        if self._stopping is not None and not self._stopping.is_set():
            log.info("pgq-thin worker %s stopping: no new claims", self.worker_id)
            self._stopping.set()
            self._kick()

    @property
    def backend_pids(self) -> dict[str, int | None]:
        """Server processes of the worker's connections (``session``, ``listener``), for
        operations and fault tests (``pg_terminate_backend``); None when not connected."""
        return {
            "session": None if self._session is None else self._session.backend_pid,
            "listener": None if self._listener is None else self._listener.backend_pid,
        }

    @property
    def stopping(self) -> bool:
        return self._stopping is not None and self._stopping.is_set()

    # --- run ------------------------------------------------------------------------------------

    def run(self, *, until_empty: bool = False) -> None:
        """Run until stopped (SIGTERM/SIGINT) or, with ``until_empty``, until a claim finds
        nothing and nothing runs. Returns after a graceful shutdown."""
        asyncio.run(self.arun(until_empty=until_empty))
        self.abandon_stuck_threads()

    def abandon_stuck_threads(self) -> None:
        """After a shutdown that had to abort sync handlers (past the grace period), end the
        process now: their threads cannot be killed and would keep it alive. Results are
        already written; call this only where exiting the process is right."""
        if self.stats.aborted and any(
            t.name.startswith("pgq-thin-job") and t.is_alive() for t in threading.enumerate()
        ):
            log.warning("pgq-thin: sync handlers still running after shutdown; exiting anyway")
            logging.shutdown()
            os._exit(0)

    async def arun(
        self, *, until_empty: bool = False, install_signal_handlers: bool | None = None
    ) -> None:
        """The async form of :meth:`run`. Signal handlers are installed when called from the
        main thread (``install_signal_handlers`` forces either way).

        The supervisor: when a run fails with an error the worker cannot handle in place (a
        broken loop, no connection for ``reconnect_timeout``), it is shut down as gracefully
        as possible and started again after a backoff, up to ``max_restarts`` times in a row;
        then the error is raised. A failure of the very first start (a bad DSN, no
        entrypoints) is raised at once, and so is any failure with ``restart_on_failure`` off.
        """
        self._halted = False
        restarts = 0
        started_once = False
        while True:
            begun = time.monotonic()
            try:
                await self._arun_once(until_empty, install_signal_handlers)
                return
            except (UnknownEntrypoint, asyncio.CancelledError):
                raise
            except Exception as err:
                started_once = started_once or self._session_was_open
                if not (self.restart_on_failure and started_once) or self._halted:
                    raise
                if time.monotonic() - begun >= self.restart_reset_after:
                    restarts = 0
                restarts += 1
                if restarts > self.max_restarts:
                    log.error(
                        "pgq-thin worker %s failed %d times in a row; giving up: %r",
                        self.worker_id,
                        restarts,
                        err,
                    )
                    raise
                delay = min(30.0, self.restart_delay * 2 ** (restarts - 1))
                delay *= random.uniform(0.5, 1.0)
                log.error(
                    "pgq-thin worker %s failed (%r); restart %d of %d in %.1f s",
                    self.worker_id,
                    err,
                    restarts,
                    self.max_restarts,
                    delay,
                    exc_info=err,
                )
                self.stats.restarts += 1
                deadline = time.monotonic() + delay
                while not self._halted and time.monotonic() < deadline:
                    await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
                if self._halted:
                    return

    async def _arun_once(self, until_empty: bool, install_signal_handlers: bool | None) -> None:
        self._session_was_open = False
        await self.open()
        self._session_was_open = True
        loop = asyncio.get_running_loop()
        if install_signal_handlers is None:
            install_signal_handlers = threading.current_thread() is threading.main_thread()
        installed: list[signal.Signals] = []
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._on_signal, sig)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError):  # not on this platform/loop
                    pass
        try:
            self._start_background()
            log.info(
                "pgq-thin worker %s started: entrypoints %s, concurrency %d, batch %d",
                self.worker_id,
                ", ".join(self.entrypoints),
                self.concurrency,
                self.batch_size,
            )
            try:
                await self._claim_loop(until_empty)
            except Exception:
                await self._shutdown_after_failure()
                raise
            await self.shutdown()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            await self.close()

    async def _shutdown_after_failure(self) -> None:
        """Before a restart: let running jobs finish and write what can be written."""
        try:
            await asyncio.wait_for(self.shutdown(), self.grace_period + 15.0)
        except Exception as err:
            log.warning("pgq-thin: shutdown after a failure did not complete: %r", err)

    def _on_signal(self, sig: signal.Signals) -> None:
        self._halted = True
        self._signals += 1
        if self._signals == 1:
            log.warning(
                "pgq-thin worker got %s: finishing running jobs (up to %g s); "
                "send it again to exit at once",
                sig.name,
                self.grace_period,
            )
            self._request_stop()
        else:
            log.warning("pgq-thin worker got %s again: exiting now", sig.name)
            logging.shutdown()
            os._exit(128 + int(sig))

    def _start_background(self) -> None:
        self._background = [
            asyncio.create_task(self._flush_loop(), name="pgq-thin-flush"),
            asyncio.create_task(self._heartbeat_loop(), name="pgq-thin-heartbeat"),
        ]
        if self._listener is not None:
            self._background.append(
                asyncio.create_task(self._listener.run(), name="pgq-thin-listener")
            )
        if self._scheduler is not None:  # no schedules: no scheduler loop, no schedule queries
            self._background.append(
                asyncio.create_task(self._schedule_loop(), name="pgq-thin-scheduler")
            )
        if self.history_retention is not None:
            self._background.append(
                asyncio.create_task(
                    self._periodic(self.maintenance_interval, self.maintain_once, "pruning"),
                    name="pgq-thin-maintenance",
                )
            )
        if self.compact_interval is not None:
            self._background.append(
                asyncio.create_task(
                    self._periodic(self.compact_interval, self.compact_once, "compaction"),
                    name="pgq-thin-compaction",
                )
            )
        for task in self._background:
            task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[None]) -> None:
        """A background loop must run until cancelled; one that ended with an error fails the
        run (the claim loop raises it), so the supervisor can restart the worker."""
        if task.cancelled() or task.exception() is None:
            return
        if self._failure is None:
            self._failure = task.exception()
            log.error("pgq-thin %s loop failed: %r", task.get_name(), self._failure)
        self._kick()

    async def _claim_loop(self, until_empty: bool) -> None:
        assert self._tick is not None and self._stopping is not None
        if not self._handlers:  # a scheduler-only worker: nothing to claim
            while not self._stopping.is_set():
                self._raise_failure()
                self._tick.clear()
                await self._tick.wait()
            return
        self._more = True  # the last claim came back full: there is probably more
        next_poll = 0.0
        backoff = Backoff(base=0.5, cap=30.0)
        # A claim sent before the jobs of the previous one are taken in (see below).
        ahead: tuple[int, asyncio.Task[list[tuple[Any, ...]]]] | None = None
        try:
            while not self._stopping.is_set():
                self._raise_failure()
                self._tick.clear()
                free = self.concurrency - len(self._running)
                drained = until_empty and not self._running
                due = self._notified or self._more or time.monotonic() >= next_poll or drained
                if ahead is None and not (free > 0 and due):
                    self._wake_flush()
                    await _wait(self._tick, max(0.0, next_poll - time.monotonic()))
                    continue
                self._notified = False
                try:
                    if ahead is not None:
                        (asked, claiming), ahead = ahead, None
                        rows = await claiming
                    else:
                        asked = min(self.batch_size, free)
                        rows = await self._claim_rows(asked)
                    self._more = len(rows) == asked
                    spare = self.concurrency - len(self._running) - len(rows)
                    if self._more and spare > 0 and not self.stopping:
                        # Claim the next batch now: the database works on it while this
                        # process starts and runs the jobs just claimed. Let it send first.
                        n = min(self.batch_size, spare)
                        ahead = (n, asyncio.create_task(self._claim_rows(n)))
                        await asyncio.sleep(0)
                    jobs = await self._take_in(rows, start=True)
                    if not jobs and drained:
                        return  # nothing ran, nothing was left to write, nothing came back
                    if until_empty and not self._running:
                        continue  # re-check at once whether the queue is drained
                    wait = self._jittered_poll() if jobs else await self._idle_wait()
                    next_poll = time.monotonic() + wait
                    backoff.reset()
                except psycopg.OperationalError as err:  # not a lost connection: the session
                    delay = max(0.5, backoff.next_delay())  # reconnects and retries those
                    log.warning("pgq-thin claim failed (%s); retrying in %.1f s", err, delay)
                    self._more = False
                    next_poll = time.monotonic() + delay
        finally:
            if ahead is not None:
                await self._take_in_unstarted(ahead[1])

    async def _take_in_unstarted(self, claiming: asyncio.Task[list[tuple[Any, ...]]]) -> None:
        """The claim loop ends with a claim in flight: its jobs are taken in unstarted, to be
        released (at once when stopping, else by the shutdown) rather than left to go stale.
        Cancelled, it cancels the claim too (jobs of a claim that committed then go stale)."""
        try:
            rows = await claiming
        except asyncio.CancelledError:
            claiming.cancel()
            raise
        except Exception as err:
            log.warning("pgq-thin claim failed (%s)", err)
            return
        await self._take_in(rows, start=False)

    def _wake_flush(self) -> None:
        """The claim loop is about to wait: buffered results are the flush loop's to write."""
        if self._results and self._results_ready is not None:
            self._results_ready.set()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _jittered_poll(self) -> float:
        return self.poll_interval * random.uniform(0.8, 1.2)

    async def _idle_wait(self) -> float:
        """How long to sleep after an empty claim: the poll, or less if a delayed job is due."""
        wait = self._jittered_poll()
        assert self._session is not None
        entrypoints = self.entrypoints
        due_in = await self._session.call(lambda conn: calls.anext_due_in(conn, entrypoints))
        if due_in is not None:
            wait = min(wait, max(due_in, 0.0) + 0.005)
        return wait

    def _kick(self) -> None:
        if self._tick is not None:
            self._tick.set()

    # --- listener callbacks ---------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        kind = event.get("kind")
        if kind == "enqueued":
            names = event.get("entrypoints") or []
            if any(n in self._handlers for n in names):
                self._notified = True
                self._kick()
        elif kind == "schedules":
            if self._schedule_wake is not None:
                self._schedule_wake.set()
        elif kind == "cancel":
            ids = event.get("ids") or []
            if any(i in self._active for i in ids) and self._hb_wake is not None:
                self._hb_wake.set()

    def _on_listener_connect(self) -> None:
        if self._listener is not None and self._listener.connects > 1:
            self.stats.listener_reconnects += 1
        self._notified = True  # poll once for what was missed while not listening
        self._kick()
        if self._schedule_wake is not None:
            self._schedule_wake.set()

    async def _after_reconnect(self, conn: calls.AConn) -> None:
        """First thing on a new session connection (before the call that met the broken one
        is re-run): heartbeat every job this worker owns, so none goes stale while the loops
        catch up; then wake the claim loop (claim once), the flush and the scheduler."""
        self.stats.reconnects += 1
        actives = list(self._active.values())
        if actives:
            self._apply_heartbeat(actives, await self._send_heartbeat(conn, actives))
        self._notified = True
        self._kick()
        if self._results and self._results_ready is not None and self._flush_now is not None:
            self._flush_now.set()
            self._results_ready.set()
        if self._schedule_wake is not None:
            self._schedule_wake.set()

    # --- run-once steps -------------------------------------------------------------------------

    async def claim_once(self, *, start: bool = True) -> list[Job[Any]]:
        """Claim up to ``min(batch_size, free slots)`` jobs and start them (unless
        ``start=False``: then they stay claimed but unstarted, see :meth:`release_unstarted`).
        Jobs claimed while stopping are released at once."""
        assert self._session is not None, "call open() first"
        asked = min(self.batch_size, self.concurrency - len(self._running))
        if asked <= 0 or not self._handlers:
            return []
        return await self._take_in(await self._claim_rows(asked), start=start)

    async def _claim_rows(self, asked: int) -> list[tuple[Any, ...]]:
        """One ``pgq.claim`` of up to ``asked`` jobs, with the buffered results written in the
        same round trip (unless a flush is writing them already)."""
        assert self._session is not None and self._flush_lock is not None
        entrypoints = self.entrypoints
        if self._results and not self._flush_lock.locked():
            # Results are waiting: write them in the same round trip as this claim.
            async with self._flush_lock:
                batch, done = self._take_results()
                try:
                    accepted, rows = await self._session.call(
                        lambda conn: calls.acomplete_and_claim(
                            conn, self.worker_id, done, entrypoints, asked
                        )
                    )
                except BaseException:
                    self._results[:0] = batch
                    raise
                self._settle(batch, set(accepted))
        else:
            rows = await self._session.call(
                lambda conn: calls.aclaim(conn, self.worker_id, entrypoints, asked)
            )
        return rows

    async def _take_in(self, rows: list[tuple[Any, ...]], *, start: bool) -> list[Job[Any]]:
        """Own the claimed rows: jobs started (or, when stopping, released at once)."""
        jobs: list[Job[Any]] = []
        new: list[_Active] = []
        for row in rows:
            job = Job.from_claimed(row)
            previous = self._active.get(job.id)
            if previous is not None:  # our own old attempt went stale and was re-claimed
                self._lose(previous)
            active = _Active(job=job, handler=self._handlers[job.entrypoint])
            self._active[job.id] = active
            new.append(active)
            jobs.append(job)
        self.stats.claimed += len(jobs)
        if new and self._active_changed is not None:
            self._active_changed.set()
        if self.stopping:
            await self.release_unstarted()
        elif start:
            for active in new:
                self._start(active)
        return jobs

    async def flush_once(self) -> int:
        """Write buffered results with one ``pgq.complete`` call; returns how many were sent.
        On a failed call the results stay buffered (with their leases) and the error is raised."""
        assert self._session is not None and self._flush_lock is not None, "call open() first"
        async with self._flush_lock:  # one flush at a time: waiting for it means it is written
            return await self._flush_locked()

    async def _flush_locked(self) -> int:
        assert self._session is not None
        batch, args = self._take_results()
        if not batch:
            return 0
        try:
            accepted = set(
                await self._session.call(lambda conn: calls.acomplete(conn, self.worker_id, *args))
            )
        except BaseException:
            self._results[:0] = batch
            raise
        self._settle(batch, accepted)
        return len(batch)

    def _take_results(
        self,
    ) -> tuple[list[_Result], tuple[list[int], list[int], list[str], list[Any]]]:
        """Take up to MAX_FLUSH buffered results and the ``pgq.complete`` arrays for them. The
        leases are those of the claim, whatever connection the call ends up on: the session
        re-runs the same call after a reconnect (``pgq.complete`` is idempotent)."""
        batch = [r for r in self._results[:MAX_FLUSH] if not r.active.lost]
        del self._results[:MAX_FLUSH]
        args = (
            [r.active.job.id for r in batch],
            [r.active.job.lease for r in batch],
            [r.status for r in batch],
            [r.details for r in batch],
        )
        return batch, args

    def _settle(self, batch: list[_Result], accepted: set[int]) -> None:
        """Account for written results: accepted ones by status, the rest as lost leases."""
        rejected: list[int] = []
        for r in batch:
            job_id = r.active.job.id
            if self._active.get(job_id) is r.active:
                del self._active[job_id]
            if job_id not in accepted:
                rejected.append(job_id)
                self.stats.rejected += 1
                if not r.active.lost:  # a heartbeat may have said so already
                    r.active.lost = True
                    self.stats.lost += 1
            elif r.status == "successful":
                self.stats.successful += 1
            elif r.status == "failed":
                self.stats.failed += 1
            else:
                self.stats.canceled += 1
        if rejected:
            log.warning(
                "pgq-thin: %d result(s) not accepted, their lease was lost (the job went stale "
                "and was claimed again, or was cancelled): jobs %s",
                len(rejected),
                ", ".join(map(str, rejected[:20])) + (" ..." if len(rejected) > 20 else ""),
            )
        if self._results and self._results_ready is not None:
            self._results_ready.set()
        self._kick()

    async def heartbeat_once(self) -> dict[int, str]:
        """Beat for every job this worker owns with one ``pgq.heartbeat``; act on the answers
        (``lost``, ``cancel_requested``). Returns ``{job id: state}``."""
        assert self._session is not None, "call open() first"
        actives = list(self._active.values())
        if not actives:
            return {}
        answers = await self._session.call(lambda conn: self._send_heartbeat(conn, actives))
        return self._apply_heartbeat(actives, answers)

    async def _send_heartbeat(
        self, conn: calls.AConn, actives: list[_Active]
    ) -> list[tuple[int, str]]:
        ids, leases = [a.job.id for a in actives], [a.job.lease for a in actives]
        return await calls.aheartbeat(conn, self.worker_id, ids, leases)

    def _apply_heartbeat(
        self, actives: list[_Active], answers: list[tuple[int, str]]
    ) -> dict[int, str]:
        by_id = {a.job.id: a for a in actives}
        for job_id, state in answers:
            active = by_id[job_id]
            if self._active.get(job_id) is not active:
                continue  # flushed meanwhile
            if state == "lost":
                self._lose(active)
            elif state == "cancel_requested":
                self._cancel(active)
        return dict(answers)

    async def release_unstarted(self) -> list[int]:
        """Give back (``pgq.release``) claimed jobs whose handler has not started."""
        assert self._session is not None, "call open() first"
        todo: list[_Active] = []
        for active in list(self._active.values()):
            with self._start_lock:
                if active.started or active.finished or active.lost:
                    continue
                active.released = True
            todo.append(active)  # its task, if any, ends at its first step
        if not todo:
            return []
        ids, leases = [a.job.id for a in todo], [a.job.lease for a in todo]
        released = await self._session.call(
            lambda conn: calls.arelease(conn, self.worker_id, ids, leases)
        )
        for active in todo:
            if self._active.get(active.job.id) is active:
                del self._active[active.job.id]
        self.stats.released += len(released)
        return released

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no handler runs; True if that happened within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._running:
            tasks = [a.task for a in self._running if a.task is not None]
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(tasks, timeout=remaining)
        return True

    async def shutdown(self) -> None:
        """Graceful end: no new claims, running jobs get ``grace_period`` to finish, the rest
        are cancelled and failed for an immediate retry elsewhere, unstarted ones released,
        results flushed."""
        self._request_stop()
        if self._session is not None:  # with the database gone, do not wait for it forever
            self._session.give_up_at(time.monotonic() + self.grace_period + 10.0)
        await self._stop_scheduler()
        await self.release_unstarted()
        if not await self.wait_idle(self.grace_period):
            self._abort_running()
            await self.wait_idle(1.0)
        await self.release_unstarted()
        await self.flush_once()  # waits for a flush in flight
        while self._results:
            await self.flush_once()

    async def _stop_scheduler(self) -> None:
        """Let the scheduler loop end between two fires, so no tick is left claimed (a tick
        left claimed would wait for its fire_timeout before another scheduler takes it)."""
        task = next((t for t in self._background if t.get_name() == "pgq-thin-scheduler"), None)
        if task is None or task.done():
            return
        if self._schedule_wake is not None:
            self._schedule_wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=10.0)
        except TimeoutError:
            log.warning("pgq-thin scheduler did not stop within 10 s; cancelling it")

    def _abort_running(self) -> None:
        for active in list(self._running):
            log.warning(
                "pgq-thin: job %s (%s) still running after the %g s grace period; cancelling it",
                active.job.id,
                active.job.entrypoint,
                self.grace_period,
            )
            active.aborted = True
            self.stats.aborted += 1
            self._stop_task(active)
            if not active.handler.is_async:
                # The thread cannot be killed: report now, ignore whatever it returns later.
                self._report(active, "failed", _aborted_details(self.grace_period))
                self._running.discard(active)

    # --- running one job ------------------------------------------------------------------------

    def _start(self, active: _Active) -> None:
        self._running.add(active)
        active.task = asyncio.create_task(self._execute(active))

    async def _execute(self, active: _Active) -> None:
        """One job's task: runs the handler, reports the outcome, frees the slot. Its task is
        never cancelled before its first step (see :meth:`_stop_task`), so the ``finally``
        always runs."""
        try:
            await self._run_and_report(active)
        finally:
            self._running.discard(active)  # its slot is free from here
            self._kick()

    async def _run_and_report(self, active: _Active) -> None:
        job, handler = active.job, active.handler
        status, details = "successful", None
        try:
            if active.released or active.lost or active.cancel_requested or active.aborted:
                raise asyncio.CancelledError  # stopped before it started
            if handler.is_async:
                active.started = True
                if handler.payload_type is not None:
                    job.payload = validate_payload(handler.payload_type, job.raw_payload)
                result = await handler.fn(job)
            else:
                assert self._loop is not None and self._executor is not None
                _ = job.cancelled  # made here, before the handler's thread can look at it
                result = await self._loop.run_in_executor(self._executor, self._call_sync, active)
                if result is _RELEASED:
                    return
            details = _result_details(result)
        except asyncio.CancelledError:
            if active.released or active.lost:
                return
            if not (active.cancel_requested or active.aborted):
                raise
            status, details = "canceled", {"error": "CancelledError", "message": "cancelled"}
        except CancelJob as err:
            status, details = "canceled", {"error": "CancelJob", "message": str(err)}
        except RetryAfter as err:
            status, details = (
                "failed",
                {
                    "error": "RetryAfter",
                    "message": str(err),
                    "retry_after": err.seconds,
                },
            )
        except PayloadValidationError as err:
            status, details = "failed", {"error": "PayloadValidationError", "message": str(err)}
        except Exception as err:
            status, details = "failed", failure_details(err)
            log.info("pgq-thin job %s (%s) failed: %r", job.id, job.entrypoint, err)
        finally:
            active.finished = True
        if active.aborted:
            status, details = "failed", _aborted_details(self.grace_period)
        elif active.cancel_requested:
            status = "canceled"
            details = {**(details or {}), "cancel_requested": True}
        self._report(active, status, details)

    def _call_sync(self, active: _Active) -> Any:
        with self._start_lock:
            if active.released:
                return _RELEASED
            active.started = True
        handler, job = active.handler, active.job
        if handler.payload_type is not None:
            job.payload = validate_payload(handler.payload_type, job.raw_payload)
        return handler.fn(job)

    def _report(self, active: _Active, status: str, details: dict[str, Any] | None) -> None:
        if active.lost or active.reported:
            return
        active.reported = True
        self._results.append(_Result(active, status, details))
        assert self._results_ready is not None and self._flush_now is not None
        flush_size = self.flush_size or self.batch_size
        # Nothing else runs: write now rather than wait for more results.
        alone = not self._running or (len(self._running) == 1 and active in self._running)
        if len(self._results) >= flush_size or alone:
            self._flush_now.set()
        self._results_ready.set()

    def _lose(self, active: _Active) -> None:
        """The server says another attempt owns this job now: stop it, drop its result."""
        if active.lost:
            return
        active.lost = True
        self.stats.lost += 1
        if self._active.get(active.job.id) is active:
            del self._active[active.job.id]
        self._results = [r for r in self._results if r.active is not active]
        if not active.finished:
            log.warning("pgq-thin job %s lost its lease; cancelling it", active.job.id)
            self._stop_task(active)

    def _cancel(self, active: _Active) -> None:
        if active.cancel_requested or active.finished:
            return
        active.cancel_requested = True
        log.info("pgq-thin job %s cancel requested", active.job.id)
        self._stop_task(active)

    def _stop_task(self, active: _Active) -> None:
        """Stop a job's handler. An async job whose task has not started yet is not cancelled:
        its first step sees the flags set by the caller and ends without running the handler."""
        active.job.cancelled.set()
        if active.handler.is_async and active.started and not active.finished:
            assert active.task is not None
            active.task.cancel()

    # --- background loops -----------------------------------------------------------------------

    def _claim_carries_results(self) -> bool:
        """True when the claim loop is about to claim again (the last claim came back full and
        a slot is free): its ``pgq.complete`` + ``pgq.claim`` round trip writes the buffered
        results, so the flush loop leaves them. When the claim loop goes to wait instead, it
        wakes the flush loop."""
        return self._more and len(self._running) < self.concurrency and not self.stopping

    async def _flush_loop(self) -> None:
        assert self._results_ready is not None and self._flush_now is not None
        backoff = Backoff(base=0.2, cap=10.0)
        while True:
            await self._results_ready.wait()
            self._results_ready.clear()
            if not self._flush_now.is_set():
                await _wait(self._flush_now, self.flush_interval)
            self._flush_now.clear()
            if self._claim_carries_results():
                continue  # the claim loop writes them with its next claim, in one round trip
            try:
                await self.flush_once()
                backoff.reset()
            except psycopg.OperationalError as err:  # lost connections are retried in the session
                delay = max(0.2, backoff.next_delay())
                log.warning("pgq-thin complete failed (%s); retrying in %.1f s", err, delay)
                await asyncio.sleep(delay)
                self._results_ready.set()

    async def _heartbeat_loop(self) -> None:
        assert self._active_changed is not None and self._hb_wake is not None
        while True:
            if not self._active:
                self._active_changed.clear()
                await self._active_changed.wait()
                continue
            interval = min(a.job.heartbeat_timeout.total_seconds() for a in self._active.values())
            await _wait(self._hb_wake, interval / 3)
            self._hb_wake.clear()
            try:
                await self.heartbeat_once()
            except psycopg.OperationalError as err:  # lost connections are retried in the session
                log.warning("pgq-thin heartbeat failed (%s); next try at the next interval", err)

    async def maintain_once(self, at: datetime | None = None) -> int:
        """Prune ``pgq.job_history`` of jobs finished more than ``history_retention`` ago, in
        batches, at most ``MAINTENANCE_BATCHES`` per pass; returns the rows deleted."""
        assert self._session is not None
        retention = self.history_retention
        if retention is None:
            return 0
        deleted = 0
        for _ in range(MAINTENANCE_BATCHES):
            n = await self._session.call(lambda conn: calls.aprune_history(conn, retention, at))
            deleted += n
            if n < calls.PRUNE_BATCH:
                break
        if deleted:
            log.info("pgq-thin pruned %d finished jobs older than %s", deleted, retention)
        return deleted

    async def compact_once(self) -> calls.Row:
        """Call ``pgq.compact_jobs`` once; returns its row (compacted, reason, rows, sizes)."""
        assert self._session is not None
        row = await self._session.call(calls.acompact_jobs)
        if row["compacted"]:
            log.info(
                "pgq-thin compacted pgq.jobs: %d rows, %.2f MiB -> %.2f MiB",
                row["rows"],
                row["bytes_before"] / 2**20,
                row["bytes_after"] / 2**20,
            )
        else:
            log.debug("pgq-thin did not compact pgq.jobs: %s", row["reason"])
        return row

    async def _periodic(
        self, interval: float, step: Callable[[], Awaitable[object]], what: str
    ) -> None:
        """Run a maintenance step every ``interval`` seconds (+-20 %) until the worker stops."""
        assert self._stopping is not None
        while not self._stopping.is_set():
            if await _wait(self._stopping, interval * random.uniform(0.8, 1.2)):
                return
            try:
                await step()
            except (psycopg.OperationalError, PgqError) as err:
                log.warning("pgq-thin %s failed (%s); next pass later", what, err)

    async def schedule_once(self, at: datetime | None = None) -> list[calls.Row]:
        """Fire the due ticks of all schedules (run-once step of the scheduler loop)."""
        assert self._session is not None and self._scheduler is not None
        scheduler = self._scheduler
        return await self._session.call(lambda conn: scheduler.fire_due(conn, at))

    async def _schedule_loop(self) -> None:
        """Register the schedules, then fire ticks as they fall due. Sleeps until the earliest
        tick (or a takeover) as the database reports it, waking early on a ``schedules``
        notification; the sleep is capped so clock drift cannot stall a schedule."""
        assert self._session is not None and self._scheduler is not None
        assert self._schedule_wake is not None and self._stopping is not None
        scheduler = self._scheduler
        registered = False
        backoff = Backoff(base=0.5, cap=30.0)

        async def step(conn: calls.AConn) -> float | None:
            nonlocal registered
            if not registered:
                await scheduler.register(conn)
                registered = True
            await scheduler.fire_due(conn)
            return await scheduler.seconds_until_due(conn)

        while not self._stopping.is_set():
            self._schedule_wake.clear()
            try:
                due_in = await self._session.call(step)  # re-run whole after a reconnect
                backoff.reset()
                wait = SCHEDULE_MAX_SLEEP if due_in is None else max(due_in, 0.0)
                wait = min(wait, SCHEDULE_MAX_SLEEP)
            except (psycopg.OperationalError, PgqError) as err:
                wait = max(0.5, backoff.next_delay())
                log.warning("pgq-thin scheduler failed (%s); retrying in %.1f s", err, wait)
            if wait > 0:
                await _wait(self._schedule_wake, wait + 0.002)


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds; True if it was set."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True


def _aborted_details(grace_period: float) -> dict[str, Any]:
    return {
        "error": "WorkerShutdown",
        "message": f"the worker shut down and the job ran past its {grace_period:g} s grace period",
        "retry_after": 0,
    }


def _result_details(result: Any) -> dict[str, Any] | None:
    """A handler's return value is stored as ``{"result": ...}`` when it is JSON."""
    if result is None:
        return None
    try:
        json.dumps(result)
    except (TypeError, ValueError):
        log.debug("pgq-thin: handler result %r is not JSON; not stored", result)
        return None
    return {"result": result}


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
