"""Two workers sharing a queue of slow jobs split it, at their defaults.

Every job waits on a gate that the test opens one round at a time, so "slow" needs no sleep.
While a round is held, each worker must be running as many jobs as it can start (its
capacity: ``concurrency`` for async handlers, ``threads`` for sync ones) and hold no job it
claimed but has not started: the jobs the database shows running under each worker are exactly
the handlers that worker is running. The queue holds two rounds of both workers' capacity, so
a fair split is exact: each worker runs half of the jobs.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for

from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

ROUNDS = 2


class Gates:
    """One gate per round; a handler waits on the gate that was current when it started."""

    def __init__(self, sync: bool) -> None:
        self._sync = sync
        self.all_open = False
        self.current = self._make()

    def _make(self) -> Any:
        event = threading.Event() if self._sync else asyncio.Event()
        if self.all_open:
            event.set()
        return event

    def open_round(self) -> None:
        held, self.current = self.current, self._make()
        held.set()

    def open_all(self) -> None:
        self.all_open = True
        self.open_round()


class Tally:
    """What each worker's handlers did (sync handlers report from their threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self.job_ids: list[int] = []

    def begin(self, name: str, job_id: int) -> None:
        with self._lock:
            self.running[name] += 1
            self.started[name] += 1
            self.job_ids.append(job_id)

    def end(self, name: str) -> None:
        with self._lock:
            self.running[name] -= 1


def register(worker: ThinWorker, name: str, gates: Gates, tally: Tally, sync: bool) -> None:
    if sync:

        @worker.entrypoint("slow")
        def slow_sync(job: Job[Any]) -> None:
            gate = gates.current
            tally.begin(name, job.id)
            try:
                assert gate.wait(timeout=60), "the test never opened the gate"
            finally:
                tally.end(name)

    else:

        @worker.entrypoint("slow")
        async def slow(job: Job[Any]) -> None:
            gate = gates.current
            tally.begin(name, job.id)
            try:
                await asyncio.wait_for(gate.wait(), 60)
            finally:
                tally.end(name)


async def database_state(dsn: str, workers: dict[str, ThinWorker]) -> dict[str, int]:
    """Jobs the database shows running under each worker, queued, and finished."""
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT coalesce(worker_id::text, status), count(*) FROM pgq.jobs GROUP BY 1"
        )
        rows = dict(await cur.fetchall())
        cur = await conn.execute("SELECT count(*) FROM pgq.job_history")
        row = await cur.fetchone()
    names = {str(w.worker_id): name for name, w in workers.items()}
    state = {"queued": 0, **{names.get(key, key): int(n) for key, n in rows.items()}}
    state["finished"] = int(row[0]) if row else 0
    return state


async def split_slow_jobs(dsn: str, sync: bool) -> None:
    gates, tally = Gates(sync), Tally()
    workers = {"a": ThinWorker(dsn), "b": ThinWorker(dsn)}
    for name, worker in workers.items():
        register(worker, name, gates, tally, sync)
    defaults = workers["a"]
    capacity = min(defaults.threads, defaults.concurrency) if sync else defaults.concurrency
    total = ROUNDS * 2 * capacity
    with Queue(dsn) as q:
        q.enqueue_many("slow", [None] * total)
    runs = [asyncio.create_task(w.arun(install_signal_handlers=False)) for w in workers.values()]
    try:
        for rnd in range(ROUNDS):
            done = rnd * 2 * capacity
            fair = {"a": capacity, "b": capacity}

            async def settled(done: int = done, fair: dict[str, int] = fair) -> bool:
                if dict(tally.running) != fair:
                    return False
                return (await database_state(dsn, workers))["finished"] == done

            try:
                await await_for(settled, timeout=20, what=f"round {rnd}: each runs {capacity}")
            except AssertionError as err:
                state = await database_state(dsn, workers)
                raise AssertionError(
                    f"{err}; handlers running {dict(tally.running)}, database {state}"
                ) from None
            state = await database_state(dsn, workers)
            # Each worker holds exactly what it runs: no job claimed and left waiting.
            assert state == {**fair, "queued": total - done - 2 * capacity, "finished": done}
            gates.open_round()
        await await_for(finished_all(dsn, workers, total), timeout=20, what="every job finished")
    finally:
        gates.open_all()
        for worker in workers.values():
            worker.stop()
        await asyncio.gather(*runs)
    assert tally.started == {"a": total // 2, "b": total // 2}
    assert sorted(tally.job_ids) == sorted(set(tally.job_ids))  # none ran twice
    assert sum(w.stats.successful for w in workers.values()) == total


def finished_all(dsn: str, workers: dict[str, ThinWorker], total: int) -> Any:
    async def check() -> bool:
        return (await database_state(dsn, workers))["finished"] == total

    return check


@pytest.mark.slow
def test_two_default_workers_split_slow_async_jobs(pgq_dsn: str) -> None:
    """Claim ahead never takes more than the slots left once the jobs just claimed start."""
    asyncio.run(split_slow_jobs(pgq_dsn, sync=False))


@pytest.mark.slow
def test_two_default_workers_split_slow_sync_jobs(pgq_dsn: str) -> None:
    """A worker with sync handlers claims only what its free threads can start, though its
    concurrency would let it claim more: the other worker runs the rest."""
    asyncio.run(split_slow_jobs(pgq_dsn, sync=True))


def test_threads_is_a_setting_of_its_own() -> None:
    worker = ThinWorker("postgresql://unused", threads=3)
    assert (worker.threads, worker.concurrency) == (3, 100)
    worker.threads = 5
    assert worker.settings.threads == 5
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        ThinWorker("postgresql://unused", threads=0)


def test_a_worker_with_sync_entrypoints_still_runs_concurrency_async_jobs(pgq_dsn: str) -> None:
    """Claims of a worker with a sync entrypoint are as small as its free threads, but async
    jobs hold no thread: it runs up to ``concurrency`` of them, and a sync job never waits."""

    async def main() -> None:
        gates, tally = Gates(sync=False), Tally()
        worker = ThinWorker(pgq_dsn, concurrency=6, threads=2, batch_size=6)
        register(worker, "async", gates, tally, sync=False)
        sync_gates = Gates(sync=True)

        @worker.entrypoint("blocking")
        def blocking(job: Job[Any]) -> None:
            gate = sync_gates.current
            tally.begin("sync", job.id)
            try:
                assert gate.wait(timeout=60), "the test never opened the gate"
            finally:
                tally.end("sync")

        with Queue(pgq_dsn) as q:
            q.enqueue_many("slow", [None] * 5)
            q.enqueue_many("blocking", [None] * 3)
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:

            async def full() -> bool:
                return sum(tally.running.values()) == 6

            await await_for(full, timeout=20, what="six jobs running")
            state = await database_state(pgq_dsn, {"w": worker})
            assert tally.running["sync"] <= 2
            # Six run, and the worker holds only those: at most two are sync (its threads).
            assert state == {"w": 6, "queued": 2, "finished": 0}
        finally:
            gates.open_all()
            sync_gates.open_all()
            worker.stop()
            await run
        assert tally.started["async"] + tally.started["sync"] >= 6

    asyncio.run(main())
