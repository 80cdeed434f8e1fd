"""The admin API (Admin, AsyncAdmin): typed records from the pgq views and functions, actions
checked by the database, and clear errors for a missing schema, a missing privilege or a
connection of the wrong kind."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from pgq_thin import Admin, AsyncAdmin, AsyncQueue, Queue, errors
from pgq_thin.records import (
    EntrypointConfig,
    EntrypointStats,
    FailedJob,
    HistorySummary,
    Schedule,
    to_json,
)


def kill(dsn: str, entrypoint: str, message: str = "it broke") -> None:
    """Make the due jobs of an entrypoint dead through the SQL API, oldest first (one attempt
    allowed, then failed)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (entrypoint,))
        worker = conn.execute("SELECT gen_random_uuid()").fetchone()
        assert worker is not None
        for job_id, lease in conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 100) ORDER BY id",
            (worker[0], entrypoint),
        ).fetchall():
            conn.execute(
                "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint], ARRAY['failed'],"
                " ARRAY[jsonb_build_object('error', 'Boom', 'message', %s::text)])",
                (worker[0], job_id, lease, message),
            )


def test_admin_reads_typed_records_and_acts(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        dead = queue.enqueue("adm.a", {"n": 1})
        waiting = queue.enqueue("adm.b", {"n": 2}, run_at=timedelta(hours=1))
    kill(pgq_dsn, "adm.a", "line one\nline two")

    with Admin(pgq_dsn) as admin:
        stats = {s.entrypoint: s for s in admin.stats()}
        assert isinstance(stats["adm.b"], EntrypointStats)
        assert (stats["adm.b"].queued, stats["adm.b"].due, stats["adm.b"].running) == (1, 0, 0)
        assert stats["adm.a"].max_attempts == 1

        [failed] = admin.failed()
        assert isinstance(failed, FailedJob)
        assert (failed.id, failed.entrypoint, failed.attempt) == (dead, "adm.a", 1)
        assert (failed.error, failed.message) == ("Boom", "line one\nline two")
        assert failed.payload == {"n": 1} and len(failed.errors) == 1

        summary = admin.history_summary(["adm.a"])
        assert [(h.entrypoint, h.status, h.jobs) for h in summary] == [("adm.a", "failed", 1)]
        assert isinstance(summary[0], HistorySummary)

        assert admin.requeue([dead, 999_999]) == [dead]
        assert admin.failed() == []
        assert sorted(admin.cancel([dead, waiting])) == sorted([dead, waiting])
        statuses = {h.status for h in admin.history_summary(since_id=dead)}
        assert statuses == {"canceled"}

        config = admin.configure("adm.a", concurrency_limit=3, backoff_base=timedelta(seconds=2))
        assert isinstance(config, EntrypointConfig)
        assert (config.concurrency_limit, config.max_attempts) == (3, 1)
        assert config.backoff_base == timedelta(seconds=2)
        reset = admin.configure("adm.a", reset=True)
        assert (reset.concurrency_limit, reset.max_attempts) == (None, 5)

    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_attempts = 9  # type: ignore[misc]


def test_failed_limit_and_json(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many("adm.many", [{"i": i} for i in range(3)])
    kill(pgq_dsn, "adm.many")
    with Admin(pgq_dsn) as admin:
        assert len(admin.failed(limit=2)) == 2
        assert len(admin.failed(limit=None)) == 3
        with pytest.raises(ValueError, match="limit must be at least 1"):
            admin.failed(limit=0)
        data = to_json(admin.failed(limit=1))
    assert data[0]["id"] == ids[-1]  # newest first
    assert isinstance(data[0]["finished_at"], str) and isinstance(data[0]["worker_id"], str)


@dataclass
class Report:
    kind: str


def test_schedules_add_list_update_remove(pgq_dsn: str) -> None:
    with Admin(pgq_dsn) as admin:
        added = admin.add_schedule(
            "nightly", "reports.build", "30 2 * * *", payload=Report("daily"), timezone="UTC"
        )
        assert isinstance(added, Schedule)
        assert (added.entrypoint, added.payload, added.state) == (
            "reports.build",
            {"kind": "daily"},
            "idle",
        )
        assert (added.next_run_at.hour, added.next_run_at.minute) == (2, 30)
        again = admin.add_schedule("nightly", "reports.build", "30 2 * * *", priority=3)
        assert again.next_run_at == added.next_run_at and again.priority == 3
        assert [s.name for s in admin.schedules()] == ["nightly"]
        with pytest.raises(errors.InvalidSchedule, match="invalid cron expression"):
            admin.add_schedule("bad", "x", "61 * * * *")
        assert admin.remove_schedule("nightly") is True
        assert admin.remove_schedule("nightly") is False
        assert admin.schedules() == []


def test_async_admin(pgq_dsn: str) -> None:
    async def scenario() -> None:
        async with AsyncQueue(pgq_dsn) as queue:
            dead = await queue.enqueue("aadm.x", {"n": 1})
        await asyncio.to_thread(kill, pgq_dsn, "aadm.x")
        async with AsyncAdmin(pgq_dsn) as admin:
            assert [s.entrypoint for s in await admin.stats()] == ["aadm.x"]
            assert [f.id for f in await admin.failed()] == [dead]
            assert [h.status for h in await admin.history_summary(["aadm.x"])] == ["failed"]
            assert await admin.requeue([dead]) == [dead]
            assert await admin.cancel([dead]) == [dead]
            config = await admin.configure("aadm.x", max_attempts=7)
            assert config.max_attempts == 7
            schedule = await admin.add_schedule("every", "aadm.x", "*/5 * * * *")
            assert [s.name for s in await admin.schedules()] == [schedule.name]
            assert await admin.remove_schedule("every") is True

    asyncio.run(scenario())


def test_admin_on_a_borrowed_connection_joins_its_transaction(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        dead = queue.enqueue("adm.tx")
    kill(pgq_dsn, "adm.tx")
    with psycopg.connect(pgq_dsn) as conn:  # one transaction
        assert Admin(conn).requeue([dead]) == [dead]
        conn.rollback()
    with Admin(pgq_dsn) as admin:
        assert [f.id for f in admin.failed()] == [dead]  # the requeue was rolled back


def test_a_connection_of_the_wrong_kind_is_a_type_error(pgq_dsn: str) -> None:
    import sqlalchemy

    with pytest.raises(TypeError, match=r"Admin\(\) takes a DSN string or a psycopg\.Connection"):
        Admin(42)  # type: ignore[arg-type]

    async def async_conn_to_sync_classes() -> None:
        async with await psycopg.AsyncConnection.connect(pgq_dsn) as conn:
            for cls in (Queue, Admin):
                with pytest.raises(TypeError, match=f"use Async{cls.__name__}"):
                    cls(conn)  # type: ignore[arg-type]

    asyncio.run(async_conn_to_sync_classes())
    with psycopg.connect(pgq_dsn) as conn:
        for acls, name in ((AsyncQueue, "Queue"), (AsyncAdmin, "Admin")):
            with pytest.raises(TypeError, match=f"for a sync connection use {name}"):
                acls(conn)  # type: ignore[arg-type]
    engine = sqlalchemy.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(pgq_dsn)
    )
    with engine.connect() as sa_conn, pytest.raises(TypeError, match="driver_connection"):
        Queue(sa_conn)  # type: ignore[arg-type]
    engine.dispose()


def test_missing_schema_says_to_install(empty_db_dsn: str) -> None:
    with Admin(empty_db_dsn) as admin, pytest.raises(errors.SchemaNotInstalled) as info:
        admin.stats()
    assert info.value.sqlstate == "42P01"
    assert "run `pgq-thin install`" in str(info.value)
    assert isinstance(info.value.__cause__, psycopg.errors.UndefinedTable)
    with Queue(empty_db_dsn) as queue, pytest.raises(errors.SchemaNotInstalled) as info:
        queue.enqueue("x")
    assert info.value.sqlstate == "3F000" and isinstance(info.value, errors.SetupError)


def test_missing_privilege_names_the_role(login_role: Callable[..., str]) -> None:
    producer = login_role("pgq_producer")
    nobody = login_role()
    user = psycopg.conninfo.conninfo_to_dict(nobody)["user"]
    with Admin(producer) as admin:
        assert admin.stats() == []  # producers may read the stats
        with pytest.raises(errors.PrivilegeMissing) as info:
            admin.requeue([1])
    assert info.value.sqlstate == "42501" and isinstance(info.value, errors.SetupError)
    assert "lacks the rights of the schema owner (permission denied for function requeue)" in (
        str(info.value)
    )
    with Queue(nobody) as queue, pytest.raises(errors.PrivilegeMissing) as info:
        queue.enqueue("x")
    message = str(info.value)  # the role may not even use schema pgq
    assert message.startswith(f"role {user} lacks pgq_producer (permission denied for ")
    assert message.endswith(f"): GRANT pgq_producer TO {user}")


def test_records_follow_the_sql_columns() -> None:
    """A column added to the SQL later is ignored; a missing one is a clear error."""
    from pgq_thin.records import from_row

    row: dict[str, Any] = {
        "entrypoint": "e",
        "status": "failed",
        "jobs": 2,
        "max_attempt": 3,
        "avg_latency_s": 0.5,
        "p95_latency_s": 1.0,
    }
    assert from_row(HistorySummary, row) == HistorySummary("e", "failed", 2, 3, 0.5)
    del row["jobs"]
    with pytest.raises(ValueError, match="misses column"):
        from_row(HistorySummary, row)
