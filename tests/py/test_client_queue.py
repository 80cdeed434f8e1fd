"""The producer (Queue, AsyncQueue) and the SQLSTATE error mapping."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgq_thin import errors
from pgq_thin.admin import Admin
from pgq_thin.queue import AsyncQueue, Queue


def count_jobs(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pgq.jobs").fetchone()
        assert row is not None
        return int(row[0])


def test_enqueue_in_a_rolled_back_transaction_leaves_nothing(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn) as conn:  # not autocommit: one transaction
        job_id = Queue(conn).enqueue("mail", {"to": "a@b.c"})
        assert job_id > 0
        conn.rollback()
    assert count_jobs(pgq_dsn) == 0

    with psycopg.connect(pgq_dsn) as conn:
        Queue(conn).enqueue_many("mail", [{"n": 1}, {"n": 2}])
        assert count_jobs(pgq_dsn) == 0  # not visible before our commit
    assert count_jobs(pgq_dsn) == 2  # the connection block committed


def test_async_transactional_enqueue(pgq_dsn: str) -> None:
    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(pgq_dsn) as conn:
            await AsyncQueue(conn).enqueue("mail", {"n": 1})
            await conn.rollback()
            await AsyncQueue(conn).enqueue("mail", {"n": 2})
            await conn.commit()

    asyncio.run(scenario())
    with psycopg.connect(pgq_dsn) as conn:
        assert conn.execute("SELECT payload FROM pgq.jobs").fetchall() == [({"n": 2},)]


@dataclass
class Msg:
    text: str


def test_enqueue_arguments_reach_the_row(pgq_dsn: str) -> None:
    due = datetime(2030, 1, 1, tzinfo=UTC)
    with Queue(pgq_dsn) as q:
        a = q.enqueue(
            "ep", Msg("hi"), priority=5, run_at=due, dedupe_key="k1", headers={"trace": "t"}
        )
        b = q.enqueue("ep", None, run_at=timedelta(hours=1))
        many = q.enqueue_many(["x", "y", "z"], [1, "two", [3]], priorities=[1, 2, 3])
        assert q.enqueue("ep", dedupe_key="k1", on_conflict="existing") == a
    with psycopg.connect(pgq_dsn) as conn:
        rows = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT id, entrypoint, payload, priority, run_at, dedupe_key, headers,"
                " run_at > now() + interval '50 minutes' FROM pgq.jobs"
            )
        }
    assert rows[a][:6] == ("ep", {"text": "hi"}, 5, due, "k1", {"trace": "t"})
    assert rows[b][-1] is True
    assert [rows[i][:3] for i in many] == [("x", 1, 1), ("y", "two", 2), ("z", [3], 3)]


def test_async_queue_enqueue_many_and_cancel(pgq_dsn: str) -> None:
    async def scenario() -> list[int]:
        async with AsyncQueue(pgq_dsn) as q:
            ids = await q.enqueue_many("ep", [{"i": i} for i in range(5)], priorities=2)
            assert await q.enqueue_many("ep", []) == []
            return sorted(await q.cancel(ids[:2]))

    canceled = asyncio.run(scenario())
    assert len(canceled) == 2
    assert count_jobs(pgq_dsn) == 3


@pytest.mark.parametrize(
    ("call", "cls", "code"),
    [
        (lambda q: q.enqueue(""), errors.InvalidEntrypoint, "PQ001"),
        (lambda q: q.enqueue("ep", priority=40000), errors.InvalidPriority, "PQ005"),
        (lambda q: q.enqueue("ep", headers=["no"]), errors.InvalidArgument, "PQ009"),  # type: ignore[arg-type]
        (lambda q: q.enqueue_many(["a", "b"], [1]), errors.ArrayLengthMismatch, "PQ003"),
    ],
)
def test_errors_are_mapped_by_sqlstate(pgq_dsn: str, call: Any, cls: type, code: str) -> None:
    with Queue(pgq_dsn) as q, pytest.raises(cls) as info:
        call(q)
    assert info.value.sqlstate == code
    assert isinstance(info.value, errors.PgqError)
    assert isinstance(info.value.__cause__, psycopg.Error)


def test_queue_configure_is_deprecated_and_still_works(pgq_dsn: str) -> None:
    """``Queue.configure`` goes in the next release (``Admin.configure`` is the one path); until
    then it warns, stores the policy and returns the stored row as a dict, errors mapped."""
    with Queue(pgq_dsn) as q:
        with pytest.warns(DeprecationWarning, match=r"Admin\.configure"):
            row = q.configure("ep", max_attempts=4)
        assert (row["entrypoint"], row["max_attempts"]) == ("ep", 4)
        with pytest.warns(DeprecationWarning), pytest.raises(errors.InvalidConfig) as info:
            q.configure("ep", max_attempts=0)
        assert info.value.sqlstate == "PQ008"
        assert Admin(q.connection).entrypoint_config("ep")[0].max_attempts == 4


def test_dedupe_conflict(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        q.enqueue("ep", dedupe_key="once")
        with pytest.raises(errors.DedupeConflict) as info:
            q.enqueue("ep", dedupe_key="once")
    assert info.value.hint  # the server suggests on_conflict => 'existing'


def test_unknown_pq_code_maps_to_the_base_class() -> None:
    class Fake(psycopg.DatabaseError):
        sqlstate = "PQ999"

    mapped = errors.from_psycopg(Fake("new in a later schema"))
    assert type(mapped) is errors.PgqError and mapped.sqlstate == "PQ999"
    assert errors.from_psycopg(psycopg.errors.UniqueViolation("x")) is None
    assert not hasattr(errors, "ForeignSchema")  # one name, the one the docs use too
    assert errors.BY_SQLSTATE["PQ900"] is errors.ForeignSchemaError


def test_delays_are_resolved_on_the_server_clock(pgq_dsn: str) -> None:
    """A timedelta or a number of seconds travels as an interval: run_at is the server's
    now() (the same as enqueued_at, in one statement) plus exactly the delay."""
    with Queue(pgq_dsn) as q:
        one = q.enqueue("cq.delay", run_at=timedelta(minutes=5))
        many = q.enqueue_many("cq.delay", [1, 2], run_ats=[90.5, None])
        shared = q.enqueue_many("cq.delay", [3], run_ats=timedelta(seconds=7))
    with psycopg.connect(pgq_dsn) as conn:
        got = dict(
            conn.execute(
                "SELECT id, run_at - enqueued_at FROM pgq.jobs WHERE entrypoint = 'cq.delay'"
            ).fetchall()
        )
    assert got == {
        one: timedelta(minutes=5),
        many[0]: timedelta(seconds=90.5),
        many[1]: timedelta(0),
        shared[0]: timedelta(seconds=7),
    }
