"""Read-only servers and failover: a session answered read-only (SQLSTATE 25006) reconnects, a new
connection never stays on a hot standby, a completion whose answer was lost is counted once, and
ThinWorkers on a multi-host DSN over a primary and a streaming hot standby of their own
(synchronous replication) ride through a crash and restart of the primary, with and without
``target_session_attrs``: every job finishes once, none is lost, work resumes.

The primary and the standby are servers this module starts (``faults.primary_and_standby``), never
the server the suite uses; they run the system PostgreSQL binaries. Everything waits on
observable state with a deadline.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from helpers import faults
from helpers.db import aio, rows, terminate_and_wait
from helpers.wait import await_for

from pgq_thin import calls, migrate
from pgq_thin._api import configure
from pgq_thin.admin import Admin
from pgq_thin.admin_calls import arun
from pgq_thin.connection import AsyncSession, ServerReadOnly, aconnect, connect
from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

# --- helpers ------------------------------------------------------------------------------------


async def until(predicate: Callable[[], Any], timeout: float, what: str) -> None:
    async def check() -> Any:
        return predicate()

    await await_for(check, timeout, what)


@asynccontextmanager
async def running(worker: ThinWorker) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``worker.arun`` in a task; stop it gracefully at the end and re-raise its error."""
    task = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        await until(lambda: worker.backend_pids["session"] or task.done(), 15, "connected")
        yield task
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


def history(dsn: str) -> dict[int, tuple[str, int]]:
    return {
        r[0]: (r[1], r[2]) for r in rows(dsn, "SELECT id, status, attempt FROM pgq.job_history")
    }


# --- the rule, on the suite's server -------------------------------------------------------------


@aio
async def test_a_read_only_answer_makes_the_session_reconnect(pgq_dsn: str) -> None:
    """SQLSTATE 25006 counts as a lost connection: closed, a new one made, the call re-run."""
    session = AsyncSession(pgq_dsn)
    await session.open()
    try:
        first = session.backend_pid
        # The connection turns read-only, as one to a hot standby is: every write answers 25006.
        await session.call(lambda conn: conn.execute("SET default_transaction_read_only = on"))
        answered: list[int] = []

        async def write(conn: calls.AConn) -> None:
            answered.append(conn.info.backend_pid)
            await arun(conn, configure("failover.ro"))

        await session.call(write)
        assert len(answered) == 2  # refused read-only on the first connection, then re-run
        assert answered[0] == first
        assert session.backend_pid not in (None, first)
        assert session.reconnects == 1
    finally:
        await session.close()


@aio
async def test_a_call_the_server_aborted_in_a_deadlock_is_sent_again_at_once(pgq_dsn: str) -> None:
    """A real deadlock: another connection holds row 2; the session's call locks row 1, and once
    the other connection waits for row 1, asks for row 2. The call closes the cycle, so its
    backend (the short deadlock_timeout) finds it and is rolled back; the session sends the call
    again at once on the same connection, which waits for the other transaction to commit and
    succeeds. No reconnect, no error raised."""
    table = f"public.deadlock_probe_{uuid.uuid4().hex[:12]}"
    async with await aconnect(pgq_dsn) as setup:
        await setup.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, n int NOT NULL DEFAULT 0)")
        await setup.execute(f"INSERT INTO {table} (id) VALUES (1), (2)")
    session = AsyncSession(pgq_dsn)
    await session.open()
    other = await aconnect(pgq_dsn, autocommit=False)
    probe = await aconnect(pgq_dsn)
    try:
        await session.call(lambda conn: conn.execute("SET deadlock_timeout = '20ms'"))
        pid = session.backend_pid
        await other.execute("SET deadlock_timeout = '60s'")
        await other.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 2")  # holds row 2
        other_pid = other.info.backend_pid
        row1_held = asyncio.Event()
        other_waits = asyncio.Event()
        tries: list[int] = []

        async def both_rows(conn: psycopg.AsyncConnection[Any]) -> None:
            tries.append(conn.info.backend_pid)
            async with conn.transaction():
                await conn.execute(f"UPDATE {table} SET n = n + 10 WHERE id = 1")
                row1_held.set()
                await other_waits.wait()
                await conn.execute(f"UPDATE {table} SET n = n + 10 WHERE id = 2")

        async def waits_for_a_lock(backend: int) -> bool:
            cur = await probe.execute(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (backend,)
            )
            row = await cur.fetchone()
            return bool(row and row[0])

        call = asyncio.create_task(session.call(both_rows))
        await asyncio.wait_for(row1_held.wait(), timeout=10)
        # The other connection asks for row 1, which the call holds: it waits.
        ask = asyncio.create_task(other.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1"))
        await await_for(lambda: waits_for_a_lock(other_pid), what="the other waiting for row 1")
        other_waits.set()  # the call now asks for row 2: a cycle, found by the call's backend
        await asyncio.wait_for(ask, timeout=30)  # row 1 is free once the call was rolled back
        await await_for(lambda: waits_for_a_lock(pid), what="the call, sent again, waiting")
        await other.commit()
        await asyncio.wait_for(call, timeout=30)
        assert tries == [pid, pid]  # rolled back once, sent again on the same connection
        assert session.reconnects == 0
        cur = await probe.execute(f"SELECT id, n FROM {table} ORDER BY id")
        assert await cur.fetchall() == [(1, 11), (2, 11)]  # both transactions, once each
    finally:
        await other.close()
        await session.close()
        await probe.execute(f"DROP TABLE IF EXISTS {table}")
        await probe.close()


def test_a_queue_handle_closes_a_connection_that_answered_read_only(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        q.connection.execute("SET default_transaction_read_only = on")
        first = q.connection
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            q.enqueue("failover.ro")
        assert first.closed  # the rule: lost, so the next call connects again
        assert q.enqueue("failover.ro") > 0
        assert q.connection is not first


class LoseCompleteAnswer:
    """Wraps ``calls.acomplete``: once armed, the next complete runs and commits, then its
    backend is terminated before the answer is handed back (lost with the connection)."""

    def __init__(self, dsn: str, real: Callable[..., Awaitable[Any]]) -> None:
        self.dsn = dsn
        self.real = real
        self.armed = True
        self.lost: list[Any] = []

    async def __call__(self, conn: calls.AConn, *args: Any) -> Any:
        answer = await self.real(conn, *args)
        if self.armed and answer:
            self.armed = False
            self.lost.append(answer)
            await asyncio.to_thread(terminate_and_wait, self.dsn, conn.info.backend_pid)
            await conn.execute("SELECT 1")  # raises: the connection is gone, the answer too
        return answer


@aio
async def test_a_completion_whose_answer_was_lost_is_counted_once(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the reconnect the worker heartbeats what it owns; the job whose complete had
    committed answers ``lost`` there, and the re-sent complete is accepted: one ending, counted
    as successful, not also as lost."""
    lose = LoseCompleteAnswer(pgq_dsn, calls.acomplete)
    monkeypatch.setattr(calls, "acomplete", lose)
    worker = ThinWorker(pgq_dsn, poll_interval=60)
    with Queue(pgq_dsn) as q:
        job_id = q.enqueue("failover.once")

    @worker.entrypoint("failover.once")
    async def once(job: Job[Any]) -> None:
        pass

    async with running(worker):
        await until(lambda: worker.stats.successful == 1, 10, "the result accepted")
        await until(lambda: not worker.buffered_results, 5, "nothing buffered")
        assert lose.lost, "the complete's answer was not lost"
        assert worker.stats.reconnects == 1
        assert (worker.stats.successful, worker.stats.lost, worker.stats.rejected) == (1, 0, 0)
    assert history(pgq_dsn) == {job_id: ("successful", 1)}


# --- a primary and a streaming hot standby of our own --------------------------------------------


@pytest.fixture(scope="module")
def pair() -> Iterator[faults.Pair]:
    reason = faults.why_no_own_server()
    if reason is not None:
        pytest.fail(reason)  # never skipped: the suite turns skips into failures anyway
    with faults.primary_and_standby(synchronous=True) as pair:
        migrate.upgrade(pair.primary.dsn())
        pair.wait_replayed()
        yield pair


def test_a_new_connection_never_stays_on_the_standby(pair: faults.Pair) -> None:
    """The standby listed first, no target_session_attrs (libpq takes the first server that
    accepts): the connection is checked, found on a standby, and made again read-write."""
    dsn = pair.dsn(standby_first=True)
    with psycopg.connect(dsn) as plain:  # what libpq alone does
        assert plain.info.port == pair.standby.port
    with connect(dsn) as conn:
        assert conn.info.port == pair.primary.port
    with Queue(dsn) as q:
        assert q.enqueue("failover.first") > 0
    with Admin(dsn) as admin:
        assert admin.connection.info.port == pair.primary.port

    async def session() -> None:
        s = AsyncSession(dsn)
        await s.open()
        try:
            assert await s.call(lambda conn: _port(conn)) == pair.primary.port
        finally:
            await s.close()

    asyncio.run(session())


async def _port(conn: calls.AConn) -> int:
    return conn.info.port


def test_the_standby_alone_is_refused_as_a_server_that_is_down(pair: faults.Pair) -> None:
    with pytest.raises(ServerReadOnly, match="hot standby"):
        connect(pair.standby.dsn())

    async def refused() -> None:
        with pytest.raises(psycopg.OperationalError, match="hot standby"):
            await aconnect(pair.standby.dsn())

    asyncio.run(refused())


@pytest.mark.parametrize("attrs", [None, "read-write"], ids=["any", "read-write"])
@aio
async def test_workers_ride_through_a_primary_crash_and_restart(
    pair: faults.Pair, attrs: str | None
) -> None:
    """Two workers on a multi-host DSN; jobs in flight when the primary crashes; it comes back
    about a second later. Without target_session_attrs (libpq's ``any``) the sessions first
    land on the standby, which must count as a lost connection. Every job finishes once, none
    is lost, new work runs after the restart, and both workers stop cleanly."""
    params = {} if attrs is None else {"target_session_attrs": attrs}
    dsn = pair.dsn(**params)
    entrypoint = f"failover.{attrs or 'any'}"
    primary = pair.primary.dsn()
    runs: Counter[int] = Counter()
    ended: Counter[int] = Counter()
    release = asyncio.Event()
    workers = [ThinWorker(dsn, concurrency=10, poll_interval=60) for _ in range(2)]
    for worker in workers:

        @worker.entrypoint(entrypoint)
        async def handle(job: Job[Any]) -> None:
            runs[job.id] += 1
            if (job.payload or {}).get("wait"):
                await release.wait()
            ended[job.id] += 1

    async with running(workers[0]), running(workers[1]):
        with Queue(primary) as q:
            before = q.enqueue_many(entrypoint, [{"wait": True}] * 6 + [None] * 6)
        await until(lambda: sum(runs.values()) == 12, 10, "all 12 jobs started")
        await asyncio.to_thread(pair.crash_primary)
        release.set()  # the 6 held jobs end while the primary is down: results kept
        await until(lambda: sum(ended.values()) == 12, 10, "all 12 jobs ended")
        await asyncio.to_thread(pair.primary.start)  # -w: back once it accepts connections
        back = time.monotonic()
        with Queue(primary) as q:
            after = q.enqueue_many(entrypoint, [None] * 10)
        everything = before + after

        def all_done() -> bool:
            done = rows(
                primary, "SELECT count(*) FROM pgq.job_history WHERE id = ANY(%s)", (everything,)
            )
            return done[0][0] == len(everything)

        await until(all_done, 30, "every job finished on the restarted primary")
        resumed = time.monotonic() - back
        for worker in workers:
            assert worker.stats.lost == 0
            assert worker.stats.rejected == 0
        # A session connects again on its next call (the other worker may have run every new
        # job; its next call is a heartbeat or a maintenance step, seconds away at most).
        await until(
            lambda: all(w.backend_pids["session"] is not None for w in workers),
            15,
            "both workers' sessions connected again",
        )
    assert runs == dict.fromkeys(everything, 1)  # each ran once
    found = history(primary)
    assert {i: found[i] for i in everything} == dict.fromkeys(everything, ("successful", 1))
    assert sum(w.stats.successful for w in workers) == len(everything)
    assert resumed < 15, f"work resumed {resumed:.1f} s after the primary was back"
