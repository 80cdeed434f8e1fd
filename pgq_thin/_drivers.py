"""The generated calls on a connection the application already holds from another driver or
framework: a psycopg2 connection, a SQLAlchemy ``Connection`` or ``Session`` (sync or async),
Django's ``django.db.connection``. What :class:`~pgq_thin.queue.Queue` (and ``Admin``) accept
beside a DSN and a psycopg 3 connection.

No SQL text and no queue logic here: the statement is the generated call of
:mod:`pgq_thin._api` (``SELECT pgq.enqueue(entrypoint => %s::text, ...)``, whose ``%s``
placeholders every PostgreSQL driver of Python takes), sent through the application's own
object so that it runs inside the application's transaction (SQLAlchemy's autobegin, Django's
``atomic``), never committed here. Only the parameters are adapted (a JSON value is sent as
its text, which the statement casts to ``jsonb``), and the driver's error is translated by
SQLSTATE, as :mod:`pgq_thin._sql_runner` does for psycopg 3.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from pgq_thin._sql_runner import _fold, needs
from pgq_thin._statements import Call, Row
from pgq_thin.errors import PgqThinError, from_psycopg, setup_error

R = TypeVar("R")

__all__ = ["AsyncRunner", "SyncRunner", "async_runner", "sync_runner"]


# --- the driver's answer and errors ---------------------------------------------------------


def _psycopg2_value(v: Any) -> Any:
    """A parameter as psycopg2 adapts it: JSON as its text (the statement casts it to jsonb),
    a UUID as text (psycopg2 adapts UUID only when registered)."""
    if isinstance(v, Jsonb):
        return json.dumps(v.obj)
    if isinstance(v, UUID):
        return str(v)
    if isinstance(v, list):
        return [_psycopg2_value(x) for x in v]
    return v


class _Diagnosed(Exception):
    """A psycopg2 error seen through the attributes our translation reads of a psycopg one."""

    def __init__(self, err: BaseException) -> None:
        super().__init__(str(err))
        self.sqlstate: str | None = getattr(err, "pgcode", None)
        self.diag = getattr(err, "diag", None)
        self._text = str(err)

    def __str__(self) -> str:
        return self._text


def _driver_error(err: BaseException) -> BaseException | None:
    """The driver's own error under a framework's wrapper (SQLAlchemy ``orig``, Django's
    ``__cause__``), or None when it is none of psycopg's or psycopg2's."""
    for candidate in (err, getattr(err, "orig", None), err.__cause__):
        if candidate is None:
            continue
        if isinstance(candidate, psycopg.Error) or hasattr(candidate, "pgcode"):
            return candidate
    return None


def _translate(err: BaseException, query: str, role: str) -> PgqThinError | None:
    """Our exception for a driver error of ``query`` (a ``PQ`` code, a missing schema or
    grant), else None: the application's error goes up as it came."""
    found = _driver_error(err)
    if found is None:
        return None
    seen = found if isinstance(found, psycopg.Error) else cast(psycopg.Error, _Diagnosed(found))
    if seen.sqlstate is None:
        return None
    mapped: PgqThinError | None = from_psycopg(seen)
    if mapped is None:
        what, fix = needs(query)
        mapped = setup_error(seen, role=role, grant=fix.format(role=role), needs=what)
    if mapped is not None:
        mapped.__cause__ = found
    return mapped


#: The type OIDs of json and jsonb: Django loads them as text on its connections (its
#: JSONField decodes them itself), so their values are decoded here.
_JSON_OIDS = frozenset({114, 3802})


def _rows(description: Sequence[Any] | None, rows: Sequence[Sequence[Any]]) -> list[Row]:
    columns = list(description or ())
    names = [d[0] for d in columns]
    texts = [i for i, d in enumerate(columns) if d[1] in _JSON_OIDS]
    found = []
    for row in rows:
        values = list(row)
        for i in texts:
            if isinstance(values[i], str):
                values[i] = json.loads(values[i])
        found.append(dict(zip(names, values, strict=True)))
    return found


# --- runners --------------------------------------------------------------------------------

Send = Callable[[str, tuple[Any, ...]], list[Row]]
ASend = Callable[[str, tuple[Any, ...]], Awaitable[list[Row]]]


@dataclass
class SyncRunner:
    """Sends a call through ``send`` (the application's object); ``kind`` names it."""

    kind: str
    send: Send
    role: Callable[[], str]
    adapt: Callable[[Any], Any] | None = None

    def run(self, call: Call[R]) -> R:
        total, again = None, True
        while again:
            args = call.args if self.adapt is None else tuple(self.adapt(a) for a in call.args)
            try:
                rows = self.send(call.query, args)
            except Exception as err:
                mapped = _translate(err, call.query, self.role())
                if mapped is None:
                    raise
                raise mapped from _driver_error(err)
            total, again = _fold(call, total, call.shape(rows))
        return total  # type: ignore[return-value]


@dataclass
class AsyncRunner:
    """The async twin of :class:`SyncRunner`."""

    kind: str
    send: ASend
    role: Callable[[], str]

    async def arun(self, call: Call[R]) -> R:
        total, again = None, True
        while again:
            try:
                rows = await self.send(call.query, call.args)
            except Exception as err:
                mapped = _translate(err, call.query, self.role())
                if mapped is None:
                    raise
                raise mapped from _driver_error(err)
            total, again = _fold(call, total, call.shape(rows))
        return total  # type: ignore[return-value]


def _module(obj: object) -> str:
    return type(obj).__module__


def _login(getter: Callable[[], Any]) -> Callable[[], str]:
    def role() -> str:
        try:
            return str(getter())
        except Exception:
            return "<login role>"

    return role


def _psycopg2(conn: Any) -> SyncRunner:
    def send(query: str, args: tuple[Any, ...]) -> list[Row]:
        with conn.cursor() as cur:
            cur.execute(query, args)
            return _rows(cur.description, cur.fetchall())

    return SyncRunner("psycopg2", send, _login(lambda: conn.info.user), _psycopg2_value)


def _sqlalchemy(get_connection: Callable[[], Any], dialect: Any) -> SyncRunner:
    """A SQLAlchemy ``Connection`` (or a ``Session``'s): ``exec_driver_sql`` joins its
    transaction (autobegin) and leaves the commit to the application."""
    driver = str(dialect.driver)
    if driver not in ("psycopg", "psycopg2"):
        raise TypeError(
            f"a SQLAlchemy connection on the {driver} driver: pgq_thin sends its calls through "
            "psycopg (postgresql+psycopg://) or psycopg2 (postgresql+psycopg2://)"
        )

    def send(query: str, args: tuple[Any, ...]) -> list[Row]:
        result = get_connection().exec_driver_sql(query, args)
        return [dict(row) for row in result.mappings().all()]

    def user() -> Any:
        return get_connection().connection.driver_connection.info.user

    return SyncRunner(
        f"SQLAlchemy on {driver}",
        send,
        _login(user),
        _psycopg2_value if driver == "psycopg2" else None,
    )


def _async_sqlalchemy(get_connection: Callable[[], Awaitable[Any]], driver: str) -> AsyncRunner:
    if driver not in ("psycopg", "psycopg_async"):
        raise TypeError(
            f"an async SQLAlchemy connection on the {driver} driver: pgq_thin sends its calls "
            "through psycopg (postgresql+psycopg://)"
        )

    async def send(query: str, args: tuple[Any, ...]) -> list[Row]:
        conn = await get_connection()
        result = await conn.exec_driver_sql(query, args)
        return [dict(row) for row in result.mappings().all()]

    return AsyncRunner("SQLAlchemy on psycopg (async)", send, lambda: "<login role>")


def _django(connection: Any) -> SyncRunner:
    """Django's connection: its cursor joins the request's transaction (``atomic``) or its
    autocommit, whichever Django has open."""
    if getattr(connection, "vendor", None) != "postgresql":
        raise TypeError(f"a Django connection to {connection.vendor}: pgq needs PostgreSQL")
    from django.db.backends.postgresql.psycopg_any import (  # type: ignore[import-not-found,unused-ignore]
        is_psycopg3,
    )

    def send(query: str, args: tuple[Any, ...]) -> list[Row]:
        with connection.cursor() as cur:
            cur.execute(query, args)
            return _rows(cur.description, cur.fetchall())

    def user() -> Any:
        return connection.connection.info.user

    kind = "Django on psycopg" if is_psycopg3 else "Django on psycopg2"
    return SyncRunner(kind, send, _login(user), None if is_psycopg3 else _psycopg2_value)


def sync_runner(obj: object) -> SyncRunner | None:
    """The runner for an application's sync connection object, or None when it is no kind we
    know (the caller raises its TypeError)."""
    module = _module(obj)
    if module.startswith("psycopg2"):
        return _psycopg2(obj)
    if module.startswith("sqlalchemy"):
        from sqlalchemy import Connection
        from sqlalchemy.orm import Session

        if isinstance(obj, Connection):
            return _sqlalchemy(lambda: obj, obj.dialect)
        if isinstance(obj, Session):
            return _sqlalchemy(obj.connection, obj.get_bind().dialect)
        return None
    if module.startswith("django.") and hasattr(obj, "cursor") and hasattr(obj, "vendor"):
        return _django(obj)
    return None


def async_runner(obj: object) -> AsyncRunner | None:
    """The runner for an application's async connection object (SQLAlchemy's
    ``AsyncConnection`` or ``AsyncSession``), or None."""
    if not _module(obj).startswith("sqlalchemy"):
        return None
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    if isinstance(obj, AsyncConnection):
        conn = obj

        async def same() -> Any:
            return conn

        return _async_sqlalchemy(same, str(conn.dialect.driver))
    if isinstance(obj, AsyncSession):
        session = obj
        driver = str(session.get_bind().dialect.driver)
        return _async_sqlalchemy(session.connection, driver)
    return None
