"""The overview's figures: kept for the refresh period, renewed in the background while they
are only a little old (the page never waits then), read at once when too old or dropped."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from pgq_thin import Queue
from pgq_thin.web.data import AdminPool, Overview, OverviewCache


def due(overview: Overview, entrypoint: str) -> int:
    return next(m.due for m in overview.metrics if m.entrypoint == entrypoint)


def aged(overview: Overview, seconds: float) -> Overview:
    """The same figures, as if read ``seconds`` ago."""
    return dataclasses.replace(overview, read_at=time.monotonic() - seconds)


def test_fresh_stale_and_too_old(pgq_dsn: str) -> None:
    async def main() -> None:
        pool = AdminPool(pgq_dsn, size=2)
        cache = OverviewCache(pool, refresh=3.0)
        queue = Queue(pgq_dsn)
        try:
            queue.enqueue("cache.a")
            first = await cache.get()
            assert due(first, "cache.a") == 1 and first.read_ms > 0
            queue.enqueue("cache.a")
            assert await cache.get() is first  # fresh: kept

            cache._last = stale = aged(first, 5.0)  # older than the period, younger than 30 s
            assert await cache.get() is stale  # served at once ...
            assert cache._renewal is not None
            await cache._renewal  # ... while one read renews it
            renewed = await cache.get()
            assert renewed is not stale and due(renewed, "cache.a") == 2

            queue.enqueue("cache.a")
            cache._last = aged(renewed, 60.0)  # too old to show: read now
            assert due(await cache.get(), "cache.a") == 3

            queue.enqueue("cache.a")
            cache.invalidate()  # what an action does
            assert due(await cache.get(), "cache.a") == 4
        finally:
            queue.close()
            await cache.close()
            await pool.close()

    asyncio.run(main())


def test_requests_during_a_read_share_it(pgq_dsn: str) -> None:
    async def main() -> None:
        pool = AdminPool(pgq_dsn, size=4)
        cache = OverviewCache(pool, refresh=3.0)
        try:
            answers = await asyncio.gather(*(cache.get() for _ in range(5)))
            assert all(a is answers[0] for a in answers)  # one read for all five
        finally:
            await cache.close()
            await pool.close()

    asyncio.run(main())


def test_primed_at_start(pgq_dsn: str) -> None:
    async def main() -> None:
        pool = AdminPool(pgq_dsn, size=2)
        cache = OverviewCache(pool, refresh=3.0)
        try:
            cache.prime()
            assert cache._renewal is not None
            await cache._renewal
            primed = cache._last
            assert primed is not None and await cache.get() is primed
        finally:
            await cache.close()
            await pool.close()

    asyncio.run(main())
