"""``prefetch``: a worker may hold claimed jobs beyond its free slots, each waiting in the
worker for a slot, owned (heartbeats cover it) and released at a stop.

Handlers wait on a gate the test opens, so "busy" needs no sleep. While the gate is shut the
database shows exactly ``concurrency + prefetch`` jobs running under the worker (without
prefetch: ``concurrency``, ``tests/py/test_worker_fairness.py``), and the handlers running
never exceed ``concurrency``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for
from test_worker_metrics import ascrape

from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker


class Gated:
    """An async entrypoint whose handlers wait on one gate; it counts what they did."""

    def __init__(self, worker: ThinWorker) -> None:
        self.gate = asyncio.Event()
        self.running = 0
        self.most = 0
        self.started: list[int] = []

        @worker.entrypoint("held")
        async def held(job: Job[Any]) -> None:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(job.id)
            try:
                await asyncio.wait_for(self.gate.wait(), 60)
            finally:
                self.running -= 1


@asynccontextmanager
async def serving(
    dsn: str, jobs: int, **settings: Any
) -> AsyncIterator[tuple[ThinWorker, Gated, list[int]]]:
    """A worker with a gated entrypoint, ``jobs`` of its jobs enqueued, running; at the end the
    gate opens and the worker stops."""
    worker = ThinWorker(dsn, **settings)
    handlers = Gated(worker)
    with Queue(dsn) as q:
        ids = q.enqueue_many("held", [None] * jobs)
    run = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        yield worker, handlers, ids
    finally:
        handlers.gate.set()
        worker.stop()
        await run


async def jobs_by_state(dsn: str, worker: ThinWorker) -> dict[str, int]:
    """Jobs running under the worker, queued (with no attempt used), and finished."""
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'running' AND worker_id = %s),"
            "       count(*) FILTER (WHERE status = 'queued' AND attempt = 0),"
            "       (SELECT count(*) FROM pgq.job_history WHERE status = 'successful')"
            "  FROM pgq.jobs",
            (worker.worker_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    return {"running": int(row[0]), "queued": int(row[1]), "finished": int(row[2])}


def test_prefetch_holds_jobs_beyond_the_free_slots_and_runs_concurrency_at_most(
    pgq_dsn: str,
) -> None:
    async def main() -> None:
        async with serving(
            pgq_dsn, 20, concurrency=3, prefetch=4, batch_size=10, metrics_port=0
        ) as (worker, handlers, _):

            async def holding() -> bool:
                state = await jobs_by_state(pgq_dsn, worker)
                return handlers.running == 3 and state == {
                    "running": 7,
                    "queued": 13,
                    "finished": 0,
                }

            await await_for(holding, timeout=20, what="3 handlers running and 4 jobs held")
            assert (worker.running_jobs, worker.held_jobs) == (3, 4)
            samples = await ascrape(worker)
            assert samples[("pgq_worker_jobs_in_flight", ())] == 3
            assert samples[("pgq_worker_jobs_held", ())] == 4
            handlers.gate.set()

            async def finished() -> bool:
                return (await jobs_by_state(pgq_dsn, worker))["finished"] == 20

            await await_for(finished, timeout=20, what="every job finished")
        assert handlers.most == 3
        assert sorted(handlers.started) == sorted(set(handlers.started))  # none ran twice
        assert len(handlers.started) == worker.stats.successful == 20

    asyncio.run(main())


def test_a_stop_gives_the_held_jobs_back_unstarted(pgq_dsn: str) -> None:
    async def main() -> None:
        async with serving(pgq_dsn, 10, concurrency=2, prefetch=3, batch_size=10) as (
            worker,
            handlers,
            _,
        ):

            async def holding() -> bool:
                state = await jobs_by_state(pgq_dsn, worker)
                return handlers.running == 2 and state["running"] == 5

            await await_for(holding, timeout=20, what="2 handlers running and 3 jobs held")
            worker.stop()

            # The held jobs go back at once (released: no attempt used), while the two
            # running handlers still have their grace period.
            async def given_back() -> bool:
                state = await jobs_by_state(pgq_dsn, worker)
                return state == {"running": 2, "queued": 8, "finished": 0}

            await await_for(given_back, timeout=20, what="the 3 held jobs released")
        assert await jobs_by_state(pgq_dsn, worker) == {"running": 0, "queued": 8, "finished": 2}
        assert len(handlers.started) == 2
        assert (worker.stats.released, worker.stats.successful) == (3, 2)

    asyncio.run(main())


def test_prefetch_is_checked() -> None:
    worker = ThinWorker("postgresql://unused", prefetch=5)
    assert (worker.prefetch, worker.settings.prefetch) == (5, 5)
    assert ThinWorker("postgresql://unused").prefetch == 0  # claim only what can start
    for bad in (-1, 100_001, 1.5, True):
        with pytest.raises(
            ValueError, match=rf"prefetch must be an integer from 0 to 100000, got {bad}"
        ):
            ThinWorker("postgresql://unused", prefetch=bad)  # type: ignore[arg-type]


def test_run_takes_prefetch_from_the_command_line() -> None:
    from pgq_thin.cli import build_parser
    from pgq_thin.cli._common import UsageError
    from pgq_thin.cli.run import configure_worker

    worker = ThinWorker("postgresql://unused")
    configure_worker(worker, build_parser().parse_args(["run", "app:worker", "--prefetch", "64"]))
    assert worker.settings.prefetch == 64
    configure_worker(worker, build_parser().parse_args(["run", "app:worker"]))
    assert worker.settings.prefetch == 64  # not given: the worker's own
    with pytest.raises(UsageError, match="--prefetch must be 0 or more, got -1"):
        configure_worker(
            worker, build_parser().parse_args(["run", "app:worker", "--prefetch", "-1"])
        )


def test_a_held_job_canceled_ends_at_once_without_running(pgq_dsn: str) -> None:
    """A cancel request for a job held for a slot ends it canceled now (its handler never
    starts), not when the job that holds the slot ends."""

    async def main() -> None:
        async with serving(pgq_dsn, 2, concurrency=1, prefetch=1, batch_size=2) as (
            worker,
            handlers,
            (first, second),
        ):

            async def holding() -> bool:
                state = await jobs_by_state(pgq_dsn, worker)
                return handlers.started == [first] and state["running"] == 2

            await await_for(holding, timeout=20, what="one job running and one held")
            async with await psycopg.AsyncConnection.connect(pgq_dsn, autocommit=True) as conn:
                await conn.execute("SELECT pgq.cancel(ARRAY[%s]::bigint[])", (second,))

            async def canceled() -> bool:
                async with await psycopg.AsyncConnection.connect(pgq_dsn) as conn:
                    cur = await conn.execute(
                        "SELECT status FROM pgq.job_history WHERE id = %s", (second,)
                    )
                    row = await cur.fetchone()
                return row is not None and row[0] == "canceled"

            await await_for(canceled, timeout=20, what="the held job canceled")
            assert handlers.started == [first] and handlers.running == 1  # still blocked
        assert handlers.started == [first]
        assert (worker.stats.successful, worker.stats.canceled) == (1, 1)

    asyncio.run(main())
