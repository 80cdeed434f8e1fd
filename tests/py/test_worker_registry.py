"""A running ThinWorker in the workers registry: it registers before its first claim, stays
fresh through its heartbeats even with no job, unregisters at a clean stop, and its maintenance
keeps the metrics rollup going (what ``pgq.metrics`` and ``Admin.metrics`` show)."""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import timedelta
from typing import Any

import psycopg
from helpers.wait import await_for

from pgq_thin import AsyncAdmin, AsyncQueue, Queue
from pgq_thin.job import Job
from pgq_thin.records import WorkerStatus
from pgq_thin.worker import ThinWorker


async def me(admin: AsyncAdmin, worker: ThinWorker) -> WorkerStatus | None:
    return next((w for w in await admin.workers() if w.worker_id == worker.worker_id), None)


def test_a_running_worker_is_in_the_registry_until_it_stops(pgq_dsn: str) -> None:
    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=30, concurrency=3, rollup_interval=None)
        done: list[int] = []

        @worker.entrypoint("reg.a")
        async def handle(job: Job[Any]) -> dict[str, int]:
            done.append(job.id)
            return {"double": job.payload["n"] * 2}

        @worker.entrypoint("reg.b")
        def other(job: Job[Any]) -> None:
            pass

        async with AsyncAdmin(pgq_dsn) as admin:
            assert await admin.workers() == []
            run = asyncio.create_task(worker.arun(install_signal_handlers=False))
            seen = await await_for(lambda: me(admin, worker), 10, "the worker to register")
            assert (seen.state, seen.pid) == ("active", os.getpid())
            assert seen.host == socket.gethostname()
            assert seen.entrypoints == ["reg.a", "reg.b"] and seen.running == 0
            assert seen.application_name and seen.application_name.startswith("pgq-thin worker")
            assert seen.metadata["concurrency"] == 3 and seen.version
            async with AsyncQueue(pgq_dsn) as queue:
                ids = await queue.enqueue_many("reg.a", [{"n": n} for n in range(5)])
                results = [await queue.wait(i, timeout=10) for i in ids]
            assert [r.result for r in results] == [{"double": 2 * n} for n in range(5)]
            rows = {m.entrypoint: m for m in await admin.metrics()}
            assert rows["reg.a"].successful_total == 5  # the reader advances the rollup
            worker.stop()
            await asyncio.wait_for(run, 15)
            assert await me(admin, worker) is None  # unregistered at the clean stop

    asyncio.run(scenario())


async def last_seen(dsn: str, worker: ThinWorker) -> Any:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT last_seen_at FROM pgq.workers WHERE worker_id = %s", (worker.worker_id,)
        )
        row = await cur.fetchone()
        return None if row is None else row[0]


def test_an_idle_worker_keeps_heartbeating(pgq_dsn: str) -> None:
    """With no job at all, the heartbeat loop still refreshes ``pgq.workers`` (empty arrays),
    at least every third of the registry timeout; the run-once step does it at once."""

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=30, rollup_interval=None)
        worker.entrypoint("idle.a")(lambda job: None)
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        first = await await_for(lambda: last_seen(pgq_dsn, worker), 10, "the registration")
        assert worker.owned_job_ids == frozenset()
        assert await worker.heartbeat_once() == {}  # an empty beat, sent
        second = await last_seen(pgq_dsn, worker)
        assert second > first
        # the loop itself beats again, every third of the 30 s timeout or sooner (jittered); the
        # deadline leaves room for a loaded machine
        await await_for(
            lambda: _after(pgq_dsn, worker, second), 20, "an idle heartbeat from the loop"
        )
        worker.stop()
        await asyncio.wait_for(run, 15)
        assert await last_seen(pgq_dsn, worker) is None

    asyncio.run(scenario())


async def _after(dsn: str, worker: ThinWorker, when: Any) -> bool:
    seen = await last_seen(dsn, worker)
    return seen is not None and seen > when


def test_the_maintenance_rolls_up_metrics_and_prunes_gone_workers(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue_many("roll.a", [{} for _ in range(4)])
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:  # a worker gone long ago
        conn.execute(
            "SELECT pgq.register_worker(gen_random_uuid(), at => now() - interval '1 hour')"
        )

    async def scenario() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=30, rollup_interval=None)
        worker.entrypoint("roll.a")(lambda job: None)
        await worker.arun(until_empty=True, install_signal_handlers=False)
        async with worker:
            rollup = await worker.rollup_once()
            assert rollup.rolled == 4 and rollup.caught_up and not rollup.busy
            again = await worker.rollup_once()
            assert again.rolled == 0
        async with AsyncAdmin(pgq_dsn) as admin:
            assert await admin.workers() == []  # the gone worker was pruned
            [row] = await admin.metrics("roll.a", percentile_window=timedelta(minutes=1))
            assert row.successful_total == 4

    asyncio.run(scenario())
