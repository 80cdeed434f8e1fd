"""Every SQL statement of ``pgq_thin.calls`` and ``pgq_thin.admin_calls`` fits the installed
schema: each one is prepared (parsed, planned, every function and column resolved) against a
fresh install, so a signature or a result column changed in SQL but not in the client fails
here, not in whichever test happens to send that statement."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest

from pgq_thin import admin_calls, calls, dashboard_calls

STATEMENTS = {
    f"{module.__name__}.{name}": value
    for module in (calls, admin_calls, dashboard_calls)
    for name, value in vars(module).items()
    if name.isupper() and isinstance(value, str) and value.lstrip().upper().startswith("SELECT")
}
# Functions called with named arguments: with all of them, and with only those without a
# default (what a call leaving the rest to their SQL defaults sends).
STATEMENTS |= {
    f"{module.__name__}.{name}{form}": sql
    for module in (admin_calls, dashboard_calls)
    for name, fn in vars(module).items()
    if isinstance(fn, admin_calls.Fn)
    for form, sql in (("", fn.full), ("(least)", fn.least))
}
# A timestamptz argument given as an interval before now().
STATEMENTS |= {
    f"pgq_thin.admin_calls.{name}(ago {arg})": fn.sql(
        [a for a, _ in fn.args[: fn.required]] + [arg], ago=[arg]
    )
    for name, fn in vars(admin_calls).items()
    if isinstance(fn, admin_calls.Fn)
    for arg, kind in fn.args
    if kind == "timestamptz"
}


def prepare(conn: psycopg.Connection[Any], sql: str) -> None:
    """PREPARE ``sql`` with its ``%s`` placeholders as ``$1, $2, ...``, then forget it."""
    numbered = iter(range(1, sql.count("%s") + 1))
    text = re.sub(r"%s", lambda _: f"${next(numbered)}", sql)
    conn.execute(f"PREPARE pgq_calls_check AS {text}", prepare=False)
    conn.execute("DEALLOCATE pgq_calls_check", prepare=False)  # not transactional


def test_the_module_holds_statements() -> None:
    names = {name.rpartition(".")[2] for name in STATEMENTS}
    assert {"ENQUEUE", "CLAIM", "HEARTBEAT", "COMPLETE", "RELEASE"} <= names
    assert {"METRICS", "WORKERS", "PAUSE", "JOB", "FIND_HISTORY", "REGISTER_WORKER"} <= names


def test_every_statement_fits_the_installed_schema(pgq_conn: psycopg.Connection[Any]) -> None:
    problems = []
    for name, sql in sorted(STATEMENTS.items()):
        try:
            prepare(pgq_conn, sql)
        except psycopg.Error as err:
            problems.append(f"{name}: {str(err).strip()}\n    {sql}")
    assert not problems, "statements that do not fit the installed schema:\n" + "\n".join(problems)


def test_a_statement_that_does_not_fit_is_caught(pgq_conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.UndefinedFunction):
        prepare(pgq_conn, "SELECT * FROM pgq.claim(%s::uuid, %s::text[], %s::int, %s::text)")
