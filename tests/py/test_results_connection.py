"""``results_connection``: a worker that writes its results (``pgq.complete``) on a connection
of its own, beside the claims.

The claim of the next job is made to wait (another session holds ``pgq.lanes``, which every
claim reads and a successful completion never touches): the finished job's result is written
meanwhile. With one connection it would wait behind the claim. Handlers wait on a gate the
test opens, so nothing here sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from helpers.db import aio, ascalar, scalar
from helpers.wait import await_for

from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker


async def finished(dsn: str, job_id: int) -> bool:
    status = await ascalar(dsn, "SELECT status FROM pgq.job_history WHERE id = %s", (job_id,))
    return bool(status == "successful")


@aio
async def test_a_result_is_written_while_the_next_claim_waits(pgq_dsn: str) -> None:
    """One job runs, a slot is free; another session holds pgq.lanes; a notification makes
    the worker claim (the claim waits for the lock); then the job ends. Its result is written
    while the claim still waits."""
    worker = ThinWorker(
        pgq_dsn, results_connection=True, concurrency=2, batch_size=1, poll_interval=60
    )
    gate, started = asyncio.Event(), asyncio.Event()

    @worker.entrypoint("rc.gated")
    async def gated(job: Job[Any]) -> None:
        started.set()
        await asyncio.wait_for(gate.wait(), 60)

    with Queue(pgq_dsn) as q:
        job_id = q.enqueue("rc.gated")
    run = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        await asyncio.wait_for(started.wait(), 20)
        session = worker.backend_pids["session"]
        async with await psycopg.AsyncConnection.connect(pgq_dsn) as blocker:
            await blocker.execute("LOCK TABLE pgq.lanes IN ACCESS EXCLUSIVE MODE")

            async def claim_waits() -> bool:
                # (sent again until the claim waits: the listener may have been reconnecting)
                await ascalar(
                    pgq_dsn,
                    "SELECT pg_notify('pgq_events', %s)",
                    ('{"kind": "enqueued", "entrypoints": ["rc.gated"]}',),
                )
                waiting = await ascalar(
                    pgq_dsn,
                    "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                    (session,),
                )
                return bool(waiting)

            await await_for(claim_waits, 20, "the worker's claim waiting for pgq.lanes")
            gate.set()  # the job ends while its worker's claim waits
            await await_for(lambda: finished(pgq_dsn, job_id), 20, "the result written")
            assert (
                await ascalar(
                    pgq_dsn,
                    "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                    (session,),
                )
                == "Lock"
            )
            await blocker.rollback()
    finally:
        gate.set()
        worker.stop()
        await asyncio.wait_for(run, 30)
    assert (worker.stats.successful, worker.stats.lost) == (1, 0)


@aio
async def test_the_results_connection_is_named_and_closed_with_the_run(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn, results_connection=True, poll_interval=60)
    done = asyncio.Event()

    @worker.entrypoint("rc.quick")
    async def quick(job: Job[Any]) -> None:
        done.set()

    with Queue(pgq_dsn) as q:
        q.enqueue("rc.quick")
    run = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        await asyncio.wait_for(done.wait(), 20)
        await await_for(
            lambda: asyncio.sleep(0, worker.stats.successful == 1), 20, "the result accepted"
        )
        pids = worker.backend_pids
        assert pids["results"] is not None and pids["results"] != pids["session"]
        name = await ascalar(
            pgq_dsn,
            "SELECT application_name FROM pg_stat_activity WHERE pid = %s",
            (pids["results"],),
        )
        assert name == f"pgq-thin results {str(worker.worker_id)[:8]}"
    finally:
        worker.stop()
        await asyncio.wait_for(run, 30)
    assert (
        scalar(pgq_dsn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pids["results"],))
        == 0
    )
    assert "results" not in ThinWorker(pgq_dsn).backend_pids  # off by default


@pytest.mark.parametrize("value", [1, "yes", None])
def test_results_connection_must_be_a_bool(value: Any) -> None:
    with pytest.raises(ValueError, match="results_connection must be True or False"):
        ThinWorker("postgresql://unused", results_connection=value)


def test_the_cli_flag_reaches_the_worker() -> None:
    from pgq_thin.cli import build_parser
    from pgq_thin.cli.run import configure_worker

    worker = ThinWorker("postgresql://unused")
    configure_worker(worker, build_parser().parse_args(["run", "app:worker"]))
    assert worker.settings.results_connection is False
    args = build_parser().parse_args(["run", "app:worker", "--results-connection"])
    configure_worker(worker, args)
    assert worker.settings.results_connection is True
