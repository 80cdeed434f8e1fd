"""The statement layer's parts: a :class:`Call` (one statement of a ``pgq`` function, its
parameters, the shape of its answer), sent by ``run`` or ``arun`` of
:mod:`pgq_thin._sql_runner`, which translates the errors.

The calls themselves are generated from the SQL API manifest (``pgq_thin._api``, from
``sql/api.json``): a :class:`Fn` is one function's argument list, and :meth:`Fn.call` passes
the arguments given **by name** (``name => %s::type``), leaving the others to the SQL defaults.
SQL text lives here and in ``calls`` (``tests/py/test_layering.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

import psycopg
from psycopg.types.json import Jsonb

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
