"""Calls that lock several jobs take them in id order, so no two of them deadlock; and a
requeue racing a job's end never queues a job that no claim returns.

Deadlocks need two calls that lock the same rows in different orders. The ring makes the orders
differ: once it wraps, an older job (lower id) can sit in a higher slot, and a statement that
locks in the order its plan reads the partitions takes the younger job first. Here job ``low``
sits in slot 3 and job ``high`` in slot 0. Session C holds ``low``'s row lock; call X starts and
waits (on ``low`` if it locks in id order, or on ``low`` while already holding ``high`` if it
does not); call Y starts and waits too; then C lets go. A call that took ``high`` first now
waits for the other while the other waits for it: PostgreSQL reports 40P01. Every wait is seen
in pg_stat_activity, never timed.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from helpers.wait import wait_for

WORKER = uuid.UUID("44444444-4444-4444-4444-444444444444")


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def waiting_on_a_lock(conn: psycopg.Connection[Any], pid: int) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'", (pid,)
        ).fetchone()
    )


def two_running_jobs(conn: psycopg.Connection[Any], entrypoint: str) -> dict[str, Any]:
    """Two running jobs of WORKER: ``low`` (the older) in slot 3, ``high`` in slot 0."""
    conn.execute("SELECT pgq.configure(%s, max_attempts => 5)", (entrypoint,))
    jobs: dict[str, Any] = {}
    for name, slot in (("low", 3), ("high", 0)):
        row = conn.execute(
            """INSERT INTO pgq.jobs (entrypoint, status, attempt, lease, worker_id, started_at,
                                     heartbeat_at, ready_seq, slot)
               VALUES (%s, 'running', 1, nextval('pgq.lease_seq'), %s, now(), now(),
                       nextval('pgq.ready_seq'), %s)
               RETURNING id, lease""",
            (entrypoint, WORKER, slot),
        ).fetchone()
        assert row is not None
        jobs[name], jobs[f"{name}_lease"] = row
    assert jobs["low"] < jobs["high"]
    return jobs


Call = Callable[[dict[str, Any]], tuple[str, tuple[Any, ...]]]


def complete(outcomes: tuple[str, str]) -> Call:
    def call(j: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        return (
            "SELECT * FROM pgq.complete(%s, %s, %s, %s)",
            (WORKER, [j["low"], j["high"]], [j["low_lease"], j["high_lease"]], list(outcomes)),
        )

    return call


def heartbeat(order: str) -> Call:
    def call(j: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        names = ["low", "high"] if order == "id" else ["high", "low"]
        return (
            "SELECT * FROM pgq.heartbeat(%s, %s, %s)",
            (WORKER, [j[n] for n in names], [j[f"{n}_lease"] for n in names]),
        )

    return call


def release(j: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    return (
        "SELECT * FROM pgq.release(%s, %s, %s)",
        (WORKER, [j["high"], j["low"]], [j["high_lease"], j["low_lease"]]),
    )


def cancel(order: str) -> Call:
    def call(j: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        ids = [j["low"], j["high"]] if order == "id" else [j["high"], j["low"]]
        return ("SELECT * FROM pgq.cancel(%s)", (ids,))

    return call


WORKER_CALLS: dict[str, Call] = {
    "complete failed+failed": complete(("failed", "failed")),
    "complete successful+successful": complete(("successful", "successful")),
    "complete successful+failed": complete(("successful", "failed")),
    "complete interrupted+canceled": complete(("interrupted", "canceled")),
    "heartbeat in id order": heartbeat("id"),
    "heartbeat in reverse order": heartbeat("reverse"),
    "release": release,
}


def race(dsn: str, first: Call, second: Call, jobs: dict[str, Any]) -> list[BaseException]:
    """Run first, then second, both waiting behind a lock on job ``low``; then let them go."""
    errors: list[BaseException] = []
    with connect(dsn) as holder, connect(dsn) as a, connect(dsn) as b:
        for conn in (a, b):
            conn.execute("SET deadlock_timeout = '20ms'")

        def run(conn: psycopg.Connection[Any], call: Call) -> None:
            sql, params = call(jobs)
            try:
                conn.execute(sql, params).fetchall()
            except psycopg.Error as exc:
                errors.append(exc)

        threads = []
        with holder.transaction():
            holder.execute("SELECT 1 FROM pgq.jobs WHERE id = %s FOR UPDATE", (jobs["low"],))
            for conn, call in ((a, first), (b, second)):
                thread = threading.Thread(target=run, args=(conn, call))
                thread.start()
                threads.append(thread)
                pid = conn.info.backend_pid
                wait_for(lambda pid=pid: waiting_on_a_lock(holder, pid), what="the call to wait")
        for thread in threads:
            thread.join(timeout=60)
            assert not thread.is_alive(), "a call did not finish"
    return errors


@pytest.mark.parametrize("cancel_order", ["id", "reverse"])
@pytest.mark.parametrize("cancel_first", [True, False], ids=["cancel first", "cancel second"])
@pytest.mark.parametrize("name", list(WORKER_CALLS))
def test_worker_calls_and_cancel_never_deadlock(
    pgq_dsn: str, name: str, cancel_first: bool, cancel_order: str
) -> None:
    with connect(pgq_dsn) as conn:
        jobs = two_running_jobs(conn, "lo_jobs")
        calls = (cancel(cancel_order), WORKER_CALLS[name])
        errors = race(pgq_dsn, *(calls if cancel_first else calls[::-1]), jobs)
        assert errors == []
        # Both calls were applied: every job is either flagged or finished, none lost.
        live = conn.execute(
            "SELECT count(*) FROM pgq.jobs WHERE id = ANY (%s)", ([jobs["low"], jobs["high"]],)
        ).fetchone()
        done = conn.execute(
            "SELECT count(*) FROM pgq.job_history WHERE id = ANY (%s)",
            ([jobs["low"], jobs["high"]],),
        ).fetchone()
        assert live is not None and done is not None and live[0] + done[0] == 2


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("complete successful+failed", "heartbeat in reverse order"),
        ("heartbeat in reverse order", "complete failed+failed"),
        ("release", "heartbeat in reverse order"),
    ],
)
def test_worker_calls_never_deadlock_each_other(pgq_dsn: str, first: str, second: str) -> None:
    with connect(pgq_dsn) as conn:
        jobs = two_running_jobs(conn, "lo_pair")
        assert race(pgq_dsn, WORKER_CALLS[first], WORKER_CALLS[second], jobs) == []


def test_requeue_never_queues_a_job_that_ended_after_it_looked(pgq_dsn: str) -> None:
    """requeue([dead, running]) waits on the fence of the dead job's entrypoint; meanwhile the
    running job fails for good (history). The requeue must not take it: it would get a ready
    number without its own entrypoint's fence, a claim would move the lane's cursor past that
    number before the requeue commits, and the job would be queued and due for ever, never
    claimed."""
    with connect(pgq_dsn) as conn, connect(pgq_dsn) as fence, connect(pgq_dsn) as rq:
        for ep in ("lo_rq_x", "lo_rq_y"):
            conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (ep,))
            conn.execute("SELECT pgq.enqueue(%s)", (ep,))
        ((dead, dead_lease),) = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{lo_rq_x}')", (WORKER,)
        ).fetchall()
        conn.execute("SELECT pgq.complete(%s, %s, %s, '{failed}')", (WORKER, [dead], [dead_lease]))
        ((live, live_lease),) = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{lo_rq_y}')", (WORKER,)
        ).fetchall()

        answer: list[Any] = []
        errors: list[BaseException] = []
        go_commit = threading.Event()

        def run_requeue() -> None:
            try:
                with rq.transaction():
                    answer.extend(
                        r[0]
                        for r in rq.execute(
                            "SELECT id FROM pgq.requeue(%s)", ([dead, live],)
                        ).fetchall()
                    )
                    go_commit.wait(30)
            except BaseException as exc:  # pragma: no cover - re-raised below
                errors.append(exc)

        thread = threading.Thread(target=run_requeue)
        with fence.transaction():
            # The exclusive side of the ready-number fence of lo_rq_x: requeue's shared lock waits.
            fence.execute(
                "SELECT pg_advisory_xact_lock('pgq.ready_seq'::regclass::oid::int,"
                " hashtext('lo_rq_x'))"
            )
            thread.start()
            wait_for(lambda: waiting_on_a_lock(conn, rq.info.backend_pid), what="requeue to wait")
            # Meanwhile the running job fails on its last attempt: it is in history now.
            assert conn.execute(
                "SELECT status FROM pgq.complete(%s, %s, %s, '{failed}')",
                (WORKER, [live], [live_lease]),
            ).fetchall() == [("failed",)]
        wait_for(lambda: answer or errors, what="requeue to answer")
        # Before the requeue commits, a claim of lo_rq_y moves that lane's cursor as far as it may.
        conn.execute("SELECT * FROM pgq.claim(%s, '{lo_rq_y}')", (uuid.uuid4(),)).fetchall()
        go_commit.set()
        thread.join(timeout=60)
        assert not thread.is_alive() and errors == []

        assert dead in answer
        queued = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM pgq.jobs WHERE entrypoint = 'lo_rq_y' AND status = 'queued'"
            ).fetchall()
        ]
        claimed = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM pgq.claim(%s, '{lo_rq_y}', 10)", (uuid.uuid4(),)
            ).fetchall()
        ]
        # Nothing queued that no claim returns: the job that ended late stays in history.
        assert claimed == queued
        assert live not in answer
        assert conn.execute(
            "SELECT status FROM pgq.job_history WHERE id = %s", (live,)
        ).fetchall() == [("failed",)]
        # The job that was dead when the requeue looked is back and claimable.
        assert [
            r[0] for r in conn.execute("SELECT id FROM pgq.claim(%s, '{lo_rq_x}')", (WORKER,))
        ] == [dead]
