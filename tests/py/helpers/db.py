"""Small helpers the fault and worker tests share: run an async test body, read rows on a
connection of their own, terminate a backend and wait until it is gone."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from helpers import faults
from helpers.wait import wait_for


def aio(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Run an async test body with ``asyncio.run`` (the suite has no async plugin)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return run


def rows(dsn: str, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, args).fetchall()


def scalar(dsn: str, query: str, args: tuple[Any, ...] = ()) -> Any:
    found = rows(dsn, query, args)
    return found[0][0] if found else None


async def ascalar(dsn: str, query: str, args: tuple[Any, ...] = ()) -> Any:
    return await asyncio.to_thread(scalar, dsn, query, args)


def terminate_and_wait(dsn: str, pid: int) -> None:
    """Terminate a backend and wait until the server no longer lists it."""
    assert faults.terminate_backends(dsn, [pid]) == 1
    wait_for(
        lambda: not scalar(dsn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)),
        10,
        f"backend {pid} to exit",
    )
