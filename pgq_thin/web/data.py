"""Where the pages get their data: a few admin API handles, and the overview's snapshot.

The web process holds a small pool of :class:`~pgq_thin.admin.AsyncAdmin` handles (one
connection each, opened on first use with ``application_name`` ``pgq-thin web``); a
request borrows one for its calls. A handle whose connection broke is closed and reopens at
its next use, and a handle is checked as it is lent (:meth:`AsyncHandle.drop_if_dead`, no
round trip): after a database restart every idle connection is dead, and the first request
once the database is back gets a new one instead of an error (one error page per pooled
connection, before).

The overview reads ``pgq.metrics()``, the last hour per minute over every entrypoint
(``pgq.metrics_series``, for its charts), ``pgq.worker_status`` and the latest dead jobs. Its
cost grows with the backlog (docs/operations.md), so the process keeps the last answer and
renews it at most once per ``refresh`` seconds (:class:`OverviewCache`): any number of open
pages and their auto-refresh cost one read per period, like one scraper, and a page does not
wait for that read while someone keeps looking. An action taken from the page drops it, so
the next page shows the effect at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from pgq_thin.admin import AsyncAdmin
from pgq_thin.errors import PgqThinError, PrivilegeMissing, one_line

__all__ = ["AdminPool", "Overview", "OverviewCache", "Taken"]

APPLICATION_NAME = "pgq-thin web"
log = logging.getLogger("pgq_thin.web")
LAST_FAILURES = 10


class AdminPool:
    """``size`` admin handles over one DSN, lent to one request at a time."""

    def __init__(self, dsn: str, size: int = 4) -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        self._handles = [AsyncAdmin(dsn, application_name=APPLICATION_NAME) for _ in range(size)]
        self._free: asyncio.Queue[AsyncAdmin] = asyncio.Queue()
        for handle in self._handles:
            self._free.put_nowait(handle)

    @asynccontextmanager
    async def admin(self) -> AsyncIterator[AsyncAdmin]:
        handle = await self._free.get()
        try:
            await handle.drop_if_dead()
            yield handle
        except (psycopg.OperationalError, asyncio.CancelledError):
            # broken, or left mid-statement by a request that was cancelled: a new connection
            # at its next use
            await handle.close()
            raise
        finally:
            self._free.put_nowait(handle)

    async def close(self) -> None:
        for handle in self._handles:
            await handle.close()


@dataclass(frozen=True)
class Taken:
    """One action as the actions page lists it (``at``: this process's clock, UTC)."""

    at: datetime
    actor: str
    address: str
    action: str
    outcome: str  # ok, failed, refused
    message: str


@dataclass(frozen=True)
class Overview:
    """What the overview shows, read at ``read_at`` (process monotonic clock) in ``read_ms``."""

    metrics: list[Any]
    workers: list[Any]
    failures: list[Any] | None  # None: the role may not read jobs
    read_ms: float
    read_at: float = field(default_factory=time.monotonic)
    #: the last hour per minute over every entrypoint (``pgq.metrics_series``, combined)
    series: list[Any] = field(default_factory=list)

    @property
    def age_s(self) -> float:
        """Seconds since it was read (how old the figures on the page are)."""
        return time.monotonic() - self.read_at


class OverviewCache:
    """The last overview and how it is renewed (stale-while-revalidate):

    - younger than ``refresh`` seconds: served as it is;
    - older, but younger than ``max_stale`` (ten periods, at least 30 s): served as it is
      while one read in the background renews it, so a page never waits for the read while
      someone keeps looking (its figures are then at most about two periods old, and the page
      says how old);
    - older still, missing, or dropped by an action: read now (one read at a time; requests
      arriving meanwhile wait for it and share its answer).
    """

    def __init__(self, pool: AdminPool, refresh: float) -> None:
        self._pool = pool
        self._refresh = refresh
        self._max_stale = max(30.0, 10 * refresh)
        self._last: Overview | None = None
        self._lock = asyncio.Lock()
        self._renewal: asyncio.Task[None] | None = None
        self._failing: str | None = None  # the last renewal failure logged (None: none)

    def invalidate(self) -> None:
        self._last = None

    def prime(self) -> None:
        """Start reading now, in the background (at server start: the first visitor then
        need not wait)."""
        if self._renewal is None or self._renewal.done():
            self._renewal = asyncio.create_task(self._renew(), name="pgq-web-overview")

    async def get(self) -> Overview:
        last = self._last
        if last is not None and last.age_s < self._refresh:
            return last
        if last is not None and last.age_s < self._max_stale:
            if self._renewal is None or self._renewal.done():
                self._renewal = asyncio.create_task(self._renew(), name="pgq-web-overview")
            return last
        async with self._lock:
            last = self._last
            if last is not None and last.age_s < self._refresh:
                return last  # read by the request we waited for
            self._last = await self._read()
            return self._last

    async def _renew(self) -> None:
        async with self._lock:
            last = self._last
            if last is not None and last.age_s < self._refresh:
                return
            try:
                self._last = await self._read()
            except Exception as err:  # the next request reads again (and shows the error)
                self._log_failure(err)
            else:
                if self._failing is not None:
                    log.info("pgq-thin web: the overview is readable again")
                    self._failing = None

    def _log_failure(self, err: Exception) -> None:
        """One line when the renewal fails, and only when the reason changes (not one per
        refresh while the database is down or the schema missing); a traceback only for an
        error that is neither the database's nor the set-up's (a bug)."""
        line = one_line(err)
        if line == self._failing:
            return
        self._failing = line
        expected = isinstance(err, PgqThinError | psycopg.Error)
        log.warning("pgq-thin web: renewing the overview failed: %s", line, exc_info=not expected)

    async def close(self) -> None:
        if self._renewal is not None and not self._renewal.done():
            self._renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewal

    async def _read(self) -> Overview:
        began = time.monotonic()
        start = time.perf_counter()
        async with self._pool.admin() as admin:
            metrics = await admin.metrics()
            series = await admin.metrics_series(combined=True)
            workers = await admin.workers()
            try:
                failures: list[Any] | None = (
                    await admin.find_history(page_size=LAST_FAILURES)
                ).jobs
            except PrivilegeMissing:  # a role without pgq_reader sees the numbers only
                failures = None
        return Overview(
            metrics,
            workers,
            failures,
            (time.perf_counter() - start) * 1000,
            read_at=began,
            series=series,
        )
