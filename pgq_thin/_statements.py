"""The statement layer's parts: a :class:`Call` (one statement of a ``pgq`` function, its
parameters, the shape of its answer), sent by ``run`` or ``arun`` of
:mod:`pgq_thin._sql_runner`, which translates the errors.

The calls themselves are generated from the SQL API manifest (``pgq_thin._api``, from
``sql/api.json``): a :class:`Fn` is one function's argument list, and :meth:`Fn.call` passes
the arguments given **by name** (``name => %s::type``), leaving the others to the SQL defaults;
the generated builder gives the answer its shape (below) from the function's result columns.
SQL text lives here and in ``calls`` (``tests/py/test_layering.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
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

    def call(self, shape: Callable[[list[Row]], R], **values: Any) -> Call[R]:
        """A call passing the arguments that are not None (a JSON value wrapped for jsonb; a
        string for an array as an array of that one string, another sequence as a list; a
        timedelta for a timestamp as that long before now()), its rows through ``shape``."""
        types = dict(self.args)
        given, ago = {}, []
        for name, v in values.items():
            if v is None:
                continue
            kind = types[name]
            if kind == "jsonb":
                v = Jsonb(v)
            elif kind.endswith("[]") and not isinstance(v, list):
                v = [v] if isinstance(v, str) else list(v)
            elif kind == _TIMESTAMP and isinstance(v, timedelta):
                ago.append(name)
            given[name] = v
        return Call(self.sql(list(given), ago), tuple(given.values()), shape)


# --- shapes of an answer (chosen by scripts/gen_api.py from the result columns) ---------------


def rows(answer: list[Row]) -> list[Row]:
    return answer


def value(answer: list[Row]) -> Any:
    """The one value of a scalar call."""
    return next(iter(answer[0].values()))


def column(answer: list[Row]) -> list[Any]:
    """The values of a one-column set."""
    return [next(iter(r.values())) for r in answer]


def ints(answer: list[Row]) -> list[int]:
    return [int(v) for v in column(answer)]


def first(answer: list[Row]) -> Row:
    return answer[0]


def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
    """An instance of the record class ``cls`` from a row, by column name (a column an older
    client does not know is ignored)."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if missing := [n for n in names if n not in row]:
        raise ValueError(f"{cls.__name__} row misses column(s) {', '.join(missing)}")
    return cls(**{n: row[n] for n in names})


def records(cls: type[R]) -> Callable[[list[Row]], list[R]]:
    return lambda answer: [from_row(cls, r) for r in answer]


def record(cls: type[R]) -> Callable[[list[Row]], R]:
    return lambda answer: from_row(cls, answer[0])


def optional(cls: type[R]) -> Callable[[list[Row]], R | None]:
    return lambda answer: from_row(cls, answer[0]) if answer else None
