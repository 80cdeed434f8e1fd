"""The cron rule of SQL (pgq._check_cron) accepts only what the Python client can compute.

Seeded Hypothesis: expressions built from cron tokens (values in and out of range, names, ranges,
steps, lists, the special characters) go to ``pgq._check_cron``; whenever SQL accepts one,
``pgq_thin.cron.CronSchedule`` must accept it too and give a next time after several moments.
Known expressions pin both sides: the ones the docs promise are accepted, the ones the audit
used are refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from helpers.server import PgServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgq_thin.cron import CronSchedule

EXAMPLES = int(os.environ.get("PGQ_FUZZ_EXAMPLES", "300"))
MOMENTS = [
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC),
    datetime(2028, 12, 31, 12, tzinfo=UTC),
]

ACCEPTED = [
    "* * * * *",
    "*/5 * * * * *",
    "0 0 * * mon-fri",
    "0 0 * JAN-dec SUN",
    "15 10 L * *",
    "0 0 15W * *",
    "0 0 ? * mon#2",
    "0-30/10 1,2,3 1-31/2 */3 0-7",
    "5/15 * * * *",
    "0 0 29 2 *",
]
REFUSED = [
    "99 99 99 99 99",
    "*/0 * * * *",
    "0 0 30 2 *",
    "0 0 31 4,6 *",
    "60 * * * *",
    "0 24 * * *",
    "0 0 0 * *",
    "0 0 * 13 *",
    "0 0 * * 8",
    "5-1 * * * *",
    "0 0 * mon *",
    "0 0 * * jan",
    "* * * *",
    "* * * * * * *",
    "H * * * *",
    "1,,2 * * * *",
    "every minute",
]


@pytest.fixture(scope="module")
def conn(pg_server: PgServer, template_db: str) -> Iterator[psycopg.Connection[Any]]:
    """One installed database for the whole module: the checks only read."""
    with (
        pg_server.database("cron", template=template_db) as dsn,
        psycopg.connect(dsn, autocommit=True) as connection,
    ):
        yield connection


def check(conn: psycopg.Connection[Any], expression: str) -> str | None:
    """The normalised expression when SQL accepts it, None when it raises PQ011."""
    try:
        with conn.transaction():
            return str(conn.execute("SELECT pgq._check_cron(%s)", (expression,)).fetchone()[0])  # type: ignore[index]
    except psycopg.Error as err:
        assert err.sqlstate == "PQ011", (expression, err)
        return None


def computable(expression: str) -> None:
    schedule = CronSchedule(expression)
    for moment in MOMENTS:
        assert schedule.next_after(moment) > moment


@pytest.mark.parametrize("expression", ACCEPTED)
def test_documented_expressions_are_accepted_by_both(
    conn: psycopg.Connection[Any], expression: str
) -> None:
    assert check(conn, expression) is not None
    computable(expression)


@pytest.mark.parametrize("expression", REFUSED)
def test_bad_expressions_are_refused_by_sql(conn: psycopg.Connection[Any], expression: str) -> None:
    assert check(conn, expression) is None


# Fields (low, high, names); values mostly in range, sometimes just outside, names and specials.
FIELDS = [
    (0, 59, []),
    (0, 23, []),
    (1, 31, ["L", "15W", "?"]),
    (1, 12, ["jan", "Feb", "DEC"]),
    (0, 7, ["mon", "FRI", "sun", "?"]),
]
SECONDS = (0, 59, [])


def field(low: int, high: int, names: list[str]) -> st.SearchStrategy[str]:
    atom = st.one_of(
        st.integers(low, high).map(str),
        st.integers(low, high).map(str),
        st.sampled_from([str(low - 1), str(high + 1), "*", *names]),
    )
    item = st.one_of(
        atom,
        atom,
        st.tuples(atom, atom).map(lambda t: f"{t[0]}-{t[1]}"),
        st.tuples(atom, st.integers(0, high + 2)).map(lambda t: f"{t[0]}/{t[1]}"),
        st.tuples(atom, st.integers(0, 6)).map(lambda t: f"{t[0]}#{t[1]}"),
    )
    return st.lists(item, min_size=1, max_size=3).map(",".join)


EXPRESSION = st.tuples(st.one_of(st.just(None), field(*SECONDS)), *(field(*f) for f in FIELDS)).map(
    lambda fs: " ".join(f for f in fs if f is not None)
)


def test_whatever_sql_accepts_the_client_can_compute(conn: psycopg.Connection[Any]) -> None:
    accepted = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(expression=EXPRESSION)
    def one(expression: str) -> None:
        nonlocal accepted
        normalised = check(conn, expression)
        if normalised is not None:
            accepted += 1
            computable(normalised)

    one()
    print(f"cron: {accepted} of {EXAMPLES} accepted by SQL, all computable")
    assert accepted >= 5, accepted
