"""Connection failures against real servers: backends killed with ``pg_terminate_backend`` during
a claim, a heartbeat and a result flush, the listener alone (killed, and silently stalled), a
server restart, pooler churn behind PgBouncer in transaction mode, and a SIGKILLed worker
process. Also the supervisor that restarts a failed run.

A kill "during" a call is injected by wrapping the ``pgq_thin.calls`` function: the wrapper
terminates the session's backend and waits until it is gone, then lets the real call go out on
the dead connection. Everything else waits on observable state with a deadline.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import faults
from helpers.db import aio, ascalar, rows, scalar, terminate_and_wait
from helpers.server import PgServer
from helpers.wait import await_for, wait_for
from psycopg.conninfo import conninfo_to_dict

from pgq_thin import calls, migrate
from pgq_thin.admin import Admin
from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent


# --- helpers ------------------------------------------------------------------------------------


@asynccontextmanager
async def running(worker: ThinWorker) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``worker.arun`` in a task; stop it gracefully at the end and re-raise its error."""
    task = asyncio.create_task(worker.arun(install_signal_handlers=False))
    try:
        await await_for(lambda: _true(worker.backend_pids["session"]), 10, "worker connected")
        yield task
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


async def _true(value: Any) -> bool:
    return bool(value)


async def until(predicate: Callable[[], Any], timeout: float, what: str) -> None:
    async def check() -> Any:
        return predicate()

    await await_for(check, timeout, what)


class KillOnCall:
    """Wraps a ``pgq_thin.calls`` function: once armed, the next call first terminates the
    backend of the connection it was given, then goes out on that dead connection."""

    def __init__(self, dsn: str, real: Callable[..., Awaitable[Any]]) -> None:
        self.dsn = dsn
        self.real = real
        self.armed = False
        self.killed: list[int] = []
        self.calls_after_kill = 0

    async def __call__(self, conn: calls.AConn, *args: Any) -> Any:
        if self.armed:
            self.armed = False
            pid = conn.info.backend_pid
            await asyncio.to_thread(terminate_and_wait, self.dsn, pid)
            self.killed.append(pid)
        elif self.killed:
            self.calls_after_kill += 1
        return await self.real(conn, *args)


def history(dsn: str) -> dict[int, tuple[str, int]]:
    return {
        r[0]: (r[1], r[2]) for r in rows(dsn, "SELECT id, status, attempt FROM pgq.job_history")
    }


# --- a backend killed during each kind of call --------------------------------------------------


@aio
async def test_backend_killed_as_a_claim_goes_out(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kill = KillOnCall(pgq_dsn, calls.aclaim)
    monkeypatch.setattr(calls, "aclaim", kill)
    runs: Counter[int] = Counter()
    worker = ThinWorker(pgq_dsn, poll_interval=60)

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        runs[job.id] += 1

    async with running(worker):
        await until(lambda: worker.stats.claimed == 0 and kill.calls_after_kill == 0, 5, "idle")
        first_pid = worker.backend_pids["session"]
        kill.armed = True
        with Queue(pgq_dsn) as q:
            ids = q.enqueue_many("cf.quick", [None] * 5)  # the notification wakes the claim
        await until(lambda: worker.stats.successful == 5, 10, "5 jobs done")
        assert kill.killed == [first_pid]
        assert worker.stats.reconnects == 1
        assert worker.backend_pids["session"] not in (None, first_pid)
    assert runs == dict.fromkeys(ids, 1)
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 1))


class LoseAnswer:
    """Wraps ``calls.aclaim``: once armed, the next claim runs and commits, then its backend
    is terminated before the answer is handed back (the answer is lost with the connection)."""

    def __init__(self, dsn: str, real: Callable[..., Awaitable[Any]]) -> None:
        self.dsn = dsn
        self.real = real
        self.armed = False
        self.lost: list[list[tuple[Any, ...]]] = []
        self.resent: list[list[tuple[Any, ...]]] = []

    async def __call__(self, conn: calls.AConn, *args: Any) -> Any:
        answer = await self.real(conn, *args)
        if self.armed and answer:
            self.armed = False
            self.lost.append(answer)
            await asyncio.to_thread(terminate_and_wait, self.dsn, conn.info.backend_pid)
            await conn.execute("SELECT 1")  # raises: the connection is gone, the answer too
        elif self.lost and not self.resent:
            self.resent.append(answer)
        return answer


@aio
async def test_a_claim_whose_answer_was_lost_is_sent_again_and_answers_the_same_jobs(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lose = LoseAnswer(pgq_dsn, calls.aclaim)
    monkeypatch.setattr(calls, "aclaim", lose)
    runs: Counter[int] = Counter()
    worker = ThinWorker(pgq_dsn, poll_interval=60, batch_size=5)

    @worker.entrypoint("cf.lost_answer")
    async def handle(job: Job[Any]) -> None:
        runs[job.id] += 1

    async with running(worker):
        await until(lambda: not lose.lost, 5, "idle")
        lose.armed = True
        with Queue(pgq_dsn) as q:
            ids = q.enqueue_many("cf.lost_answer", [None] * 3)
        # Without the request id the re-sent claim would find nothing, and the three jobs
        # would wait for the 30 s heartbeat timeout.
        await until(lambda: worker.stats.successful == 3, 10, "3 jobs done")
    ((claimed,),) = [[sorted((r[0], r[1], r[6]) for r in answer)] for answer in lose.lost]
    assert [sorted((r[0], r[1], r[6]) for r in lose.resent[0])] == [claimed]
    assert {job_id for job_id, _, _ in claimed} == set(ids)
    assert runs == dict.fromkeys(ids, 1)
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 1))


@aio
async def test_backend_killed_during_a_heartbeat_keeps_the_job(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kill = KillOnCall(pgq_dsn, calls.aheartbeat)
    monkeypatch.setattr(calls, "aheartbeat", kill)
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure(
            "cf.long", heartbeat_timeout=timedelta(seconds=3)
        )  # a beat every 1 s
        job_id = q.enqueue("cf.long")
    release = asyncio.Event()
    seen: list[tuple[int, bool]] = []
    worker = ThinWorker(pgq_dsn, poll_interval=60)

    @worker.entrypoint("cf.long")
    async def long(job: Job[Any]) -> None:
        await release.wait()
        seen.append((job.attempt, job.cancelled.is_set()))

    async with running(worker):
        await until(lambda: job_id in worker.owned_job_ids, 10, "the job claimed")
        kill.armed = True
        await until(lambda: kill.killed, 10, "the heartbeat's backend killed")
        killed_at = await ascalar(pgq_dsn, "SELECT clock_timestamp()")
        # beats resume on the new connection: heartbeat_at moves past the kill
        await await_for(
            lambda: ascalar(
                pgq_dsn,
                "SELECT heartbeat_at > %s FROM pgq.jobs WHERE id = %s",
                (killed_at, job_id),
            ),
            10,
            "a heartbeat after the kill",
        )
        assert worker.stats.reconnects == 1
        release.set()
        await until(lambda: worker.stats.successful == 1, 10, "the job done")
    assert seen == [(1, False)]  # ran once, never interrupted
    assert worker.stats.lost == 0
    assert history(pgq_dsn) == {job_id: ("successful", 1)}


@pytest.mark.parametrize("results_connection", [False, True], ids=["session", "results"])
@aio
async def test_backend_killed_during_a_flush_writes_results_with_their_leases(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch, results_connection: bool
) -> None:
    """The connection that writes results (the session, or with ``results_connection`` the
    results' own) is killed as a write goes out: it reconnects and writes them once."""
    kill = KillOnCall(pgq_dsn, calls.acomplete)
    kill.armed = True
    monkeypatch.setattr(calls, "acomplete", kill)
    runs: Counter[int] = Counter()
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("cf.quick", [None] * 10)
    # A claim that comes back short (10 of 20): the results go by a pgq.complete of their own
    # (a full claim would have the next claim carry them).
    worker = ThinWorker(
        pgq_dsn,
        poll_interval=60,
        concurrency=20,
        batch_size=20,
        results_connection=results_connection,
    )

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        runs[job.id] += 1

    async with running(worker):
        # The results' own connection may open after the worker starts (its pid unknown yet):
        # the session's pid is known from the start and is not the one killed then.
        session = worker.backend_pids["session"]
        await until(lambda: worker.stats.successful == 10, 10, "10 results accepted")
        if results_connection:
            assert len(kill.killed) == 1 and kill.killed[0] not in (None, session)
        else:
            assert kill.killed == [session]
        assert worker.stats.reconnects == 1
        assert (worker.stats.rejected, worker.stats.lost) == (0, 0)
    assert runs == dict.fromkeys(ids, 1)
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 1))


@aio
async def test_a_result_whose_lease_was_lost_during_the_drop_is_reported_not_retried(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    other = "00000000-0000-0000-0000-00000000beef"
    real = calls.acomplete
    state = {"armed": True}

    async def kill_and_steal(conn: calls.AConn, *args: Any) -> list[int]:
        if state["armed"]:
            state["armed"] = False
            # While the connection is down, the job goes stale and another worker takes it.
            await asyncio.to_thread(
                scalar,
                pgq_dsn,
                "SELECT count(*) FROM pgq.claim(%s, ARRAY['cf.quick'], 1, now() + interval '1h')",
                (other,),
            )
            await asyncio.to_thread(terminate_and_wait, pgq_dsn, conn.info.backend_pid)
        return await real(conn, *args)

    monkeypatch.setattr(calls, "acomplete", kill_and_steal)
    with Queue(pgq_dsn) as q:
        job_id = q.enqueue("cf.quick")
    worker = ThinWorker(pgq_dsn, poll_interval=60)

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        pass

    caplog.set_level(logging.WARNING, logger="pgq_thin")
    async with running(worker):
        await until(lambda: worker.stats.rejected == 1, 10, "the result rejected")
        await until(
            lambda: not worker.buffered_results and not worker.owned_job_ids, 5, "nothing left"
        )
        assert worker.stats.reconnects == 1
        assert (worker.stats.successful, worker.stats.lost) == (0, 1)
    assert "not accepted, their lease was lost" in caplog.text
    # the new owner's attempt is untouched
    assert rows(pgq_dsn, "SELECT status, attempt, worker_id::text FROM pgq.jobs") == [
        ("running", 2, other)
    ]
    assert history(pgq_dsn) == {}
    del job_id


# --- the listener -------------------------------------------------------------------------------


@aio
async def test_listener_killed_alone_reconnects_and_notify_works_again(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn, poll_interval=60)  # only a notification can wake it in time

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        pass

    async with running(worker):
        await until(lambda: worker.backend_pids["listener"], 10, "listening")
        session_pid, listener_pid = worker.backend_pids["session"], worker.backend_pids["listener"]
        assert listener_pid is not None
        await asyncio.to_thread(terminate_and_wait, pgq_dsn, listener_pid)
        await until(lambda: worker.stats.listener_reconnects == 1, 10, "the listener back")
        assert worker.backend_pids["listener"] not in (None, listener_pid)
        with Queue(pgq_dsn) as q:
            q.enqueue("cf.quick")
        await until(lambda: worker.stats.successful == 1, 5, "the job picked up by NOTIFY")
        assert worker.backend_pids["session"] == session_pid  # the session was not touched
        assert worker.stats.reconnects == 0


@aio
async def test_silently_stalled_listener_is_caught_by_its_ping(pgq_dsn: str) -> None:
    """A listener whose backend stops answering (SIGSTOP: no error, no closed socket) is
    noticed by its ping within check_interval + ping_timeout and replaced in place."""
    worker = ThinWorker(pgq_dsn, poll_interval=60, ping_interval=0.3, ping_timeout=0.5)

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        pass

    async with running(worker):
        await until(lambda: worker.backend_pids["listener"], 10, "listening")
        await until(lambda: worker.listener_pings >= 1, 5, "a ping answered")
        stalled = worker.backend_pids["listener"]
        assert stalled is not None
        try:
            os.kill(stalled, signal.SIGSTOP)
        except PermissionError:
            pytest.skip("cannot signal the server's processes (not the same user, not root)")
        try:
            await until(lambda: worker.stats.listener_reconnects == 1, 10, "a new listener")
        finally:
            os.kill(stalled, signal.SIGCONT)
        assert worker.backend_pids["listener"] not in (None, stalled)
        with Queue(pgq_dsn) as q:
            q.enqueue("cf.quick")
        await until(lambda: worker.stats.successful == 1, 5, "the job picked up by NOTIFY")


@pytest.fixture
def bouncer(pg_server: PgServer) -> Iterator[faults.PgBouncer]:
    """A PgBouncer in transaction mode in front of the suite's server."""
    reason = faults.why_no_pgbouncer()
    if reason:
        pytest.skip(reason)
    with faults.pgbouncer(pg_server.conninfo, settings={"server_lifetime": 2}) as b:
        yield b


def through(bouncer: faults.PgBouncer, dsn: str) -> str:
    return bouncer.dsn(str(conninfo_to_dict(dsn)["dbname"]))


# --- PgBouncer in transaction mode ----------------------------------------------------------------


@aio
async def test_pooler_churn_causes_no_redelivery(pgq_dsn: str, bouncer: faults.PgBouncer) -> None:
    """Claims, heartbeats and completions through PgBouncer (transaction mode) while its server
    connections are terminated every 0.2 s and expire every 2 s: every job runs exactly once."""
    runs: Counter[int] = Counter()
    worker = ThinWorker(
        through(bouncer, pgq_dsn), listen_dsn=pgq_dsn, concurrency=20, batch_size=10
    )

    @worker.entrypoint("cf.churn")
    async def churn(job: Job[Any]) -> None:
        runs[job.id] += 1
        await asyncio.sleep(0.02)

    dbname = str(conninfo_to_dict(pgq_dsn)["dbname"])
    stop = threading.Event()
    kills: list[int] = []

    def churner() -> None:
        while not stop.wait(0.2):
            pids = [
                pid
                for (pid,) in rows(
                    pgq_dsn,
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> "
                    "pg_backend_pid() AND application_name <> 'pgq-test-producer'",
                    (dbname,),
                )
                if pid != worker.backend_pids["listener"]
            ]
            kills.append(faults.terminate_backends(pgq_dsn, pids))

    ids: list[int] = []
    thread = threading.Thread(target=churner)
    async with running(worker):
        thread.start()
        try:
            producer = f"{pgq_dsn} application_name=pgq-test-producer"
            for _ in range(6):  # 6 waves of 50 jobs, about 0.5 s apart
                with Queue(producer) as q:
                    ids += q.enqueue_many("cf.churn", [None] * 50)
                await asyncio.sleep(0.5)  # pacing the load, not synchronisation
            await until(lambda: worker.stats.successful == len(ids), 30, "all jobs done")
        finally:
            stop.set()
            await asyncio.to_thread(thread.join)
    # The churn really hit the worker's server connections. Whether the worker saw an error
    # depends on whether a call was in flight at a kill; PgBouncer hides the rest.
    assert sum(kills) >= 5, kills
    assert runs == dict.fromkeys(ids, 1)
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 1))
    assert (worker.stats.rejected, worker.stats.lost) == (0, 0)


class KillInPipeline:
    """Wraps ``calls.acomplete_and_claim``: the first call has the jobs it completes locked by
    another transaction, so its ``pgq.complete`` waits inside the pipeline; the pooler's server
    backend running it is then terminated (PgBouncer keeps the client connection), and the
    lock released."""

    def __init__(self, direct_dsn: str, real: Callable[..., Awaitable[Any]]) -> None:
        self.direct_dsn = direct_dsn
        self.real = real
        self.armed = True
        self.killed: list[int] = []

    async def __call__(self, conn: calls.AConn, worker_id: Any, done: Any, *rest: Any) -> Any:
        if not self.armed:
            return await self.real(conn, worker_id, done, *rest)
        self.armed = False
        locker = await asyncio.to_thread(psycopg.connect, self.direct_dsn)
        await asyncio.to_thread(
            locker.execute, "SELECT 1 FROM pgq.jobs WHERE id = ANY(%s) FOR UPDATE", (list(done[0]),)
        )
        killer = threading.Thread(target=self._kill_then_unlock, args=(locker,))
        killer.start()
        try:
            return await self.real(conn, worker_id, done, *rest)
        finally:
            await asyncio.to_thread(killer.join)

    def _kill_then_unlock(self, locker: psycopg.Connection[Any]) -> None:
        try:
            pid = wait_for(
                lambda: scalar(
                    self.direct_dsn,
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%%pgq.complete(%%' AND pid <> pg_backend_pid()",
                ),
                10,
                "pgq.complete waiting on the locked rows",
            )
            terminate_and_wait(self.direct_dsn, pid)
            self.killed.append(pid)
        finally:
            locker.rollback()
            locker.close()


@aio
async def test_pooler_dropping_the_connection_mid_pipeline_reruns_the_call(
    pgq_dsn: str,
    bouncer: faults.PgBouncer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The pooler loses its server connection while the worker's complete-and-claim pipeline
    is in flight: psycopg says "cannot exit pipeline mode while busy" with conn.broken still
    false. The session treats it as a lost connection and re-runs the call on a new one."""
    kill = KillInPipeline(pgq_dsn, calls.acomplete_and_claim)
    monkeypatch.setattr(calls, "acomplete_and_claim", kill)
    runs: Counter[int] = Counter()
    with Queue(pgq_dsn) as q:
        ids = q.enqueue_many("cf.pipe", [None] * 3)
    # batch 1, concurrency 1: every claim is full, so the next one carries the last result.
    worker = ThinWorker(
        through(bouncer, pgq_dsn), listen_dsn=pgq_dsn, poll_interval=60, batch_size=1, concurrency=1
    )

    @worker.entrypoint("cf.pipe")
    async def pipe(job: Job[Any]) -> None:
        runs[job.id] += 1

    caplog.set_level(logging.WARNING, logger="pgq_thin")
    async with running(worker):
        await until(lambda: worker.stats.successful == 3, 15, "3 jobs done")
        assert len(kill.killed) == 1
        assert worker.stats.reconnects == 1
    assert "pipeline" in caplog.text  # the loss was seen, as a loss:
    assert "claim failed" not in caplog.text  # not as a failed claim retried later
    assert runs == dict.fromkeys(ids, 1)
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 1))


# --- a server restart -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own_server() -> Iterator[faults.OwnServer]:
    reason = faults.why_no_own_server()
    if reason:
        pytest.skip(reason)
    with faults.own_server() as server:
        migrate.upgrade(server.dsn())
        yield server


@aio
async def test_server_restart_keeps_the_running_job_and_notify(
    own_server: faults.OwnServer,
) -> None:
    dsn = own_server.dsn()
    with Queue(dsn) as q:
        Admin(q.connection).configure("cf.long", heartbeat_timeout=timedelta(seconds=10))
        long_id = q.enqueue("cf.long")
    release = asyncio.Event()
    runs: Counter[int] = Counter()
    worker = ThinWorker(dsn, poll_interval=60)

    @worker.entrypoint("cf.long")
    async def long(job: Job[Any]) -> None:
        runs[job.id] += 1
        await release.wait()

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        runs[job.id] += 1

    async with running(worker):
        await until(lambda: long_id in worker.owned_job_ids, 10, "the long job claimed")
        await until(lambda: worker.backend_pids["listener"], 10, "listening")
        await asyncio.to_thread(own_server.restart)
        await until(lambda: worker.stats.listener_reconnects == 1, 15, "the listener back")
        await until(lambda: worker.stats.reconnects >= 1, 15, "the session back")
        with Queue(dsn) as q:
            quick_id = q.enqueue("cf.quick")
        await until(lambda: runs[quick_id] == 1, 5, "a new job picked up by NOTIFY")
        release.set()
        await until(lambda: worker.stats.successful == 2, 10, "both done")
    assert runs == {long_id: 1, quick_id: 1}
    assert history(dsn) == {long_id: ("successful", 1), quick_id: ("successful", 1)}


# --- a worker process killed ----------------------------------------------------------------------


def test_sigkilled_worker_jobs_are_redelivered_after_the_heartbeat_timeout(pgq_dsn: str) -> None:
    timeout, poll = 2.0, 0.5
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure(
            "proc.slow_first", heartbeat_timeout=timedelta(seconds=timeout)
        )
        ids = q.enqueue_many("proc.slow_first", [{"sleep": 60}] * 3)

    def spawn() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "pgq_thin", "run", "client_app:worker", "--dsn", pgq_dsn],
            cwd=APP_DIR,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "CLIENT_APP_POLL": str(poll)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    first = spawn()
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(
            lambda: scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs WHERE status = 'running'") == 3,
            15,
            "three running jobs",
        )
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        last_beat = dict(rows(pgq_dsn, "SELECT id, heartbeat_at FROM pgq.jobs"))
        second = spawn()
        wait_for(lambda: len(history(pgq_dsn)) == 3, 20, "the jobs finished elsewhere")
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait()
    assert history(pgq_dsn) == dict.fromkeys(ids, ("successful", 2))  # none lost
    started = dict(rows(pgq_dsn, "SELECT id, started_at FROM pgq.job_history"))
    for job_id in ids:
        waited = (started[job_id] - last_beat[job_id]).total_seconds()
        # not before the heartbeat timeout; within it plus one poll (and a little slack)
        assert timeout <= waited <= timeout + poll * 1.2 + 1.0, (job_id, waited)


# --- the supervisor -------------------------------------------------------------------------------


def test_supervisor_restarts_a_failed_run(pgq_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = calls.aheartbeat
    failures = {"left": 1}

    async def broken_once(*args: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("a bug in the heartbeat loop")
        return await real(*args)

    monkeypatch.setattr(calls, "aheartbeat", broken_once)
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("cf.beat", heartbeat_timeout=timedelta(seconds=1))
        ids = q.enqueue_many("cf.beat", [None] * 3)
    worker = ThinWorker(pgq_dsn, poll_interval=0.2, restart_delay=0.05)

    @worker.entrypoint("cf.beat")
    async def beat(job: Job[Any]) -> None:
        await asyncio.sleep(0.5)  # long enough for a heartbeat (every 1/3 s)

    worker.run(until_empty=True)
    assert worker.stats.restarts == 1
    assert set(history(pgq_dsn)) == set(ids)


def test_supervisor_gives_up_after_max_restarts(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def always_broken(*args: Any) -> Any:
        raise RuntimeError("always broken")

    monkeypatch.setattr(calls, "anext_due_in", always_broken)
    worker = ThinWorker(pgq_dsn, poll_interval=0.2, restart_delay=0.01, max_restarts=2)

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        pass

    with pytest.raises(RuntimeError, match="always broken"):
        worker.run()
    assert worker.stats.restarts == 2

    worker.restart_on_failure = False
    with pytest.raises(RuntimeError, match="always broken"):
        worker.run()
    assert worker.stats.restarts == 2


@aio
async def test_calls_through_pgbouncer_survive_new_server_connections(
    pgq_dsn: str, bouncer: faults.PgBouncer
) -> None:
    """Transaction mode hands every call to whichever server connection is free; a statement
    prepared on one would be missing on the next. The worker prepares nothing server-side."""
    worker = ThinWorker(through(bouncer, pgq_dsn), listen_dsn=pgq_dsn)

    @worker.entrypoint("cf.quick")
    async def quick(job: Job[Any]) -> None:
        pass

    dbname = str(conninfo_to_dict(pgq_dsn)["dbname"])
    async with worker:
        servers = set()
        for _ in range(12):  # more than psycopg's default prepare threshold (5)
            assert await worker.claim_once() == []
            servers |= {r[15] for r in await asyncio.to_thread(bouncer.admin, "SHOW SERVERS")}
            await asyncio.to_thread(bouncer.admin, f"RECONNECT {dbname}")
        assert worker.stats.reconnects == 0  # no error, nothing to recover from
    assert len(servers) >= 6  # the calls really went to different server connections
