"""Every time argument of the public SQL API is checked.

docs/sql-api.md promises that every time a function takes is finite and within 1970..9000 (else
PQ009). A function that forgot its check let `pgq.release(..., at => 'infinity')` write an
infinite finished_at to history, after which `pgq.history_summary()` failed for every caller.
This reads the installed catalog, so a new function or a new time argument is covered without a
list to keep: for each public PL/pgSQL function and each of its timestamptz arguments, some
statement of its source that uses the argument checks it (pgq._check_time, the batch checkers,
inline bounds) or hands it to a public function that checks it. The behaviour itself is tested
per function (tests/sql/hostile_input.sql and the function's own file).
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

# A statement that checks the time it mentions.
CHECKS = re.compile(
    r"pgq\._check_time\(|pgq\._check_jobs\(|pgq\._check_history_filter\(|timestamptz '1970-01-01"
)
CALL = re.compile(r"pgq\.([a-z][a-z_]*)\(")


def public_time_arguments(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        """SELECT p.proname, a.name, p.prosrc
             FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace
            CROSS JOIN LATERAL unnest(p.proargnames, p.proargtypes::oid[]) AS a(name, type)
            WHERE n.nspname = 'pgq' AND p.proname NOT LIKE '\\_%%'
              AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
              AND a.type = 'timestamptz'::regtype
            ORDER BY 1, 2"""
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def uses(source: str, function: str, argument: str) -> list[str]:
    """The statements of the source that mention function.argument."""
    ref = re.compile(rf"\b{re.escape(function)}\.{re.escape(argument)}\b")
    return [s for s in re.split(r";\s*\n", source) if ref.search(s)]


def test_every_public_time_argument_is_checked(pgq_conn: psycopg.Connection[Any]) -> None:
    args = public_time_arguments(pgq_conn)
    assert {"release", "complete", "claim", "enqueue", "cancel", "maintain"} <= {
        f for f, _, _ in args
    }
    checked: set[tuple[str, str]] = set()
    # Until nothing changes: a function that hands its time to a checked one is checked.
    while True:
        before = len(checked)
        checked_functions = {f for f, _ in checked}
        for function, argument, source in args:
            for statement in uses(source, function, argument):
                if CHECKS.search(statement) or any(
                    c in checked_functions for c in CALL.findall(statement)
                ):
                    checked.add((function, argument))
        if len(checked) == before:
            break
    unchecked = [f"pgq.{f}({a})" for f, a, _ in args if (f, a) not in checked]
    assert unchecked == []
