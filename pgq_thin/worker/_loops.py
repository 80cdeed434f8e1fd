"""What every loop of the worker shares: how it waits, which errors it survives, and the
periodic loop of the maintenance steps (each with a run-once step the worker exposes).

A loop survives any database error a value can cause (a data error of class 22, a ``PQ``
error, a statement the server refused): it logs it and goes on after a backoff. A lost
connection never reaches a loop (the session reconnects and re-runs the call). A
:class:`~pgq_thin.errors.SetupError` (no schema, no grant) is not among them: no retry can fix
it, so it ends the run. Anything else is a bug, and the supervisor restarts the run.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import psycopg

from pgq_thin.calls import AConn
from pgq_thin.errors import PgqError, one_line

T = TypeVar("T")

log = logging.getLogger("pgq_thin.worker")


class Call(Protocol):
    """Runs ``fn`` on the session's connection (reconnecting and re-running it after a loss);
    a psycopg error that no retry can fix comes out as a SetupError."""

    def __call__(self, fn: Callable[[AConn], Awaitable[T]]) -> Awaitable[T]: ...


__all__ = ["LOOP_ERRORS", "Call", "every", "jittered", "one_line", "wait_event"]

#: Errors a loop logs and retries after a backoff (SetupError is not a subclass of either).
LOOP_ERRORS: tuple[type[Exception], ...] = (psycopg.Error, PgqError)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds; True if it was set."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True


def jittered(seconds: float) -> float:
    """``seconds`` +-20 %, so that workers started together do not stay in step."""
    return seconds * random.uniform(0.8, 1.2)


async def every(
    interval: float,
    step: Callable[[], Awaitable[object]],
    stopping: asyncio.Event,
    what: str,
    logger: logging.Logger | logging.LoggerAdapter = log,  # type: ignore[type-arg]
) -> None:
    """Run ``step`` every ``interval`` seconds (jittered) until ``stopping`` is set."""
    while not stopping.is_set():
        if await wait_event(stopping, jittered(interval)):
            return
        try:
            await step()
        except LOOP_ERRORS as err:
            logger.warning("pgq-thin %s failed (%s); next pass later", what, one_line(err))
