"""The statement layer's runner: :func:`run` and :func:`arun` send a
:class:`~pgq_thin._statements.Call` on a sync or an async connection; :func:`translated` turns
errors of class ``PQ`` into :mod:`pgq_thin.errors` exceptions, and a missing schema or grant
into a SetupError naming what the function needs (``_api.NEEDS``, from the grants). One
translator for every statement, the hand-tuned ones of :mod:`pgq_thin.calls` included.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from pgq_thin import _api
from pgq_thin._statements import AConn, Call, Conn
from pgq_thin.errors import PgqThinError, from_psycopg, setup_error

R = TypeVar("R")

# --- running a call -------------------------------------------------------------------------

_FUNCTION = re.compile(r"\bpgq\.(\w+)")


def needs(query: str) -> tuple[str, str]:
    """What the role must hold to run ``query`` (by the first pgq function it calls)."""
    fn = _FUNCTION.search(query)
    if fn and fn[1] in _api.NEEDS:
        return _api.NEEDS[fn[1]]
    if fn and fn[1] in _api.SELECTABLE and _api.SELECTABLE[fn[1]]:
        roles = _api.SELECTABLE[fn[1]]
        first = next(r for r in ("pgq_reader", "pgq_producer", *roles) if r in roles)
        others = [r for r in roles if r != first]
        return f"{first} (or {', '.join(others)})", f"GRANT {first} TO {{role}}"
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
