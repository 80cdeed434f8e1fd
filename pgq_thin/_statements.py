"""The statement layer's runner: a :class:`Call` (one statement of a ``pgq`` function, its
parameters, the shape of its answer), sent by :func:`run` or :func:`arun`, errors translated.

The calls themselves are generated from the SQL API manifest (``pgq_thin._api``, from
``sql/api.json``): a :class:`Fn` is one function's argument list, and :meth:`Fn.call` passes
the arguments given **by name** (``name => %s::type``), leaving the others to the SQL defaults.
Errors of class ``PQ`` become :mod:`pgq_thin.errors` exceptions; a missing grant a SetupError
naming what the function needs (``_api.NEEDS``, from the grants). SQL text lives here, in
``calls`` and in ``_api`` (``tests/py/test_layering.py``).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgq_thin.errors import PgqThinError, from_psycopg, setup_error

R = TypeVar("R")
T = TypeVar("T")
Row = dict[str, Any]
Conn = psycopg.Connection[Any]
AConn = psycopg.AsyncConnection[Any]
_TIMESTAMP = "timestamp with time zone"


@dataclass(frozen=True)
class Call(Generic[R]):
    """One statement, its parameters and the shape of its answer. With ``more``, the statement
    is sent again while ``more(last answer)`` holds, and the answers are added up (``+``)."""

    query: str
    args: tuple[Any, ...]
    shape: Callable[[list[Row]], R]
    more: Callable[[R], bool] | None = None

    def then(self, f: Callable[[R], T], more: Callable[[T], bool] | None = None) -> Call[T]:
        """The same statement, its answer passed through ``f``."""
        shape = self.shape
        return Call(self.query, self.args, lambda rows: f(shape(rows)), more)


def _rows(rows: list[Row]) -> list[Row]:
    return rows


@dataclass(frozen=True)
class Fn:
    """A ``pgq`` function: its arguments (name, SQL type), how many lead without a default,
    and whether it answers one value (``SELECT f(...)``) rather than rows."""

    name: str
    args: tuple[tuple[str, str], ...]
    required: int = 0
    scalar: bool = False

    def sql(self, given: Sequence[str], ago: Sequence[str] = ()) -> str:
        """The call with the arguments ``given``; those in ``ago`` (timestamps) are given as an
        interval before the server's ``now()``."""
        types = dict(self.args)
        named = ", ".join(
            f"{g} => now() - %s::interval" if g in ago else f"{g} => %s::{types[g]}" for g in given
        )
        if self.scalar:
            return f"SELECT {self.name}({named}) AS {self.name.rpartition('.')[2]}"
        return f"SELECT * FROM {self.name}({named})"

    @property
    def full(self) -> str:
        return self.sql([a for a, _ in self.args])

    @property
    def least(self) -> str:
        return self.sql([a for a, _ in self.args[: self.required]])

    def call(self, **values: Any) -> Call[list[Row]]:
        """A call passing the arguments that are not None: a JSON value wrapped for jsonb, a
        sequence as a list, a timedelta for a timestamp as that long before now()."""
        types = dict(self.args)
        given, ago = {}, []
        for name, v in values.items():
            if v is None:
                continue
            kind = types[name]
            if kind == "jsonb":
                v = Jsonb(v)
            elif kind.endswith("[]") and not isinstance(v, list):
                v = list(v)
            elif kind == _TIMESTAMP and isinstance(v, timedelta):
                ago.append(name)
            given[name] = v
        return Call(self.sql(list(given), ago), tuple(given.values()), _rows)


# --- shapes ---------------------------------------------------------------------------------


def value(rows: list[Row]) -> Any:
    """The one value of a scalar call."""
    return next(iter(rows[0].values()))


def ints(rows: list[Row]) -> list[int]:
    return [int(next(iter(r.values()))) for r in rows]


# --- running a call -------------------------------------------------------------------------

_FUNCTION = re.compile(r"\bpgq\.(\w+)")


def needs(query: str) -> tuple[str, str]:
    """What the role must hold to run ``query`` (by the first pgq function it calls)."""
    from pgq_thin import _api  # generated from the manifest; imports this module

    fn = _FUNCTION.search(query)
    if fn and fn[1] in _api.NEEDS:
        return _api.NEEDS[fn[1]]
    if fn and fn[1] in _api.SELECTABLE and _api.SELECTABLE[fn[1]]:
        return "pgq_producer or pgq_worker", "GRANT pgq_producer TO {role}"
    if fn and fn[1] in _api.SELECTABLE:
        return "the rights of the schema owner", _api.OWNER_ONLY
    return "a grant on schema pgq", "see docs/operations.md"


def _login(conn: Conn | AConn) -> str:
    try:
        return conn.info.user
    except psycopg.Error:  # a connection that is gone
        return "<login role>"


@contextmanager
def translated(conn: Conn | AConn, query: str) -> Iterator[None]:
    """Errors of ``query`` as our exceptions: class ``PQ`` as :class:`PgqError`, a missing
    schema or grant as :class:`SetupError` (naming what the statement needs); others as they
    are."""
    try:
        yield
    except psycopg.Error as err:
        mapped: PgqThinError | None = from_psycopg(err)
        if mapped is None:
            what, fix = needs(query)
            role = _login(conn)
            mapped = setup_error(err, role=role, grant=fix.format(role=role), needs=what)
        if mapped is None:
            raise
        raise mapped from err


def _fold(call: Call[Any], total: Any, answer: Any) -> tuple[Any, bool]:
    """The answer so far, and whether to send the call again."""
    if call.more is None:
        return answer, False
    return (answer if total is None else operator.add(total, answer)), call.more(answer)


def run(conn: Conn, call: Call[R]) -> R:
    """Send ``call`` (again while its ``more`` holds) on a sync connection."""
    total, again = None, True
    while again:
        with translated(conn, call.query), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(call.query, call.args)
            total, again = _fold(call, total, call.shape(cur.fetchall()))
    return total  # type: ignore[return-value]


async def arun(conn: AConn, call: Call[R]) -> R:
    """Send ``call`` (again while its ``more`` holds) on an async connection."""
    total, again = None, True
    while again:
        with translated(conn, call.query):
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(call.query, call.args)
                total, again = _fold(call, total, call.shape(await cur.fetchall()))
    return total  # type: ignore[return-value]
