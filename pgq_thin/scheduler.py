"""Cron schedules on the client side: compute cron times and hand them to SQL.

The schedule rows, their locking (claim with a lease, takeover of a silent scheduler) and the
decisions (fire once per tick, collapse ticks missed during downtime, skip or catch up) live in
the ``pgq.schedule`` / ``pgq.claim_schedules`` / ``pgq.fire_schedule`` functions. This module
only knows cron: for each claimed tick it computes the next tick after it and after the
database clock, and passes both back. :meth:`Scheduler.run` is the worker's scheduler loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from pgq_thin import _api, calls
from pgq_thin._sql_runner import arun
from pgq_thin._statements import Call
from pgq_thin.connection import Backoff
from pgq_thin.cron import CronSchedule
from pgq_thin.errors import InvalidSchedule, PgqError, PrivilegeMissing, one_line
from pgq_thin.records import Schedule

log = logging.getLogger(__name__)

#: Longest sleep of the scheduler loop between looks at pgq.next_schedule_at().
SCHEDULE_MAX_SLEEP = 60.0

__all__ = ["ScheduleSpec", "Scheduler"]

CATCH_UP = ("once", "skip")


@dataclass(frozen=True)
class ScheduleSpec:
    """One schedule a worker registers at start (idempotently, keyed by ``name``)."""

    cron: CronSchedule
    entrypoint: str
    name: str
    payload: Any = None
    priority: int = 0
    headers: dict[str, Any] | None = field(default=None, hash=False)
    catch_up: str = "once"
    misfire_grace: timedelta | None = None  # None: the stored value (default 1 minute)
    fire_timeout: timedelta | None = None  # None: the stored value (default 30 seconds)

    def __post_init__(self) -> None:
        if self.catch_up not in CATCH_UP:
            raise InvalidSchedule(f"catch_up must be 'once' or 'skip', got {self.catch_up!r}")
        if not self.entrypoint or not self.name:
            raise InvalidSchedule("a schedule needs an entrypoint and a name")


class Scheduler:
    """Registers schedules and fires due ticks; one instance per worker."""

    def __init__(
        self,
        worker_id: uuid.UUID,
        specs: Iterable[ScheduleSpec],
        batch_size: int = 10,
        *,
        logger: logging.Logger | logging.LoggerAdapter | None = None,  # type: ignore[type-arg]
    ):
        self.worker_id = worker_id
        self.specs = list(specs)
        self.batch_size = batch_size
        self._log = logger or log
        self.fired = 0
        self._crons: dict[tuple[str, str], CronSchedule] = {}

    async def register(self, conn: calls.AConn, now: datetime | None = None) -> None:
        """Store every schedule; a schedule already stored keeps its next run unless its cron
        expression or time zone changed (decided by ``pgq.schedule``)."""
        now = now or datetime.now(UTC)
        for spec in self.specs:
            await arun(conn, self.register_call(spec, now))

    @staticmethod
    def register_call(spec: ScheduleSpec, now: datetime) -> Call[Schedule]:
        """The ``pgq.schedule`` call of a spec, its first run computed after ``now``."""
        return _api.schedule(
            name=spec.name,
            entrypoint=spec.entrypoint,
            cron=spec.cron.expression,
            next_run_at=spec.cron.next_after(now),
            timezone=spec.cron.timezone,
            payload=spec.payload,
            priority=spec.priority,
            headers=spec.headers,
            catch_up=spec.catch_up,
            misfire_grace=spec.misfire_grace,
            fire_timeout=spec.fire_timeout,
        )

    def _cron(self, expression: str, timezone: str) -> CronSchedule:
        key = (expression, timezone)
        if key not in self._crons:
            self._crons[key] = CronSchedule(expression, timezone)
        return self._crons[key]

    async def fire_due(self, conn: calls.AConn, at: datetime | None = None) -> list[calls.Row]:
        """Claim the due ticks and fire them; returns one ``pgq.fire_schedule`` row per tick
        (state fired, skipped or lost; released when the schedule could not be fired).
        Repeats while claims come back full.

        A schedule whose next time cannot be computed (a cron expression stored before SQL
        checked it in full, a date no month has) or whose fire the database refuses is given
        back with ``pgq.release_schedule`` (the error kept in its ``last_error``, no new claim
        for a minute) and the other schedules of the batch still fire. A lost connection is
        not caught here: the session reconnects and runs the step again."""
        results: list[calls.Row] = []
        while True:
            claim = _api.claim_schedules(
                worker_id=self.worker_id, batch_size=self.batch_size, at=at
            )
            claimed = await arun(conn, claim)
            for row in claimed:
                try:
                    result = await self._fire_one(conn, row, at)
                except (psycopg.OperationalError, asyncio.CancelledError):
                    raise
                except (psycopg.Error, PgqError, ValueError, ArithmeticError, KeyError) as err:
                    self._log.warning(
                        "pgq-thin schedule %r cannot fire (%s); released for a minute",
                        row["name"],
                        one_line(err),
                    )
                    release = _api.release_schedule(
                        worker_id=self.worker_id,
                        name=row["name"],
                        lease=row["lease"],
                        error=one_line(err),
                    )
                    result = {"state": await arun(conn, release), "job_id": None}
                results.append({"name": row["name"], "due_at": row["due_at"], **result})
                self.fired += result["state"] == "fired"
            if len(claimed) < self.batch_size:
                return results

    async def _fire_one(self, conn: calls.AConn, row: calls.Row, at: datetime | None) -> calls.Row:
        cron = self._cron(row["cron"], row["timezone"])
        fire = _api.fire_schedule(
            worker_id=self.worker_id,
            name=row["name"],
            lease=row["lease"],
            next_after_due=cron.next_after(row["due_at"]),
            next_after_now=cron.next_after(row["db_now"]),
            at=at,
        )
        return (await arun(conn, fire))[0]

    async def seconds_until_due(self, conn: calls.AConn) -> float | None:
        """How long the scheduler may sleep (None: there are no schedules at all)."""
        return await calls.anext_schedule_in(conn, self.worker_id)

    async def run(
        self,
        call: Callable[[Callable[[calls.AConn], Awaitable[float | None]]], Awaitable[float | None]],
        wake: asyncio.Event,
        stopping: asyncio.Event,
        *,
        fire: bool = True,
    ) -> None:
        """The scheduler loop: register the schedules, then fire the ticks of every schedule in
        the database (its own and any other) as they fall due, until ``stopping`` is set
        (checked between two fires, so no tick is left claimed). Sleeps until the earliest tick
        (or a takeover) as the database reports it, at most ``SCHEDULE_MAX_SLEEP`` (also when
        there are no schedules at all), waking early when ``wake`` is set (a ``schedules``
        notification, a reconnect); the cap also keeps clock drift from stalling a schedule.
        ``call`` runs a step on the session (re-run whole after a reconnect). A database error
        is logged and retried after a backoff; any other error (a SetupError among them) ends
        the loop. A role without the right to register schedules (pgq_admin) fires the
        schedules in the database all the same. ``fire`` False: only register, then return."""
        registered = False
        backoff = Backoff(base=0.5, cap=30.0)

        async def step(conn: calls.AConn) -> float | None:
            nonlocal registered
            if not registered:
                try:
                    await self.register(conn)
                except PrivilegeMissing as err:
                    # Registering schedules is an operator's right (pgq_admin); firing is not.
                    self._log.warning(
                        "pgq-thin schedules of this worker not registered (%s); "
                        "register them as an operator, or grant pgq_admin",
                        one_line(err),
                    )
                registered = True
            if not fire:
                return None
            await self.fire_due(conn)
            return await self.seconds_until_due(conn)

        while not stopping.is_set():
            wake.clear()
            try:
                due_in = await call(step)
                if not fire:
                    return
                backoff.reset()
                wait = min(
                    SCHEDULE_MAX_SLEEP if due_in is None else max(due_in, 0.0), SCHEDULE_MAX_SLEEP
                )
            except (psycopg.Error, PgqError, ValueError, ArithmeticError) as err:
                # Any database error a stored value can cause (a time out of range among them).
                wait = max(0.5, backoff.next_delay())
                self._log.warning(
                    "pgq-thin scheduler failed (%s); retrying in %.1f s", one_line(err), wait
                )
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), wait + 0.002)
