"""Seeded property-based fuzzing of every public function of schema pgq (Hypothesis).

The functions and their argument types are read from the catalog, so the test follows any
signature change. Each example calls one function with named arguments drawn from hostile and
ordinary values of each type (non-finite and far times, huge intervals, deep or huge JSON,
numbers no double holds, two-dimensional arrays, reserved dedupe keys, bad cron strings, NULLs),
against a database holding queued, running, finished and scheduled work. Two invariants:

- every error carries a SQLSTATE that docs/errors.md lists (a PQ code of ours, or one of the
  PostgreSQL codes it explains);
- a call that fails changes nothing: a digest of every table of schema pgq is the same before
  and after.

The run is seeded (derandomized) and short by default; ``PGQ_FUZZ_EXAMPLES=5000`` runs more.
"""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
import pytest
from helpers.server import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

EXAMPLES = int(os.environ.get("PGQ_FUZZ_EXAMPLES", "150"))
DOCUMENTED = set(re.findall(r"`([0-9A-Z]{5})`", (REPO / "docs" / "errors.md").read_text()))

# --- the functions, from the catalog -------------------------------------------------------------

FUNCTIONS_SQL = """
SELECT p.proname,
       array_agg(a.name ORDER BY a.ord) FILTER (WHERE a.name IS NOT NULL) AS names,
       array_agg(format_type(a.type, NULL) ORDER BY a.ord)
           FILTER (WHERE a.name IS NOT NULL) AS types,
       p.pronargs - p.pronargdefaults AS required
  FROM pg_proc p
  LEFT JOIN LATERAL unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]),
                           coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[p.pronargs])),
                           p.proargnames) WITH ORDINALITY AS a(type, mode, name, ord)
         ON a.mode IN ('i', 'b', 'v')
 WHERE p.pronamespace = 'pgq'::regnamespace AND p.proname NOT LIKE '\\_%' AND p.prokind = 'f'
 GROUP BY p.oid, p.proname, p.pronargs, p.pronargdefaults
 ORDER BY p.proname
"""

# --- values, as SQL expressions ------------------------------------------------------------------


def lit(value: str, type_: str) -> str:
    return f"{sql.Literal(value).as_string(None)}::{type_}"


UUIDS = ["11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"]
TEXTS = [
    "fz.a",
    "fz.b",
    "",
    " ",
    "a,b",
    "{x}",
    "x" * 201,
    "tab\there",
    "pgq:schedule:fz@2030",
    "k" * 1100,
    "raise",
    "existing",
    "successful",
    "failed",
    "canceled",
    "queued",
    "running",
    "once",
    "skip",
    "UTC",
    "Mars/Olympus",
    "* * * * *",
    "*/5 * * * * *",
    "99 99 99 99 99",
    "*/0 * * * *",
    "0 0 30 2 *",
    "0 0 L * *",
    "0 0 * * mon#2",
    "61 * * * *",
    "1-0 * * * *",
    "garbage",
    "fz.sched",
]
TIMES = [
    "infinity",
    "-infinity",
    "0044-03-15 BC",
    "1969-12-31 23:59:59+00",
    "1970-01-01 00:00:00+00",
    "2026-06-01 12:00:00+00",
    "2030-01-01 00:00:00+00",
    "8999-12-31 23:00:00+00",
    "9000-01-01 00:00:00+00",
    "200000-01-01 00:00:00+00",
]
INTERVALS = [
    "0",
    "-1 second",
    "00:00:00.5",
    "1 second",
    "30 seconds",
    "1 day",
    "8 days",
    "400 days",
    "100000000 years",
    "-100000000 years",
    "1 month",
]
INTS = [0, 1, -1, 3, 10, 1000, 10001, 40000, -40000, 2**31 - 1, -(2**31)]
BIGINTS = [*INTS, 2**62, -(2**62)]
JSONS = [
    "{}",
    "[]",
    "null",
    "1",
    '{"a": 1}',
    '{"retry_after": 0}',
    '{"retry_after": 1e-400}',
    '{"retry_after": "10"}',
    '{"retry_after": 99999999999}',
    "1e400",
    "-1e400",
    "1e-400",
    '{"n": ' + "9" * 5000 + "}",
    "[" * 70 + "]" * 70,
    "[" * 64 + "]" * 64,
    '{"s": "' + "x" * 70000 + '"}',
    '{"h": "v"}',
    '"str"',
]


# Literals PostgreSQL itself refuses at the call site (22P02, 22003, 22007, 22008).
BAD_LITERALS = {
    "uuid": "'not-a-uuid'::uuid",
    "integer": "'3000000000'::integer",
    "bigint": "'99999999999999999999'::bigint",
    "jsonb": "'{\"a\": '::jsonb",
    "timestamp with time zone": "'300000-01-01'::timestamptz",
    "interval": "'forever'::interval",
}


def scalar(type_: str) -> st.SearchStrategy[str]:
    """SQL expressions of one scalar type (NULL included)."""
    strategy = _scalar(type_)
    if type_ in BAD_LITERALS:
        bad = BAD_LITERALS[type_]
        # one value in 30: a call with several arguments still mostly reaches the function body
        return st.integers(0, 29).flatmap(lambda i: st.just(bad) if i == 0 else strategy)
    return strategy


def _scalar(type_: str) -> st.SearchStrategy[str]:
    null = st.just(f"NULL::{type_}")
    if type_ == "uuid":
        return st.one_of(null, st.sampled_from(UUIDS).map(lambda v: lit(v, "uuid")))
    if type_ == "text":
        return st.one_of(
            null,
            st.sampled_from(TEXTS).map(lambda v: lit(v, "text")),
            st.text(max_size=12).map(lambda v: lit(v.replace("\x00", ""), "text")),
        )
    if type_ in ("integer", "bigint"):
        pool = INTS if type_ == "integer" else BIGINTS
        return st.one_of(
            null,
            st.sampled_from(pool).map(lambda v: f"({v})::{type_}"),
            st.integers(-5, 50).map(lambda v: f"({v})::{type_}"),
        )
    if type_ == "boolean":
        return st.sampled_from(["true", "false", "NULL::boolean"])
    if type_ == "jsonb":
        return st.one_of(null, st.sampled_from(JSONS).map(lambda v: lit(v, "jsonb")))
    if type_ == "timestamp with time zone":
        return st.one_of(null, st.sampled_from(TIMES).map(lambda v: lit(v, "timestamptz")))
    if type_ == "interval":
        return st.one_of(null, st.sampled_from(INTERVALS).map(lambda v: lit(v, "interval")))
    raise AssertionError(f"no strategy for argument type {type_}: add one")


def value(type_: str) -> st.SearchStrategy[str]:
    if not type_.endswith("[]"):
        return scalar(type_)
    element = type_[:-2]
    base = "timestamptz" if element == "timestamp with time zone" else element
    items = st.lists(scalar(element), min_size=1, max_size=4)
    return st.one_of(
        st.just(f"NULL::{base}[]"),
        st.just(f"'{{}}'::{base}[]"),
        items.map(lambda xs: f"ARRAY[{', '.join(xs)}]::{base}[]"),
        # two-dimensional
        st.tuples(scalar(element), scalar(element)).map(
            lambda xy: f"ARRAY[ARRAY[{xy[0]}], ARRAY[{xy[1]}]]::{base}[]"
        ),
    )


# --- state ---------------------------------------------------------------------------------------

SETUP = """
SELECT pgq.enqueue('fz.a', '{"k": 1}', dedupe_key => 'fz-1');
SELECT pgq.enqueue_many(ARRAY['fz.a', 'fz.b', 'fz.b'],
                        run_ats => ARRAY[NULL, '2030-01-01', NULL]::timestamptz[]);
SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{fz.b}', 1);
SELECT pgq.cancel(ARRAY[pgq.enqueue('fz.a')]);
SELECT pgq.schedule('fz.sched', 'fz.a', '* * * * *', '2026-01-01 00:00:00+00');
"""

TABLES_SQL = """
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind = 'r' ORDER BY 1
"""


def digest(conn: psycopg.Connection[Any], tables: list[str]) -> str:
    parts = [
        sql.SQL(
            "(SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM pgq.{} t)"
        ).format(sql.Identifier(name))
        for name in tables
    ]
    query = sql.SQL("SELECT ") + sql.SQL(" || ").join(parts)
    return str(conn.execute(query).fetchone()[0])  # type: ignore[index]


@pytest.fixture
def fuzz_db(pgq_conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    for statement in SETUP.strip().split(";\n"):
        pgq_conn.execute(statement)
    pgq_conn.execute("SET statement_timeout = '20s'")
    return pgq_conn


def test_documented_codes_were_read() -> None:
    assert {"PQ001", "PQ009", "PQ011", "22P02", "42883"} <= DOCUMENTED


def test_fuzz_public_functions(fuzz_db: psycopg.Connection[Any]) -> None:
    conn = fuzz_db
    functions = conn.execute(FUNCTIONS_SQL).fetchall()
    tables = [row[0] for row in conn.execute(TABLES_SQL).fetchall()]
    assert len(functions) > 30 and "jobs_0" in tables and "live_keys" in tables

    @st.composite
    def calls(draw: st.DrawFn) -> str:
        name, names, types, required = draw(st.sampled_from(functions))
        args = []
        for i, (arg, type_) in enumerate(zip(names or [], types or [], strict=True)):
            if i >= required and draw(st.booleans()):
                continue  # leave it to its default
            args.append(f"{arg} => {draw(value(type_))}")
        return f"SELECT * FROM pgq.{name}({', '.join(args)})"

    seen: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(call=calls())
    def one(call: str) -> None:
        before = digest(conn, tables)
        try:
            conn.execute(call).fetchall()
        except psycopg.Error as err:
            code = err.sqlstate or "?"
            seen[code] = seen.get(code, 0) + 1
            if os.environ.get("PGQ_FUZZ_SHOW") and not code.startswith("PQ"):
                print(code, str(err).splitlines()[0][:90], "|", call[:150])
            assert code in DOCUMENTED, f"{call}\nraised undocumented {code}: {err}"
            assert digest(conn, tables) == before, f"{call}\nfailed ({code}) but changed a table"
        else:
            seen["ok"] = seen.get("ok", 0) + 1

    one()
    print(f"fuzz: {EXAMPLES} examples, outcomes {sorted(seen.items())}")
    assert seen.get("ok", 0) > 0 and len(seen) > 3, seen
