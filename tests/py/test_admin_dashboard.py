"""The admin operations added for the dashboard: the policy's read side, search by dedupe key,
delete finished jobs by id, fire a schedule now, and what the connected role may do."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from test_admin import kill

from pgq_thin import Admin, AsyncAdmin, Queue, errors
from pgq_thin.records import EntrypointConfig, JobListing, Privileges


def test_entrypoint_config_reads_the_policy(pgq_dsn: str) -> None:
    with Admin(pgq_dsn) as admin:
        admin.configure("dash.a", max_attempts=7)
        admin.pause("dash.a")
        rows = admin.entrypoint_config(["dash.a", "dash.never"])
        assert [r.entrypoint for r in rows] == ["dash.a"]  # the unknown name is left out
        assert isinstance(rows[0], EntrypointConfig)
        assert rows[0].max_attempts == 7 and rows[0].paused
        assert "dash.a" in [r.entrypoint for r in admin.entrypoint_config()]


def test_find_by_dedupe_key_live_first_then_history(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        dead = queue.enqueue("dash.k", dedupe_key="order-7")
        kill(pgq_dsn, "dash.k")
        live = queue.enqueue("dash.k", dedupe_key="order-7")
    with Admin(pgq_dsn) as admin:
        found = admin.find_by_dedupe_key("order-7")
        assert [(j.id, j.status) for j in found] == [(live, "queued"), (dead, "failed")]
        assert isinstance(found[0], JobListing)
        assert [j.id for j in admin.find_by_dedupe_key("order-7", max_rows=1)] == [live]
        assert admin.find_by_dedupe_key("nothing") == []
        with pytest.raises(errors.InvalidBatchSize):
            admin.find_by_dedupe_key("order-7", max_rows=0)


def test_delete_jobs_by_id_only_finished(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        dead = queue.enqueue("dash.d")
        kill(pgq_dsn, "dash.d")
        live = queue.enqueue("dash.d")
    with Admin(pgq_dsn) as admin:
        assert admin.delete_jobs([dead, live, 10**12]) == [dead]
        assert admin.job(dead) is None
        live_job = admin.job(live)
        assert live_job is not None and live_job.status == "queued"


def test_fire_schedule_now_keeps_the_next_run(pgq_dsn: str) -> None:
    with Admin(pgq_dsn) as admin:
        before = admin.add_schedule("dash.s", "dash.s.ep", "0 3 * * *", payload={"r": 1})
        job_id = admin.fire_schedule_now("dash.s")
        job = admin.job(job_id)
        assert job is not None and (job.entrypoint, job.payload, job.schedule) == (
            "dash.s.ep",
            {"r": 1},
            "dash.s",
        )
        (after,) = admin.schedules()
        assert after.next_run_at == before.next_run_at and after.last_job_id == job_id
        with pytest.raises(errors.InvalidSchedule, match="no schedule 'nope'"):
            admin.fire_schedule_now("nope")


def test_privileges_follow_the_role(login_role: Callable[..., str]) -> None:
    reader = login_role("pgq_reader")
    operator = login_role("pgq_reader", "pgq_admin")
    producer = login_role("pgq_producer")
    with Admin(reader) as admin:
        seen = admin.privileges()
        assert isinstance(seen, Privileges)
        assert seen.read_jobs and seen.read_failed and seen.actions == []
        assert admin.failed() == []  # readers list dead jobs
        with pytest.raises(errors.PrivilegeMissing, match="pgq_admin"):
            admin.delete_jobs([1])
        with pytest.raises(errors.PrivilegeMissing, match="GRANT pgq_admin"):
            admin.configure("dash.c", max_attempts=3)
    with Admin(operator) as admin:
        seen = admin.privileges()
        assert seen.read_jobs
        assert set(seen.actions) == {
            "pause",
            "resume",
            "cancel",
            "requeue",
            "requeue_history",
            "delete_history",
            "delete_jobs",
            "schedule",
            "unschedule",
            "fire_schedule_now",
            "configure",
        }
        admin.pause("dash.p")  # and the database agrees
        assert admin.requeue([1]) == []
        assert admin.configure("dash.c", max_attempts=3).max_attempts == 3
        assert admin.failed() == []
    with Admin(producer) as admin:
        seen = admin.privileges()
        assert not seen.read_jobs and not seen.read_failed and seen.actions == ["cancel"]
        with pytest.raises(errors.PrivilegeMissing, match="GRANT pgq_reader"):
            admin.failed()


def test_async_admin_dashboard_methods(pgq_dsn: str) -> None:
    async def main() -> None:
        async with AsyncAdmin(pgq_dsn) as admin:
            await admin.configure("dash.async", max_attempts=3)
            (config,) = await admin.entrypoint_config("dash.async")
            assert config.max_attempts == 3
            assert await admin.find_by_dedupe_key("none") == []
            assert await admin.delete_jobs([1]) == []
            assert (await admin.privileges()).pause  # the owner may do everything

    asyncio.run(main())
