"""What :class:`~pgq_thin.queue.Queue` and :class:`~pgq_thin.admin.Admin` hold: a connection.

Given a DSN (or nothing: the database rule of :mod:`pgq_thin.dsn` decides; with no database
configured at all the constructor raises :class:`~pgq_thin.dsn.NoDatabase`, and the embedded
server is used only when asked for by name, ``"embedded"``), a handle opens one
autocommit connection of its own on first use, so every call commits at once, and closes it
on :meth:`close` or at the end of a ``with`` block. Given a psycopg connection you hold, every
call runs on it, inside whatever transaction you have open, and it is never closed or committed
by the handle. Anything else is a :class:`TypeError` at construction.

A connection the handle opens follows the one rule of :mod:`pgq_thin.connection`: it is never
made to a hot standby, and one found lost (broken, or answering read-only: SQLSTATE 25006) is
closed, so that the next call opens a new one (with a multi-host DSN, on the primary once it is
back). The error itself is raised to the caller, as for a server that is down.

A connection the handle opens is named (``application_name``) after the class:
``pgq-thin producer`` for a queue, ``pgq-thin admin`` for the admin API, unless the DSN or
``PGAPPNAME`` names it, or ``application_name=`` says otherwise.
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import Any, ClassVar, Self, TypeVar

import psycopg

from pgq_thin import _drivers
from pgq_thin._sql_runner import arun, run
from pgq_thin._statements import Call
from pgq_thin.connection import aconnect, connect, is_lost
from pgq_thin.dsn import require, resolve_dsn

R = TypeVar("R")

__all__ = ["AsyncHandle", "SyncHandle"]


def _refuse(owner: str, expected: str, given: object) -> TypeError:
    kind = type(given)
    name = f"{kind.__module__}.{kind.__qualname__}"
    hint = ""
    if isinstance(given, psycopg.AsyncConnection):
        hint = f"; for an async connection use Async{owner}"
    elif isinstance(given, psycopg.Connection):
        hint = f"; for a sync connection use {owner.removeprefix('Async')}"
    elif kind.__module__.startswith("sqlalchemy"):
        hint = "; SQLAlchemy's Connection and Session are taken (AsyncConnection, AsyncSession "
        hint += "by the Async classes)"
    return TypeError(
        f"{owner}() takes a DSN string, a {expected}, a psycopg2 connection, a SQLAlchemy "
        f"Connection or Session, or Django's connection; got {name}{hint}"
    )


class SyncHandle:
    """A DSN or a ``psycopg.Connection`` (see the module docstring)."""

    #: The ``application_name`` of a connection the handle opens (subclasses name theirs).
    APPLICATION_NAME: ClassVar[str] = "pgq-thin"

    def __init__(
        self,
        dsn_or_connection: str | psycopg.Connection[Any] | None = None,
        *,
        application_name: str | None = None,
    ) -> None:
        self.application_name = application_name or self.APPLICATION_NAME
        self._runner: _drivers.SyncRunner | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn_or_connection, psycopg.Connection):
            self._conn = dsn_or_connection
        elif dsn_or_connection is None or isinstance(dsn_or_connection, str):
            self._dsn = dsn_or_connection
            require(dsn_or_connection, f"{type(self).__name__}()")
        else:
            self._runner = _drivers.sync_runner(dsn_or_connection)
            if self._runner is None:
                raise _refuse(type(self).__name__, "psycopg.Connection", dsn_or_connection)
        self._owned = self._conn is None and self._runner is None

    def run_call(self, call: Call[R]) -> R:
        """Send one generated call on the handle's connection (or through the application's
        psycopg2, SQLAlchemy or Django object it was given, in that object's transaction)."""
        if self._runner is not None:
            return self._runner.run(call)
        with self.using() as conn:
            return run(conn, call)

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The connection calls run on (opened on first use when given a DSN)."""
        if self._runner is not None:
            raise TypeError(
                f"{type(self).__name__} was given a {self._runner.kind} connection: it has no "
                "psycopg 3 connection of its own"
            )
        if self._conn is None or (self._owned and self._conn.closed):
            dsn = resolve_dsn(self._dsn, who=f"{type(self).__name__}()")
            self._conn = connect(dsn, application_name=self.application_name)
        return self._conn

    @contextmanager
    def using(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection for one call; a connection of the handle's own that the call found
        lost (:func:`~pgq_thin.connection.is_lost`) is closed, the next call opens another."""
        conn = self.connection
        try:
            yield conn
        except psycopg.Error as err:
            if self._owned and is_lost(conn, err):
                self.close()
            raise

    def close(self) -> None:
        """Close the connection if the handle opened it (a borrowed one is left alone)."""
        if self._owned and self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncHandle:
    """A DSN or a ``psycopg.AsyncConnection`` (see the module docstring)."""

    #: The ``application_name`` of a connection the handle opens (subclasses name theirs).
    APPLICATION_NAME: ClassVar[str] = "pgq-thin"

    def __init__(
        self,
        dsn_or_connection: str | psycopg.AsyncConnection[Any] | None = None,
        *,
        application_name: str | None = None,
    ) -> None:
        self.application_name = application_name or self.APPLICATION_NAME
        self._runner: _drivers.AsyncRunner | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._dsn: str | None = None
        if isinstance(dsn_or_connection, psycopg.AsyncConnection):
            self._conn = dsn_or_connection
        elif dsn_or_connection is None or isinstance(dsn_or_connection, str):
            self._dsn = dsn_or_connection
            require(dsn_or_connection, f"{type(self).__name__}()")
        else:
            self._runner = _drivers.async_runner(dsn_or_connection)
            if self._runner is None:
                raise _refuse(type(self).__name__, "psycopg.AsyncConnection", dsn_or_connection)
        self._owned = self._conn is None and self._runner is None

    async def arun_call(self, call: Call[R]) -> R:
        """The async twin of :meth:`SyncHandle.run_call`."""
        if self._runner is not None:
            return await self._runner.arun(call)
        async with self.using() as conn:
            return await arun(conn, call)

    async def connection(self) -> psycopg.AsyncConnection[Any]:
        """The connection calls run on (opened on first use when given a DSN)."""
        if self._runner is not None:
            raise TypeError(
                f"{type(self).__name__} was given a {self._runner.kind} connection: it has no "
                "psycopg 3 connection of its own"
            )
        if self._conn is None or (self._owned and self._conn.closed):
            # the rule may start the embedded server: not on the event loop
            dsn = await asyncio.to_thread(resolve_dsn, self._dsn, who=f"{type(self).__name__}()")
            self._conn = await aconnect(dsn, application_name=self.application_name)
        return self._conn

    @asynccontextmanager
    async def using(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """The async twin of :meth:`SyncHandle.using`."""
        conn = await self.connection()
        try:
            yield conn
        except psycopg.Error as err:
            if self._owned and is_lost(conn, err):
                await self.close()
            raise

    async def close(self) -> None:
        """Close the connection if the handle opened it (a borrowed one is left alone)."""
        if self._owned and self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def drop_if_dead(self) -> bool:
        """Close an idle connection the server has spoken on or closed since its last call
        (a backend terminated, the server restarted: its socket is readable though no
        statement runs), so the next call opens a new one instead of failing on it. No round
        trip: a ``select`` on the socket. True when it was dropped."""
        conn = self._conn
        if not self._owned or conn is None or conn.closed:
            return False
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return False  # in use, or in a transaction: not ours to judge
        try:
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
        except (OSError, ValueError, psycopg.Error):
            readable = [True]
        if not readable:
            return False
        await self.close()
        return True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
