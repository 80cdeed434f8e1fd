"""The one place the client opens connections, and where reconnecting is decided.

Which database to use is decided by :mod:`pgq_thin.dsn` (the one rule).

Every connection is autocommit (each ``pgq`` call is its own transaction), says who it is
(``application_name``, e.g. ``pgq-thin worker 1a2b3c4d``, as libpq's
``fallback_application_name``: a name in the DSN or in ``PGAPPNAME`` wins), uses no server-side
prepared statements (``prepare_threshold=None``: a transaction-mode pooler hands each
transaction to any server connection, where a statement prepared on another one does not
exist), and asks libpq for TCP keepalives and a ``tcp_user_timeout``, so a dead peer is noticed
by the kernel even when the client is idle or blocked on a write.

Reconnecting is decided here and nowhere else: :class:`Backoff` is the one retry policy (capped
exponential with jitter) and :class:`AsyncSession` reconnects in place and re-runs the call that
met a broken connection. The listener (:mod:`pgq_thin.listener`) uses the same ``Backoff``.

A server that cannot take writes counts as a lost connection, by one rule (:func:`is_lost`):

- a new connection is checked once: on a hot standby (the ``in_hot_standby`` parameter the
  server reports, PostgreSQL 14+; else ``pg_is_in_recovery()``) :func:`connect` and
  :func:`aconnect` try once more with ``target_session_attrs=read-write`` (with a multi-host
  DSN libpq then looks for the primary among the hosts) and otherwise raise
  :class:`ServerReadOnly`, an ``OperationalError`` like a server that is down;
- an answer with SQLSTATE 25006 (``read_only_sql_transaction``) on an open connection is a
  lost connection: the session closes it and connects again, a handle
  (:mod:`pgq_thin.handle`: ``Queue``, ``Admin``, hence ``top``, the exporter and the web
  pages) closes it so that its next call connects again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from pgq_thin import calls
from pgq_thin.embedded import EmbeddedServerError as EmbeddedServerError  # re-export
from pgq_thin.errors import PgqThinError
from pgq_thin.errors import one_line as _one_line

log = logging.getLogger(__name__)
T = TypeVar("T")

#: libpq settings used for every connection. Keepalives and ``tcp_user_timeout`` (ms) make
#: the kernel give up on a silent peer after about 25 s (they are ignored on Unix sockets);
#: ``connect_timeout`` bounds one connection attempt.
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 25_000,
    "connect_timeout": 10,
}
#: psycopg prepares a statement server-side after this many executions by default; None turns
#: that off so every call works through PgBouncer in transaction mode (any version).
PREPARE_THRESHOLD = None


#: The ``application_name`` of a connection opened without a name of its own.
APPLICATION_NAME = "pgq-thin"


def _named(application_name: str | None) -> dict[str, Any]:
    """libpq settings naming the connection: ``fallback_application_name``, so that a name
    given in the DSN (``application_name=...``) or in ``PGAPPNAME`` is kept."""
    return {**KEEPALIVES, "fallback_application_name": application_name or APPLICATION_NAME}


def short_id(worker_id: object) -> str:
    """The first 8 characters of a worker id: enough to tell workers apart in a listing."""
    return str(worker_id)[:8]


#: SQLSTATE ``read_only_sql_transaction``: what a hot standby (or a read-only session) answers
#: a write with.
READ_ONLY_SQLSTATE = "25006"
#: ``target_session_attrs`` values under which libpq never settles for a standby.
_WRITABLE_ATTRS = ("read-write", "primary")


class ServerReadOnly(psycopg.OperationalError):
    """A new connection reached a hot standby (a server in recovery), and no host of the DSN
    accepted a read-write connection: for the queue, the same as a server that is down."""


def _standby_reported(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool | None:
    """What the server reported at connection time (``in_hot_standby``, PostgreSQL 14+), or
    None when it reported nothing (an older server, or a pooler that does not pass it on)."""
    status = conn.info.parameter_status("in_hot_standby")
    return None if status is None else status == "on"


def _retry_writable(dsn: str) -> bool:
    """After landing on a standby: is a ``read-write`` attempt worth making? Not when the DSN
    (or ``PGTARGETSESSIONATTRS``) asked for it already: libpq did that search."""
    try:
        attrs = conninfo_to_dict(dsn).get("target_session_attrs")
    except psycopg.ProgrammingError:
        attrs = None
    attrs = attrs or os.environ.get("PGTARGETSESSIONATTRS") or "any"
    return str(attrs) not in _WRITABLE_ATTRS


def _read_only_error(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
) -> ServerReadOnly:
    info = conn.info
    return ServerReadOnly(
        f"the server at {info.host}:{info.port} is a hot standby (in recovery, read-only) "
        "and no host of the DSN accepted a read-write connection"
    )


def connect(
    dsn: str, *, autocommit: bool = True, application_name: str | None = None
) -> psycopg.Connection[Any]:
    """A sync connection with keepalives, named ``application_name`` (unless the DSN or
    ``PGAPPNAME`` names it), never to a hot standby (see the module docstring)."""
    settings: dict[str, Any] = {"autocommit": autocommit, "prepare_threshold": PREPARE_THRESHOLD}
    conn = psycopg.connect(dsn, **settings, **_named(application_name))
    try:
        standby = _in_recovery(conn)
    except BaseException:
        conn.close()
        raise
    if not standby:
        return conn
    error = _read_only_error(conn)
    conn.close()
    if _retry_writable(dsn):
        try:
            conn = psycopg.connect(
                dsn, **settings, **_named(application_name), target_session_attrs="read-write"
            )
        except psycopg.OperationalError as err:
            raise error from err
        if not _in_recovery(conn):
            return conn
        conn.close()
    raise error


async def aconnect(
    dsn: str, *, autocommit: bool = True, application_name: str | None = None
) -> psycopg.AsyncConnection[Any]:
    """An async connection with keepalives, named and checked as :func:`connect` does."""
    settings: dict[str, Any] = {"autocommit": autocommit, "prepare_threshold": PREPARE_THRESHOLD}
    conn = await psycopg.AsyncConnection.connect(dsn, **settings, **_named(application_name))
    try:
        standby = await _ain_recovery(conn)
    except BaseException:
        await conn.close()
        raise
    if not standby:
        return conn
    error = _read_only_error(conn)
    await conn.close()
    if _retry_writable(dsn):
        try:
            conn = await psycopg.AsyncConnection.connect(
                dsn, **settings, **_named(application_name), target_session_attrs="read-write"
            )
        except psycopg.OperationalError as err:
            raise error from err
        if not await _ain_recovery(conn):
            return conn
        await conn.close()
    raise error


def _in_recovery(conn: psycopg.Connection[Any]) -> bool:
    """The check of a new connection: the reported parameter, else one query."""
    reported = _standby_reported(conn)
    if reported is not None:
        return reported
    try:
        return calls.in_recovery(conn)
    finally:
        if not conn.autocommit:
            conn.rollback()


async def _ain_recovery(conn: psycopg.AsyncConnection[Any]) -> bool:
    reported = _standby_reported(conn)
    if reported is not None:
        return reported
    try:
        return await calls.ain_recovery(conn)
    finally:
        if not conn.autocommit:
            await conn.rollback()


class ConnectionUnavailable(PgqThinError):
    """No connection could be made for longer than the session's ``reconnect_timeout``."""


#: The longest pause between two connection attempts. A failed attempt on a server that is
#: down costs a refused TCP connect, so the pause stays short and work resumes within about
#: this long once the server accepts connections again, whatever the outage lasted
#: (docs/connection-failures.md: what it costs while the server is down).
RECONNECT_CAP = 0.5


class Backoff:
    """Capped exponential backoff with jitter; the first retry is immediate.

    Delay ``n`` (n >= 1) is ``min(cap, base * 2**(n - 1))`` scaled by a random factor in
    [0.5, 1) ("equal jitter"), so workers that lost the same server do not come back in step.
    The default (0.1 s doubling to :data:`RECONNECT_CAP`) is the reconnect policy of the session
    and the listener; loops that retry after an error of another kind pass their own ``base``
    and ``cap``.
    """

    def __init__(self, base: float = 0.1, cap: float = RECONNECT_CAP) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0

    def next_delay(self) -> float:
        n = self.failures
        self.failures += 1
        if n == 0:
            return 0.0
        return float(min(self.cap, self.base * 2.0 ** min(n - 1, 30))) * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


def is_disconnect(conn: psycopg.AsyncConnection[Any] | psycopg.Connection[Any]) -> bool:
    """After a psycopg error: did it break the connection (rather than fail one statement)?

    A connection still in pipeline mode after the error counts as broken too: when a pooler
    drops the server connection in the middle of a pipeline, psycopg raises "cannot exit
    pipeline mode while busy" with ``conn.broken`` still false, and the connection can run
    nothing more.
    """
    if conn.broken or conn.closed:
        return True
    return conn.pgconn.pipeline_status != pq.PipelineStatus.OFF


def is_lost(
    conn: psycopg.AsyncConnection[Any] | psycopg.Connection[Any], err: BaseException
) -> bool:
    """The rule: does ``err`` on ``conn`` mean the connection is lost for the queue? Yes when
    it broke (:func:`is_disconnect`), and when the server answered that it is read-only
    (SQLSTATE 25006: a hot standby, e.g. the one a multi-host DSN without
    ``target_session_attrs`` reached while the primary was down): a new connection may reach
    the primary, this one never will."""
    if is_disconnect(conn):
        return True
    return getattr(err, "sqlstate", None) == READ_ONLY_SQLSTATE


def is_rolled_back(err: BaseException) -> bool:
    """Did the server abort the statement's transaction for a deadlock or a serialization
    failure (SQLSTATE class 40, "transaction rollback": 40001, 40P01, ...)? Then it changed
    nothing and may be sent again at once. (psycopg files 40P01 under OperationalError, not
    TransactionRollback: the SQLSTATE decides.)"""
    return str(getattr(err, "sqlstate", None) or "").startswith("40")


class AsyncSession:
    """The worker's connection for claim, heartbeat, complete and release (and, with
    ``results_connection``, a second one that writes results beside the claims).

    Calls are serialized by a lock: each is one short statement, so one connection per worker
    process is enough and the server sees one backend per worker (plus its listener, and the
    results connection when asked for).

    :meth:`call` is where connection loss is handled, for every loop of the worker: a call
    that fails because the connection is lost (:func:`is_lost`: backend terminated, server
    restarted, pooler dropped it, network gone, or the server answered read-only) closes it,
    reconnects with :class:`Backoff` and runs the same call again on the new connection, with
    the same arguments (so buffered results keep their original leases). Every ``pgq`` call
    the worker makes is safe to repeat: a lease-guarded write that already committed is
    simply not applied twice. ``on_reconnect`` runs on each new connection before the retried
    call (the worker sends its heartbeats there first). After ``reconnect_timeout`` seconds
    without a working connection :class:`ConnectionUnavailable`
    is raised and the worker's supervisor takes over.

    A call the server aborted for a deadlock or a serialization failure (:func:`is_rolled_back`:
    its transaction was rolled back and changed nothing) is sent again at once on the same
    connection, up to :attr:`rollback_retries` times: PostgreSQL aborts one transaction of a
    deadlock and the other goes on, so the next try waits for it instead. After that the error
    is raised to the loop (which retries with its own backoff).
    """

    #: Immediate retries of a call the server rolled back (deadlock, serialization failure).
    rollback_retries = 3

    def __init__(
        self,
        dsn: str,
        *,
        reconnect_timeout: float | None = 300.0,
        on_reconnect: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None = None,
        backoff: Backoff | None = None,
        application_name: str | None = None,
    ) -> None:
        self._dsn = dsn
        self.application_name = application_name
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self.reconnect_timeout = reconnect_timeout
        self.on_reconnect = on_reconnect
        self.backoff = backoff or Backoff()
        self.reconnects = 0  # new connections made after the first
        self._down_since: float | None = None
        self._give_up_at: float | None = None

    @property
    def backend_pid(self) -> int | None:
        """The server process of the current connection (None when not connected)."""
        conn = self._conn
        return None if conn is None or conn.closed else conn.info.backend_pid

    def give_up_at(self, when: float | None) -> None:
        """Stop reconnecting at this ``time.monotonic()`` (shutdown: do not wait forever)."""
        self._give_up_at = when

    async def open(self) -> None:
        """Connect once; a failure is raised at once (a bad DSN should not be retried)."""
        async with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = await aconnect(self._dsn, application_name=self.application_name)

    async def call(self, fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """Run ``fn(conn)``; on a broken connection reconnect and run it again."""
        async with self._lock:
            rolled_back = 0
            while True:
                conn = await self._ensure()
                try:
                    result = await fn(conn)
                except psycopg.Error as err:
                    if is_lost(conn, err):
                        await self._lost(conn, err)
                        continue
                    if is_rolled_back(err) and rolled_back < self.rollback_retries:
                        rolled_back += 1
                        log.info("pgq-thin call rolled back (%s); sending it again", _one_line(err))
                        if not conn.autocommit:
                            await conn.rollback()
                        continue
                    raise
                self._up()
                return result

    @asynccontextmanager
    async def use(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """Hold the connection for one call (no retry: prefer :meth:`call`)."""
        async with self._lock:
            conn = await self._ensure()
            try:
                yield conn
            except psycopg.Error as err:
                if is_lost(conn, err):
                    await self._lost(conn, err)
                raise

    async def _lost(self, conn: psycopg.AsyncConnection[Any], err: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.warning("pgq-thin connection lost (%s); reconnecting", _one_line(err))
        await conn.close()
        if self._conn is conn:
            self._conn = None

    def _up(self) -> None:
        if self._down_since is not None:
            log.warning(
                "pgq-thin connection back after %.2f s", time.monotonic() - self._down_since
            )
        self._down_since = None
        self.backoff.reset()

    async def _ensure(self) -> psycopg.AsyncConnection[Any]:
        """The open connection; after a loss, connect again with backoff until it works."""
        while self._conn is None or self._conn.closed:
            if self._down_since is None:
                self._down_since = time.monotonic()
            delay = self.backoff.next_delay()
            now = time.monotonic()
            limits = [self._give_up_at]
            if self.reconnect_timeout is not None:
                limits.append(self._down_since + self.reconnect_timeout)
            deadline = min((t for t in limits if t is not None), default=None)
            if deadline is not None and now + delay > deadline:
                raise ConnectionUnavailable(
                    f"no database connection for {now - self._down_since:.1f} s; giving up"
                )
            if delay:
                await asyncio.sleep(delay)
            try:
                conn = await aconnect(self._dsn, application_name=self.application_name)
            except psycopg.OperationalError as err:
                log.warning("pgq-thin reconnect failed (%s)", _one_line(err))
                continue
            self._conn = conn
            self.reconnects += 1
            if self.on_reconnect is not None:
                try:
                    await self.on_reconnect(conn)
                except psycopg.Error as err:
                    if is_lost(conn, err):
                        await self._lost(conn, err)
                        continue
                    log.warning("pgq-thin after-reconnect step failed: %s", _one_line(err))
        return self._conn

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
