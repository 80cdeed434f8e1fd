"""The SQL side of seeing and steering the queue, from real sessions: resume wakes idle workers,
a pause is seen by every worker at its next claim, and a schedule added in SQL (or from the CLI)
is fired by any worker's scheduler, with no schedule registered in code."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
from helpers.wait import wait_for
from test_sql_notify_roles import connect, events, first_event, listener

from pgq_thin import migrate
from pgq_thin.scheduler import Scheduler


def test_resume_wakes_idle_workers_and_pause_sends_nothing(pgq_dsn: str) -> None:
    with listener(pgq_dsn) as listen, connect(pgq_dsn) as admin:
        admin.execute("SELECT * FROM pgq.pause('{op.a,op.b}')").fetchall()
        assert events(listen, 0.3) == []
        admin.execute("SELECT * FROM pgq.resume('{op.b,op.a}')").fetchall()
        assert first_event(listen) == {"kind": "enqueued", "entrypoints": ["op.a", "op.b"]}
        admin.execute("SELECT * FROM pgq.resume('{op.a}')").fetchall()
        assert events(listen, 0.3) == [], "resuming what is not paused wakes nobody"


def test_a_pause_reaches_every_worker_at_its_next_claim(pgq_dsn: str) -> None:
    """Two workers on their own connections: after one pause() every claim comes back empty,
    while enqueueing goes on; after resume() the next claim takes the jobs."""
    with connect(pgq_dsn) as admin, connect(pgq_dsn) as w1, connect(pgq_dsn) as w2:
        admin.execute("SELECT pgq.enqueue_many(array_fill('op.p'::text, ARRAY[4]))").fetchall()
        claim = "SELECT id FROM pgq.claim(%s, ARRAY['op.p'], 1)"
        assert len(w1.execute(claim, (uuid.uuid4(),)).fetchall()) == 1
        admin.execute("SELECT * FROM pgq.pause('{op.p}')").fetchall()
        admin.execute("SELECT pgq.enqueue('op.p')")
        for w in (w1, w2):
            assert w.execute(claim, (uuid.uuid4(),)).fetchall() == []
        admin.execute("SELECT * FROM pgq.resume('{op.p}')").fetchall()
        assert len(w2.execute(claim, (uuid.uuid4(),)).fetchall()) == 1
        queued = admin.execute(
            "SELECT queued, paused FROM pgq.queue_stats WHERE entrypoint = 'op.p'"
        ).fetchone()
    assert queued == (3, False)


def test_a_schedule_added_in_sql_fires_from_any_workers_scheduler(pgq_dsn: str) -> None:
    """pgq.schedule from SQL (as `pgq-thin schedules add` does); a scheduler that registered no
    schedule of its own claims and fires it: pgq.claim_schedules hands out every due schedule,
    and the tick carries its cron expression and time zone for the next-run computation."""
    with connect(pgq_dsn) as conn:
        tick = conn.execute("SELECT now() - interval '5 seconds'").fetchone()[0]
        conn.execute(
            "SELECT pgq.schedule('op.every-minute', 'op.tick', '* * * * *',"
            " %s, 'Europe/Berlin', '{\"n\": 1}')",
            (tick,),
        )

    async def fire() -> list[dict[str, Any]]:
        async with await psycopg.AsyncConnection.connect(pgq_dsn, autocommit=True) as aconn:
            return await Scheduler(uuid.uuid4(), []).fire_due(aconn)

    fired = asyncio.run(fire())
    assert [(f["name"], f["state"]) for f in fired] == [("op.every-minute", "fired")]
    with connect(pgq_dsn) as conn:
        job = conn.execute(
            "SELECT entrypoint, payload, schedule FROM pgq.job(%s)", (fired[0]["job_id"],)
        ).fetchone()
        next_run, last_job = conn.execute(
            # After the tick fired (not after now: a minute boundary passed since the tick is
            # already due again, which catch-up fires next).
            "SELECT next_run_at > %s, last_job_id FROM pgq.schedules"
            " WHERE name = 'op.every-minute'",
            (tick,),
        ).fetchone()
    assert job == ("op.tick", {"n": 1}, "op.every-minute")
    assert next_run is True and last_job == fired[0]["job_id"]


def test_upgrade_from_0001_with_live_jobs_and_history(empty_db_dsn: str) -> None:
    """0001 with a queued job, a running one and a finished one; upgrade to head: the running
    job completes under its old lease and is counted by the rollup exactly once, the old
    history row is never counted, the queued job can be paused and resumed, the worker
    registers and is seen."""
    migrate.upgrade(empty_db_dsn, revision="0001")
    me = uuid.uuid4()
    with connect(empty_db_dsn) as conn:
        conn.execute("SELECT pgq.enqueue_many(ARRAY['up.a', 'up.a', 'up.a'])").fetchall()
        done = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['up.a'], 1)", (me,)
        ).fetchone()
        conn.execute("SELECT pgq.complete(%s, %s, %s, '{successful}')", (me, [done[0]], [done[1]]))
        running = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['up.a'], 1)", (me,)
        ).fetchone()
    migrate.upgrade(empty_db_dsn)
    with connect(empty_db_dsn) as conn:
        assert conn.execute(
            "SELECT finished_xid FROM pgq.job_history WHERE id = %s", (done[0],)
        ).fetchone() == (None,)
        conn.execute("SELECT * FROM pgq.register_worker(%s, ARRAY['up.a'])", (me,)).fetchall()
        accepted = conn.execute(
            "SELECT id FROM pgq.complete(%s, %s, %s, '{successful}', jsonb_build_array(%s::jsonb))",
            (me, [running[0]], [running[1]], '{"result": 7}'),
        ).fetchall()
        assert accepted == [(running[0],)]
        assert conn.execute(
            "SELECT state, running FROM pgq.worker_status WHERE worker_id = %s", (me,)
        ).fetchone() == ("active", 0)
        assert conn.execute("SELECT result FROM pgq.job(%s)", (running[0],)).fetchone() == (7,)
        conn.execute("SELECT * FROM pgq.pause('{up.a}')").fetchall()
        assert conn.execute("SELECT * FROM pgq.claim(%s, ARRAY['up.a'])", (me,)).fetchall() == []
        conn.execute("SELECT * FROM pgq.resume('{up.a}')").fetchall()
        assert (
            len(conn.execute("SELECT * FROM pgq.claim(%s, ARRAY['up.a'])", (me,)).fetchall()) == 1
        )

        def counted() -> bool:
            conn.execute("SELECT * FROM pgq.rollup_metrics()")
            return (
                conn.execute("SELECT successful_total FROM pgq.metrics('{up.a}')").fetchone()[0]
                == 1
            )

        wait_for(counted, timeout=60, what="the rollup to count the job finished after upgrade")
        assert conn.execute("SELECT rows_rolled FROM pgq.metrics_state").fetchone() == (1,)
