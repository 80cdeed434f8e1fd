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
    JobInfo,
    JobListing,
    JobPage,
    JobResult,
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
                " jsonb_build_array(jsonb_build_object('error', 'Boom', 'message', %s::text)))",
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

    with pytest.raises(TypeError, match=r"Admin\(\) takes a DSN string, a psycopg\.Connection"):
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
    # a sync SQLAlchemy connection is taken by Queue (tests/py/test_client_drivers.py), not
    # by AsyncQueue
    with engine.connect() as sa_conn, pytest.raises(TypeError, match="by the Async classes"):
        AsyncQueue(sa_conn)  # type: ignore[arg-type]
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
    assert "lacks pgq_admin (or the owner) (permission denied for function requeue)" in (
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


# --- seeing and steering: metrics, workers, pause, one job, listings, history filters --------


def finish(dsn: str, entrypoint: str, status: str, details: Any = None, n: int = 100) -> list[int]:
    """Claim up to ``n`` due jobs of an entrypoint and complete them with ``status`` and
    ``details`` through the SQL API (as a worker in any language would); their ids."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        worker = conn.execute("SELECT gen_random_uuid()").fetchone()
        assert worker is not None
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s) ORDER BY id",
            (worker[0], entrypoint, n),
        ).fetchall()
        for job_id, lease in claimed:
            conn.execute(
                "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint], ARRAY[%s],"
                " jsonb_build_array(%s::jsonb))",
                (worker[0], job_id, lease, status, psycopg.types.json.Jsonb(details)),
            )
    return [job_id for job_id, _ in claimed]


def test_metrics_count_live_and_finished_jobs(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("met.a", [{"i": i} for i in range(5)])
        queue.enqueue("met.a", run_at=timedelta(hours=1))
        queue.enqueue("met.b")
    finish(pgq_dsn, "met.a", "successful", {"result": 1}, n=3)
    with Admin(pgq_dsn) as admin:
        rows = {m.entrypoint: m for m in admin.metrics()}
        a = rows["met.a"]
        assert (a.queued, a.due, a.delayed, a.running, a.stale) == (3, 2, 1, 0, 0)
        assert (a.successful_total, a.failed_total, a.canceled_total) == (3, 0, 0)
        assert a.lag_s >= 0 and not a.paused  # windows and percentiles: whole 10 s buckets
        assert [m.entrypoint for m in admin.metrics("met.b")] == ["met.b"]
        windowed = admin.metrics(["met.a"], percentile_window=timedelta(minutes=1))
        assert windowed[0].successful_total == 3
        with pytest.raises(errors.PgqError, match="percentile_window") as info:
            admin.metrics(percentile_window=timedelta(hours=2))
        assert info.value.sqlstate == "PQ009"
    assert to_json(a)["lag_s"] == a.lag_s


def test_workers_show_the_registry(pgq_dsn: str) -> None:
    import uuid

    from pgq_thin import _api
    from pgq_thin._sql_runner import run

    worker_id = uuid.uuid4()
    with Admin(pgq_dsn) as admin:
        assert admin.workers() == []
        reg = run(
            admin.connection,
            _api.register_worker(worker_id, entrypoints=["w.a"], host="h1", pid=42, version="9"),
        )
        assert reg.gone_after == timedelta(seconds=30)
        [w] = admin.workers()
        assert (w.worker_id, w.state, w.host, w.pid, w.entrypoints) == (
            worker_id,
            "active",
            "h1",
            42,
            ["w.a"],
        )
        assert (w.running, w.job_ids, w.application_name) == (0, [], "pgq-thin admin")
        assert isinstance(to_json(w)["client_addr"], str | None)
        assert run(admin.connection, _api.unregister_worker(worker_id))
        assert admin.workers() == []


def test_pause_and_resume(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("pz.a")
    with Admin(pgq_dsn) as admin:
        admin.configure("pz.a", concurrency_limit=4)
        [paused] = admin.pause("pz.a")
        assert isinstance(paused, EntrypointConfig) and paused.paused and paused.paused_by
        assert finish(pgq_dsn, "pz.a", "successful") == []  # nothing starts
        assert {s.entrypoint: s.paused for s in admin.stats()} == {"pz.a": True}
        assert [m.paused for m in admin.metrics("pz.a")] == [True]
        [resumed] = admin.resume(["pz.a", "pz.never"])
        assert not resumed.paused and resumed.concurrency_limit == 4  # policy kept
        assert len(finish(pgq_dsn, "pz.a", "successful")) == 1
        with pytest.raises(errors.PgqError) as info:
            admin.pause([])
        assert info.value.sqlstate == "PQ001"


def test_one_job_live_and_finished_and_results(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        ok, bad, waiting = queue.enqueue_many("one.a", [{"n": 1}, {"n": 2}, {"n": 3}])
    finish(pgq_dsn, "one.a", "successful", {"result": {"sum": 3}}, n=1)
    with Admin(pgq_dsn) as admin:
        admin.configure("one.a", max_attempts=1)
    finish(pgq_dsn, "one.a", "failed", {"error": "Boom", "message": "no"}, n=1)
    with Admin(pgq_dsn) as admin:
        done = admin.job(ok)
        assert isinstance(done, JobInfo)
        assert (done.status, done.result, done.attempt, done.payload) == (
            "successful",
            {"sum": 3},
            1,
            {"n": 1},
        )
        assert done.finished_at is not None and done.run_s is not None
        dead = admin.job(bad)
        assert dead is not None and dead.status == "failed"
        assert dead.details["message"] == "no" and len(dead.errors or []) == 1
        live = admin.job(waiting)
        assert live is not None and (live.status, live.finished_at) == ("queued", None)
        assert admin.job(10**12) is None
        results = admin.job_results([waiting, ok, 10**12, bad])
        assert [(r.id, r.status, r.finished) for r in results] == [
            (waiting, "queued", False),
            (ok, "successful", True),
            (10**12, "unknown", False),
            (bad, "failed", True),
        ]
        assert isinstance(results[1], JobResult) and results[1].result == {"sum": 3}
        assert results[3].error["error"] == "Boom"


def test_queue_result_and_wait(pgq_dsn: str) -> None:
    import threading

    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue("res.a", {"x": 2})
        assert queue.result(job_id).status == "queued"
        with pytest.raises(TimeoutError, match=f"job {job_id} did not finish within 0.05 s"):
            queue.wait(job_id, timeout=0.05)
        worker = threading.Thread(
            target=finish, args=(pgq_dsn, "res.a", "successful", {"result": [4]})
        )
        worker.start()
        done = queue.wait(job_id, timeout=30)
        worker.join()
        assert (done.status, done.finished, done.result) == ("successful", True, [4])
        assert queue.wait(10**12).status == "unknown"
        assert [r.status for r in queue.results([job_id, 10**12])] == ["successful", "unknown"]

    async def scenario() -> None:
        async with AsyncQueue(pgq_dsn) as aqueue:
            again = await aqueue.enqueue("res.a")
            assert (await aqueue.result(again)).status == "queued"
            waiter = asyncio.create_task(aqueue.wait(again, timeout=30))
            await asyncio.to_thread(finish, pgq_dsn, "res.a", "successful", {"result": "ok"})
            assert (await waiter).result == "ok"

    asyncio.run(scenario())


def test_list_jobs_pages_with_a_cursor(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many("ls.a", [{"i": i} for i in range(7)], priorities=[0] * 6 + [9])
    with Admin(pgq_dsn) as admin:
        seen: list[int] = []
        after = None
        while True:
            page = admin.list_jobs("ls.a", "queued", after=after, page_size=3)
            assert isinstance(page, JobPage) and all(isinstance(j, JobListing) for j in page)
            seen += [j.id for j in page]
            if page.next_cursor is None:
                break
            after = page.next_cursor
        assert seen == [ids[6], *ids[:6]]  # claim order: priority first
        assert len(admin.list_jobs("ls.a", "queued")) == 7  # the SQL default page size
        assert admin.list_jobs("ls.a", "running").jobs == []
        with pytest.raises(errors.PgqError) as info:
            admin.list_jobs("ls.a", "sleeping")
        assert info.value.sqlstate == "PQ009" and "sleeping" in str(info.value)


def test_history_by_filter_find_requeue_delete(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("hf.a", [{"i": i} for i in range(4)])
        queue.enqueue("hf.b")
    with Admin(pgq_dsn) as admin:
        admin.configure("hf.a", max_attempts=1)
        admin.configure("hf.b", max_attempts=1)
    dead = finish(pgq_dsn, "hf.a", "failed", {"error": "Timeout", "message": "smtp slow"}, n=2)
    other = finish(pgq_dsn, "hf.a", "failed", {"error": "KeyError", "message": "x"}, n=2)
    finish(pgq_dsn, "hf.b", "failed", {"error": "Timeout", "message": "slow"})
    with Admin(pgq_dsn) as admin:
        page = admin.find_history("hf.a", error="smtp")
        assert sorted(j.id for j in page) == sorted(dead)
        assert {j.error for j in page} == {"Timeout"}
        assert len(admin.find_history(error="timeout")) == 3  # every entrypoint, any case
        assert admin.find_history("hf.a", statuses="successful").jobs == []
        since = admin.job(dead[0])
        assert since is not None and since.finished_at is not None
        assert admin.find_history(since=since.finished_at + timedelta(days=1)).jobs == []
        # a timedelta: that long before the database's clock
        assert len(admin.find_history("hf.a", since=timedelta(hours=1))) == 4
        assert admin.find_history("hf.a", until=timedelta(hours=1)).jobs == []

        assert sorted(admin.requeue_history("hf.a", error="smtp")) == sorted(dead)
        assert {j.status for j in admin.list_jobs("hf.a", "queued")} == {"queued"}
        requeued = admin.requeue_history(max_jobs=1, every=True)  # one call per job
        assert len(requeued) == 3 and set(other) <= set(requeued)
        assert admin.find_history().jobs == []
        finish(pgq_dsn, "hf.a", "canceled", n=10)
        assert admin.delete_history("hf.a", statuses=["canceled"], max_jobs=1, every=True) == 4
        with pytest.raises(errors.PgqError) as info:
            admin.requeue_history(statuses=["successful"])
        assert info.value.sqlstate == "PQ009"


def test_prune_deletes_old_history(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("pr.a", [{} for _ in range(3)])
    finish(pgq_dsn, "pr.a", "successful")
    with Admin(pgq_dsn) as admin:
        assert admin.prune(timedelta(hours=1)) == 0
        assert admin.prune(timedelta(0)) == 3
        assert admin.history_summary(["pr.a"]) == []
        with pytest.raises(errors.PgqError) as info:
            admin.prune(timedelta(seconds=-1))
        assert info.value.sqlstate == "PQ008"


def test_async_admin_operate(pgq_dsn: str) -> None:
    async def scenario() -> None:
        async with AsyncQueue(pgq_dsn) as queue:
            job_id = await queue.enqueue("aop.a")
        async with AsyncAdmin(pgq_dsn) as admin:
            assert [p.entrypoint for p in await admin.pause("aop.a")] == ["aop.a"]
            assert [m.due for m in await admin.metrics()] == [1]
            assert await admin.workers() == []
            info = await admin.job(job_id)
            assert info is not None and info.status == "queued"
            assert [j.id for j in await admin.list_jobs("aop.a", "queued")] == [job_id]
            assert [r.status for r in await admin.job_results([job_id])] == ["queued"]
            assert await admin.find_history() == JobPage([], None)
            assert await admin.requeue_history() == []
            assert await admin.delete_history() == 0
            assert await admin.prune(timedelta(days=1)) == 0
            assert [p.paused for p in await admin.resume("aop.a")] == [False]

    asyncio.run(scenario())


def test_reader_and_admin_roles(login_role: Callable[..., str]) -> None:
    reader = login_role("pgq_reader")
    operator = login_role("pgq_admin")
    producer = login_role("pgq_producer")
    with Queue(producer) as queue:
        job_id = queue.enqueue("role.a")
        assert queue.result(job_id).status == "queued"  # producers read results
    with Admin(reader) as admin:
        assert [m.entrypoint for m in admin.metrics()] == ["role.a"]
        assert admin.job(job_id) is not None
        with pytest.raises(errors.PrivilegeMissing) as info:
            admin.pause("role.a")
    user = psycopg.conninfo.conninfo_to_dict(reader)["user"]
    assert str(info.value).endswith(f"GRANT pgq_admin TO {user}")
    with Admin(operator) as admin:
        assert admin.pause("role.a")[0].paused
    with Admin(producer) as admin, pytest.raises(errors.PrivilegeMissing) as info:
        admin.job(job_id)
    assert "lacks pgq_reader (or pgq_admin)" in str(info.value)
