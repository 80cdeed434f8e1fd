"""Where the pages get their data: a few admin API handles, and the overview's snapshot.

The web process holds a small pool of :class:`~pgq_thin.admin.AsyncAdmin` handles (one
connection each, opened on first use with ``application_name`` ``pgq-thin web``); a
request borrows one for its calls. A handle whose connection broke is closed and reopens at
its next use.

The overview reads ``pgq.metrics()``, ``pgq.worker_status`` and the latest dead jobs. Its
cost grows with the backlog (docs/operations.md), so the process keeps the last answer for
``refresh`` seconds: any number of open pages and their auto-refresh cost one read per
period, like one scraper. An action taken from the page drops it, so the next page shows
the effect at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgq_thin.admin import AsyncAdmin
from pgq_thin.errors import PrivilegeMissing

__all__ = ["AdminPool", "Overview", "OverviewCache"]

APPLICATION_NAME = "pgq-thin web"
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
            yield handle
        except psycopg.OperationalError:
            await handle.close()  # reconnects at its next use
            raise
        finally:
            self._free.put_nowait(handle)

    async def close(self) -> None:
        for handle in self._handles:
            await handle.close()


@dataclass(frozen=True)
class Overview:
    """What the overview shows, read at ``read_at`` (process monotonic clock) in ``read_ms``."""

    metrics: list[Any]
    workers: list[Any]
    failures: list[Any] | None  # None: the role may not read jobs
    read_ms: float
    read_at: float = field(default_factory=time.monotonic)

    @property
    def age_s(self) -> float:
        """Seconds since it was read (how old the figures on the page are)."""
        return time.monotonic() - self.read_at


class OverviewCache:
    """The last overview, kept ``refresh`` seconds; one read at a time."""

    def __init__(self, pool: AdminPool, refresh: float) -> None:
        self._pool = pool
        self._refresh = refresh
        self._last: Overview | None = None
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._last = None

    async def get(self) -> Overview:
        last = self._last
        if last is not None and last.age_s < self._refresh:
            return last
        async with self._lock:
            last = self._last
            if last is not None and last.age_s < self._refresh:
                return last  # read by the request we waited for
            self._last = await self._read()
            return self._last

    async def _read(self) -> Overview:
        start = time.perf_counter()
        async with self._pool.admin() as admin:
            metrics = await admin.metrics()
            workers = await admin.workers()
            try:
                failures: list[Any] | None = (
                    await admin.find_history(page_size=LAST_FAILURES)
                ).jobs
            except PrivilegeMissing:  # a role without pgq_reader sees the numbers only
                failures = None
        return Overview(metrics, workers, failures, (time.perf_counter() - start) * 1000)
