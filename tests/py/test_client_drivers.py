"""``Queue`` on the connection an application already has: psycopg2, SQLAlchemy ``Connection``
and ``Session`` on psycopg 3 and psycopg2, SQLAlchemy's ``AsyncConnection`` and
``AsyncSession``. The job commits with the application's own writes, or rolls back with them;
errors are translated by SQLSTATE as on psycopg 3; the statement is the generated call."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import psycopg2
import pytest
import sqlalchemy as sa
from helpers.apps import sqlalchemy_url
from helpers.db import aio, rows, scalar
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from pgq_thin import AsyncQueue, Queue
from pgq_thin.errors import DedupeConflict, InvalidEntrypoint, SchemaNotInstalled

TABLE = "CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)"


def jobs(dsn: str) -> list[tuple[Any, ...]]:
    return rows(
        dsn,
        "SELECT entrypoint, payload, priority, run_at > now() + interval '50 seconds'"
        " FROM pgq.jobs ORDER BY id",
    )


@pytest.fixture
def app_dsn(pgq_dsn: str) -> str:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(TABLE)
    return pgq_dsn


def test_psycopg2_commits_and_rolls_back_with_the_app(app_dsn: str) -> None:
    conn = psycopg2.connect(app_dsn)
    try:
        with conn:  # psycopg2's transaction block: commit on success
            with conn.cursor() as cur:
                cur.execute("INSERT INTO orders (item) VALUES ('book')")
            queue = Queue(conn)
            first = queue.enqueue("ship", {"order": 1}, priority=3, run_at=timedelta(minutes=1))
            assert scalar(app_dsn, "SELECT count(*) FROM pgq.jobs") == 0  # not committed yet
            more = queue.enqueue_many("mail", [{"n": 1}, {"n": 2}])
        assert first > 0 and len(more) == 2
        assert jobs(app_dsn) == [
            ("ship", {"order": 1}, 3, True),
            ("mail", {"n": 1}, 0, False),
            ("mail", {"n": 2}, 0, False),
        ]
        with pytest.raises(RuntimeError), conn:
            with conn.cursor() as cur:
                cur.execute("INSERT INTO orders (item) VALUES ('pen')")
            Queue(conn).enqueue("ship", {"order": 2})
            raise RuntimeError("the view failed")
        assert scalar(app_dsn, "SELECT count(*) FROM orders") == 1
        assert len(jobs(app_dsn)) == 3
        # our errors, by SQLSTATE: the caller's transaction is then theirs to roll back
        Queue(conn).enqueue("once", dedupe_key="k")
        conn.commit()
        with pytest.raises(DedupeConflict):
            Queue(conn).enqueue("once", dedupe_key="k")
        conn.rollback()
        with pytest.raises(InvalidEntrypoint):
            Queue(conn).enqueue("", {"bad": "entrypoint"})
        conn.rollback()
        assert Queue(conn).result(first).status == "scheduled"
    finally:
        conn.close()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_sqlalchemy_connection_and_session(app_dsn: str, driver: str) -> None:
    engine = sa.create_engine(sqlalchemy_url(app_dsn, driver))
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO orders (item) VALUES ('book')"))
            Queue(conn).enqueue("ship", {"order": 1, "driver": driver})
        with pytest.raises(RuntimeError), engine.begin() as conn:
            Queue(conn).enqueue("ship", {"order": 2})
            raise RuntimeError("rolled back")
        with Session(engine) as session:
            session.execute(sa.text("INSERT INTO orders (item) VALUES ('pen')"))
            Queue(session).enqueue_many(["a", "b"], [None, {"x": [1, 2]}], priorities=[1, 2])
            session.commit()
        with Session(engine) as session:
            Queue(session).enqueue("lost")
            session.rollback()
        with Session(engine) as session, pytest.raises(DedupeConflict):
            Queue(session).enqueue("k", dedupe_key="d")
            Queue(session).enqueue("k", dedupe_key="d")
    finally:
        engine.dispose()
    assert jobs(app_dsn) == [
        ("ship", {"order": 1, "driver": driver}, 0, False),
        ("a", None, 1, False),
        ("b", {"x": [1, 2]}, 2, False),
    ]
    assert scalar(app_dsn, "SELECT count(*) FROM orders") == 2


def test_sqlalchemy_without_the_schema_names_the_fix(empty_db_dsn: str) -> None:
    engine = sa.create_engine(sqlalchemy_url(empty_db_dsn, "psycopg2"))
    try:
        with engine.connect() as conn, pytest.raises(SchemaNotInstalled, match="pgq-thin install"):
            Queue(conn).enqueue("ship")
    finally:
        engine.dispose()


@aio
async def test_sqlalchemy_async_connection_and_session(app_dsn: str) -> None:
    engine = create_async_engine(sqlalchemy_url(app_dsn, "psycopg"))
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text("INSERT INTO orders (item) VALUES ('book')"))
            await AsyncQueue(conn).enqueue("ship", {"order": 1})
            assert scalar(app_dsn, "SELECT count(*) FROM pgq.jobs") == 0
        async with AsyncSession(engine) as session:
            await AsyncQueue(session).enqueue_many("mail", [{"n": 1}, {"n": 2}])
            await session.rollback()
        async with AsyncSession(engine) as session:
            await AsyncQueue(session).enqueue("mail", {"n": 3}, priority=7)
            await session.commit()
    finally:
        await engine.dispose()
    assert jobs(app_dsn) == [("ship", {"order": 1}, 0, False), ("mail", {"n": 3}, 7, False)]


def test_the_wrong_kind_says_what_is_taken(app_dsn: str) -> None:
    engine = create_async_engine(sqlalchemy_url(app_dsn, "psycopg"))
    with pytest.raises(TypeError, match="AsyncConnection, AsyncSession by the Async classes"):
        Queue(engine)
    with pytest.raises(TypeError, match="psycopg2 connection, a SQLAlchemy Connection"):
        Queue(object())  # type: ignore[arg-type]
