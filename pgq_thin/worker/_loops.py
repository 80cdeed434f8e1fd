"""What every loop of the worker shares: how it waits, which errors it survives, the periodic
loop of the maintenance steps (each with a run-once step the worker exposes), and the tasks
a run's loops run as (:class:`LoopTasks`: the first to fail ends the run).

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
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

import psycopg

from pgq_thin.calls import AConn
from pgq_thin.errors import PgqError, SetupError, one_line

T = TypeVar("T")

log = logging.getLogger("pgq_thin.worker")


class Call(Protocol):
    """Runs ``fn`` on the session's connection (reconnecting and re-running it after a loss);
    a psycopg error that no retry can fix comes out as a SetupError."""

    def __call__(self, fn: Callable[[AConn], Awaitable[T]]) -> Awaitable[T]: ...


__all__ = ["LOOP_ERRORS", "Call", "LoopTasks", "every", "jittered", "one_line", "wait_event"]

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


class LoopTasks:
    """The background loops of one run, each a named task. A loop runs until cancelled or
    stopped; the first one that ends with an error is kept, and :meth:`raise_failure` (called
    by the claim loop) raises it, which ends the run, so the supervisor can restart the worker.
    ``on_failure`` is called when that happens (it wakes the claim loop)."""

    def __init__(
        self,
        on_failure: Callable[[], None],
        logger: logging.Logger | logging.LoggerAdapter = log,  # type: ignore[type-arg]
    ) -> None:
        self._on_failure = on_failure
        self._log = logger
        self.tasks: list[asyncio.Task[None]] = []
        self._failure: BaseException | None = None

    def start(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro, name=name)
        task.add_done_callback(self._done)
        self.tasks.append(task)

    def named(self, name: str) -> asyncio.Task[None] | None:
        return next((t for t in self.tasks if t.get_name() == name), None)

    def _done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if self._failure is None:
            self._failure = task.exception()
            if not isinstance(self._failure, SetupError):  # said once, where it is raised
                self._log.error("pgq-thin %s loop failed: %r", task.get_name(), self._failure)
        self._on_failure()

    def raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
