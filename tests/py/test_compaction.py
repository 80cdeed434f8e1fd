"""pgq.compact_jobs against real concurrent sessions, and ThinWorker's compaction step.

Single-session behaviour (sizes, identical rows, refusals, errors) is in tests/sql/compact_jobs.sql.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from typing import Any

import psycopg
import pytest
from helpers.wait import await_for, wait_for

from pgq_thin import ThinWorker
from pgq_thin.job import Job

# Jobs through the table in committed transactions: dead row versions that a compaction may drop.
CHURN = """
DO $$
DECLARE
    v_ids bigint[];
    v_leases bigint[];
BEGIN
    FOR i IN 1..%(rounds)s LOOP
        PERFORM pgq.enqueue_many(array_fill('cp.churn'::text, ARRAY[500]));
        SELECT array_agg(c.id), array_agg(c.lease) INTO v_ids, v_leases
          FROM pgq.claim('cccccccc-cccc-cccc-cccc-cccccccccccc', '{cp.churn}', 500) c;
        PERFORM pgq.complete('cccccccc-cccc-cccc-cccc-cccccccccccc', v_ids, v_leases,
                             array_fill('successful'::text, ARRAY[500]));
        COMMIT;
    END LOOP;
END
$$
"""


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def bloat(conn: psycopg.Connection[Any], rounds: int = 20) -> int:
    """Push rounds x 500 jobs through pgq.jobs; returns its total size afterwards."""
    conn.execute(CHURN % {"rounds": rounds})
    size = conn.execute("SELECT pg_total_relation_size('pgq.jobs')").fetchone()[0]
    assert size > 2 * 2**20, "setup: the churn bloats the table past 2 MiB"
    return int(size)


def compact(conn: psycopg.Connection[Any], lock_wait: str = "10 s") -> dict[str, Any]:
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute(
        "SELECT * FROM pgq.compact_jobs(lock_wait => %s::interval)", (lock_wait,)
    ).fetchone()
    assert row is not None
    return row


def test_busy_within_lock_wait_while_a_transaction_holds_the_table(pgq_dsn: str) -> None:
    """An open transaction that enqueued a job holds pgq.jobs: the compactor gives up after
    lock_wait (or at once with 0) and changes nothing; once the holder commits, its job is there
    and the compaction goes through."""
    with connect(pgq_dsn) as compactor, connect(pgq_dsn) as holder:
        compactor.execute("SET statement_timeout = '20s'")  # a hang fails instead of blocking
        bloat(compactor)
        node = compactor.execute("SELECT pg_relation_filenode('pgq.jobs')").fetchone()
        holder.execute("BEGIN")
        job_id = holder.execute("SELECT pgq.enqueue('cp.held', '{\"k\": 1}')").fetchone()[0]

        started = time.monotonic()
        row = compact(compactor, "300 ms")
        waited = time.monotonic() - started
        assert (row["compacted"], row["reason"], row["bytes_after"]) == (False, "busy", None)
        assert 0.25 <= waited < 3.0, f"gave up after {waited:.2f} s, lock_wait was 0.3 s"

        started = time.monotonic()
        row = compact(compactor, "0")
        assert (row["compacted"], row["reason"]) == (False, "busy")
        assert time.monotonic() - started < 3.0, "lock_wait 0 must not wait"

        assert compactor.execute("SELECT pg_relation_filenode('pgq.jobs')").fetchone() == node
        assert compactor.execute("SELECT compactions FROM pgq.compaction").fetchone() == (0,)
        with compactor.transaction():  # inside one transaction the caller's setting survives
            compactor.execute("SET LOCAL lock_timeout = '7s'")
            assert compact(compactor, "300 ms")["reason"] == "busy"
            assert compactor.execute("SHOW lock_timeout").fetchone() == ("7s",)

        holder.execute("COMMIT")
        with compactor.transaction():
            compactor.execute("SET LOCAL lock_timeout = '7s'")
            row = compact(compactor)
            assert compactor.execute("SHOW lock_timeout").fetchone() == ("7s",)
        assert (row["compacted"], row["reason"]) == (True, "bloated")
        assert compactor.execute(
            "SELECT entrypoint, payload FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchone() == ("cp.held", {"k": 1})


def test_busy_at_once_while_another_compactor_runs(pgq_dsn: str) -> None:
    """Compactors are serialized by an advisory lock: the second returns busy without queueing
    a second lock request on pgq.jobs."""
    with connect(pgq_dsn) as first, connect(pgq_dsn) as second:
        bloat(first)
        first.execute("BEGIN")
        row = compact(first)
        assert row["compacted"], "the first compactor holds the table and the advisory lock"
        started = time.monotonic()
        other = compact(second, "10 s")
        assert (other["compacted"], other["reason"], other["rows"]) == (False, "busy", None)
        assert time.monotonic() - started < 5.0, "it did not wait for the 10 s lock_wait"
        first.execute("COMMIT")


def test_a_snapshot_taken_before_still_sees_every_job(pgq_dsn: str) -> None:
    """CLUSTER keeps the rows' transaction ids: a REPEATABLE READ snapshot from before the
    compaction still sees every job afterwards (after TRUNCATE it would see none)."""
    with connect(pgq_dsn) as conn, connect(pgq_dsn) as reader:
        bloat(conn)
        conn.execute("SELECT pgq.enqueue_many(array_fill('cp.seen'::text, ARRAY[25]))")
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM pgq.entrypoints")  # the snapshot, no lock on jobs
        assert compact(conn)["compacted"]
        assert reader.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (25,)
        reader.execute("COMMIT")


def test_every_job_completed_exactly_once_while_compacting(pgq_dsn: str) -> None:
    """Workers claim, heartbeat and complete while another session compacts over and over: no
    job is lost, none runs twice, every lease stays valid."""
    total, producers, consumers, batch = 20000, 1, 4, 40
    per_producer = total // producers
    produced = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []
    problems: list[str] = []
    compactions: list[dict[str, Any]] = []

    def guarded(fn: Any) -> Any:
        def run(*args: Any) -> None:
            try:
                fn(*args)
            except BaseException as err:  # reported by the main thread
                errors.append(err)
                done.set()

        return run

    @guarded
    def produce(n: int) -> None:
        with connect(pgq_dsn) as conn:  # a small backlog: the table soon counts as bloated
            left = n
            while left > 0 and not done.is_set():
                queued = conn.execute("SELECT count(*) FROM pgq.jobs").fetchone()
                if queued is not None and queued[0] < 1000:
                    conn.execute("SELECT pgq.enqueue_many(array_fill('cp.run'::text, ARRAY[100]))")
                    left -= 100

    @guarded
    def consume() -> None:
        worker = uuid.uuid4()
        with connect(pgq_dsn) as conn:
            while not done.is_set():
                rows = conn.execute(
                    "SELECT id, lease FROM pgq.claim(%s, '{cp.run}', %s)", (worker, batch)
                ).fetchall()
                if not rows:
                    if produced.is_set():
                        left = conn.execute("SELECT count(*) FROM pgq.jobs").fetchone()
                        if left == (0,):
                            return
                    continue
                ids, leases = [r[0] for r in rows], [r[1] for r in rows]
                states = conn.execute(
                    "SELECT state FROM pgq.heartbeat(%s, %s, %s)", (worker, ids, leases)
                ).fetchall()
                if any(s != ("ok",) for s in states):
                    problems.append(f"heartbeat lost a lease: {states}")
                accepted = conn.execute(
                    "SELECT id FROM pgq.complete(%s, %s, %s,"
                    " array_fill('successful'::text, ARRAY[%s]))",
                    (worker, ids, leases, len(ids)),
                ).fetchall()
                if sorted(a[0] for a in accepted) != sorted(ids):
                    problems.append(f"complete accepted {len(accepted)} of {len(ids)}")

    @guarded
    def compactor() -> None:
        with connect(pgq_dsn) as conn:
            while not done.is_set():
                row = compact(conn, "50 ms")
                if row["compacted"]:
                    compactions.append(row)

    producer_threads = [
        threading.Thread(target=produce, args=(per_producer,)) for _ in range(producers)
    ]
    consumer_threads = [threading.Thread(target=consume) for _ in range(consumers)]
    compactor_thread = threading.Thread(target=compactor)
    for t in (*producer_threads, *consumer_threads, compactor_thread):
        t.start()
    for t in producer_threads:
        t.join(120)
    produced.set()
    for t in consumer_threads:
        t.join(120)
    done.set()
    compactor_thread.join(60)
    assert not errors, errors
    assert not problems, problems[:5]

    with connect(pgq_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*), count(DISTINCT id), max(attempt), min(attempt)"
            " FROM pgq.job_history WHERE entrypoint = 'cp.run' AND status = 'successful'"
        ).fetchone() == (total, total, 1, 1)
        recorded = conn.execute("SELECT compactions FROM pgq.compaction").fetchone()
    assert len(compactions) >= 2, "the test must compact while the workers run"
    assert recorded == (len(compactions),)


def test_worker_compaction_step_shrinks_a_bloated_table(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """compact_once compacts a bloated pgq.jobs and logs it at INFO; a second call finds
    nothing to do."""
    with connect(pgq_dsn) as conn:
        before = bloat(conn)
        conn.execute("SELECT pgq.enqueue('cp.kept')")
    worker = ThinWorker(pgq_dsn, compact_interval=None)

    @worker.entrypoint("cp.kept")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - the worker never claims
        raise AssertionError

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with worker:
            return await worker.compact_once(), await worker.compact_once()

    with caplog.at_level(logging.INFO, logger="pgq_thin.worker"):
        first, second = asyncio.run(scenario())
    assert (first["compacted"], first["reason"], first["rows"]) == (True, "bloated", 1)
    assert first["bytes_before"] >= before > 4 * first["bytes_after"]
    assert (second["compacted"], second["reason"]) == (False, "not bloated")
    assert [r.getMessage() for r in caplog.records if "compacted" in r.getMessage()] == [
        f"pgq-thin compacted pgq.jobs: 1 rows, {first['bytes_before'] / 2**20:.2f} MiB"
        f" -> {first['bytes_after'] / 2**20:.2f} MiB"
    ]
    with connect(pgq_dsn) as conn:
        size = conn.execute("SELECT pg_total_relation_size('pgq.jobs')").fetchone()
    assert size == (first["bytes_after"],)


@pytest.mark.parametrize("interval", [0.05, None])
def test_worker_compacts_every_compact_interval_unless_off(
    pgq_dsn: str, interval: float | None
) -> None:
    """A running worker calls pgq.compact_jobs on its own every compact_interval; with None it
    has no compaction loop at all."""
    with connect(pgq_dsn) as conn:
        bloat(conn)
    worker = ThinWorker(pgq_dsn, compact_interval=interval)

    @worker.entrypoint("cp.none")
    async def handler(job: Job[Any]) -> None:  # pragma: no cover - nothing is queued
        raise AssertionError

    def compactions() -> int:
        with connect(pgq_dsn) as conn:
            row = conn.execute("SELECT compactions FROM pgq.compaction").fetchone()
        assert row is not None
        return int(row[0])

    async def loops() -> set[str]:
        names = {t.get_name() for t in asyncio.all_tasks()}
        return names if "pgq-thin-flush" in names else set()

    async def scenario() -> tuple[set[str], int]:
        runner = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            names = await await_for(loops, 20.0, "the worker's loops")
            if interval is None:
                return names, await asyncio.to_thread(compactions)
            done = await asyncio.to_thread(wait_for, compactions, 20.0, "a worker compaction")
            return names, done
        finally:
            worker.stop()
            await runner

    names, done = asyncio.run(scenario())
    if interval is None:
        assert "pgq-thin-compaction" not in names and done == 0
    else:
        assert "pgq-thin-compaction" in names and done == 1
