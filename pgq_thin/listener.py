"""Wake-ups: LISTEN on ``pgq_events`` on a dedicated autocommit connection.

Notifications are hints (docs/architecture.md, "Principles"): the worker's poll finds work
without them. A LISTEN must stay on one server session, so the listener always has its own
connection, direct to PostgreSQL (``listen_dsn``) when the worker's calls go through a
transaction-mode pooler. The connection is checked, not trusted: a failed read raises at once,
and every ``check_interval`` seconds a ``SELECT 1`` must come back within ``ping_timeout``,
which catches a connection that died silently (a pooler or a network path that dropped it
without a reset). On a loss it reconnects in place with the shared
:class:`~pgq_thin.connection.Backoff`, LISTENs again and calls ``on_connect`` so the worker
polls once for what it may have missed.

Any role that can connect may NOTIFY on any channel, so nothing that arrives is trusted: a
payload is turned into one of the three events below only when it has exactly the expected
shape (:func:`parse_event`); anything else is logged at DEBUG and dropped here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from pgq_thin import calls
from pgq_thin.connection import Backoff, aconnect

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Enqueued:
    """``{"kind": "enqueued", "entrypoints": [...]}``: jobs of these became runnable."""

    entrypoints: frozenset[str]


@dataclass(frozen=True)
class Scheduled:
    """``{"kind": "scheduled", "entrypoints": [...]}``: jobs of these were queued to run later
    (a delayed enqueue, a retry after its backoff): ask ``pgq.next_run_at`` when to look."""

    entrypoints: frozenset[str]


@dataclass(frozen=True)
class CancelRequested:
    """``{"kind": "cancel", "ids": [...]}``: running jobs were flagged for cancellation."""

    ids: frozenset[int]


@dataclass(frozen=True)
class SchedulesChanged:
    """``{"kind": "schedules"}``: a schedule was added, changed or removed."""


Event = Enqueued | Scheduled | CancelRequested | SchedulesChanged

#: PostgreSQL's NOTIFY payload limit; anything longer cannot be ours.
MAX_PAYLOAD = 8000


def parse_event(payload: str) -> Event | None:
    """The event a ``pgq_events`` payload announces, or None if it is not one of ours."""
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if kind in ("enqueued", "scheduled"):
        names = data.get("entrypoints")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return (Enqueued if kind == "enqueued" else Scheduled)(frozenset(names))
    elif kind == "cancel":
        ids = data.get("ids")
        if isinstance(ids, list) and all(type(i) is int for i in ids):
            return CancelRequested(frozenset(ids))
    elif kind == "schedules":
        return SchedulesChanged()
    return None


class ListenerStalled(Exception):
    """The listener's ping did not come back within ``ping_timeout``."""


class Listener:
    """Runs until cancelled; hands each ``pgq_events`` notification of a known shape to
    ``on_event`` as an :data:`Event`."""

    def __init__(
        self,
        dsn: str,
        on_event: Callable[[Event], None],
        on_connect: Callable[[], None],
        *,
        check_interval: float = 5.0,
        ping_timeout: float = 5.0,
        backoff: Backoff | None = None,
        application_name: str | None = None,
    ) -> None:
        self._dsn = dsn
        self._application_name = application_name
        self._on_event = on_event
        self._on_connect = on_connect
        self.check_interval = check_interval
        self.ping_timeout = ping_timeout
        self.backoff = backoff or Backoff()
        self.ready = asyncio.Event()
        self.connects = 0  # successful LISTENs, the first included
        self.pings = 0
        self.backend_pid: int | None = None

    @property
    def listening(self) -> bool:
        """LISTEN is in place on a live connection."""
        return self.ready.is_set()

    async def run(self) -> None:
        while True:
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                conn = await aconnect(self._dsn, application_name=self._application_name)
                await calls.alisten(conn)
                self.backend_pid = conn.info.backend_pid
                self.connects += 1
                self.ready.set()
                self._on_connect()
                await self._serve(conn)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError, ListenerStalled) as err:
                delay = self.backoff.next_delay()
                log.warning(
                    "pgq-thin listener connection lost (%s); reconnecting in %.2f s",
                    str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__,
                    delay,
                )
                await asyncio.sleep(delay)
            finally:
                self.ready.clear()
                self.backend_pid = None
                if conn is not None:
                    await conn.close()

    async def _serve(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Dispatch notifications; ping whenever ``check_interval`` passed without one."""
        last_ok = time.monotonic()
        while True:
            async for note in conn.notifies(timeout=self.check_interval):
                self._dispatch(note.payload)
                last_ok = time.monotonic()
                self.backoff.reset()
            if conn.broken or conn.closed:
                raise psycopg.OperationalError("the listener connection is closed")
            if time.monotonic() - last_ok >= self.check_interval:
                await self._ping(conn)
                last_ok = time.monotonic()
                self.backoff.reset()

    async def _ping(self, conn: psycopg.AsyncConnection[Any]) -> None:
        # Not asyncio.wait_for: cancelling a query makes psycopg wait for the server to
        # confirm, which a dead peer never does. Close the connection under the ping instead.
        ping = asyncio.ensure_future(calls.aping(conn))
        done, _ = await asyncio.wait({ping}, timeout=self.ping_timeout)
        if not done:
            await conn.close()
            ping.cancel()
            await asyncio.gather(ping, return_exceptions=True)
            raise ListenerStalled(f"no answer to a ping within {self.ping_timeout:g} s")
        ping.result()
        self.pings += 1

    def _dispatch(self, payload: str) -> None:
        event = parse_event(payload)
        if event is None:
            shown = payload if len(payload) <= 200 else payload[:200] + "..."
            log.debug("pgq-thin listener ignored a pgq_events payload it does not know: %r", shown)
            return
        self._on_event(event)
